"""One driver for every explicit Runge-Kutta method given as a Butcher tableau.

An explicit method is data: its integrator module defines the tableau as module
constants (copied into the generated kernel by solvers/compose/harvest.py) and names this module
in ``SHARED_TEMPLATES``; the driver below runs it. The constants:

- ``RK_STAGES``: s, the number of stages.
- ``RK_AB``: (s + 1, s) array; row r < s holds a_rj (stage r's combination of k_0..k_{r-1},
  zero above the diagonal), row s the weights b_j of the solution.
- ``RK_C``: (s,) nodes c_r (stage r is evaluated at t + c_r h).
- ``RK_FSAL``: 1 when the last stage is evaluated at the new solution (a_{s-1, j} = b_j,
  c_{s-1} = 1; Dormand-Prince 5(4)): an accepted step's last stage is the next step's first.
  0: the next step's first stage f(t + h, y_new) is evaluated after the step is accepted
  (as Hairer's dop853.f does), so a rejected step costs s - 1 right-hand sides.
- ``RK_ERR``: 0 (fixed step, no estimate), 1 (one embedded estimator ``RK_E``:
  err = sqrt(mean((h sum_j E_j k_j / sk)^2)), Hairer, Nørsett & Wanner I, II.4 (4.11)),
  2 (Hairer's DOP853 5(3) combination of ``RK_E`` (order 5) and ``RK_E3`` (order 3):
  err = |h| S5 / sqrt(ny (S5 + 0.01 S3)), HNW I, II.10). sk = atol + rtol max(|y|, |y_new|).
- ``RK_E``, ``RK_E3``: (s,) error weights (zeros where unused).
- ``RK_ORDER``: q in the step-size factor 0.9 err^(-1/q) and the starting-step heuristic.
- ``RK_ADAPTIVE``: 0 for a fixed step ``h`` (integrator parameters (h, max_steps)), 1 for
  step-size control (parameters (rtol, atol, h0, h_max, h_min, max_steps)).

Linear combinations are evaluated as ``y + h * (sum_j a_j k_j)`` over the non-zero a_j in
stage order, and as ``y + (h a) k`` for a single term: the operation order of the
hand-written Dormand-Prince kernels this driver replaced, so their results are reproduced
bit for bit.

Fixed step (RK_ADAPTIVE = 0): steps of exactly ``h`` on the grid t_j = t0 + j h (no
accumulation of rounding in t); the output times lie on that grid. After every step the
formulation's post-step correction runs, then the state is checked for NaN and
divergence.

Adaptive (RK_ADAPTIVE = 1): steps are shortened to land on output times exactly
(common_step_to_output), the step factor is common_step_factor, the starting step
common_initial_step (Hairer's heuristic). A failed stage (singular matrix, ...) or a
non-finite error retries with a quarter step. A step below ``h_min`` ends the case with
``step_floor``, more than ``max_steps`` (accepted + rejected) with ``step_budget``. After
an accepted step the formulation's post-step correction runs and the next first stage is
evaluated at the corrected state.

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1 (Butcher
tableaux), II.4 (step-size control, starting step), II.5 and II.10 (DOPRI5, DOP853).
"""

