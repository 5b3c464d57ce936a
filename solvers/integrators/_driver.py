"""The kernel driver: one run loop for every stepper (first step: the explicit Runge-Kutta
family, solvers/integrators/_erk_stepper.py; docs/explanation/driver-plan.md).

The driver owns the run; a stepper owns one step. The driver does:

1. the loop over the output times t_out[1:], writing Y[k] when a step lands on t_out[k]
   (steps are shortened to land exactly, ``integ_ctl_step_to_output``; fixed steps lie on
   the grid t0 + j h);
2. step-size control (adaptive steppers): accept when the stepper's scaled error norm is
   at most 1, the factor ``integ_ctl_step_factor`` (safety 0.9, limits [0.2, 10], at most 1
   right after a rejection), ``h_max``, the floor ``h_min`` (status STEP_FLOOR), a
   quarter step after a failed stage or a non-finite error;
3. the step budget ``max_steps`` (accepted + rejected; status STEP_BUDGET);
4. the step counters (C_STEPS, C_REJECTED) -- right-hand sides are counted where they are
   evaluated, in :func:`integ_drv_rhs`, the only way a stepper evaluates f;
5. the post-step hook (the formulation's ``form_post_step``), then the NaN/divergence
   check of the state (``state_status``).

A stepper provides (the names its module's templates define):

- ``integ_stp_alloc(ny)``: its workspace (a tuple of arrays);
- ``integ_stp_begin(t, y, p, fp, ws, cnt, sw)``: the first stage f(t, y) at a step start
  where nothing is reused (start of the run, after a post-step correction); status;
- ``integ_stp_initial_step(t, t_end, y, p, fp, ws, cnt, sw, rtol, atol)``: (status, h);
- ``integ_stp_attempt(t, h, y, p, fp, ws, cnt, sw)``: the remaining stages and the new
  solution (into the workspace); status (a failed stage);
- ``integ_stp_error(y, h, rtol, atol, sw)``: the scaled error norm of the attempt;
- ``integ_stp_finish(t_new, p, fp, ws, cnt, sw, post)``: work needed before acceptance
  (a non-FSAL method's f(t_new, y_new) when no post-step correction follows); status;
- ``integ_stp_new_state(sw)``: the new solution (an array of the workspace);
- ``integ_stp_advance(sw)``: make the reusable last stage the next first stage;

and the constants ``STEP_ADAPTIVE`` (0: fixed step, integrator parameters (h,
max_steps); 1: (rtol, atol, h0, h_max, h_min, max_steps)) and ``STEP_ORDER`` (the q of
the step factor 0.9 err^(-1/q)).

The order of every floating-point operation is that of the explicit Runge-Kutta loops
this driver replaced, whose results it reproduced bit for bit before they were deleted
(docs/explanation/driver-plan.md).

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.4 (step-size
control, starting step); scipy ``integrate._ivp.base.OdeSolver`` (the stepper split).
"""

import numpy as np
from mbstudy.solvers.integrators import _step_control
from mbstudy.solvers.integrators._step_control import (
    integ_ctl_step_factor,
    integ_ctl_step_to_output,
)
from mbstudy.solvers.kernel_names import (
    STEP_ADAPTIVE,
    STEP_ORDER,
    form_has_post_step,
    form_post_step,
    form_rhs,
    integ_stp_advance,
    integ_stp_alloc,
    integ_stp_attempt,
    integ_stp_begin,
    integ_stp_error,
    integ_stp_finish,
    integ_stp_initial_step,
    integ_stp_new_state,
)
from mbstudy.solvers.linalg import state_status
from mbstudy.solvers.spec import Param
from mbstudy.solvers.status import (
    C_REJECTED,
    C_RHS,
    C_STEPS,
    DIVERGENCE_BOUND,
    OK,
    STEP_BUDGET,
    STEP_FLOOR,
)

# The parameters of an adaptive method, in the order integ_drv_adaptive reads them (ip)
ADAPTIVE_PARAMS = (
    Param("rtol", 1e-8, "relative error tolerance (-)", positive=True),
    Param("atol", 1e-10, "absolute error tolerance (state units)", positive=True),
    Param("h0", 0.0, "initial step (s); 0 = automatic", nonnegative=True),
    Param("h_max", 0.0, "largest step (s); 0 = no limit", nonnegative=True),
    Param("h_min", 1e-14, "step floor (s): smaller steps end the case (step_floor)",
          nonnegative=True),
    Param("max_steps", 10_000_000, "step budget (accepted + rejected)", kind="int",
          minimum=1),
)

# composed with the driver (solvers/compose/harvest.py)
SHARED_TEMPLATES = (_step_control,)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py)
NRT_FREE = ("integ_drv_rhs",)


