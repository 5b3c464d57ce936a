"""The explicit Runge-Kutta stepper run by the kernel driver (solvers/integrators/_driver.py).

One step of an explicit method given as data, its Butcher tableau (the ``RK_*`` constants
documented in solvers/integrators/_erk.py: ``RK_STAGES``, ``RK_AB`` (rows a_r, last row
b), ``RK_C``, ``RK_E``/``RK_E3`` error weights with ``RK_ERR`` selecting the estimator,
``RK_FSAL``), plus the driver's ``STEP_ORDER`` and ``STEP_ADAPTIVE``. The linear
combinations and the error norm are the templates of _erk.py (shared by name below), so
a step's arithmetic is that of the kernels it replaces.

Workspace ``sw = (K, yt, y1)``: the stages K (s x ny), a stage argument yt and the new
solution y1. K[0] holds f(t, y) at the start of a step: evaluated by
:func:`integ_stp_begin`, or reused from the last step (FSAL: its last stage; otherwise
f(t_new, y1) evaluated into K[1] by :func:`integ_stp_finish`) by
:func:`integ_stp_advance`.

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1 (Butcher
tableaux), II.4 (embedded error estimates, starting step), II.5, II.10.
"""

import numpy as np
from mbstudy.solvers.formulations._common import common_initial_step
from mbstudy.solvers.integrators._erk import integ_erk_combine, integ_erk_err_norm
from mbstudy.solvers.kernel_names import (
    RK_C,
    RK_FSAL,
    RK_STAGES,
    STEP_ORDER,
    integ_drv_rhs,
)
from mbstudy.solvers.status import OK

# the tableau arithmetic is _erk.py's (solvers/compose/harvest.py copies these by name)
SHARED_TEMPLATES = ("integ_erk_combine", "integ_erk_err_norm")

# Templates compiled without numba's reference counting (solvers/compose/nrt.py)
NRT_FREE = (
    "integ_erk_combine",
    "integ_erk_err_norm",
    "integ_stp_begin",
    "integ_stp_initial_step",
    "integ_stp_attempt",
    "integ_stp_error",
    "integ_stp_finish",
    "integ_stp_advance",
)


def integ_stp_alloc(ny):
    """The stepper's workspace (K, yt, y1) (module docstring)."""
    return (np.empty((RK_STAGES, ny)), np.empty(ny), np.empty(ny))


def integ_stp_begin(t, y, p, fp, ws, cnt, sw):
    """K[0] = f(t, y); status."""
    return integ_drv_rhs(t, y, p, fp, sw[0][0], ws, cnt)


def integ_stp_initial_step(t, t_end, y, p, fp, ws, cnt, sw, rtol, atol):
    """Hairer's starting step from K[0] = f(t, y) (common_initial_step); (status, h)."""
    K = sw[0]
    return common_initial_step(t, t_end, y, K[0], K[1], sw[1], p, fp, ws, cnt, rtol, atol,
                               STEP_ORDER)


def integ_stp_attempt(t, h, y, p, fp, ws, cnt, sw):
    """Stages 1 .. s-1 from K[0] and the new solution y1; with RK_FSAL the last stage is
    evaluated at y1 (its row is b). A failed stage ends the sweep; status."""
    K = sw[0]
    yt = sw[1]
    y1 = sw[2]
    last = RK_STAGES - 1 if RK_FSAL == 1 else RK_STAGES
    for r in range(1, last):
        integ_erk_combine(y, h, K, r, yt)
        st = integ_drv_rhs(t + RK_C[r] * h, yt, p, fp, K[r], ws, cnt)
        if st != OK:
            return st
    # the solution row; with RK_FSAL the last stage is evaluated at it
    integ_erk_combine(y, h, K, last, y1)
    if RK_FSAL == 1:
        return integ_drv_rhs(t + RK_C[last] * h, y1, p, fp, K[last], ws, cnt)
    return OK


def integ_stp_error(y, h, rtol, atol, sw):
    """Scaled error norm of the attempt (RK_ERR: _erk.py's estimators)."""
    return integ_erk_err_norm(sw[0], y, sw[2], h, rtol, atol)


def integ_stp_finish(t_new, p, fp, ws, cnt, sw, post):
    """Before acceptance: a non-FSAL method evaluates f(t_new, y1) (the next first stage)
    into the free K[1], unless a post-step correction will change y1; status."""
    if RK_FSAL == 0 and not post:
        return integ_drv_rhs(t_new, sw[2], p, fp, sw[0][1], ws, cnt)
    return OK


def integ_stp_new_state(sw):
    """The new solution y1 of the last attempt."""
    return sw[2]


def integ_stp_advance(sw):
    """The next step's first stage K[0] from the accepted step (FSAL: its last stage;
    otherwise f(t_new, y1) in K[1])."""
    K = sw[0]
    last = K[RK_STAGES - 1] if RK_FSAL == 1 else K[1]
    for i in range(last.size):
        K[0, i] = last[i]
