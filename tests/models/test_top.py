"""Tests of the heavy symmetric top in Euler parameters (docs/explanation/models.md#top)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import top as mod
from mbstudy.solvers.registry import entries
from scipy.spatial.transform import Rotation

J_BODY = np.diag([0.02, 0.02, 0.01])  # docs/explanation/models.md#top: J' = diag(A, A, C)


def rot(q: np.ndarray) -> np.ndarray:
    """Rotation matrix from scipy (scalar-last quaternion), independent of the model."""
    return Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()


def unskew(S: np.ndarray) -> np.ndarray:
    """Vector of the skew part of S."""
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


@pytest.fixture(scope="module")
def trajectory() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DOP853 (rtol 1e-11) on the index-1 form over 1 s (about 8 spin turns)."""
    p = kit.params(mod)
    t = np.linspace(0.0, 1.0, 51)
    q, v, _ = kit.integrate(mod, p, t)
    return t, q, v


def test_spec_and_sizes() -> None:
    p = kit.params(mod)
    assert entries("model")["top"].module is mod
    assert kit.dims(mod, p) == (4, 1)
    assert mod.angle_mask(p).all()
    assert mod.SINGULAR_MASS
    assert not mod.SPEC.constant_mass


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_phi_q_and_gamma_against_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod)
    q, v, a = rng.standard_normal((3, 4))
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a) < 1e-6


def test_initial_state() -> None:
    # docs/explanation/models.md#top: p0 = (cos(theta0/2), sin(theta0/2), 0, 0), omega'0 = (0, 0,
    # 50).
    p = kit.params(mod)
    q0, v0 = mod.initial_state(p)
    np.testing.assert_allclose(q0, [np.cos(0.25), np.sin(0.25), 0, 0], atol=1e-16)
    wb, _ = mod.angular_velocity(q0, v0)
    np.testing.assert_allclose(wb, [0, 0, 50], atol=1e-13)
    kit.assert_initial_state_consistent(mod, p)
    kit.assert_initial_state_consistent(mod, kit.params(mod, theta0=2.0, wx0=3.0, wy0=-1.0))


def test_mass_matrix_symmetric_singular_along_q_augmented_regular() -> None:
    rng = np.random.default_rng(4)
    p = kit.params(mod)
    q = rng.standard_normal(4)
    q /= np.linalg.norm(q)
    M = kit.mass(mod, q, p)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-17)
    ev = np.linalg.eigvalsh(M)
    assert abs(ev[0]) < 1e-15 and np.all(ev[1:] > 0)
    assert np.linalg.norm(M @ q) < 1e-15
    G = kit.phi_q(mod, q, 0.0, p)
    K = np.block([[M, G.T], [G, np.zeros((1, 1))]])
    assert np.linalg.cond(K) < 1e3


def test_kinetic_energy_is_rigid_body_energy() -> None:
    # T = 1/2 omega'^T J' omega' with omega' from the rotation matrix (independent).
    rng = np.random.default_rng(5)
    p = kit.params(mod, g=0.0)
    q = rng.standard_normal(4)
    q /= np.linalg.norm(q)
    v = rng.standard_normal(4)
    v -= q * (q @ v)
    h = 1e-6
    a_dot = (rot(q + h * v) - rot(q - h * v)) / (2 * h)  # scipy normalizes: fine on |q| = 1
    w_body = unskew(rot(q).T @ a_dot)
    assert mod.energy(q, v, 0.0, p) == pytest.approx(0.5 * w_body @ J_BODY @ w_body, rel=1e-8)


def test_forces_match_lagrange() -> None:
    # Q = -Mdot qdot + 1/2 d/dq(qdot^T M qdot) - dV/dq, all by finite differences.
    rng = np.random.default_rng(6)
    p = kit.params(mod)
    q, v = rng.standard_normal((2, 4))
    mdot = kit.mass_rate_fd(mod, p, q, v)
    de_dq = kit.energy_gradient_fd(mod, p, q, v)
    q_lag = -mdot @ v + de_dq  # energy = T + V, so d/dq(energy) = dT/dq + dV/dq
    vpot = kit.energy_gradient_fd(mod, p, q, 0 * v)  # dV/dq: the energy at v = 0
    q_lag -= 2 * vpot
    q_mod = kit.forces(mod, q, v, 0.0, p)
    assert np.linalg.norm(q_mod - q_lag) < 1e-7 * np.linalg.norm(q_lag)


def test_invariants_along_scipy_reference(trajectory) -> None:
    _, q, v = trajectory
    p = kit.params(mod)
    norm_drift = np.max(np.abs(np.linalg.norm(q, axis=1) - 1.0))
    assert norm_drift < 1e-9
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-9 * abs(e[0])
    wb, _ = mod.angular_velocity(q, v)
    assert np.max(np.abs(wb[:, 2] - 50.0)) < 1e-8 * 50.0  # spin omega'_z (A = B)
    hz = np.array([(rot(qk) @ J_BODY @ wk)[2] for qk, wk in zip(q, wb, strict=True)])
    assert np.max(np.abs(hz - hz[0])) < 1e-9 * abs(hz[0])  # vertical angular momentum
    # the motion is not trivial: the axis nutates (tilt changes)
    tilt = np.array([np.arccos(rot(qk)[2, 2]) for qk in q])
    assert np.ptp(tilt) > 1e-3


def test_angular_velocity_against_rotation_matrix(trajectory) -> None:
    _, q, v = trajectory
    wb, ws = mod.angular_velocity(q, v)
    h = 1e-6
    for k in range(0, len(q), 10):
        A = rot(q[k])
        a_dot = (rot(q[k] + h * v[k]) - rot(q[k] - h * v[k])) / (2 * h)
        np.testing.assert_allclose(ws[k], unskew(a_dot @ A.T), rtol=0, atol=1e-7 * 50)
        np.testing.assert_allclose(wb[k], unskew(A.T @ a_dot), rtol=0, atol=1e-7 * 50)
        np.testing.assert_allclose(ws[k], A @ wb[k], rtol=0, atol=1e-12 * 50)
        np.testing.assert_allclose(mod.rotation_matrix(q[k] / np.linalg.norm(q[k])), A,
                                   rtol=0, atol=1e-14)  # fmt: skip
    # single-state call, and qdot itself is not the angular velocity (seed 003's warning)
    w1, _ = mod.angular_velocity(q[5], v[5])
    np.testing.assert_allclose(w1, wb[5], rtol=0, atol=1e-14)
    assert np.linalg.norm(v[5, 1:] - wb[5]) > 1.0
