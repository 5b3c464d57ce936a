"""The optional fused model function ``constraint_terms`` (docs/explanation/solver-contract.md)
equals the model's phi, phi_q, phi_t and gamma evaluated separately, bit for bit, at random states.
The kernels of Baumgarte, penalty and augmented Lagrangian call it instead of the four."""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose import OPTIONAL_MODEL_FUNCTIONS

FUSED = [
    name
    for name, entry in registry.entries("model").items()
    if hasattr(entry.module, "constraint_terms")
]


def test_the_fused_function_is_optional_and_the_four_bar_has_it() -> None:
    assert "constraint_terms" in OPTIONAL_MODEL_FUNCTIONS
    assert {"fourbar", "andrews"} <= set(FUSED)


@pytest.mark.parametrize("model", FUSED)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_constraint_terms_equal_the_four_functions(model: str, seed: int) -> None:
    mod = model_entry.model(model).module
    p = kit.params(mod)
    n, m = kit.dims(mod, p)
    rng = np.random.default_rng(seed)
    q0, _ = mod.initial_state(p)
    q = q0 + rng.normal(scale=0.3, size=n)
    v = rng.normal(scale=2.0, size=n)
    t = float(rng.uniform(0.0, 1.0))
    ph = np.full(m, np.nan)
    G = np.full((m, n), np.nan)
    pt = np.full(m, np.nan)
    gam = np.full(m, np.nan)
    mod.constraint_terms(q, v, t, p, ph, G, pt, gam)
    assert np.array_equal(ph, kit.phi(mod, q, t, p))
    assert np.array_equal(G, kit.phi_q(mod, q, t, p))
    assert np.array_equal(pt, kit.phi_t(mod, q, t, p))
    assert np.array_equal(gam, kit.gamma(mod, q, v, t, p))
