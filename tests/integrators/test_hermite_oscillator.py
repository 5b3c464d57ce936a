"""Hermite DVI on the unconstrained harmonic oscillator (m = 0;
docs/explanation/hermite.md#properties 2, 7).

One kernel: (oscillator, none, hermite). Errors are against the exact solution;
orders are fitted log-log slopes.
"""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.solvers.metrics import compute_metrics
from mbstudy.solvers.models import oscillator as osc
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import OK

P = pack_params(osc.SPEC.params, {})
T = 10.0


def _max_error(h: float, **ip: object) -> float:
    res = run_case("oscillator", "none", "hermite", t_end=T, samples=round(T / h) + 1,
                   integrator_params={"h": h, **ip})  # fmt: skip
    assert res.status == OK, res.status
    x, _ = osc.exact(P, res.t)
    return float(np.max(np.abs(res.q[:, 0] - x)))


def _slope(hs: list[float], errs: list[float]) -> float:
    return float(np.polyfit(np.log(hs), np.log(errs), 1)[0])


def test_order6_with_three_gauss_points() -> None:
    """Two-point cubic + 3 Gauss points: superconvergent order 6
    (docs/explanation/hermite.md#properties 2)."""
    hs = [0.2, 0.1, 0.05]
    errs = [_max_error(h, order=2, n_gauss=3, newton_tol=1e-13) for h in hs]
    assert 5.7 < _slope(hs, errs) < 6.3, errs
    assert errs[0] < 1e-8


def test_order2_with_two_gauss_points() -> None:
    """2 Gauss points under-integrate the kinetic term: order drops to 2
    (docs/explanation/hermite.md#properties 2)."""
    hs = [0.2, 0.1, 0.05]
    errs = [_max_error(h, order=2, n_gauss=2) for h in hs]
    assert 1.9 < _slope(hs, errs) < 2.1, errs
    assert errs[-1] > 1e-4  # far worse than with 3 points


@pytest.mark.parametrize("order", [3, 4])
def test_known_derivative_schemes_order_s(order: int) -> None:
    """s-point degree-s schemes with w_i = M^-1 p_i^+: order s without constraints (measured)."""
    hs = [0.2, 0.1, 0.05]
    errs = [_max_error(h, order=order, n_gauss=order, newton_tol=1e-13) for h in hs]
    assert order - 0.15 < _slope(hs, errs) < order + 0.15, errs


def _one_step_map(h: float, order: int) -> np.ndarray:
    """The 2 x 2 matrix of (x, v)_0 -> (x, v)_1, built column by column from unit states.

    With m = 0 every velocity rule is M^-1 p, so this is the DVI's map of (q, p/M).
    """
    A = np.zeros((2, 2))
    for col, (x0, v0) in enumerate(((1.0, 0.0), (0.0, 1.0))):
        res = run_case("oscillator", "none", "hermite", t_end=h, samples=2,
                       integrator_params={"h": h, "order": order, "n_gauss": max(3, order),
                                          "newton_tol": 1e-14},
                       q0=np.array([x0]), v0=np.array([v0]))  # fmt: skip
        assert res.status == OK
        A[:, col] = [res.q[1, 0], res.v[1, 0]]
    return A


@pytest.mark.parametrize("hw", [0.1, 0.5, 1.0, 2.0])
def test_linear_stability_order2_unit_modulus(hw: float) -> None:
    """H2 is symplectic: both eigenvalues of the one-step map have |lambda| = 1 (A.6 item 7)."""
    lam = np.linalg.eigvals(_one_step_map(hw, 2))
    np.testing.assert_allclose(np.abs(lam), 1.0, atol=1e-10)
    assert abs(np.linalg.det(_one_step_map(hw, 2)) - 1.0) < 1e-10  # area preserving


def test_linear_stability_order3_slightly_dissipative() -> None:
    """H3 with w_i = M^-1 p_i^+ is not symplectic: |lambda| = 0.99997 at h w = 0.5 (A.6 item 7)."""
    lam = np.abs(np.linalg.eigvals(_one_step_map(0.5, 3)))
    assert np.all(lam < 1.0)
    np.testing.assert_allclose(lam, 0.99997, atol=1e-5)


def test_unconstrained_metrics_and_energy() -> None:
    """m = 0 runs through run_case and compute_metrics; energy stays bounded (no drift)."""
    res = run_case("oscillator", "none", "hermite", t_end=200.0, samples=2001,
                   integrator_params={"h": 0.1})  # fmt: skip
    assert res.status == OK and res.m == 0
    mt = compute_metrics(res, None, osc.angle_mask(P))
    assert mt["rms_phi"] == 0.0 and mt["max_dphi"] == 0.0
    # order 6 at h w = 0.1: the energy error is rounding (~1e-14) over all 2000 steps, so
    # a ratio of its first and last windows would compare rounding noise
    assert mt["de_max"] < 1e-12
    assert res.counters[0] == 2000  # steps: exactly t_end / h
    # 2 Gauss points (order 2): an O(h^2) energy error well above rounding, bounded
    # (variational, hence symplectic: docs/explanation/hermite.md#properties 2, 7)
    res2 = run_case("oscillator", "none", "hermite", t_end=200.0, samples=2001,
                    integrator_params={"h": 0.1, "n_gauss": 2})  # fmt: skip
    mt2 = compute_metrics(res2, None, osc.angle_mask(P))
    assert 1e-5 < mt2["de_first"] and mt2["de_max"] < 1e-3
    assert mt2["de_last"] / mt2["de_first"] < 1.01
