"""DOP853 (solvers/integrators/dop853.py): coefficients, order 8, parity with scipy, status.

Most checks run the method's tableau through the explicit Runge-Kutta driver as plain
Python on small ODEs (``_run_template``, tests/integrators/erk_testkit.py: the driver's
functions rebound to a fake formulation), which compiles no kernel. Two compiled
kernels: (fourbar, baumgarte, dop853) and (andrews, projection, dop853); the dopri5
kernels they are compared with are compiled by other tests anyway.

Measured (this machine, scipy 1.17.1):
- Kepler e = 0.1, one period, fixed h = T/N, N = 24, 32, 48, 64: errors 4.2e-9, 4.5e-10,
  1.9e-11, 1.9e-12, fitted slope 7.8.
- Arenstorf orbit, rtol = atol = 1e-6 / 1e-9 / 1e-12: 66 / 136 / 298 accepted steps, as
  scipy's DOP853; right-hand sides = scipy's nfev - rejected steps (scipy evaluates
  f(t + h, y_new) on rejected steps too).
- Four-bar (baumgarte, omega_n = 20), rtol = atol = 1e-6 / 1e-9 / 1e-12: 48 / 105 / 236
  accepted steps against scipy's 49 / 106 / 237 (the kernel's error norm also counts
  the drive-work state W), |q - q_scipy| 2.5e-6 / 1.8e-9 / 4.5e-13.
- Andrews (projection), 0.03 s: dopri5 at rtol = atol = 1e-10: error 2.1e-10 with 4388
  right-hand sides; dop853 at 1e-11: 7.8e-12 with 2623 (at 1e-10: 1.8e-10 with 2029).
"""

from __future__ import annotations

import itertools

import erk_testkit
import numpy as np
import pytest
from mbstudy.solvers.integrators import dop853 as d8
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import (
    C_REJECTED,
    C_RHS,
    C_STEPS,
    DIVERGED,
    OK,
    SINGULAR,
    STEP_BUDGET,
    STEP_FLOOR,
)

FIXED = {"rtol": 1e3, "atol": 1e3}  # with h0 = h_max = h: every step accepted, of size h


def _run_template(f, y0, t_out, post_step=None, **params):
    """Run DOP853 through the explicit Runge-Kutta driver as plain Python (erk_testkit)."""
    return erk_testkit.run_template(d8, f, y0, t_out, post_step=post_step, **params)


def _kepler_problem(e: float):
    def f(t, y):
        r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
        return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])

    return f, np.array([1.0 - e, 0.0, 0.0, np.sqrt((1.0 + e) / (1.0 - e))]), 2.0 * np.pi


MU = 0.012277471


def _arenstorf(t, y):
    x, yy, vx, vy = y
    d1 = ((x + MU) ** 2 + yy**2) ** 1.5
    d2 = ((x - 1.0 + MU) ** 2 + yy**2) ** 1.5
    return np.array([
        vx, vy,
        x + 2.0 * vy - (1.0 - MU) * (x + MU) / d1 - MU * (x - 1.0 + MU) / d2,
        yy - 2.0 * vx - (1.0 - MU) * yy / d1 - MU * yy / d2,
    ])  # fmt: skip


ARENSTORF_Y0 = [0.994, 0.0, 0.0, -2.00158510637908252240537862224]
ARENSTORF_T = 17.0652165601579625588917206249


def test_coefficients_are_scipys():
    """Every tableau entry equals scipy's (A, B, C, E5, E3 of dop853_coefficients)."""
    from scipy.integrate._ivp import dop853_coefficients as sc

    s = d8.RK_STAGES
    assert s == 12
    np.testing.assert_array_equal(d8.RK_AB[:s], sc.A[:s, :s])
    np.testing.assert_array_equal(d8.RK_AB[s], sc.B)
    np.testing.assert_array_equal(d8.RK_C, sc.C[:s])
    np.testing.assert_array_equal(d8.RK_E, sc.E5[:s])
    np.testing.assert_array_equal(d8.RK_E3, sc.E3[:s])
    assert sc.E5[s] == 0.0 and sc.E3[s] == 0.0  # the stage at the new point is not used