import numpy as np
from mbstudy.solvers.formulations._common import (
    common_initial_step,
    common_step_factor,
    common_step_to_output,
)
from mbstudy.solvers.kernel_names import (
    RK_AB,
    RK_ADAPTIVE,
    RK_C,
    RK_E,
    RK_E3,
    RK_ERR,
    RK_FSAL,
    RK_ORDER,
    RK_STAGES,
    form_has_post_step,
    form_post_step,
    form_rhs,
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

# The parameters of an adaptive method, in the order integ_erk_adaptive reads them (ip)
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

# Templates compiled without numba's reference counting (solvers/compose/nrt.py)
NRT_FREE = ("integ_erk_combine", "integ_erk_err_norm")


def integ_erk_combine(y, h, K, row, out):
    """out = y + h sum_j RK_AB[row, j] K[j] over the non-zero coefficients (j < row, or
    j < s for the solution row s); a single term as y + (h a) k (module docstring)."""
    nk = min(row, RK_STAGES)
    nnz = 0
    jl = 0
    for j in range(nk):
        if RK_AB[row, j] != 0.0:
            nnz += 1
            jl = j
    if nnz == 1:
        a = RK_AB[row, jl]
        for i in range(y.size):
            out[i] = y[i] + h * a * K[jl, i]
        return
    for i in range(y.size):
        s = 0.0
        for j in range(nk):
            a = RK_AB[row, j]
            if a != 0.0:
                s += a * K[j, i]
        out[i] = y[i] + h * s


def integ_erk_err_norm(K, y0, y1, h, rtol, atol):
    """Scaled error norm of the embedded estimator(s) (RK_ERR, module docstring)."""
    n = y0.size
    s5 = 0.0
    s3 = 0.0
    for i in range(n):
        sc = atol + rtol * max(abs(y0[i]), abs(y1[i]))
        e = 0.0
        e3 = 0.0
        for j in range(RK_STAGES):
            if RK_E[j] != 0.0:
                e += RK_E[j] * K[j, i]
            if RK_ERR == 2 and RK_E3[j] != 0.0:
                e3 += RK_E3[j] * K[j, i]
        if RK_ERR == 1:
            r = h * e / sc
            s5 += r * r
        else:
            e = e / sc
            e3 = e3 / sc
            s5 += e * e
            s3 += e3 * e3
    if RK_ERR == 1:
        return np.sqrt(s5 / n)
    if s5 == 0.0 and s3 == 0.0:
        return 0.0
    return abs(h) * s5 / np.sqrt(n * (s5 + 0.01 * s3))


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate from t_out[0] through every output time; see
    docs/explanation/solver-contract.md."""
    ny = y.size
    K = np.empty((RK_STAGES, ny))
    yt = np.empty(ny)
    y1 = np.empty(ny)
    for i in range(ny):
        Y[0, i] = y[i]
    if RK_ADAPTIVE == 0:
        return integ_erk_fixed(y, t_out, p, fp, ip, ws, Y, cnt, K, yt)
    return integ_erk_adaptive(y, t_out, p, fp, ip, ws, Y, cnt, K, yt, y1)


def integ_erk_fixed(y, t_out, p, fp, ip, ws, Y, cnt, K, yt):
    """Fixed steps h = ip[0] on the grid t0 + j h; ip[1] = step budget."""
    h = ip[0]
    max_steps = int(ip[1])
    ny = y.size
    t0 = t_out[0]
    j = 0
    for k in range(1, t_out.size):
        j_end = int(np.rint((t_out[k] - t0) / h))
        while j < j_end:
            if cnt[C_STEPS] >= max_steps:
                return STEP_BUDGET, k - 1
            t = t0 + j * h
            st = form_rhs(t, y, p, fp, K[0], ws)
            cnt[C_RHS] += 1
            if st != OK:
                return st, k - 1
            for r in range(1, RK_STAGES):
                integ_erk_combine(y, h, K, r, yt)
                st = form_rhs(t + RK_C[r] * h, yt, p, fp, K[r], ws)
                cnt[C_RHS] += 1
                if st != OK:
                    return st, k - 1
            integ_erk_combine(y, h, K, RK_STAGES, yt)
            for i in range(ny):
                y[i] = yt[i]
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


def integ_erk_adaptive(y, t_out, p, fp, ip, ws, Y, cnt, K, yt, y1):
    """Step-size controlled integration; ip = (rtol, atol, h0, h_max, h_min, max_steps)."""
    rtol = ip[0]
    atol = ip[1]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    ny = y.size
    k1 = K[0]
    t = t_out[0]
    t_end = t_out[t_out.size - 1]
    st = form_rhs(t, y, p, fp, k1, ws)
    cnt[C_RHS] += 1
    if st != OK:
        return st, 0
    h = ip[2]
    if h <= 0.0:
        st, h = common_initial_step(
            t, t_end, y, k1, K[1], yt, p, fp, ws, cnt, rtol, atol, RK_ORDER
        )
        if st != OK:
            return st, 0
    h = min(h, h_max)
    k = 1
    rejected_last = False
    while k < t_out.size:
        if cnt[C_STEPS] + cnt[C_REJECTED] >= max_steps:
            return STEP_BUDGET, k - 1
        t_next = t_out[k]
        h, last, too_small = common_step_to_output(t, h, t_next, h_min)
        if too_small:
            return STEP_FLOOR, k - 1
        # stages 1 .. s-1 from K[0] = f(t, y); with RK_FSAL the last one is evaluated at
        # the new solution, combined into y1; a failed stage ends the sweep
        st = OK
        for r in range(1, RK_STAGES):
            buf = y1 if (RK_FSAL == 1 and r == RK_STAGES - 1) else yt
            integ_erk_combine(y, h, K, r, buf)
            st = form_rhs(t + RK_C[r] * h, buf, p, fp, K[r], ws)
            cnt[C_RHS] += 1
            if st != OK:
                break
        if st != OK:
            # a failed stage (singular matrix, ...): retry with a smaller step
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            if h < h_min:
                return st, k - 1
            continue
        if RK_FSAL == 0:
            integ_erk_combine(y, h, K, RK_STAGES, y1)
        en = integ_erk_err_norm(K, y, y1, h, rtol, atol)
        if not np.isfinite(en):
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            continue
        if en > 1.0:
            cnt[C_REJECTED] += 1
            rejected_last = True
            h *= common_step_factor(en, RK_ORDER, rejected_last)
            continue
        t_new = t_next if last else t + h
        post = form_has_post_step()
        if RK_FSAL == 0 and not post:
            # f at the new point (the next step's first stage), into the free K[1]
            st = form_rhs(t_new, y1, p, fp, K[1], ws)
            cnt[C_RHS] += 1
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
            st = form_rhs(t, y, p, fp, k1, ws)
            cnt[C_RHS] += 1
            if st != OK:
                return st, k - 1
        else:
            last_k = K[RK_STAGES - 1] if RK_FSAL == 1 else K[1]
            for i in range(ny):
                k1[i] = last_k[i]
        st = state_status(y, DIVERGENCE_BOUND)
        if st != OK:
            return st, k - 1
        if last:
            for i in range(ny):
                Y[k, i] = y[i]
            k += 1
        h = min(h * common_step_factor(en, RK_ORDER, rejected_last), h_max)
        rejected_last = False
    return OK, t_out.size - 1
