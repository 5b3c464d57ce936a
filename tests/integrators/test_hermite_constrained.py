"""Hermite DVI with holonomic constraints (docs/explanation/hermite.md#properties 3, 8; seed 001).

Kernels: (pendulum, none, hermite), (pendulum, none, rk4), (manipulator, none, hermite),
(manipulator, none, rk4) and (andrews, none, hermite) (configuration-dependent M, a
drive). The long runs use h = 0.01 / 0.005 and take about a second each.
"""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.solvers import registry
from mbstudy.solvers.metrics import compute_metrics
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import NEWTON_FAILED, OK, STEP_BUDGET
from scipy.integrate import solve_ivp

TOL = 1e-10  # the default newton_tol


def _metrics(res) -> dict[str, float]:
    return compute_metrics(res, None, np.zeros(res.n, dtype=bool))




# ---------------------------------------------------------------- pendulum


def _polar_pendulum(t_end: float, g: float = 9.81, L: float = 1.0) -> np.ndarray:
    """Independent reference: theta'' = -(g/L) sin theta from horizontal rest, as (x, y)."""
    sol = solve_ivp(lambda t, y: [y[1], -g / L * np.sin(y[0])], (0.0, t_end),
                    [np.pi / 2, 0.0], method="DOP853", rtol=1e-13, atol=1e-14)  # fmt: skip
    th = sol.y[0, -1]
    return np.array([L * np.sin(th), -L * np.cos(th)])


@pytest.mark.parametrize("order", [2, 3])
def test_pendulum_constraints_kept_at_nodes(order: int) -> None:
    """Phi(q_i) = 0 to the Newton tolerance at every node (seed 001: positions kept exactly)."""
    res = run_case("pendulum", "none", "hermite", t_end=10.0, samples=1001,
                   integrator_params={"h": 0.01, "order": order})  # fmt: skip
    assert res.status == OK
    q0 = res.q[0]
    assert np.max(res.D[:, 0]) <= TOL * max(1.0, np.max(np.abs(q0)))
    assert res.counters[0] == 1000 and res.counters[3] > 0


@pytest.mark.parametrize("order", [2, 3])
def test_pendulum_order2_with_node_multipliers(order: int) -> None:
    """Node-only multipliers limit the order to 2 for any degree (A.6 item 3)."""
    qref = _polar_pendulum(1.0)
    hs = [0.05, 0.025, 0.0125, 0.00625]
    errs = []
    for h in hs:
        res = run_case("pendulum", "none", "hermite", t_end=1.0, samples=2,
                       integrator_params={"h": h, "order": order})  # fmt: skip
        assert res.status == OK
        errs.append(float(np.linalg.norm(res.q[-1] - qref)))
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert 1.95 < slope < 2.05, errs
    assert errs[0] == pytest.approx(7.32e-3, rel=2e-3)  # A.6 item 3


def test_pendulum_energy_bounded_while_rk4_grows() -> None:
    """200 s at h = 0.01: DVI energy error bounded, RK4 (index-1, unstabilized) grows (A.6 8)."""
    dvi = _metrics(run_case("pendulum", "none", "hermite", t_end=200.0, samples=2001,
                            integrator_params={"h": 0.01}))  # fmt: skip
    rk4 = _metrics(run_case("pendulum", "none", "rk4", t_end=200.0, samples=2001,
                            integrator_params={"h": 0.01}))  # fmt: skip
    assert dvi["de_last"] / dvi["de_first"] < 2.0
    assert rk4["de_last"] / rk4["de_first"] > 10.0
    assert dvi["de_max"] == pytest.approx(3.61e-3, rel=5e-3)  # A.6 item 8
    assert dvi["max_phi"] <= TOL and rk4["max_phi"] > 1e-3


def test_pendulum_velocity_rules() -> None:
    """A.5: the rule changes only the reported velocity; (c) and (d) halve the energy error."""
    out = {}
    for rule in ("end_slope", "legendre", "half_impulse", "projection"):
        res = run_case("pendulum", "none", "hermite", t_end=10.0, samples=1001,
                       integrator_params={"h": 0.01, "velocity": rule})  # fmt: skip
        assert res.status == OK
        out[rule] = (res, _metrics(res))
    q = out["half_impulse"][0].q
    for res, _ in out.values():
        np.testing.assert_array_equal(res.q, q)  # same trajectory
    mt = {k: v[1] for k, v in out.items()}
    assert mt["projection"]["max_dphi"] < 1e-12
    assert mt["half_impulse"]["max_dphi"] < 0.02 * mt["end_slope"]["max_dphi"]
    assert mt["legendre"]["max_dphi"] == pytest.approx(mt["end_slope"]["max_dphi"], rel=1e-6)
    assert mt["half_impulse"]["de_max"] == pytest.approx(3.61e-3, rel=5e-3)
    assert mt["end_slope"]["de_max"] == pytest.approx(7.22e-3, rel=5e-3)
    # |phi_q v| here is twice A.5's (Phi = x^2 + y^2 - L^2 has gradient 2q)
    assert mt["end_slope"]["max_dphi"] == pytest.approx(2 * 0.147, rel=0.02)


