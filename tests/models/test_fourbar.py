"""Tests of the four-bar model (docs/explanation/models.md#fourbar, provisional stand-in)."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.assembly import AssemblyError
from mbstudy.solvers.models import fourbar as mod
from mbstudy.solvers.registry import entries


def test_spec_and_sizes() -> None:
    p = kit.params(mod)
    assert entries("model")["fourbar"].module is mod
    assert kit.dims(mod, p) == (9, 8)
    assert mod.angle_mask(p).shape == (9,)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_phi_q_and_gamma_against_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = kit.params(mod)
    q0, _ = mod.initial_state(p)
    q = q0 + 0.3 * rng.standard_normal(9)
    v = 5.0 * rng.standard_normal(9)
    a = rng.standard_normal(9)
    assert kit.jacobian_fd_error(mod, p, q) < 1e-6
    assert kit.gamma_fd_error(mod, p, q, v, a) < 1e-6


def test_initial_state_matches_problems_md() -> None:
    # docs/explanation/models.md#fourbar, derived [D] consistent initial values (12 decimals).
    q_ref = [0, 0.05, np.pi / 2, 0.173211238303, 0.199989334059, 0.523537196856,
             0.348211238303, 0.149989334059, 1.582721687434]  # fmt: skip
    v_ref = [-0.314159265359, 0, 6.283185307180, -0.626170502635, -0.003721022924,
             -0.021482572149, -0.312011237276, -0.003721022924, 2.080222832060]  # fmt: skip
    p = kit.params(mod)
    q0, v0 = mod.initial_state(p)
    np.testing.assert_allclose(q0, q_ref, rtol=0, atol=1e-11)
    np.testing.assert_allclose(v0, v_ref, rtol=0, atol=1e-11)
    kit.assert_initial_state_consistent(mod, p)


def test_mass_matrix_symmetric_positive_definite() -> None:
    p = kit.params(mod)
    kit.assert_mass_spd(mod, p, 9)


def test_energy_conserved_along_scipy_reference() -> None:
    p = kit.params(mod)
    t = np.linspace(0.0, 1.0, 21)
    q, v, _ = kit.integrate(mod, p, t)
    e = kit.energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-9 * max(1.0, abs(e[0]))
    assert max(np.linalg.norm(kit.phi(mod, qk, 0.0, p)) for qk in q) < 1e-9


def test_impossible_geometry_raises_assembly_error() -> None:
    p = kit.params(mod, L3=0.01)
    with pytest.raises(AssemblyError) as info:
        mod.initial_state(p)
    msg = str(info.value)
    assert "\n" not in msg
    assert "cannot be assembled" in msg
