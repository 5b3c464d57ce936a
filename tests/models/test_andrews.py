"""Tests of Andrews' squeezing mechanism (docs/explanation/models.md#andrews)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.assembly import AssemblyError
from mbstudy.solvers.models import andrews as mod
from mbstudy.solvers.registry import entries

# docs/explanation/models.md#andrews [V2: TS-F, deTestSet R yini, SciML, MEBDFI-drv]
Q0 = np.array([-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
               0.222668390165885884674473185609, 0.487364979543842550225598953530,
               -0.222668390165885884674473185609, 1.23054744454982119249735015568])  # fmt: skip
QDDOT0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415,
                   0, 0, 0, 0, 0])  # fmt: skip
LAMBDA0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122,
                    0, 0, 0, 0])  # fmt: skip


@pytest.fixture(scope="module")
def trajectory() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """DOP853 (rtol 1e-11) on the index-1 form over the benchmark interval [0, 0.03]."""
    p = kit.params(mod)
    t = np.linspace(0.0, 0.03, 31)
    q, v, w = kit.integrate(mod, p, t)
    return t, q, v, w


def test_spec() -> None:
    p = kit.params(mod)
    assert entries("model")["andrews"].module is mod
    assert kit.dims(mod, p) == (7, 6)
    assert p.size == 43
    assert mod.SPEC.t_end == 0.03
    assert mod.SPEC.driven and not mod.SPEC.conservative and not mod.SPEC.constant_mass
    assert mod.angle_mask(p).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_phi_q_and_gamma_against_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod)
    q = Q0 + 0.5 * rng.standard_normal(7)
    v = 100.0 * rng.standard_normal(7)
    a = 1e4 * rng.standard_normal(7)
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a, h=1e-4) < 1e-6


def test_default_initial_state_is_published() -> None:
    p = kit.params(mod)
    q0, v0 = mod.initial_state(p)
    np.testing.assert_array_equal(q0, Q0)
    np.testing.assert_array_equal(v0, np.zeros(7))
    kit.assert_initial_state_consistent(mod, p)


def test_index1_solution_at_t0_reproduces_published_qddot_and_lambda() -> None:
    # docs/explanation/models.md#andrews [D]: the index-1 system at (q0, 0) gives qddot0, lambda0.
    p = kit.params(mod)
    a, lam = kit.accel(mod, p, Q0, np.zeros(7), 0.0)
    np.testing.assert_allclose(a, QDDOT0, rtol=0, atol=1e-12 * 14222.44)
    np.testing.assert_allclose(lam, LAMBDA0, rtol=0, atol=1e-12 * 98.57)


def test_spring_energy_at_t0() -> None:
    # docs/explanation/models.md#andrews [D]: L = 0.0526725 m, V0 = 1.43579640 J (q0dot = 0: E0 =
    # V0).
    p = kit.params(mod)
    assert mod.energy(Q0, np.zeros(7), 0.0, p) == pytest.approx(1.43579640, abs=5e-9)
    compression = np.sqrt(2 * mod.energy(Q0, np.zeros(7), 0.0, p) / 4530.0)  # l0 - L
    assert 0.07785 - compression == pytest.approx(0.0526725, abs=5e-8)


@pytest.mark.parametrize("values", [{"beta0": 0.1}, {"ss": 0.0352, "xb": -0.0364}])
def test_changed_geometry_is_assembled_by_newton(values: dict) -> None:
    p = kit.params(mod, **values)
    q0, _ = mod.initial_state(p)
    if "beta0" in values:
        assert q0[0] == values["beta0"]
    kit.assert_initial_state_consistent(mod, p)
    assert np.max(np.abs(q0 - Q0)) < 0.5  # same assembly branch as the published state


def test_broken_geometry_raises_assembly_error() -> None:
    p = kit.params(mod, ss=1.0)  # point E out of reach of the crank (rr + d = 0.035 m)
    with pytest.raises(AssemblyError) as info:
        mod.initial_state(p)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("andrews:")


@pytest.mark.parametrize("seed", [0, 1])
def test_mass_matrix_symmetric_positive_definite(seed: int) -> None:
    p = kit.params(mod)
    q = Q0 + np.random.default_rng(seed).uniform(-3, 3, 7)
    M = kit.mass(mod, q, p)
    np.testing.assert_array_equal(M, M.T)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_velocity_terms_match_lagrange() -> None:
    # f - (mom, spring) must equal -Mdot qdot + 1/2 d/dq (qdot^T M qdot) (Lagrange).
    rng = np.random.default_rng(3)
    p = kit.params(mod, c0=0.0, mom=0.0)
    q = Q0 + rng.uniform(-1, 1, 7)
    v = 100.0 * rng.standard_normal(7)
    mdot = kit.mass_rate_fd(mod, p, q, v)
    q_lag = -mdot @ v + kit.energy_gradient_fd(mod, p, q, v)
    q_mod = kit.forces(mod, q, v, 0.0, p)
    assert np.linalg.norm(q_mod - q_lag) < 1e-7 * np.linalg.norm(q_lag)


def test_energy_balance_closes_along_scipy_reference(trajectory) -> None:
    # docs/explanation/models.md#andrews: E - E0 - W closes to ~3e-14 J at t = 0.03 (W = mom (beta -
    # beta0)).
    _, q, v, w = trajectory
    p = kit.params(mod)
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0] - w)) < 1e-9
    np.testing.assert_allclose(w, 0.033 * (q[:, 0] - q[0, 0]), rtol=0, atol=1e-12)


def test_trajectory_is_reasonable(trajectory) -> None:
    t, q, _, _ = trajectory
    p = kit.params(mod)
    # starts with the published acceleration: v(t1) ~ qddot0 t1 at t1 = 1e-5 ...
    t1 = np.array([0.0, 1e-5])
    _, v1, _ = kit.integrate(mod, p, t1)
    np.testing.assert_allclose(v1[-1] / 1e-5, QDDOT0, rtol=0, atol=0.02 * 14222.44)
    # ... stays on the constraints (docs/explanation/models.md#andrews: |g(q(0.03))| ~ 2e-15 without
    # projection)
    assert max(np.linalg.norm(kit.phi(mod, qk, 0.0, p)) for qk in q) < 1e-10
    # ... and the driven crank turns forward
    assert np.all(np.diff(q[:, 0]) > 0)
    assert q[-1, 0] - q[0, 0] > 2 * np.pi
    # an independent tighter run agrees to 1e-9 relative in the positions
    # (docs/explanation/models.md#andrews)
    q2, _, _ = kit.integrate(mod, p, t[[0, -1]], rtol=1e-13, atol=1e-15)
    assert np.max(np.abs(q2[-1] - q[-1])) < 1e-9 * np.max(np.abs(q[-1]))
