"""Tests of the redundant parallelogram linkage (docs/explanation/models.md#parallelogram)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import parallelogram as mod
from mbstudy.solvers.registry import entries


@pytest.fixture(scope="module")
def full_run() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Absolute-coordinate index-1 run (lstsq) before the first singularity (0.7144 s)."""
    p = kit.params(mod)
    t = np.linspace(0.0, 0.6, 13)
    q, v, _ = kit.integrate(mod, p, t, rtol=1e-12, atol=1e-14, redundant=True)
    return t, q, v


def test_spec_and_sizes() -> None:
    p = kit.params(mod)
    assert entries("model")["parallelogram"].module is mod
    assert kit.dims(mod, p) == (12, 12)
    assert mod.angle_mask(p).sum() == 4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_phi_q_and_gamma_against_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod, a=1.2)
    q0, _ = mod.initial_state(p)
    q = q0 + 0.3 * rng.standard_normal(12)
    v = rng.standard_normal(12)
    a = rng.standard_normal(12)
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a) < 1e-6


@pytest.mark.parametrize("values", [{}, {"theta0": 1.0, "omega0": 2.0}, {"theta0": 0.0}])
def test_initial_state_is_consistent(values: dict) -> None:
    p = kit.params(mod, **values)
    kit.assert_initial_state_consistent(mod, p)


def test_default_initial_state() -> None:
    # docs/explanation/models.md#parallelogram: cranks vertical, coupler horizontal at y = 1,
    # xdot(B0) = 1 m/s.
    p = kit.params(mod)
    q0, v0 = mod.initial_state(p)
    for k in range(3):
        np.testing.assert_allclose(q0[3 * k : 3 * k + 3], [k, 0.5, np.pi / 2], atol=1e-15)
        np.testing.assert_allclose(v0[3 * k : 3 * k + 3], [0.5, 0, -1], atol=1e-15)
    np.testing.assert_allclose(q0[9:], [1, 1, 0], atol=1e-15)
    np.testing.assert_allclose(v0[9:], [1, 0, 0], atol=1e-15)


def test_mass_matrix_symmetric_positive_definite() -> None:
    p = kit.params(mod)
    M = kit.assert_mass_spd(mod, p, 12)
    assert M[11, 11] == pytest.approx(2.0 / 3.0)  # coupler J = 2 * 2^2 / 12


@pytest.mark.parametrize("theta", [np.pi / 2, np.pi / 3, 2.0, -1.0])
def test_rank_is_11_in_generic_positions(theta: float) -> None:
    p = kit.params(mod)
    q, _ = mod.branch_state(p, np.array([theta]), np.array([0.0]))
    G = kit.phi_q(mod, q[0], 0.0, p)
    assert kit.numerical_rank(G) == 11
    K = np.block([[kit.mass(mod, q[0], p), G.T], [G, np.zeros((12, 12))]])
    assert kit.numerical_rank(K) == 23  # a plain LU on the augmented matrix is singular


@pytest.mark.parametrize("theta", [0.0, np.pi])
def test_rank_drops_to_10_when_horizontal(theta: float) -> None:
    p = kit.params(mod)
    q, _ = mod.branch_state(p, np.array([theta]), np.array([0.0]))
    assert kit.numerical_rank(kit.phi_q(mod, q[0], 0.0, p)) == 10


def test_exact_reference_starts_at_initial_state_and_conserves_energy() -> None:
    p = kit.params(mod)
    t = np.linspace(0.0, 5.0, 101)  # through several singular positions
    q, v = kit.assert_exact_reference_consistent(mod, p, t)
    dphi = [np.linalg.norm(kit.phi_q(mod, qk, 0.0, p) @ vk) for qk, vk in zip(q, v, strict=True)]
    assert max(dphi) < 1e-13


def test_exact_reference_agrees_with_full_integration(full_run) -> None:
    t, q, v = full_run
    p = kit.params(mod)
    q_ref, v_ref = mod.exact_reference(p, t)
    assert np.max(np.abs(q - q_ref)) < 1e-9
    assert np.max(np.abs(v - v_ref)) < 1e-9


def test_energy_conserved_along_full_integration(full_run) -> None:
    _, q, v = full_run
    p = kit.params(mod)
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-9 * abs(e[0])
