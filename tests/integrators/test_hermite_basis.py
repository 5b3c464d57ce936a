"""Hermite bases of seed 001 (docs/explanation/methods.md#hermite): numpy reference and kernel
templates.

No kernel is compiled here: the kernel's basis/quadrature templates are plain Python
functions in ``solvers/integrators/hermite.py`` and run uninterpreted by numba.
"""

from __future__ import annotations

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


@pytest.mark.parametrize("r", [1, 2, 3, 4, 7, 12])
def test_kernel_gauss_legendre(r: int) -> None:
    """The kernel's Newton-on-P_r nodes and weights equal numpy's leggauss on [0, 1]."""
    c = np.zeros(r)
    b = np.zeros(r)
    H.integ_gauss_legendre(r, c, b)
    c_ref, b_ref = hb.gauss_legendre(r)
    np.testing.assert_allclose(c, c_ref, atol=1e-15)
    np.testing.assert_allclose(b, b_ref, atol=1e-15)
    assert b.sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("order", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("r", [2, 3, 5])
def test_kernel_basis_tables_match_numpy(order: int, r: int) -> None:
    """The kernel's jitted-basis tables equal hermite_basis.basis_tables (two constructions)."""
    nd = 4 if order == 2 else order + 1
    C = np.zeros((nd, H.HERMITE_NCOEF))
    kind = np.zeros(nd, dtype=np.int64)
    tau = np.zeros(nd)
    assert H.integ_basis(order, C, kind, tau) == nd
    c = np.zeros(r)
    b = np.zeros(r)
    H.integ_gauss_legendre(r, c, b)
    N, dN = np.zeros((nd, r)), np.zeros((nd, r))
    N1, dN1, E = np.zeros(nd), np.zeros(nd), np.zeros((nd, nd))
    H.integ_tables(C, nd, kind, tau, c, N, dN, N1, dN1, E)
    ref = hb.basis_tables(order, r)
    np.testing.assert_array_equal(kind, ref["kind"])
    np.testing.assert_allclose(tau, ref["tau"], atol=1e-15)
    for key, val in (("N", N), ("dN", dN), ("N1", N1), ("dN1", dN1)):
        np.testing.assert_allclose(val, ref[key], atol=1e-10, err_msg=key)
    # end values: q_d(1) = q_{i+1} (the end DOF)
    iend = 1 if order == 2 else order - 1
    np.testing.assert_allclose(N1, np.eye(nd)[iend], atol=1e-10)
    # the predictor table extrapolates cubics (order 2) / degree-s polynomials exactly
    basis, _, _ = hb.element_basis(order)
    f = Polynomial(np.arange(1.0, (3 if order == 2 else order) + 2))
    df = f.deriv()
    X = np.array([f(t) if k == 0 else df(t) for k, t in zip(kind, tau, strict=True)])
    Xn = np.array([f(1 + t) if k == 0 else df(1 + t) for k, t in zip(kind, tau, strict=True)])
    np.testing.assert_allclose(E @ X, Xn, rtol=1e-9)
    assert len(basis) == nd