def test_newton_failure_is_a_status() -> None:
    """An absurd step or a too small iteration limit end the case with NEWTON_FAILED."""
    res = run_case("pendulum", "none", "hermite", t_end=5.0, samples=11,
                   integrator_params={"h": 0.5})  # fmt: skip
    assert res.status == NEWTON_FAILED and res.error == ""
    assert res.k_reached == 0 and res.counters[3] > 0 and res.counters[0] == 0
    assert np.all(np.isnan(res.Y[1:]))
    res = run_case("pendulum", "none", "hermite", t_end=1.0, samples=11,
                   integrator_params={"h": 0.01, "newton_max": 1})  # fmt: skip
    assert res.status == NEWTON_FAILED and res.counters[3] == 1
    res = run_case("pendulum", "none", "hermite", t_end=1.0, samples=11,
                   integrator_params={"h": 0.01, "max_steps": 5})  # fmt: skip
    assert res.status == STEP_BUDGET and res.counters[0] == 5


def test_compatibility() -> None:
    """The DVI treats constraints itself (formulation none only); singular-M models refused."""
    assert registry.compatibility("pendulum", "none", "hermite") is None
    assert registry.compatibility("pendulum", "baumgarte", "hermite") is not None
    assert registry.compatibility("top", "none", "hermite") is not None


# ---------------------------------------------------------------- two-link manipulator


def test_manipulator_constraints_and_bounded_energy_vs_rk4() -> None:
    """Seed 001's arm, 200 s at h = 0.005: DVI energy bounded, RK4's grows, Phi kept."""
    dvi_res = run_case("manipulator", "none", "hermite", t_end=200.0, samples=2001,
                       integrator_params={"h": 0.005})  # fmt: skip
    rk4_res = run_case("manipulator", "none", "rk4", t_end=200.0, samples=2001,
                       integrator_params={"h": 0.005})  # fmt: skip
    assert dvi_res.status == OK and rk4_res.status == OK
    dvi, rk4 = _metrics(dvi_res), _metrics(rk4_res)
    q0 = dvi_res.q[0]
    assert dvi["max_phi"] <= TOL * max(1.0, np.max(np.abs(q0)))
    assert dvi["de_last"] / dvi["de_first"] < 2.0
    assert dvi["de_max"] < 0.1
    assert rk4["de_last"] / rk4["de_first"] > 10.0
    assert rk4["max_phi"] > 1e-2  # link 1 drifts off its pivot (seed 001, Figs. 6-7)


def test_manipulator_two_and_three_point_coincide() -> None:
    """Constant M and constant (gravity) forces: H2 and H3 give the same trajectory.

    Both force M q_d'' = h^2 Q on the cubic (the two Galerkin conditions fix the linear
    residual to zero), so the node sequences agree to (amplified) Newton tolerance.
    """
    r2 = run_case("manipulator", "none", "hermite", t_end=5.0, samples=501,
                  integrator_params={"h": 0.01, "order": 2})  # fmt: skip
    r3 = run_case("manipulator", "none", "hermite", t_end=5.0, samples=501,
                  integrator_params={"h": 0.01, "order": 3})  # fmt: skip
    assert r2.status == OK and r3.status == OK
    assert np.max(np.abs(r2.q - r3.q)) < 1e-6


# ---------------------------------------------------------------- configuration-dependent M


def test_andrews_mass_matrix_and_drive_work() -> None:
    """Andrews' squeezer (M(q), drive torque): order-2 self-convergence, energy balance.

    W (drive work by Gauss quadrature of model_power) closes the balance E - E0 - W to
    O(h^2); positions converge at order 2 (Richardson ratios ~4).
    """
    runs = []
    for h in (1e-4, 5e-5, 2.5e-5):
        res = run_case("andrews", "none", "hermite", t_end=0.03, samples=31,
                       integrator_params={"h": h})  # fmt: skip
        assert res.status == OK
        runs.append((res, _metrics(res)))
    d1 = np.max(np.abs(runs[0][0].q - runs[1][0].q))
    d2 = np.max(np.abs(runs[1][0].q - runs[2][0].q))
    assert 3.5 < d1 / d2 < 4.5
    du = [mt["du_max"] for _, mt in runs]
    assert 3.5 < du[0] / du[1] < 4.5 and 3.5 < du[1] / du[2] < 4.5
    assert du[-1] < 1e-4
    assert all(mt["max_phi"] < 1e-10 for _, mt in runs)
    assert runs[-1][0].work[-1] > 0.5  # the drive does work
