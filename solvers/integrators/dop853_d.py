"""Adaptive Dormand-Prince 8(5,3) (Hairer's DOP853),
run by the kernel driver (solvers/integrators/_driver.py) as an explicit
Runge-Kutta stepper (solvers/integrators/_erk_stepper.py): the same tableau as
``dop853`` (solvers/integrators/dop853.py, whose arrays are assigned here), selectable as
``dop853_d`` next to it so that tests/test_driver_erk.py can compare two runs of the same
case; docs/explanation/driver-plan.md.

References
----------
Prince & Dormand (1981), J. Comput. Appl. Math. 7:67-75; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.10.
"""

from mbstudy.solvers.integrators import _driver, _erk_stepper, dop853
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="dop853_d",
    summary="adaptive Dormand-Prince 8(5,3) explicit Runge-Kutta method (kernel driver)",
    params=dop853.SPEC.params,
    fixed_step=dop853.SPEC.fixed_step,
    forms=dop853.SPEC.forms,
    adaptive=dop853.SPEC.adaptive,
    order=dop853.SPEC.order,
    source=dop853.SPEC.source,
)

SHARED_TEMPLATES = (_driver, _erk_stepper)

# the tableau (module-level arrays; solvers/integrators/_erk.py documents each name)
RK_STAGES = dop853.RK_STAGES
RK_AB = dop853.RK_AB
RK_C = dop853.RK_C
RK_E = dop853.RK_E
RK_E3 = dop853.RK_E3
RK_ERR = dop853.RK_ERR
RK_FSAL = dop853.RK_FSAL
# the driver's declarations (solvers/integrators/_driver.py)
STEP_ORDER = dop853.RK_ORDER
STEP_ADAPTIVE = dop853.RK_ADAPTIVE
