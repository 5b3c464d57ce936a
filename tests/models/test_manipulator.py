"""Tests of the two-link manipulator model (docs/explanation/models.md#manipulator)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import manipulator as mod
from mbstudy.solvers.registry import entries


def test_spec_and_sizes() -> None:
    p = kit.params(mod)
    assert entries("model")["manipulator"].module is mod
    assert kit.dims(mod, p) == (6, 4)
    assert mod.angle_mask(p).shape == (6,)
    assert mod.angle_mask(p).sum() == 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_phi_q_and_gamma_against_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod, L1=0.7, L2=1.3)
    q = rng.uniform(-2, 2, 6)
    v = rng.standard_normal(6)
    a = rng.standard_normal(6)
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a) < 1e-6


@pytest.mark.parametrize(
    "values",
    [{}, {"theta1_0": 0.3, "theta2_0": -1.2, "omega1_0": 2.0, "omega2_0": -0.5}],
)
def test_initial_state_is_consistent(values: dict) -> None:
    p = kit.params(mod, **values)
    kit.assert_initial_state_consistent(mod, p)


def test_default_initial_state_is_the_published_one() -> None:
    # docs/explanation/models.md#manipulator: q0 = [0.5, 0, 0, 1.5, 0, 0], v0 = 0, E0 = 0 J.
    p = kit.params(mod)
    q0, v0 = mod.initial_state(p)
    np.testing.assert_allclose(q0, [0.5, 0, 0, 1.5, 0, 0], atol=1e-15)
    np.testing.assert_array_equal(v0, np.zeros(6))
    assert mod.energy(q0, v0, 0.0, p) == 0.0


def test_mass_matrix_symmetric_positive_definite() -> None:
    p = kit.params(mod)
    kit.assert_mass_spd(mod, p, 6)


def test_checkpoint_and_energy_against_scipy() -> None:
    # docs/explanation/models.md#manipulator, derived checkpoint [D] at t = 1.0 (12 decimals given).
    q_ref = np.array([-0.467403675072, -0.177577601428, -2.778512564986,
                      -1.298461242980, -0.698310920025, -2.385187349886])  # fmt: skip
    p = kit.params(mod)
    t = np.linspace(0.0, 1.0, 11)
    q, v, _ = kit.integrate(mod, p, t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q[-1], q_ref, rtol=0, atol=1e-9)
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-9
