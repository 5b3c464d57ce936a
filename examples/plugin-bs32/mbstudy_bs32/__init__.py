"""Bogacki-Shampine 3(2): an adaptive embedded Runge-Kutta pair with FSAL, as an mbstudy
integrator plugin (the worked example of docs/guide/method-plugins.md).

A method outside the package is a module with the contract of mbstudy's own
(docs/explanation/solver-contract.md, "The stepper contract"): a ``SPEC``, the data of
the method, and the templates it shares. An explicit Runge-Kutta pair needs no code of
its own: its Butcher tableau below is run by mbstudy's kernel driver and explicit
stepper, which own the output loop, the step-size control, the budget, the counters and
the post-step hooks. The package registers the module under the entry-point group
``mbstudy.integrators`` (pyproject.toml), and the registry lists it by ``SPEC.name``.

Third order with an embedded second-order solution, four stages of which the last is
evaluated at the new solution (FSAL: three right-hand sides per step); the pair
scipy's ``RK23`` implements, whose steps it takes (tests/test_method_plugins.py).

References
----------
Bogacki & Shampine, "A 3(2) pair of Runge-Kutta formulas", Appl. Math. Lett. 2 (1989)
321-325; Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.4.
"""

import numpy as np
from mbstudy.solvers.integrators import _driver, _erk_stepper
from mbstudy.solvers.spec import IntegratorSpec

SPEC = IntegratorSpec(
    name="bs32",
    summary="adaptive Bogacki-Shampine 3(2) pair (plugin example)",
    params=_driver.ADAPTIVE_PARAMS,
    fixed_step=False,
    adaptive=True,
    order=3,
    source="Bogacki & Shampine 1989 (a method plugin: examples/plugin-bs32)",
)

# mbstudy's kernel driver runs the tableau as an explicit Runge-Kutta stepper
SHARED_TEMPLATES = (_driver, _erk_stepper)

RK_STAGES = 4
_b = [2.0 / 9.0, 1.0 / 3.0, 4.0 / 9.0, 0.0]
# rows 0-3: a_rj of the stages (stage 4 is the new solution: its row is b); row 4: b
RK_AB = np.array(
    [
        [0.0, 0.0, 0.0, 0.0],
        [1.0 / 2.0, 0.0, 0.0, 0.0],
        [0.0, 3.0 / 4.0, 0.0, 0.0],
        _b,
        _b,
    ]
)
RK_C = np.array([0.0, 1.0 / 2.0, 3.0 / 4.0, 1.0])
# error weights e_j = b_j - bhat_j, bhat = (7/24, 1/4, 1/3, 1/8) the second-order solution
RK_E = np.array([-5.0 / 72.0, 1.0 / 12.0, 1.0 / 9.0, -1.0 / 8.0])
RK_E3 = np.zeros(RK_STAGES)  # unused (RK_ERR = 1)
RK_ERR = 1
RK_FSAL = 1
STEP_ORDER = 3  # the step factor 0.9 err^(-1/3): the estimate is of order 2
STEP_ADAPTIVE = 1