def test_order_8_with_a_fixed_step():
    """Kepler orbit (e = 0.1, nonlinear) over one period, exact solution = the start."""
    f, y0, period = _kepler_problem(0.1)
    ns = np.array([24, 32, 48, 64])
    hs = period / ns
    errs = []
    for h, n in zip(hs, ns, strict=True):
        st, _, Y, cnt = _run_template(f, y0, [0.0, period], h0=h, h_max=h, **FIXED)
        assert st == OK and cnt[C_STEPS] == n and cnt[C_REJECTED] == 0
        assert cnt[C_RHS] == 12 * n + 1  # FSAL: 12 per step, + f(t0, y0)
        errs.append(np.max(np.abs(Y[-1] - y0)))
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert 7.5 < slope < 8.7, (slope, errs)


@pytest.mark.parametrize("tol", [1e-6, 1e-9, 1e-12])
def test_template_takes_scipys_steps(tol):
    """Same formula, estimator, controller and starting step as scipy's DOP853."""
    from scipy.integrate import solve_ivp

    st, _, Y, cnt = _run_template(_arenstorf, ARENSTORF_Y0, [0.0, ARENSTORF_T],
                                  rtol=tol, atol=tol)  # fmt: skip
    sol = solve_ivp(_arenstorf, (0.0, ARENSTORF_T), ARENSTORF_Y0, method="DOP853",
                    rtol=tol, atol=tol)  # fmt: skip
    assert st == OK and sol.success
    assert cnt[C_STEPS] == sol.t.size - 1
    assert cnt[C_RHS] == sol.nfev - cnt[C_REJECTED]
    err = np.max(np.abs(Y[-1] - ARENSTORF_Y0))  # the orbit is periodic
    # the close approaches amplify round-off (another summation order) to ~6e-10
    assert np.max(np.abs(Y[-1] - sol.y[:, -1])) < max(1e-2 * err, 2e-9)


def test_lands_on_output_times_and_runs_the_post_step():
    """y' = (1, y0): rows at the output times exactly; the correction's state is used."""
    calls = []

    def post(t, y):
        calls.append(t)
        y[1] = 0.5 * y[1]  # a correction that changes the state
        return OK

    t_out = np.linspace(0.0, 1.0, 7)
    st, k, Y, cnt = _run_template(lambda t, y: np.array([1.0, 0.0]), [0.0, 2.0], t_out,
                                  post_step=post)  # fmt: skip
    assert st == OK and k == t_out.size - 1
    np.testing.assert_allclose(Y[:, 0], t_out, rtol=0, atol=1e-15)
    assert len(calls) == cnt[C_STEPS] >= t_out.size - 1
    assert set(t_out[1:]) <= set(calls)
    assert Y[-1, 1] == 2.0 * 0.5 ** len(calls)
    # f at the corrected state, no extra evaluation: 12 per step + initial + start step
    assert cnt[C_RHS] == 12 * cnt[C_STEPS] + 11 * cnt[C_REJECTED] + 2


def test_status_step_budget_and_floor():
    f, y0, period = _kepler_problem(0.1)
    st, k, _, cnt = _run_template(f, y0, np.linspace(0.0, period, 5), max_steps=7)
    assert st == STEP_BUDGET and cnt[C_STEPS] + cnt[C_REJECTED] == 7
    assert 0 <= k < 4  # stopped before the last of the 5 output times
    st, k, _, _ = _run_template(f, y0, [0.0, period], h0=1e-3, h_min=1.0)
    assert st == STEP_FLOOR and k == 0


