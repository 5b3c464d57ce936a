"""Classic fixed-step fourth-order Runge–Kutta (Kutta 1901).

Steps of exactly ``h`` from t0 on the grid t_j = t0 + j h (no accumulation of rounding
in t); output times lie on that grid (the study validation checks that ``h`` divides the
output interval). After every step the formulation's post-step correction runs
(projection), then the state is checked for NaN and divergence. 4 right-hand sides per
step. The method is data: the tableau below, run by the kernel driver as an explicit
Runge-Kutta stepper (solvers/integrators/_driver.py, _erk_stepper.py) with a fixed step.

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1, Table 1.2.
"""

import numpy as np
from mbstudy.solvers.integrators import _driver, _erk_stepper
from mbstudy.solvers.spec import IntegratorSpec, Param

SPEC = IntegratorSpec(
    name="rk4",
    summary="classic fixed-step fourth-order Runge-Kutta",
    params=(
        Param("h", 1e-3, "step size (s)", positive=True),
        Param("max_steps", 100_000_000, "step budget (status step_budget when exhausted)",
              kind="int", minimum=1),
    ),
    fixed_step=True,
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection"),
    adaptive=False,
    order=4,
    source="Kutta 1901; Hairer, Nørsett & Wanner I, Sect. II.1",
)

# The kernel driver runs the tableau below as an explicit Runge-Kutta stepper
# (solvers/integrators/_driver.py, _erk_stepper.py)
SHARED_TEMPLATES = (_driver, _erk_stepper)

RK_STAGES = 4
RK_AB = np.array(
    [
        [0.0, 0.0, 0.0, 0.0],
        [0.5, 0.0, 0.0, 0.0],
        [0.0, 0.5, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0],
    ]
)
RK_C = np.array([0.0, 0.5, 0.5, 1.0])
RK_E = np.zeros(RK_STAGES)  # no error estimate (fixed step)
RK_E3 = np.zeros(RK_STAGES)
RK_ERR = 0
RK_FSAL = 0
STEP_ORDER = 4
STEP_ADAPTIVE = 0
