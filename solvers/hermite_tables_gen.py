"""Generator of ``solvers/hermite_tables_data.py``: the ``hermite`` integrator's tables,
each entry the double nearest to its exact value.

    python -m mbstudy.solvers.hermite_tables_gen           # (re)write the data module
    python -m mbstudy.solvers.hermite_tables_gen --check   # exit 1 if it is stale

The tables are those of :func:`mbstudy.solvers.hermite_basis.packed_tables` (layout there):
for n_gauss r = 1..GAUSS_MAX the Gauss–Legendre nodes and weights on [0, 1], and for every
order 2..ORDER_MAX the basis N_a of :func:`~mbstudy.solvers.hermite_basis.element_basis`
and N_a' at those nodes and at tau = 1, the DOF kinds and nodes, and the predictor E.

How each entry is computed:

- the basis polynomials in exact rational arithmetic (``fractions``), by the constructions
  of seed 001 eqs. (5)-(8) (order s >= 3: s equidistant points, derivative known at 0)
  and (11)-(16) (order 2: two-point cubic); entries at rational points (tau = 1, the
  predictor's 1 + tau_a, the DOF nodes) are exact rationals, rounded once by ``float``;
- the Gauss–Legendre nodes by Newton's method on the Legendre polynomial P_r (three-term
  recurrence) in ``mpmath`` at :data:`DIGITS` significant digits, the weights
  2 / ((1 - x^2) P_r'(x)^2) (Abramowitz & Stegun 25.4.29), both mapped to [0, 1];
- the basis and its derivative at those nodes by Horner's rule in ``mpmath`` on the exact
  coefficients.

``float(mpf)`` rounds to nearest; a value below 10^(-3/4 :data:`DIGITS`) is an exact zero
computed with rounding noise (the basis vanishes at some Gauss nodes). The whole
computation is repeated at :data:`CHECK_DIGITS` digits and every double must agree (a value
within 1e-40 of a rounding midpoint would differ), so each entry is the correctly rounded
exact value.

References
----------
Seed 001 (Zhang, Wang & Ding), eqs. (5)-(16); docs/explanation/hermite.md; Abramowitz &
Stegun, *Handbook of Mathematical Functions*, 1964, 22.7.10 and 25.4.29; Golub & Welsch,
Math. Comp. 23 (1969) 221-230.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import mpmath

__all__ = ["CHECK_DIGITS", "DATA_PATH", "DIGITS", "GAUSS_MAX", "ORDER_MAX", "exact_tables",
           "main", "render"]

ORDER_MAX = 6
GAUSS_MAX = 12
DIGITS = 40
CHECK_DIGITS = 60
DATA_PATH = Path(__file__).with_name("hermite_tables_data.py")
COMMAND = "python -m mbstudy.solvers.hermite_tables_gen"

Poly = list[Fraction]  # coefficients, lowest degree first


def _mul(a: Poly, b: Poly) -> Poly:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _add(a: Poly, b: Poly) -> Poly:
    n = max(len(a), len(b))
    a = a + [Fraction(0)] * (n - len(a))
    b = b + [Fraction(0)] * (n - len(b))
    return [x + y for x, y in zip(a, b, strict=True)]


def _scale(a: Poly, s: Fraction) -> Poly:
    return [x * s for x in a]


def _der(a: Poly) -> Poly:
    return [k * a[k] for k in range(1, len(a))] or [Fraction(0)]


def _val(a: Poly, x):  # x: Fraction or mpf
    s = 0 * x
    for c in reversed(a):
        s = s * x + c
    return s


def _lagrange(nodes: list[Fraction]) -> list[Poly]:
    out = []
    for k, tk in enumerate(nodes):
        lk = [Fraction(1)]
        for j, tj in enumerate(nodes):
            if j != k:
                lk = _mul(lk, [-tj / (tk - tj), 1 / (tk - tj)])
        out.append(lk)
    return out


def exact_basis(order: int) -> tuple[list[Poly], list[int], list[Fraction]]:
    """The basis of ``hermite_basis.element_basis(order)`` with exact rational coefficients:
    (polynomials in DOF order, kind, tau)."""
    if order == 2:
        nodes = [Fraction(0), Fraction(1)]
        alphas, betas = [], []
        for tk, lk in zip(nodes, _lagrange(nodes), strict=True):
            l2 = _mul(lk, lk)
            dlk = _val(_der(lk), tk)
            alphas.append(_mul([1 + 2 * dlk * tk, -2 * dlk], l2))
            betas.append(_mul([-tk, Fraction(1)], l2))
        return alphas + betas, [0, 0, 1, 1], [*nodes, *nodes]
    nodes = [Fraction(k, order - 1) for k in range(order)]
    omega = [Fraction(1)]
    for tk in nodes:
        omega = _mul(omega, [-tk, Fraction(1)])
    dom = _val(_der(omega), Fraction(0))
    alphas = [_add(lk, _scale(omega, -_val(_der(lk), Fraction(0)) / dom))
              for lk in _lagrange(nodes)]  # fmt: skip
    return [*alphas, _scale(omega, 1 / dom)], [0] * order + [1], [*nodes, Fraction(0)]


def _legendre(r: int, x: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    """P_r(x) and P_r'(x) by the three-term recurrence (A&S 22.7.10); |x| < 1."""
    p0, p1 = mpmath.mpf(1), x
    for k in range(2, r + 1):
        p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
    if r == 0:
        return p0, mpmath.mpf(0)
    return p1, r * (x * p1 - p0) / (x * x - 1)


