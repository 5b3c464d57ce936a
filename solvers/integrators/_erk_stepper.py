"""The explicit Runge-Kutta stepper: one step of a method given as a Butcher tableau, run by
the kernel driver (solvers/integrators/_driver.py).

An explicit method is data: its integrator module (rk4.py, dopri5.py, dop853.py) defines
the tableau as module constants (copied into the generated kernel by
solvers/compose/harvest.py) and names ``SHARED_TEMPLATES = (_driver, _erk_stepper)``. The
constants:

- ``RK_STAGES``: s, the number of stages.
- ``RK_AB``: (s + 1, s) array; row r < s holds a_rj (stage r's combination of k_0..k_{r-1},
  zero above the diagonal), row s the weights b_j of the solution.
- ``RK_C``: (s,) nodes c_r (stage r is evaluated at t + c_r h).
- ``RK_FSAL``: 1 when the last stage is evaluated at the new solution (a_{s-1, j} = b_j,
  c_{s-1} = 1; Dormand-Prince 5(4)): an accepted step's last stage is the next step's first.
  0: the next step's first stage f(t + h, y_new) is evaluated before the step is accepted
  (as Hairer's dop853.f does), so a rejected step costs s - 1 right-hand sides.
- ``RK_ERR``: 0 (fixed step, no estimate), 1 (one embedded estimator ``RK_E``:
  err = sqrt(mean((h sum_j E_j k_j / sk)^2)), Hairer, Nørsett & Wanner I, II.4 (4.11)),
  2 (Hairer's DOP853 5(3) combination of ``RK_E`` (order 5) and ``RK_E3`` (order 3):
  err = |h| S5 / sqrt(ny (S5 + 0.01 S3)), HNW I, II.10). sk = atol + rtol max(|y|, |y_new|).
- ``RK_E``, ``RK_E3``: (s,) error weights (zeros where unused);

and the driver's ``STEP_ORDER`` (q of the step factor 0.9 err^(-1/q) and of the starting
step) and ``STEP_ADAPTIVE`` (solvers/integrators/_driver.py).

Linear combinations are evaluated as ``y + h * (sum_j a_j k_j)`` over the non-zero a_j in
stage order, and as ``y + (h a) k`` for a single term: the operation order of the
hand-written Dormand-Prince kernels of the first versions, whose results the driver
reproduced bit for bit when it replaced them (docs/explanation/driver-plan.md).

Workspace ``sw = (K, yt, y1)``: the stages K (s x ny), a stage argument yt and the new
solution y1. K[0] holds f(t, y) at the start of a step: evaluated by
:func:`integ_stp_begin`, or reused from the last step (FSAL: its last stage; otherwise
f(t_new, y1) evaluated into K[1] by :func:`integ_stp_finish`) by
:func:`integ_stp_advance`.

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1 (Butcher
tableaux), II.4 (embedded error estimates, starting step), II.5 and II.10 (DOPRI5,
DOP853).
"""


import numpy as np
from mbstudy.solvers.kernel_names import (
    RK_AB,
    RK_C,
    RK_E,
    RK_E3,
    RK_ERR,
    RK_FSAL,
    RK_STAGES,
    STEP_ORDER,
    integ_drv_rhs,
)
from mbstudy.solvers.status import OK

# Templates compiled without numba's reference counting (solvers/compose/nrt.py)
NRT_FREE = (
    "integ_erk_combine",
    "integ_erk_err_norm",
    "integ_erk_initial_step",
    "integ_stp_begin",
    "integ_stp_initial_step",
    "integ_stp_attempt",
    "integ_stp_error",
    "integ_stp_finish",
    "integ_stp_advance",
)


# Templates LLVM inlines into the driver's step loop whatever their size (a call out of
# line passes every field of the workspace tuples: solvers/compile_units.py link_only)
ALWAYS_INLINE = ("integ_stp_begin", "integ_stp_attempt", "integ_stp_finish", "integ_stp_advance")


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


def integ_erk_initial_step(t, t_end, y, k1, k2, yt, p, fp, ws, cnt, rtol, atol, order):
    """Starting step size of an explicit method of ``order`` (Hairer, Nørsett & Wanner I,
    Sect. II.4 "starting step size"; dop853.f HINIT with iord = order), from k1 = f(t, y).

    One trial Euler step (one right-hand side into ``k2``; ``yt`` is scratch) estimates
    the second derivative. Returns (status, h).
    """
    ny = y.size
    s0 = 0.0
    s1 = 0.0
    for i in range(ny):
        sc = atol + rtol * abs(y[i])
        s0 += (y[i] / sc) ** 2
        s1 += (k1[i] / sc) ** 2
    d0 = np.sqrt(s0 / ny)
    d1 = np.sqrt(s1 / ny)
    h = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h = min(h, t_end - t)
    for i in range(ny):
        yt[i] = y[i] + h * k1[i]
    st = integ_drv_rhs(t + h, yt, p, fp, k2, ws, cnt)
    if st != OK:
        return st, h
    s2 = 0.0
    for i in range(ny):
        sc = atol + rtol * abs(y[i])
        s2 += ((k2[i] - k1[i]) / sc) ** 2
    d2 = np.sqrt(s2 / ny) / h
    if max(d1, d2) <= 1e-15:
        h1 = max(1e-6, h * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / order)
    return OK, min(100.0 * h, h1)


def integ_stp_alloc(ny):
    """The stepper's workspace (K, yt, y1) (module docstring)."""
    return (np.empty((RK_STAGES, ny)), np.empty(ny), np.empty(ny))


def integ_stp_begin(t, y, p, fp, ws, cnt, sw):
    """K[0] = f(t, y); status."""
    return integ_drv_rhs(t, y, p, fp, sw[0][0], ws, cnt)


def integ_stp_initial_step(t, t_end, y, p, fp, ws, cnt, sw, rtol, atol):
    """Hairer's starting step from K[0] = f(t, y) (integ_erk_initial_step); (status, h)."""
    K = sw[0]
    return integ_erk_initial_step(t, t_end, y, K[0], K[1], sw[1], p, fp, ws, cnt, rtol, atol,
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
    """Scaled error norm of the attempt (RK_ERR: module docstring)."""
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
