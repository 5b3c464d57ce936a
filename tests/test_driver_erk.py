"""The kernel driver with the explicit Runge-Kutta stepper (solvers/integrators/_driver.py,
_erk_stepper.py; docs/explanation/driver-plan.md).

- Parity: every case is run twice in the test, through the old explicit kernels (rk4,
  dopri5, dop853: _erk.py's own loops) and through the driver (rk4_d, dopri5_d,
  dop853_d: the same tableau arrays). The driver keeps the old order of floating-point
  operations and the stepper shares the old combination and error-norm code, so the
  series, the diagnostics, the counters, the status and the last row reached must agree
  bit for bit (0 ulps); a failure reports the largest difference in ulps.
- Independent reference: the new path converges with the method's order to the exact
  solution x0 cos(w t) of the harmonic oscillator (log-log slope of the error at t_end
  over halved steps; the adaptive methods run at a constant step h0 = h_max with a
  tolerance that never rejects, so the step is the control variable).
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


def _max_ulps(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| in units of the last place of max(|a|, |b|) (NaN where both NaN: 0)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both = np.isnan(a) & np.isnan(b)
    if np.any(np.isnan(a) != np.isnan(b)):
        return np.inf
    d = np.abs(np.where(both, 0.0, a - b))
    ulp = np.spacing(np.maximum(np.abs(np.where(both, 0.0, a)), np.abs(np.where(both, 0.0, b))))
    return float(np.max(d / ulp)) if d.size else 0.0


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("formulation", FORMULATIONS)
@pytest.mark.parametrize("method", METHODS)
def test_driver_reproduces_the_old_kernel_bit_for_bit(method, formulation, model):
    t_end, samples, h = MODELS[model]
    ip = {"h": h} if method == "rk4" else ADAPTIVE
    old = run_case(model, formulation, method, t_end=t_end, samples=samples,
                   integrator_params=ip)  # fmt: skip
    new = run_case(model, formulation, method + "_d", t_end=t_end, samples=samples,
                   integrator_params=ip)  # fmt: skip
    # the case did real work (a test that cannot fail compares two empty runs)
    assert old.status == OK and old.k_reached == samples - 1 and old.counters[C_STEPS] > 0
    assert new.status == old.status and new.k_reached == old.k_reached
    assert np.array_equal(new.counters, old.counters), (new.counters, old.counters)
    for what, a, b in (("Y", new.Y, old.Y), ("D", new.D, old.D)):
        assert np.array_equal(a, b, equal_nan=True), f"{what}: {_max_ulps(a, b)} ulps"


def _oscillator_error(method: str, h: float, t_end: float) -> tuple[float, np.ndarray]:
    """|x(t_end) - cos(t_end)| of the new path with step h (oscillator: mass = k = 1,
    x0 = 1, v0 = 0), and the run's counters."""
    ip = ({"h": h} if method == "rk4_d"
          else {"rtol": 1e3, "atol": 1e3, "h0": h, "h_max": h})  # fmt: skip
    res = run_case("oscillator", "none", method, t_end=t_end, samples=2, integrator_params=ip)
    assert res.status == OK
    return abs(res.Y[-1, 0] - np.cos(t_end)), res.counters


# (method, order, steps, t_end): steps where the error is well above round-off
ORDERS = [
    ("rk4_d", 4, (0.2, 0.1, 0.05, 0.025), 4.0),
    ("dopri5_d", 5, (0.4, 0.2, 0.1, 0.05), 4.0),
    ("dop853_d", 8, (0.5, 0.4, 0.25, 0.2), 4.0),
]


@pytest.mark.parametrize("case", ORDERS, ids=lambda c: c[0])
def test_new_path_converges_with_the_method_order(case):
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
