"""Adaptive Dormand-Prince 5(4) with FSAL,
run by the kernel driver (solvers/integrators/_driver.py) as an explicit
Runge-Kutta stepper (solvers/integrators/_erk_stepper.py): the same tableau as
``dopri5`` (solvers/integrators/dopri5.py, whose arrays are assigned here), selectable as
``dopri5_d`` next to it so that tests/test_driver_erk.py can compare two runs of the same
case; docs/explanation/driver-plan.md.

References
----------
Dormand & Prince (1980), J. Comput. Appl. Math. 6:19-26; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.4-II.5.
"""

from mbstudy.solvers.integrators import _driver, _erk_stepper, dopri5
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="dopri5_d",
    summary="adaptive Dormand-Prince 5(4) embedded Runge-Kutta pair (kernel driver)",
    params=dopri5.SPEC.params,
    fixed_step=dopri5.SPEC.fixed_step,
    forms=dopri5.SPEC.forms,
    adaptive=dopri5.SPEC.adaptive,
    order=dopri5.SPEC.order,
    source=dopri5.SPEC.source,
)

SHARED_TEMPLATES = (_driver, _erk_stepper)

# the tableau (module-level arrays; solvers/integrators/_erk.py documents each name)
RK_STAGES = dopri5.RK_STAGES
RK_AB = dopri5.RK_AB
RK_C = dopri5.RK_C
RK_E = dopri5.RK_E
RK_E3 = dopri5.RK_E3
RK_ERR = dopri5.RK_ERR
RK_FSAL = dopri5.RK_FSAL
# the driver's declarations (solvers/integrators/_driver.py)
STEP_ORDER = dopri5.RK_ORDER
STEP_ADAPTIVE = dopri5.RK_ADAPTIVE
