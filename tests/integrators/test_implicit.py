"""The seed-003 implicit scheme as an integrator template (solvers/integrators/implicit.py).

Measured on the four-bar with Baumgarte stabilization over 1 s against dopri5 at rtol
1e-12 (same formulation): max |q - q_ref| = 0.327, 0.107, 0.0342 rad for delta_l = 1e-3,
1e-4, 1e-5 (1777, 5571, 17571 steps): slope 0.49 against delta_l and -0.99 against the
step count, i.e. first order with dt ~ delta_l^(1/2) under per-step error control.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from mbstudy.solvers.elements.implicit import step_rule
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_JAC, C_NEWTON, C_REJECTED, C_RHS, C_STEPS, OK, STEP_FLOOR

T_END = 1.0
SAMPLES = 51
DELTA_LS = (1e-3, 1e-4, 1e-5)


def _implicit(**ip):
    return run_case(
        "fourbar", "baumgarte", "implicit", t_end=T_END, samples=SAMPLES, integrator_params=ip
    )


@pytest.fixture(scope="module")
def reference():
    ref = run_case(
        "fourbar",
        "baumgarte",
        "dopri5",
        t_end=T_END,
        samples=SAMPLES,
        integrator_params={"rtol": 1e-12, "atol": 1e-14},
    )
    assert ref.status == OK
    return ref


@pytest.fixture(scope="module")
def runs():
    return {dl: _implicit(delta_l=dl) for dl in DELTA_LS}


def test_converges_first_order_as_delta_l_shrinks(reference, runs):
    err = np.array([np.max(np.abs(runs[dl].q - reference.q)) for dl in DELTA_LS])
    steps = np.array([runs[dl].counters[C_STEPS] for dl in DELTA_LS], dtype=float)
    assert all(runs[dl].status == OK for dl in DELTA_LS)
    assert np.all(np.diff(err) < 0)
    slope_dl = np.diff(np.log(err)) / np.diff(np.log(DELTA_LS))
    slope_steps = np.diff(np.log(err)) / np.diff(np.log(steps))
    assert np.all((slope_dl > 0.4) & (slope_dl < 0.6)), slope_dl
    assert np.all((slope_steps > -1.15) & (slope_steps < -0.85)), slope_steps


def test_counters_and_output_rows(runs):
    res = runs[1e-4]
    cnt = res.counters
    ny = res.Y.shape[1]
    # every Newton iteration: one residual + ny finite differences + one Jacobian
    assert cnt[C_JAC] == cnt[C_NEWTON]
    assert cnt[C_RHS] == 1 + cnt[C_NEWTON] * (1 + ny)
    assert res.k_reached == SAMPLES - 1
    assert np.all(np.isfinite(res.Y))
    # the baumgarte-stabilized constraints stay small at every output row
    assert np.max(res.D[:, 0]) < 1e-3


def test_rejections_happen_and_are_counted():
    res = _implicit(delta_l=1e-4, dt0=0.2)
    assert res.status == OK
    assert res.counters[C_REJECTED] >= 1
    # the cap limits growth to 4c per step: more steps, still ok
    capped = _implicit(delta_l=1e-4, cap=True)
    assert capped.status == OK and capped.counters[C_STEPS] > 0


def test_step_floor_with_an_absurd_dt_min():
    res = _implicit(delta_l=1e-6, dt_min=0.01)
    assert res.status == STEP_FLOOR
    assert res.counters[C_REJECTED] >= 1
    assert res.k_reached < SAMPLES - 1
    assert np.all(np.isnan(res.Y[res.k_reached + 1 :]))


@pytest.mark.parametrize("cap", [False, True])
def test_step_rule_branches(cap):
    """Seed 003 §2.17 with dt = 1e-3, delta_l = 1e-3, c = 0.8: rho = delta_l / l."""
    dt, dl, c = 1e-3, 1e-3, 0.8
    assert step_rule(dt, 5e-3, dl, c, cap) == c * dt * (dl / 5e-3)  # rho < 0.25: linear
    assert step_rule(dt, 2e-3, dl, c, cap) == c * dt * math.sqrt(dl / 2e-3)  # rho = 0.5
    assert step_rule(dt, 1e-3, dl, c, cap) == c * dt  # rho = 1
    big = step_rule(dt, 1e-4, dl, c, cap)  # rho = 10 > 7
    assert big == (4.0 * c * dt if cap else c * dt * math.sqrt(dl / 1e-4))
    zero = step_rule(dt, 0.0, dl, c, cap)
    assert zero == 4.0 * c * dt if cap else math.isinf(zero)


def test_the_kernel_calls_the_one_step_rule():
    """The generated implicit kernel imports elements.implicit.step_rule (no copy)."""
    from mbstudy.solvers.compose import generate_source

    src = generate_source("pendulum", "none", "implicit")
    assert "from mbstudy.solvers.elements.implicit import step_rule" in src
    assert "def integ_step_rule" not in src and "step_rule(h, lerr" in src
