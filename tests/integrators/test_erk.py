"""Explicit Runge-Kutta methods as data (solvers/integrators/_erk_stepper.py).

rk4, dopri5 and dop853 are Butcher tableaux run by the kernel driver
(solvers/integrators/_driver.py). Checked here:

- the tableaux are consistent (row sums of A = c, sum b = 1, FSAL rows, error weights
  that annihilate constants);
- the driver with the Dormand-Prince 5(4) tableau takes scipy's RK45 steps (same pair,
  error norm, controller and starting step): equal accepted steps and right-hand sides on
  the Arenstorf orbit, solutions within round-off (DOP853's parity with scipy is in
  test_dop853.py);
- rk4 converges with order 4 (Kepler orbit, exact solution after one period);
- whole compiled runs of the driver on a constrained model (Andrews' squeezer, through
  two formulations) agree with the IVP Test Set's published solution (PSIDE at 1e-14)
  within 100 rtol; rk4's whole runs are checked for order 4 against an independent
  reference in tests/models/test_planar_runs.py.
"""

from __future__ import annotations

import dae_testkit
import erk_testkit
import numpy as np
import pytest
from mbstudy.solvers.integrators import dop853, dopri5, rk4
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_RHS, C_STEPS, OK

METHODS = [rk4, dopri5, dop853]
MU = 0.012277471
ARENSTORF_Y0 = [0.994, 0.0, 0.0, -2.00158510637908252240537862224]
ARENSTORF_T = 17.0652165601579625588917206249


def _arenstorf(t, y):
    x, yy, vx, vy = y
    d1 = ((x + MU) ** 2 + yy**2) ** 1.5
    d2 = ((x - 1.0 + MU) ** 2 + yy**2) ** 1.5
    return np.array([
        vx, vy,
        x + 2.0 * vy - (1.0 - MU) * (x + MU) / d1 - MU * (x - 1.0 + MU) / d2,
        yy - 2.0 * vx - (1.0 - MU) * yy / d1 - MU * yy / d2,
    ])  # fmt: skip


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.SPEC.name)
def test_tableau_is_consistent(method):
    s = method.RK_STAGES
    A = method.RK_AB[:s]
    b = method.RK_AB[s]
    assert method.RK_AB.shape == (s + 1, s) and method.RK_C.shape == (s,)
    assert np.all(np.triu(A) == 0.0)  # explicit
    np.testing.assert_allclose(A.sum(axis=1), method.RK_C, rtol=0, atol=1e-14)
    assert abs(b.sum() - 1.0) < 1e-14
    if method.RK_FSAL:
        assert np.array_equal(A[s - 1], b) and method.RK_C[s - 1] == 1.0
    if method.RK_ERR:
        assert abs(method.RK_E.sum()) < 1e-14  # an estimator of a difference of solutions
    assert method.SPEC.adaptive == bool(method.STEP_ADAPTIVE)


@pytest.mark.parametrize("tol", [1e-6, 1e-9, 1e-12])
def test_dopri5_takes_scipys_rk45_steps(tol):
    from scipy.integrate import solve_ivp

    st, _, Y, cnt = erk_testkit.run_template(dopri5, _arenstorf, ARENSTORF_Y0,
                                             [0.0, ARENSTORF_T], rtol=tol, atol=tol)  # fmt: skip
    sol = solve_ivp(_arenstorf, (0.0, ARENSTORF_T), ARENSTORF_Y0, method="RK45",
                    rtol=tol, atol=tol)  # fmt: skip
    assert st == OK and sol.success
    assert cnt[C_STEPS] == sol.t.size - 1
    assert cnt[C_RHS] == sol.nfev  # FSAL: scipy also re-uses the last stage
    err = np.max(np.abs(Y[-1] - ARENSTORF_Y0))  # the orbit is periodic
    assert np.max(np.abs(Y[-1] - sol.y[:, -1])) < max(1e-2 * err, 2e-9)


def test_rk4_has_order_4():
    """Kepler orbit e = 0.1 over one period with N fixed steps: error ~ h^4."""
    e = 0.1

    def f(t, y):
        r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
        return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])

    y0 = np.array([1.0 - e, 0.0, 0.0, np.sqrt((1.0 + e) / (1.0 - e))])
    period = 2.0 * np.pi
    ns = np.array([200, 400, 800])
    errs = []
    for n in ns:
        st, _, Y, cnt = erk_testkit.run_template(rk4, f, y0, [0.0, period], h=period / n)
        assert st == OK and cnt[C_STEPS] == n and cnt[C_RHS] == 4 * n
        errs.append(np.max(np.abs(Y[-1] - y0)))
    slope = np.polyfit(np.log(period / ns), np.log(errs), 1)[0]
    assert 3.8 < slope < 4.2, (slope, errs)


# (model, formulation, integrator, t_end, formulation params, integrator params, measured
# largest relative error of q(t_end) against the IVP Test Set's q(0.03))
ANDREWS_RUNS = [
    ("andrews", "baumgarte", "dopri5", 0.03, {}, {"rtol": 1e-8, "atol": 1e-8}, 2.7e-7),
    ("andrews", "projection", "dop853", 0.03, {}, {"rtol": 1e-8, "atol": 1e-8}, 6.1e-9),
]  # fmt: skip


@pytest.mark.parametrize("case", ANDREWS_RUNS, ids=lambda c: "-".join(c[:3]))
def test_compiled_runs_match_the_published_andrews_solution(case):
    """The global error of an adaptive run at rtol 1e-8 over the squeezer's 0.03 s
    transient is allowed 100 rtol (relative, per coordinate); round-off over the few
    hundred steps (~1e-13 relative) is far below it, while a wrong stage, weight or
    controller gives errors of the method's lower order or O(1)."""
    model, form, integ, t_end, fp, ip, _measured = case
    res = run_case(model, form, integ, t_end=t_end, samples=11, formulation_params=fp,
                   integrator_params=ip)  # fmt: skip
    assert res.status == OK and res.counters[C_STEPS] > 0
    ref = dae_testkit.ANDREWS_Q_003
    rel = np.max(np.abs(res.q[-1] - ref) / np.abs(ref))
    assert rel < 100 * ip["rtol"], rel
