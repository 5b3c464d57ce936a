"""Tests of the IFToMM A02 N four-bar mechanism (docs/explanation/models.md#nfourbar)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import nfourbar as mod
from mbstudy.solvers.registry import entries
from scipy.optimize import brentq


@pytest.fixture(scope="module")
def full_run() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """N = 2 absolute-coordinate index-1 run before the first singularity (0.7144 s)."""
    p = kit.params(mod, n=2)
    t = np.linspace(0.0, 0.6, 13)
    q, v, _ = kit.integrate(mod, p, t, rtol=1e-12, atol=1e-14)
    return t, q, v


@pytest.mark.parametrize("n", [1, 2, 40])
def test_spec_and_sizes(n: int) -> None:
    p = kit.params(mod, n=n)
    assert entries("model")["nfourbar"].module is mod
    assert kit.dims(mod, p) == (6 * n + 3, 6 * n + 2)
    assert mod.angle_mask(p).shape == (6 * n + 3,)
    assert mod.angle_mask(p).sum() == 2 * n + 1


@pytest.mark.parametrize(("n", "seed"), [(1, 0), (2, 1), (3, 2)])
def test_phi_q_and_gamma_against_finite_differences(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod, n=n, L=0.8)
    q0, _ = mod.initial_state(p)
    q = q0 + 0.3 * rng.standard_normal(q0.size)
    v = rng.standard_normal(q0.size)
    a = rng.standard_normal(q0.size)
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a) < 1e-6


@pytest.mark.parametrize("values", [{"n": 2}, {"n": 40}, {"n": 3, "theta0": 0.7, "omega0": 3.0}])
def test_initial_state_is_consistent(values: dict) -> None:
    p = kit.params(mod, **values)
    kit.assert_initial_state_consistent(mod, p)


def test_default_initial_state_matches_problems_md() -> None:
    # docs/explanation/models.md#nfourbar: crank i at (i, 0.5, pi/2), velocity (0.5, 0, -1); coupler
    # j at (j + 0.5, 1, 0), velocity (1, 0, 0).
    p = kit.params(mod)
    nw = 40
    q0, v0 = mod.initial_state(p)
    for i in range(nw + 1):
        np.testing.assert_allclose(q0[6 * i : 6 * i + 3], [i, 0.5, np.pi / 2], atol=1e-14)
        np.testing.assert_allclose(v0[6 * i : 6 * i + 3], [0.5, 0, -1], atol=1e-14)
    for j in range(nw):
        np.testing.assert_allclose(q0[6 * j + 3 : 6 * j + 6], [j + 0.5, 1, 0], atol=1e-14)
        np.testing.assert_allclose(v0[6 * j + 3 : 6 * j + 6], [1, 0, 0], atol=1e-14)


def test_mass_matrix_symmetric_positive_definite() -> None:
    p = kit.params(mod, n=2)
    kit.assert_mass_spd(mod, p, 15)


@pytest.mark.parametrize("n", [2, 40])
def test_rank_full_generically_and_drops_by_n_when_horizontal(n: int) -> None:
    # 6N+2 independent equations (1 DOF) generically; N + 1 DOF when horizontal
    # (docs/explanation/models.md#nfourbar), i.e. rank (6N+3) - (N+1) = 5N + 2.
    p = kit.params(mod, n=n)
    for theta in (np.pi / 2, 1.0, -2.5):
        q, _ = mod.branch_state(p, np.array([theta]), np.array([0.0]))
        assert kit.numerical_rank(kit.phi_q(mod, q[0], 0.0, p)) == 6 * n + 2
    for theta in (0.0, np.pi):
        q, _ = mod.branch_state(p, np.array([theta]), np.array([0.0]))
        assert kit.numerical_rank(kit.phi_q(mod, q[0], 0.0, p)) == 5 * n + 2


@pytest.mark.parametrize(("n", "t_cross"), [(2, 0.7144), (40, 0.7216)])
def test_first_singular_crossing_time(n: int, t_cross: float) -> None:
    # docs/explanation/models.md#nfourbar [D]: first horizontal position at 0.7144 s (N = 2), 0.7216
    # s (N = 40).
    p = kit.params(mod, n=n)
    t_star = brentq(lambda t: mod.exact_reference(p, np.array([t]))[0][0, 2], 0.5, 1.0)
    assert t_star == pytest.approx(t_cross, abs=5e-5)


def test_exact_reference_conserves_energy_and_constraints() -> None:
    p = kit.params(mod, n=3)
    t = np.linspace(0.0, 5.0, 51)
    kit.assert_exact_reference_consistent(mod, p, t)


def test_exact_reference_agrees_with_full_integration(full_run) -> None:
    t, q, v = full_run
    p = kit.params(mod, n=2)
    q_ref, v_ref = mod.exact_reference(p, t)
    assert np.max(np.abs(q - q_ref)) < 1e-9
    assert np.max(np.abs(v - v_ref)) < 1e-9


def test_energy_conserved_along_full_integration(full_run) -> None:
    _, q, v = full_run
    p = kit.params(mod, n=2)
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-9 * abs(e[0])