def test_status_diverged_nan_and_failed_stages():
    st, k, _, _ = _run_template(lambda t, y: 100.0 * y, [1.0], np.linspace(0.0, 1.0, 11))
    assert st == DIVERGED and 0 < k < 10  # e^100 passes DIVERGENCE_BOUND (1e12)

    def nan_after(t, y):
        return np.array([np.nan if t > 0.5 else 1.0])

    st, k, Y, _ = _run_template(nan_after, [0.0], np.linspace(0.0, 1.0, 11))
    assert st == STEP_FLOOR and k == 5 and Y[5, 0] == pytest.approx(0.5)

    def singular_after(t, y):
        return SINGULAR if t > 0.5 else np.array([1.0])

    st, k, _, cnt = _run_template(singular_after, [0.0], np.linspace(0.0, 1.0, 11))
    assert st == SINGULAR and k == 5 and cnt[C_REJECTED] > 0


# --------------------------------------------------------------------------------------
# compiled kernels

FOURBAR_FP = {"omega_n": 20.0, "xi": 1.0}


def _fourbar(**ip):
    return run_case("fourbar", "baumgarte", "dop853", t_end=1.0, samples=11,
                    formulation_params=FOURBAR_FP, integrator_params=ip)  # fmt: skip


def test_kernel_fixed_step_error_falls_at_least_as_h_to_the_8th():
    """Four-bar, fixed h: pre-asymptotic here (measured ratios 2196 and 812 per halving,
    i.e. slopes 11 and 9.7), so the check is the lower bound of order 8."""
    ref = _fourbar(rtol=1e-14, atol=1e-14)
    errs = []
    for h in (0.0125, 0.00625, 0.003125):
        r = _fourbar(h0=h, h_max=h, **FIXED)
        assert r.status == OK and r.counters[C_REJECTED] == 0
        assert r.counters[C_STEPS] == round(1.0 / h)
        errs.append(np.max(np.abs(r.q - ref.q)))
    assert errs[-1] < 1e-10
    assert all(a / b > 2**7.5 for a, b in itertools.pairwise(errs)), errs
    r = _fourbar(max_steps=5)
    assert r.status == STEP_BUDGET
    assert r.counters[C_STEPS] + r.counters[C_REJECTED] == 5


@pytest.mark.parametrize("tol", [1e-6, 1e-9, 1e-12])
def test_kernel_agrees_with_scipy_dop853(tol):
    """Same equations in Python (the work-precision benchmark's right-hand side)."""
    from scipy.integrate import solve_ivp

    from tests.references_testkit import python_rhs

    f, y0, n = python_rhs("fourbar", FOURBAR_FP)
    sol = solve_ivp(f, (0.0, 1.0), y0, method="DOP853", rtol=tol, atol=tol)
    r = run_case("fourbar", "baumgarte", "dop853", t_end=1.0, samples=2,
                 formulation_params=FOURBAR_FP, integrator_params={"rtol": tol, "atol": tol})
    assert r.status == OK and sol.success
    steps = sol.t.size - 1
    assert abs(int(r.counters[C_STEPS]) - steps) <= max(2, 0.03 * steps)
    assert np.max(np.abs(r.q[-1] - sol.y[:n, -1])) < 10 * tol


def test_andrews_fewer_rhs_than_dopri5_at_equal_error():
    """Andrews' squeezer with projection (post-step path): 26x smaller error, 0.6x the work."""
    kw = dict(t_end=0.03, samples=31)
    ref = run_case("andrews", "projection", "dopri5",
                   integrator_params={"rtol": 1e-12, "atol": 1e-14}, **kw)  # fmt: skip
    five = run_case("andrews", "projection", "dopri5",
                    integrator_params={"rtol": 1e-10, "atol": 1e-10}, **kw)  # fmt: skip
    eight = run_case("andrews", "projection", "dop853",
                     integrator_params={"rtol": 1e-11, "atol": 1e-11}, **kw)  # fmt: skip
    assert ref.status == five.status == eight.status == OK
    err5 = np.max(np.abs(five.q - ref.q))
    err8 = np.max(np.abs(eight.q - ref.q))
    assert err8 < err5 < 1e-9, (err8, err5)
    assert eight.counters[C_RHS] < 0.7 * five.counters[C_RHS]
    assert eight.D[:, 0].max() < 1e-11  # the projection keeps |phi| at its tolerance
