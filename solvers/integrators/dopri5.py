"""Adaptive Dormand–Prince 5(4) embedded Runge–Kutta pair with FSAL.

The method is data: the tableau below, run by the explicit Runge-Kutta driver
(solvers/integrators/_erk_stepper.py; RK_FSAL = 1: the seventh stage is evaluated at the new
solution and is the next step's first stage).

Error control on the whole state with the mixed norm
err = sqrt(mean((e_i / (atol + rtol max(|y_i|, |y_new_i|)))^2)); step factor
0.9 err^(-1/5) clamped to [0.2, 10] (5 after a rejection); steps are shortened to land
on output times exactly; the initial step follows Hairer's heuristic (algorithm of
Hairer, Nørsett & Wanner I, II.4). A step below ``h_min`` ends the case with
``step_floor``, more than ``max_steps`` with ``step_budget``. After an accepted step the
formulation's post-step correction runs; if it changes the state, the FSAL stage is
re-evaluated (one extra right-hand side per step).

References
----------
Dormand & Prince (1980), J. Comput. Appl. Math. 6:19-26; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.4-II.5 (DOPRI5).
"""

import numpy as np
from mbstudy.solvers.integrators import _driver, _erk_stepper
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="dopri5",
    summary="adaptive Dormand-Prince 5(4) embedded Runge-Kutta pair",
    params=_driver.ADAPTIVE_PARAMS,
    fixed_step=False,
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection"),
    adaptive=True,
    order=5,
    source="Dormand & Prince 1980; Hairer, Nørsett & Wanner I, II.4-II.5",
)

# The kernel driver runs the tableau below as an explicit Runge-Kutta stepper
# (solvers/integrators/_driver.py, _erk_stepper.py)
SHARED_TEMPLATES = (_driver, _erk_stepper)

# Dormand–Prince coefficients (Hairer, Nørsett & Wanner I, Table 5.2). Rows 0-6: a_rj of
# stages 1-7 (stage 7 = the new solution: its row is b); row 7: the weights b_j (b_7 = 0).
RK_STAGES = 7
_b = [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0, 0.0]
RK_AB = np.array(
    [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0, 0.0],
        [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0, 0.0],
        [9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0,
         0.0, 0.0],
        _b,
        _b,
    ]
)
RK_C = np.array([0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0])
# error weights e_j = b_j - bhat_j of the embedded order-4 solution (HNW I, II.5)
RK_E = np.array(
    [71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0, 22.0 / 525.0,
     -1.0 / 40.0]
)
RK_E3 = np.zeros(RK_STAGES)  # unused (RK_ERR = 1)
RK_ERR = 1
RK_FSAL = 1
STEP_ORDER = 5
STEP_ADAPTIVE = 1
