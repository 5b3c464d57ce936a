"""Straight-line stage combinations for the explicit Runge-Kutta driver (code generation).

The driver (solvers/integrators/_erk.py) keeps a method as data: the tableau ``RK_AB``
and the error weights ``RK_E``/``RK_E3``. Its generic templates ``integ_erk_combine`` and
``integ_erk_err_norm`` loop over a tableau row and test every coefficient for zero, for
every component of the state, at every stage. For the compiled kernels composition
(solvers/compose.py) replaces the two by the sources generated here from the same data:
one branch per tableau row with its non-zero coefficients written as literals, so the
emitted code is straight-line and the method stays a tableau.

The generated expressions keep the generic templates' operation order, so the results
are bit for bit the same: a single term as ``y + (h a) k``, several as
``y + h ((0.0 + a_0 k_0) + a_1 k_1 + ...)`` in stage order (the ``0.0 +`` is the generic
loop's accumulator start; it only matters for the sign of a zero sum), the error sums
likewise. Literals are written with ``repr`` (shortest round-trip form: the same float).

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1 (Butcher
tableaux), II.4 (embedded error estimate), II.10 (DOP853's 5(3) estimate).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np


def _lit(x: float) -> str:
    """A float literal that parses to exactly ``x`` (parenthesised when negative)."""
    s = repr(float(x))
    return f"({s})" if s.startswith("-") else s


def _sum(coeffs: np.ndarray, stop: int, k: str) -> str | None:
    """``(0.0 + c_0 k_0) + c_1 k_1 + ...`` over the non-zero c_j, j < stop, in stage
    order, as the generic loops accumulate it; None when every c_j is zero."""
    terms = [f"{_lit(coeffs[j])} * {k}[{j}, i]" for j in range(stop) if coeffs[j] != 0.0]
    if not terms:
        return None
    expr = f"(0.0 + {terms[0]})"
    for term in terms[1:]:
        expr = f"({expr} + {term})"
    return expr


def combine_source(ab: np.ndarray, stages: int) -> str:
    """Source of ``integ_erk_combine(y, h, K, row, out)`` for the tableau ``ab``."""
    lines = [
        "def integ_erk_combine(y, h, K, row, out):",
        '    """out = y + h sum_j RK_AB[row, j] K[j], unrolled from the tableau'
        ' (solvers/integrators/_erk_unroll.py)."""',
    ]
    for row in range(1, stages + 1):
        nk = min(row, stages)
        nz = [j for j in range(nk) if ab[row, j] != 0.0]
        lines.append(f"    {'if' if row == 1 else 'elif'} row == {row}:")
        if len(nz) == 1:
            j = nz[0]
            lines.append(f"        ha = h * {_lit(ab[row, j])}")
            lines.append("        for i in range(y.size):")
            lines.append(f"            out[i] = y[i] + ha * K[{j}, i]")
        elif not nz:
            lines.append("        for i in range(y.size):")
            lines.append("            out[i] = y[i] + h * 0.0")
        else:
            lines.append("        for i in range(y.size):")
            lines.append(f"            out[i] = y[i] + h * {_sum(ab[row], nk, 'K')}")
    return "\n".join(lines) + "\n"


def err_norm_source(e: np.ndarray, e3: np.ndarray, kind: int, stages: int) -> str:
    """Source of ``integ_erk_err_norm(K, y0, y1, h, rtol, atol)`` for the error weights
    (``kind`` = RK_ERR: 0 none, 1 one estimator, 2 DOP853's 5(3) pair)."""
    head = [
        "def integ_erk_err_norm(K, y0, y1, h, rtol, atol):",
        '    """Scaled error norm of the embedded estimator(s), unrolled from the error'
        ' weights (solvers/integrators/_erk_unroll.py)."""',
        "    n = y0.size",
        "    s5 = 0.0",
        "    s3 = 0.0",
        "    for i in range(n):",
        "        sc = atol + rtol * max(abs(y0[i]), abs(y1[i]))",
        f"        e = {_sum(e, stages, 'K') or '0.0'}",
    ]
    if kind == 2:
        body = [
            f"        e3 = {_sum(e3, stages, 'K') or '0.0'}",
            "        e = e / sc",
            "        e3 = e3 / sc",
            "        s5 += e * e",
            "        s3 += e3 * e3",
            "    if s5 == 0.0 and s3 == 0.0:",
            "        return 0.0",
            "    return abs(h) * s5 / np.sqrt(n * (s5 + 0.01 * s3))",
        ]
    else:  # kind 1 (and 0: fixed step, never called, kept compilable)
        body = [
            "        r = h * e / sc",
            "        s5 += r * r",
            "    return np.sqrt(s5 / n)",
        ]
    return "\n".join(head + body) + "\n"


def generate_templates(integ: ModuleType) -> dict[str, str]:
    """The unrolled templates for the tableau of integrator module ``integ`` (called by
    solvers/compose.py for every module that shares the driver)."""
    if not hasattr(integ, "RK_AB"):
        return {}
    stages = int(integ.RK_STAGES)
    return {
        "integ_erk_combine": combine_source(np.asarray(integ.RK_AB), stages),
        "integ_erk_err_norm": err_norm_source(
            np.asarray(integ.RK_E), np.asarray(integ.RK_E3), int(integ.RK_ERR), stages
        ),
    }