def integ_drv_rhs(t, y, p, fp, dy, ws, cnt):
    """dy = f(t, y) by the formulation, counted here (C_RHS): the one place a stepper's
    right-hand side is evaluated and counted; status."""
    cnt[C_RHS] += 1
    return form_rhs(t, y, p, fp, dy, ws)


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate from t_out[0] through every output time (module docstring; the kernel
    contract of docs/explanation/solver-contract.md): (status, last row reached)."""
    sw = integ_stp_alloc(y.size)
    for i in range(y.size):
        Y[0, i] = y[i]
    if STEP_ADAPTIVE == 0:
        return integ_drv_fixed(y, t_out, p, fp, ip, ws, Y, cnt, sw)
    return integ_drv_adaptive(y, t_out, p, fp, ip, ws, Y, cnt, sw)


def integ_drv_fixed(y, t_out, p, fp, ip, ws, Y, cnt, sw):
    """Fixed steps h = ip[0] on the grid t0 + j h; ip[1] = step budget."""
    h = ip[0]
    max_steps = int(ip[1])
    ny = y.size
    t0 = t_out[0]
    y1 = integ_stp_new_state(sw)
    j = 0
    for k in range(1, t_out.size):
        j_end = int(np.rint((t_out[k] - t0) / h))
        while j < j_end:
            if cnt[C_STEPS] >= max_steps:
                return STEP_BUDGET, k - 1
            t = t0 + j * h
            st = integ_stp_begin(t, y, p, fp, ws, cnt, sw)
            if st != OK:
                return st, k - 1
            st = integ_stp_attempt(t, h, y, p, fp, ws, cnt, sw)
            if st != OK:
                return st, k - 1
            for i in range(ny):
                y[i] = y1[i]
            cnt[C_STEPS] += 1
            j += 1
            st = form_post_step(t0 + j * h, y, p, fp, ws, cnt)
            if st != OK:
                return st, k - 1
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
        for i in range(ny):
            Y[k, i] = y[i]
    return OK, t_out.size - 1


def integ_drv_adaptive(y, t_out, p, fp, ip, ws, Y, cnt, sw):
    """Step-size controlled integration; ip = (rtol, atol, h0, h_max, h_min, max_steps)."""
    rtol = ip[0]
    atol = ip[1]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    ny = y.size
    t = t_out[0]
    t_end = t_out[t_out.size - 1]
    st = integ_stp_begin(t, y, p, fp, ws, cnt, sw)
    if st != OK:
        return st, 0
    h = ip[2]
    if h <= 0.0:
        st, h = integ_stp_initial_step(t, t_end, y, p, fp, ws, cnt, sw, rtol, atol)
        if st != OK:
            return st, 0
    h = min(h, h_max)
    y1 = integ_stp_new_state(sw)
    post = form_has_post_step()
    k = 1
    rejected_last = False
    while k < t_out.size:
        if cnt[C_STEPS] + cnt[C_REJECTED] >= max_steps:
            return STEP_BUDGET, k - 1
        t_next = t_out[k]
        h, last, too_small = integ_ctl_step_to_output(t, h, t_next, h_min)
        if too_small:
            return STEP_FLOOR, k - 1
        st = integ_stp_attempt(t, h, y, p, fp, ws, cnt, sw)
        if st != OK:
            # a failed stage (singular matrix, ...): retry with a smaller step
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            if h < h_min:
                return st, k - 1
            continue
        en = integ_stp_error(y, h, rtol, atol, sw)
        if not np.isfinite(en):
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            continue
        if en > 1.0:
            cnt[C_REJECTED] += 1
            rejected_last = True
            h *= integ_ctl_step_factor(en, STEP_ORDER, rejected_last)
            continue
        t_new = t_next if last else t + h
        st = integ_stp_finish(t_new, p, fp, ws, cnt, sw, post)
        if st != OK:
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            if h < h_min:
                return st, k - 1
            continue
        t = t_new
        for i in range(ny):
            y[i] = y1[i]
        cnt[C_STEPS] += 1
        if post:
            st = form_post_step(t, y, p, fp, ws, cnt)
            if st != OK:
                return st, k - 1
            st = integ_stp_begin(t, y, p, fp, ws, cnt, sw)
            if st != OK:
                return st, k - 1
        else:
            integ_stp_advance(sw)
        st = state_status(y, DIVERGENCE_BOUND)
        if st != OK:
            return st, k - 1
        if last:
            for i in range(ny):
                Y[k, i] = y[i]
            k += 1
        h = min(h * integ_ctl_step_factor(en, STEP_ORDER, rejected_last), h_max)
        rejected_last = False
    return OK, t_out.size - 1
