"""Classic fixed-step fourth-order Runge-Kutta,
run by the kernel driver (solvers/integrators/_driver.py) as an explicit
Runge-Kutta stepper (solvers/integrators/_erk_stepper.py): the same tableau as
``rk4`` (solvers/integrators/rk4.py, whose arrays are assigned here), selectable as
``rk4_d`` next to it so that tests/test_driver_erk.py can compare two runs of the same
case; docs/explanation/driver-plan.md.

References
----------
Kutta 1901; Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1.
"""

from mbstudy.solvers.integrators import _driver, _erk_stepper, rk4
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="rk4_d",
    summary="classic fixed-step fourth-order Runge-Kutta (kernel driver)",
    params=rk4.SPEC.params,
    fixed_step=rk4.SPEC.fixed_step,
    forms=rk4.SPEC.forms,
    adaptive=rk4.SPEC.adaptive,
    order=rk4.SPEC.order,
    source=rk4.SPEC.source,
)

SHARED_TEMPLATES = (_driver, _erk_stepper)

# the tableau (module-level arrays; solvers/integrators/_erk.py documents each name)
RK_STAGES = rk4.RK_STAGES
RK_AB = rk4.RK_AB
RK_C = rk4.RK_C
RK_E = rk4.RK_E
RK_E3 = rk4.RK_E3
RK_ERR = rk4.RK_ERR
RK_FSAL = rk4.RK_FSAL
# the driver's declarations (solvers/integrators/_driver.py)
STEP_ORDER = rk4.RK_ORDER
STEP_ADAPTIVE = rk4.RK_ADAPTIVE