def _gauss(r: int) -> tuple[list[mpmath.mpf], list[mpmath.mpf]]:
    """r-point Gauss–Legendre nodes (ascending) and weights on [0, 1] at the current
    ``mpmath.mp.dps``."""
    tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 3)
    xs, ws = [], []
    for j in range(r):
        x = mpmath.cos(mpmath.pi * (j + mpmath.mpf(0.75)) / (r + mpmath.mpf(0.5)))
        for _ in range(200):
            p, dp = _legendre(r, x)
            dx = p / dp
            x -= dx
            if abs(dx) < tol:
                break
        else:
            raise RuntimeError(f"Newton on P_{r} did not converge")
        p, dp = _legendre(r, x)
        xs.append(x)
        ws.append(2 / ((1 - x * x) * dp * dp))
    pairs = sorted(zip(xs, ws, strict=True))
    return [(x + 1) / 2 for x, _ in pairs], [w / 2 for _, w in pairs]


def _round(x: mpmath.mpf) -> float:
    """The double nearest to x; |x| below 10^(-3/4 digits) is an exact zero computed with
    rounding noise (order 3's beta' vanishes at the 2-point Gauss nodes (3 +- sqrt(3)) / 6;
    a nonzero value that small would differ between the two precisions, see ``main``)."""
    if abs(x) < mpmath.mpf(10) ** (-(3 * mpmath.mp.dps) // 4):
        return 0.0
    return float(x)


def exact_tables(digits: int = DIGITS) -> dict[str, list]:
    """Every table as nested lists of doubles, each the exact value rounded to nearest
    (packed layout of ``hermite_basis.packed_tables(ORDER_MAX, GAUSS_MAX)``)."""
    with mpmath.workdps(digits):
        c_mp, b_mp = [], []
        for r in range(1, GAUSS_MAX + 1):
            c, b = _gauss(r)
            c_mp += c
            b_mp += b
        nd_max = ORDER_MAX + 1
        zeros = [0.0] * len(c_mp)
        out: dict[str, list] = {
            "c": [_round(x) for x in c_mp], "b": [_round(x) for x in b_mp],
            "N": [], "dN": [], "N1": [], "dN1": [], "tau": [], "kind": [], "E": [],
        }  # fmt: skip
        for order in range(2, ORDER_MAX + 1):
            basis, kind, tau = exact_basis(order)
            nd = len(basis)
            pad = nd_max - nd
            ders = [_der(f) for f in basis]
            coef = [[mpmath.mpf(x.numerator) / x.denominator for x in f] for f in basis]
            dcoef = [[mpmath.mpf(x.numerator) / x.denominator for x in f] for f in ders]
            out["N"].append([[_round(_val(f, x)) for x in c_mp] for f in coef] + [zeros] * pad)
            out["dN"].append([[_round(_val(f, x)) for x in c_mp] for f in dcoef] + [zeros] * pad)
            out["N1"].append([float(_val(f, Fraction(1))) for f in basis] + [0.0] * pad)
            out["dN1"].append([float(_val(f, Fraction(1))) for f in ders] + [0.0] * pad)
            out["tau"].append([float(t) for t in tau] + [0.0] * pad)
            out["kind"].append(kind + [0] * pad)
            E = [[float(_val(f if k2 == 0 else df, 1 + t2)) for f, df in zip(basis, ders,
                                                                              strict=True)]
                 + [0.0] * pad for k2, t2 in zip(kind, tau, strict=True)]  # fmt: skip
            out["E"].append(E + [[0.0] * nd_max] * pad)
    return out


def _fmt(x: float | int) -> str:
    return repr(x)


def _array(value: list | float | int, indent: int) -> list[str]:
    """Lines of a nested tuple literal; a 1-D row wrapped at 100 characters."""
    pad = " " * indent
    if not isinstance(value[0], list):
        items = [_fmt(x) + "," for x in value]
        lines, line = [], pad + "("
        for it in items:
            if len(line) + len(it) + 1 > 99:
                lines.append(line.rstrip())
                line = pad + "    "
            line += it + " "
        lines.append(line.rstrip() + "),")
        return lines
    lines = [pad + "("]
    for v in value:
        lines += _array(v, indent + 4)
    lines.append(pad + "),")
    return lines


_HEADER = f'''"""The ``hermite`` integrator's Gauss–Legendre and basis tables, correctly rounded.

GENERATED by ``{COMMAND}``
(solvers/hermite_tables_gen.py): do not edit; its ``--check`` fails if this file is stale.
Every entry is the double nearest to its exact value (mpmath at {DIGITS} digits, confirmed at
{CHECK_DIGITS}; exact rationals where the point is rational). Packed layout:
``hermite_basis.packed_tables``; o = order - 2, a the DOF, the r-point rule at
[r (r - 1) / 2, r (r + 1) / 2).
"""

ORDER_MAX = {ORDER_MAX}
GAUSS_MAX = {GAUSS_MAX}
'''

_DOC = {
    "c": "Gauss–Legendre nodes on [0, 1] [off + j]",
    "b": "Gauss–Legendre weights on [0, 1] [off + j]",
    "N": "N_a(c) [o][a][off + j]",
    "dN": "N_a'(c) [o][a][off + j]",
    "N1": "N_a(1) [o][a]",
    "dN1": "N_a'(1) [o][a]",
    "tau": "DOF nodes [o][a]",
    "kind": "DOF kinds, 0 value, 1 derivative [o][a]",
    "E": "predictor [o][a2][a]",
}


def render(tables: dict[str, list] | None = None) -> str:
    """The text of the data module."""
    tables = exact_tables() if tables is None else tables
    lines = [_HEADER]
    for key, value in tables.items():
        body = _array(value, 0)
        body[-1] = body[-1].rstrip(",")
        lines.append(f"# {_DOC[key]}\n{key.upper()} = " + "\n".join(body).lstrip() + "\n")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` compare) solvers/hermite_tables_data.py; exit status."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    tables = exact_tables()
    if exact_tables(CHECK_DIGITS) != tables:
        print("hermite tables: rounding differs between 40 and 60 digits", file=sys.stderr)
        return 1
    text = render(tables)
    if args.check:
        current = DATA_PATH.read_text(encoding="utf-8") if DATA_PATH.is_file() else ""
        if current != text:
            print(f"{DATA_PATH.name} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    DATA_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
