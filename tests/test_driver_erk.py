"""The kernel driver with the explicit Runge-Kutta stepper (solvers/integrators/_driver.py,
_erk_stepper.py; docs/explanation/driver-plan.md).

- Order: the driver's rk4, dopri5 and dop853 converge with the method's order to the
  exact solution x0 cos(w t) of the harmonic oscillator (log-log slope of the error at
  t_end over smaller steps; the adaptive methods run at a constant step h0 = h_max with a
  tolerance that never rejects, so the step is the control variable).
- Counting where the work happens: every right-hand side is counted by the driver's
  ``integ_drv_rhs``; the counts equal what each method's tableau implies per step (rk4:
  4; dopri5: 6 after the first, FSAL; dop853: 12 per step plus the first), counted
  independently here from the steps taken on models and formulations that run through
  the driver (with projection, whose correction forces a fresh first stage).

Before the old explicit loops were deleted, the driver reproduced them bit for bit (24
cases: 3 methods x none/baumgarte/projection/qr x four-bar/Andrews; series,
diagnostics, counters, status), docs/explanation/driver-plan.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_REJECTED, C_RHS, C_STEPS, OK

# (model, t_end, samples, fixed step of rk4); Andrews' squeezer over part of its fast
# transient (docs/explanation/models.md#andrews), the four-bar over two seconds
MODELS = {"fourbar": (2.0, 41, 2.5e-3), "andrews": (0.003, 11, 1e-5)}
FORMULATIONS = ["none", "baumgarte", "projection", "qr"]
METHODS = ["rk4", "dopri5", "dop853"]
ADAPTIVE = {"rtol": 1e-8, "atol": 1e-10}


def _oscillator_error(method: str, h: float, t_end: float) -> tuple[float, np.ndarray]:
    """|x(t_end) - cos(t_end)| with step h (oscillator: mass = k = 1,
    x0 = 1, v0 = 0), and the run's counters."""
    ip = ({"h": h} if method == "rk4"
          else {"rtol": 1e3, "atol": 1e3, "h0": h, "h_max": h})  # fmt: skip
    res = run_case("oscillator", "none", method, t_end=t_end, samples=2, integrator_params=ip)
    assert res.status == OK
    return abs(res.Y[-1, 0] - np.cos(t_end)), res.counters


# (method, order, steps, t_end): steps where the error is well above round-off
ORDERS = [
    ("rk4", 4, (0.2, 0.1, 0.05, 0.025), 4.0),
    ("dopri5", 5, (0.4, 0.2, 0.1, 0.05), 4.0),
    ("dop853", 8, (0.5, 0.4, 0.25, 0.2), 4.0),
]


@pytest.mark.parametrize("case", ORDERS, ids=lambda c: c[0])
def test_the_driver_converges_with_the_method_order(case):
    method, order, steps, t_end = case
    errs = []
    for h in steps:
        err, cnt = _oscillator_error(method, h, t_end)
        # the step was the control variable: no rejection, t_end / h accepted steps
        assert cnt[C_REJECTED] == 0 and cnt[C_STEPS] == round(t_end / h)
        assert cnt[C_RHS] > 0
        errs.append(err)
    slope = np.polyfit(np.log(steps), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.3, (slope, errs)


# right-hand sides per run implied by the tableau: (per accepted step, once at the start)
RHS_PER_STEP = {"rk4": (4, 0), "dopri5": (6, 1), "dop853": (12, 1)}


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("method", METHODS)
def test_right_hand_sides_are_counted_where_they_are_evaluated(method, formulation, model):
    """C_RHS is what the tableau implies for the steps taken: the driver counts each
    evaluation in integ_drv_rhs (no method counts by hand). Runs at a step that is never
    rejected (adaptive: h0 = h_max, a tolerance that accepts every step), so the count
    follows from C_STEPS alone; with projection (a post-step correction) the FSAL/first
    stage is evaluated afresh after each step."""
    t_end, samples, h = MODELS[model]
    ip = ({"h": h} if method == "rk4"
          else {"rtol": 1e6, "atol": 1e6, "h0": h, "h_max": h})  # fmt: skip
    res = run_case(model, formulation, method, t_end=t_end, samples=samples,
                   integrator_params=ip)  # fmt: skip
    cnt = res.counters
    assert res.status == OK and cnt[C_REJECTED] == 0 and cnt[C_STEPS] > 0
    per_step, first = RHS_PER_STEP[method]
    steps = int(cnt[C_STEPS])
    if formulation == "projection" and method != "rk4":
        per_step += 1 if method == "dopri5" else 0  # FSAL stage invalidated by the correction
    assert cnt[C_RHS] == per_step * steps + first, (cnt[C_RHS], steps)
