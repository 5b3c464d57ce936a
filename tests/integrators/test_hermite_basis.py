"""Hermite bases of seed 001 (docs/explanation/methods.md#hermite): the numpy construction and
the kernel's tables.

No kernel is compiled here: the tables are module constants of
``solvers/integrators/hermite.py`` and its template that reads them runs as plain Python.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from math import factorial

import numpy as np
import pytest
from mbstudy.solvers import hermite_basis as hb
from mbstudy.solvers.integrators import hermite as H
from numpy.polynomial import Polynomial

TAU = np.linspace(0.0, 1.0, 41)


def _close(p: Polynomial, q: Polynomial, tol: float = 1e-12) -> bool:
    return bool(np.max(np.abs(p(TAU) - q(TAU))) < tol)


def test_two_point_cubic_is_seed_eq16() -> None:
    """The general unknown-derivative construction (eqs. (11)-(15)) reproduces eq. (16)."""
    al, be = hb.hermite_unknown_derivative(np.array([0.0, 1.0]))
    al16, be16 = hb.two_point_cubic()
    for p, q in zip(al + be, al16 + be16, strict=True):
        assert _close(p, q)
    assert _close(al[0] + al[1], Polynomial([1.0]))  # partition of unity


@pytest.mark.parametrize("nodes", [[0.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.3, 0.7, 1.0]])
def test_unknown_derivative_interpolation_and_remainder(nodes: list[float]) -> None:
    """alpha_k(tau_j) = delta, alpha_k' = 0, beta_k = 0, beta_k' = delta; exact remainder."""
    nodes = np.array(nodes)
    s = nodes.size
    al, be = hb.hermite_unknown_derivative(nodes)
    for k in range(s):
        for j, tj in enumerate(nodes):
            assert al[k](tj) == pytest.approx(float(j == k), abs=1e-12)
            assert al[k].deriv()(tj) == pytest.approx(0.0, abs=1e-11)
            assert be[k](tj) == pytest.approx(0.0, abs=1e-12)
            assert be[k].deriv()(tj) == pytest.approx(float(j == k), abs=1e-11)
    # f = tau^(2s): f^(2s)/(2s)! = 1, so f - interpolant = kernel exactly (eq. (17) for s = 2)
    f = Polynomial([0.0] * (2 * s) + [1.0])
    interp = sum(a * f(t) for a, t in zip(al, nodes, strict=True)) + sum(
        b * f.deriv()(t) for b, t in zip(be, nodes, strict=True)
    )
    ker, fac = hb.remainder_unknown(nodes)
    assert fac == pytest.approx(1.0 / np.prod(np.arange(1, 2 * s + 1)))
    assert _close(f - interp, ker, 1e-10)
    if s == 2:
        assert _close(ker, Polynomial([0, 0, 1]) * Polynomial([-1, 1]) ** 2)


def test_three_point_cubic_is_seed_eq9() -> None:
    """The known-derivative construction at nodes 0, 1/2, 1, tau_* = 0 gives eq. (9)."""
    al, be = hb.hermite_known_derivative(np.array([0.0, 0.5, 1.0]), 0.0)
    al9, be9 = hb.three_point_cubic()
    for p, q in zip([*al, be], [*al9, be9], strict=True):
        assert _close(p, q)
    assert all(abs(a.deriv()(0.0)) < 1e-12 for a in al)  # zero slopes at tau = 0
    assert abs(al[1](0.0)) < 1e-14 and abs(al[1](1.0)) < 1e-14


@pytest.mark.parametrize(
    "nodes,tau_star",
    [([0.0, 0.5, 1.0], 0.0), ([0.0, 1 / 3, 2 / 3, 1.0], 0.0), ([0.0, 0.25, 0.75], 0.0),
     ([0.0, 0.5, 1.0], 0.5), ([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 0.0)],
)  # fmt: skip
def test_known_derivative_interpolation_and_remainder(nodes: list[float], tau_star: float) -> None:
    """alpha_k(tau_j) = delta, beta(tau_j) = 0; derivative condition; exact remainder."""
    nodes = np.array(nodes)
    s = nodes.size
    al, be = hb.hermite_known_derivative(nodes, tau_star)
    for k in range(s):
        for j, tj in enumerate(nodes):
            assert al[k](tj) == pytest.approx(float(j == k), abs=1e-11)
        assert al[k].deriv()(tau_star) == pytest.approx(0.0, abs=1e-10)
    assert all(abs(be(t)) < 1e-12 for t in nodes)
    assert be.deriv()(tau_star) == pytest.approx(1.0)
    f = Polynomial([0.0] * (s + 1) + [1.0])  # tau^(s+1)
    interp = sum(a * f(t) for a, t in zip(al, nodes, strict=True)) + be * f.deriv()(tau_star)
    ker, fac = hb.remainder_known(nodes, tau_star)
    assert fac == pytest.approx(1.0 / np.prod(np.arange(1, s + 2)))
    assert _close(f - interp, ker, 1e-9)


def test_eq10_remainder_kernel() -> None:
    """Eq. (10): R = q''''(xi) h^4 / 24 * tau^2 (tau - 1/2)(tau - 1)."""
    ker, fac = hb.remainder_known(np.array([0.0, 0.5, 1.0]), 0.0)
    assert fac == pytest.approx(1 / 24)
    assert _close(ker, Polynomial([0, 0, 1]) * Polynomial([-0.5, 1]) * Polynomial([-1, 1]))


def test_kinetic_matrices_of_a4() -> None:
    """h K = int N_a' N_b' (docs/explanation/methods.md#hermite, h = 1), exact with 3 Gauss
    points."""
    hk2 = np.array([[6 / 5, -6 / 5, 1 / 10, 1 / 10], [-6 / 5, 6 / 5, -1 / 10, -1 / 10],
                    [1 / 10, -1 / 10, 2 / 15, -1 / 30], [1 / 10, -1 / 10, -1 / 30, 2 / 15]])
    hk3 = np.array([[62, -76, 14, 9], [-76, 128, -52, -12], [14, -52, 38, 3],
                    [9, -12, 3, 3]]) / 15.0  # fmt: skip
    np.testing.assert_allclose(hb.kinetic_matrix(2), hk2, atol=1e-14)
    np.testing.assert_allclose(hb.kinetic_matrix(3), hk3, atol=1e-13)
    np.testing.assert_allclose(hb.kinetic_matrix(2, 3), hk2, atol=1e-14)
    # 2 Gauss points under-integrate the quartic integrand (docs/explanation/hermite.md#properties
    # 2)
    assert np.max(np.abs(hb.kinetic_matrix(2, 2) - hk2)) > 1e-3
    assert np.linalg.matrix_rank(hb.kinetic_matrix(2, 2)) == 2


# ------------------------------------------- the kernel's tables (module constants)

ORDERS = range(2, H.HERMITE_ORDER_MAX + 1)
RULES = range(1, H.HERMITE_GAUSS_MAX + 1)


def _kernel_tables(order: int, r: int) -> dict[str, np.ndarray]:
    """One case's tables as the kernel reads them (its template, run as plain Python)."""
    nd = 4 if order == 2 else order + 1
    t = {"c": np.zeros(r), "b": np.zeros(r), "N": np.zeros((nd, r)), "dN": np.zeros((nd, r)),
         "N1": np.zeros(nd), "dN1": np.zeros(nd), "E": np.zeros((nd, nd)),
         "kind": np.zeros(nd, dtype=np.int64), "tau": np.zeros(nd)}  # fmt: skip
    H.integ_tables(order, r, t["c"], t["b"], t["N"], t["dN"], t["N1"], t["dN1"], t["E"],
                   t["kind"], t["tau"])  # fmt: skip
    return t


def test_gauss_tables_closed_form() -> None:
    """Nodes and weights of 1, 2, 3 points: x = 0; +-1/sqrt(3); 0, +-sqrt(3/5) with weights
    2; 1, 1; 8/9, 5/9, 5/9 on [-1, 1] (Abramowitz & Stegun 25.4.29), mapped to [0, 1]:
    c = (1 + x) / 2, b = w / 2. The tables hold each correctly rounded, bit for bit: the
    reference is the closed form in 50-digit decimal arithmetic (the standard library's
    correctly rounded square root, not the tables' generator), rounded once to double."""
    with localcontext() as ctx:
        ctx.prec = 50
        half, s3, s35 = Decimal(1) / 2, Decimal(3).sqrt(), (Decimal(3) / 5).sqrt()
        ref = {1: ([half], [Decimal(1)]),
               2: ([half - half / s3, half + half / s3], [half, half]),
               3: ([half - half * s35, half, half + half * s35],
                   [Decimal(5) / 18, Decimal(4) / 9, Decimal(5) / 18])}  # fmt: skip
        ref = {r: ([float(x) for x in c], [float(x) for x in b]) for r, (c, b) in ref.items()}
    for r, (c, b) in ref.items():
        t = _kernel_tables(2, r)
        np.testing.assert_array_equal(t["c"], c)
        np.testing.assert_array_equal(t["b"], b)


@pytest.mark.parametrize("r", RULES)
def test_gauss_tables_exact_to_degree_2r_minus_1(r: int) -> None:
    """sum b = 1, nodes ascending in (0, 1) and symmetric, sum b c^k = 1/(k + 1) for every
    k <= 2r - 1 (the defining property); for small r the degree 2r is not integrated
    exactly: its error on tau^(2r) is (r!)^4 / ((2r + 1) ((2r)!)^2) (Abramowitz & Stegun
    25.4.30 mapped to [0, 1]).

    The sums are evaluated exactly (rational arithmetic on the tabulated doubles), so their
    error is the tables' own: with every c_j, b_j within half an ulp (u = 2^-53 relative)
    of its exact value, sum b c^k is within (k + 1) u of 1/(k + 1) relative; allowed
    (k + 2) u. (NumPy's leggauss weights are up to 60 ulps off for large r.)"""
    t = _kernel_tables(2, r)
    c, b = t["c"], t["b"]
    assert np.all(b > 0) and np.all(np.diff(c) > 0) and 0 < c[0] and c[-1] < 1
    np.testing.assert_allclose(c + c[::-1], 1.0, rtol=0, atol=2.3e-16)
    cf, bf = [Fraction(x) for x in c], [Fraction(x) for x in b]
    u = Fraction(1, 2**53)
    for k in range(2 * r):
        exact = Fraction(1, k + 1)
        err = abs(sum(bj * cj**k for bj, cj in zip(bf, cf, strict=True)) - exact)
        assert err <= (k + 2) * u * exact, (k, float(err / exact / u))
    if r <= 4:
        err = factorial(r) ** 4 / ((2 * r + 1) * factorial(2 * r) ** 2)
        assert 1.0 / (2 * r + 1) - b @ c ** (2 * r) == pytest.approx(err, rel=1e-6)


def test_tables_are_the_generator_s_correctly_rounded_values() -> None:
    """The checked-in solvers/hermite_tables_data.py is what its generator writes now: every
    entry recomputed in 40-digit arithmetic (exact rational basis, Newton on P_r), rounded
    to nearest, and the same doubles at 60 digits (``--check``)."""
    from mbstudy.solvers import hermite_tables_gen as gen

    assert gen.main(["--check"]) == 0
    fresh = gen.exact_tables()
    packed = hb.packed_tables(gen.ORDER_MAX, gen.GAUSS_MAX)
    for key, value in fresh.items():
        np.testing.assert_array_equal(packed[key], np.array(value), err_msg=key)
    np.testing.assert_array_equal(H.HERMITE_N, packed["N"])


def test_generator_check_fails_on_a_stale_file(tmp_path, monkeypatch) -> None:
    """``--check`` exits 1 when one entry of the data module is one ulp off."""
    from mbstudy.solvers import hermite_tables_gen as gen

    text = gen.DATA_PATH.read_text(encoding="utf-8")
    stale = tmp_path / "hermite_tables_data.py"
    stale.write_text(text.replace("0.2113248654051871,", "0.21132486540518713,", 1))
    assert stale.read_text() != text
    monkeypatch.setattr(gen, "DATA_PATH", stale)
    assert gen.main(["--check"]) == 1


@pytest.mark.parametrize("order", ORDERS)
def test_basis_tables_reproduce_polynomials(order: int) -> None:
    """At every tabulated Gauss node the basis reproduces any polynomial of its degree
    (3 for order 2, s for order s) from the DOFs (values at the nodes, tau-derivative for a
    derivative DOF), and its derivative; at tau = 1 likewise; the predictor E gives the
    next interval's DOFs of the same polynomial. Reference: the polynomial itself."""
    deg = 3 if order == 2 else order
    rng = np.random.default_rng(order)
    for _ in range(3):
        f = Polynomial(rng.uniform(-1.0, 1.0, deg + 1))
        df = f.deriv()
        for r in RULES:
            t = _kernel_tables(order, r)
            X = np.array([f(x) if k == 0 else df(x) for k, x in zip(t["kind"], t["tau"],
                                                                   strict=True)])
            np.testing.assert_allclose(X @ t["N"], f(t["c"]), rtol=0, atol=1e-12)
            np.testing.assert_allclose(X @ t["dN"], df(t["c"]), rtol=0, atol=1e-11)
        assert X @ t["N1"] == pytest.approx(f(1.0), abs=1e-12)
        assert X @ t["dN1"] == pytest.approx(df(1.0), abs=1e-11)
        Xn = np.array([f(1 + x) if k == 0 else df(1 + x) for k, x in zip(t["kind"], t["tau"],
                                                                        strict=True)])
        np.testing.assert_allclose(t["E"] @ X, Xn, rtol=0, atol=1e-10)


@pytest.mark.parametrize("order", ORDERS)
def test_basis_tables_endpoint_and_layout(order: int) -> None:
    """Interpolation at tau = 1: N_a(1) = delta_{a, end} (q_d(1) = q_{i+1}); for order 2 the
    end slope is the derivative DOF Z_{i+1}. DOF kinds and nodes of seed eqs. (5)-(9), (16);
    the rows past n_dof in the packed arrays are zero."""
    nd = 4 if order == 2 else order + 1
    t = _kernel_tables(order, 5)
    iend = 1 if order == 2 else order - 1
    # exact rationals, correctly rounded: bit for bit
    np.testing.assert_array_equal(t["N1"], np.eye(nd)[iend])
    if order == 2:
        np.testing.assert_array_equal(t["dN1"], np.eye(4)[3])
        np.testing.assert_array_equal(t["kind"], [0, 0, 1, 1])
        np.testing.assert_array_equal(t["tau"], [0.0, 1.0, 0.0, 1.0])
    else:
        np.testing.assert_array_equal(t["kind"], [0] * order + [1])
        np.testing.assert_array_equal(t["tau"], [*(k / (order - 1) for k in range(order)), 0.0])
    o = order - 2
    for name in ("N", "DN", "N1", "DN1", "E", "KIND", "TAU"):
        assert not np.any(getattr(H, f"HERMITE_{name}")[o, nd:]), name
    assert not np.any(H.HERMITE_E[o, :, nd:])


def test_kinetic_matrix_from_the_kernel_tables() -> None:
    """h K = sum_j b_j N'(c_j) N'(c_j)^T from the tables equals the closed form of
    docs/explanation/methods.md#hermite (order 2, 3 Gauss points: the quartic integrand is
    integrated exactly)."""
    hk2 = np.array([[6 / 5, -6 / 5, 1 / 10, 1 / 10], [-6 / 5, 6 / 5, -1 / 10, -1 / 10],
                    [1 / 10, -1 / 10, 2 / 15, -1 / 30], [1 / 10, -1 / 10, -1 / 30, 2 / 15]])
    t = _kernel_tables(2, 3)
    np.testing.assert_allclose((t["dN"] * t["b"]) @ t["dN"].T, hk2, rtol=0, atol=1e-14)


@pytest.mark.parametrize("order", [2, 4, 6])
@pytest.mark.parametrize("r", [1, 3, 12])
def test_kernel_tables_are_the_numpy_construction(order: int, r: int) -> None:
    """The slice the kernel reads is basis_tables(order, r) of hermite_basis.py (the packing
    and the template's offsets agree): kinds and nodes bit for bit, the values to the NumPy
    construction's rounding (monomial form: up to ~1.4e3 eps at order 6)."""
    t = _kernel_tables(order, r)
    ref = hb.basis_tables(order, r)
    for key in ("kind", "tau"):
        np.testing.assert_array_equal(t[key], ref[key], err_msg=key)
    for key in ("c", "b", "N", "dN", "N1", "dN1", "E"):
        scale = max(1.0, float(np.abs(ref[key]).max()))
        np.testing.assert_allclose(t[key], ref[key], rtol=0, atol=2e3 * 2.3e-16 * scale,
                                   err_msg=key)


def test_tables_are_in_the_kernel_text_and_its_key() -> None:
    """The tables reach the kernel as literals of its text, so a change of their values
    changes the kernel's cache key (no compile here)."""
    from mbstudy.solvers.compose import generate_source, kernel_key

    text = generate_source("oscillator", "none", "hermite")
    assert "HERMITE_GAUSS_C = np.array(" in text and "HERMITE_N = np.array(" in text
    key = kernel_key("oscillator", "none", "hermite", text)
    mp = pytest.MonkeyPatch()
    try:
        b = H.HERMITE_GAUSS_B.copy()
        b[4] = np.nextafter(b[4], 1.0)  # one ulp of one weight of the 3-point rule
        mp.setattr(H, "HERMITE_GAUSS_B", b)
        text2 = generate_source("oscillator", "none", "hermite")
    finally:
        mp.undo()
    assert text2 != text
    assert kernel_key("oscillator", "none", "hermite", text2) != key
