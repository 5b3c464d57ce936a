"""The seed-003 (PRADIS) implicit scheme as an integrator template for every model.

The scheme of :mod:`solvers.elements.implicit` (seed 003 §2.13–2.18;
docs/explanation/methods.md#implicit), written for the first-order state ``y = [q | v | W |
extras]`` of the index-1 form that every formulation's ``form_rhs`` gives (``dq/dt = v``, ``dv/dt =
a(t, q, v)``, then the rates of W and of the extras). Newmark with gamma = 1, beta = 1/2, i.e.
docs/explanation/methods.md#implicit::

    q_i = q_{i-1} + (v_{i-1} + v_i) dt / 2          (trapezoidal in q)
    r_i = r_{i-1} + dt f_r(t_i, y_i)   for r = v, W, extras   (backward Euler)

One attempt of step i:

1. **Predictor** (as the network kernel): ``r⁰ = r_{i-1} + dt d_{i-1}`` with ``d`` the
   slope of the previous step, ``(r_{i-1} - r_{i-2})/dt`` (seed: a_{i-1}; at t0 it is
   f(t0, y0)), and ``q⁰ = q_{i-1} + (v_{i-1} + v⁰) dt/2``.
2. **Newton** on ``R(y) = 0``, ``R_q = (q - q_{i-1})/dt - (v_{i-1} + v)/2``,
   ``R_r = (r - r_{i-1})/dt - f_r(t_i, y)`` (units of the state's rate). The Jacobian
   dR/dy is re-evaluated at every iteration, its q rows exactly and its other rows by
   forward differences of ``form_rhs`` (``ny`` extra right-hand sides; counted in
   ``cnt[C_RHS]``, one ``cnt[C_JAC]`` per Jacobian). It stops when **both**
   ``max|R(y^k)| < delta_f`` and ``max|Δz| < delta_z``, where ``Δz`` is the update of
   the v, W and extras rows in units of the solution variable ``variable``: ``x`` →
   ``Δv dt/2`` (= Δq once the linear q rows hold), ``v`` → ``Δv``, ``a`` → ``Δv/dt``.
   After ``max_newton`` iterations (or a failed right-hand side / singular Jacobian)
   the attempt is rejected and retried with ``dt * NEWTON_SHRINK``.
3. **Local error** ``l = max_n |v⁰_n - v_n| / 2`` (seed §2.16; v rows only).
4. **Step rule** (seed §2.17) with ``c`` and the optional ``cap``: the same rule as
   :func:`solvers.elements.implicit.step_rule` (the one compiled copy; the generated
   kernel imports it, ``KERNEL_IMPORTS``), limited to ``dt_max``.
5. **Accept or reject**: l > delta_l → retry from the same start with dt_rec; a retry
   below ``dt_min`` ends the case with ``step_floor`` (or the failure that forced it).
   After an accepted step the formulation's post-step correction runs (projection),
   then the divergence check; the next step is at least ``dt_min``; the last step is
   shortened to land on t_end, never leaving a sliver below ``dt_min``.

**Output times** do not steer the steps (as in the network kernel). Rows of ``Y`` at
output times inside an accepted step come from the scheme's own interpolant: v, W and
the extras linear between the step's end points, q the exact integral of the linear v
plus the linear blend ``r * (q_i - q_{i-1} - (v_{i-1} + v_i) dt/2)`` of the post-step
correction (zero without projection), so every row is continuous and an output at a
step point equals the accepted state there.

Parameters are :data:`solvers.elements.implicit.PARAMS` (same names and meaning as for
element networks): delta_l, c, cap, dt0, dt_min, dt_max, delta_f, delta_z, max_newton,
variable, max_steps. For the ``network`` model the runner dispatches to the jitted
network kernel :func:`solvers.elements.implicit.implicit_run` instead of this template.

References
----------
Seed 003 §2.13–2.18; docs/explanation/methods.md#implicit; docs/reference/elements.md.
"""

import numpy as np
from mbstudy.solvers.elements.implicit import (
    IP_C,
    IP_CAP,
    IP_DELTA_F,
    IP_DELTA_L,
    IP_DELTA_Z,
    IP_DT0,
    IP_DT_MAX,
    IP_DT_MIN,
    IP_MAX_NEWTON,
    IP_MAX_STEPS,
    IP_VARIABLE,
    NEWTON_SHRINK,
    PARAMS,
    step_rule,
)
from mbstudy.solvers.kernel_names import form_has_post_step, form_post_step, form_rhs, model_sizes
from mbstudy.solvers.linalg import lu_factor, lu_solve, state_status
from mbstudy.solvers.spec import IntegratorSpec
from mbstudy.solvers.status import (
    C_JAC,
    C_NEWTON,
    C_REJECTED,
    C_RHS,
    C_STEPS,
    DIVERGENCE_BOUND,
    NAN,
    NEWTON_FAILED,
    OK,
    STEP_BUDGET,
    STEP_FLOOR,
)

FD_REL = 1.4901161193847656e-08
"""Relative forward-difference increment, sqrt(machine epsilon)."""

SPEC = IntegratorSpec(
    name="implicit",
    summary="seed-003 (PRADIS) implicit first-order scheme with Newton and step rule",
    params=PARAMS,
    fixed_step=False,
    adaptive=True,
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection"),
    # an element network (solvers/models/network.py) runs with this scheme's network kernel
    equations=("multibody", "element-network"),
    order=1,
    source="seed 003 §2.13-2.18; docs/explanation/methods.md#implicit",
)

# compiled helpers the generated kernel imports (solvers/compose/harvest.py): the one seed-003 step
# rule, shared with the element-network kernel
KERNEL_IMPORTS = {"mbstudy.solvers.elements.implicit": ("step_rule",)}

__all__ = [
    "FD_REL",
    "IP_C",
    "IP_CAP",
    "IP_DELTA_F",
    "IP_DELTA_L",
    "IP_DELTA_Z",
    "IP_DT0",
    "IP_DT_MAX",
    "IP_DT_MIN",
    "IP_MAX_NEWTON",
    "IP_MAX_STEPS",
    "IP_VARIABLE",
    "NEWTON_SHRINK",
    "SPEC",
]


def integ_residual(t, dt, y_prev, y, f, R, n, p, fp, ws):
    """R(y) of the step (units of the state's rate); f receives form_rhs(t, y)."""
    st = form_rhs(t, y, p, fp, f, ws)
    if st != OK:
        return st
    for i in range(n):
        R[i] = (y[i] - y_prev[i]) / dt - 0.5 * (y_prev[n + i] + y[n + i])
    for i in range(n, y.size):
        R[i] = (y[i] - y_prev[i]) / dt - f[i]
    return OK


def integ_jacobian(t, dt, y, f, Jm, yt, ft, n, p, fp, ws, cnt):
    """Jm = dR/dy: q rows exact, the others I/dt - df/dy by forward differences."""
    ny = y.size
    for i in range(ny):
        for j in range(ny):
            Jm[i, j] = 0.0
    for i in range(n):
        Jm[i, i] = 1.0 / dt
        Jm[i, n + i] = -0.5
    for j in range(ny):
        yt[j] = y[j]
    for j in range(ny):
        yt[j] = y[j] + FD_REL * max(abs(y[j]), 1.0)
        h = yt[j] - y[j]
        st = form_rhs(t, yt, p, fp, ft, ws)
        cnt[C_RHS] += 1
        yt[j] = y[j]
        if st != OK:
            return st
        for i in range(n, ny):
            Jm[i, j] = -(ft[i] - f[i]) / h
    for i in range(n, ny):
        Jm[i, i] += 1.0 / dt
    cnt[C_JAC] += 1
    return OK


def integ_newton(t, dt, y_prev, y, f, R, Jm, piv, yt, ft, n, ip, p, fp, ws, cnt):
    """Newton iteration of one attempt from the predictor in y; (status, iterations)."""
    ny = y.size
    var = int(ip[IP_VARIABLE])
    delta_f = ip[IP_DELTA_F]
    delta_z = ip[IP_DELTA_Z]
    max_iter = int(ip[IP_MAX_NEWTON])
    if var == 0:
        zs = 0.5 * dt
    elif var == 1:
        zs = 1.0
    else:
        zs = 1.0 / dt
    for k in range(max_iter):
        cnt[C_NEWTON] += 1
        st = integ_residual(t, dt, y_prev, y, f, R, n, p, fp, ws)
        cnt[C_RHS] += 1
        if st != OK:
            return st, k + 1
        fn = 0.0
        for i in range(ny):
            if not np.isfinite(R[i]):
                return NAN, k + 1
            fn = max(fn, abs(R[i]))
        st = integ_jacobian(t, dt, y, f, Jm, yt, ft, n, p, fp, ws, cnt)
        if st != OK:
            return st, k + 1
        st = lu_factor(Jm, piv, ny)
        if st != OK:
            return st, k + 1
        for i in range(ny):
            R[i] = -R[i]
        lu_solve(Jm, piv, R, ny)
        dn = 0.0
        for i in range(ny):
            y[i] += R[i]
        for i in range(n, ny):
            dn = max(dn, abs(R[i]) * zs)
        if not np.isfinite(dn):
            return NAN, k + 1
        if fn < delta_f and dn < delta_z:
            return OK, k + 1
    return NEWTON_FAILED, max_iter


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time; see the module docstring and the contract."""
    ny = y.size
    nm = model_sizes(p)
    n = nm[0]
    n_out = t_out.size
    delta_l = ip[IP_DELTA_L]
    c = ip[IP_C]
    cap = ip[IP_CAP] != 0.0
    dt_min = ip[IP_DT_MIN]
    dt_max = ip[IP_DT_MAX]
    max_steps = int(ip[IP_MAX_STEPS])
    y_prev = y.copy()
    d_prev = np.zeros(ny)
    yp = np.empty(ny)
    f = np.empty(ny)
    R = np.empty(ny)
    yt = np.empty(ny)
    ft = np.empty(ny)
    Jm = np.empty((ny, ny))
    piv = np.zeros(ny, dtype=np.int64)
    t = t_out[0]
    t_end = t_out[n_out - 1]
    for i in range(ny):
        Y[0, i] = y[i]
    k = 0
    while k + 1 < n_out and t_out[k + 1] <= t:
        k += 1
        for i in range(ny):
            Y[k, i] = y[i]
    st = form_rhs(t, y, p, fp, f, ws)
    cnt[C_RHS] += 1
    if st != OK:
        return st, k
    for i in range(n, ny):
        d_prev[i] = f[i]
    dt = ip[IP_DT0]
    if dt_max > 0.0 and dt > dt_max:
        dt = dt_max
    while t < t_end:
        if cnt[C_STEPS] >= max_steps:
            return STEP_BUDGET, k
        last = t + dt >= t_end or t_end - (t + dt) < dt_min
        h = t_end - t if last else dt
        # 1. predictor
        for i in range(n, ny):
            yp[i] = y_prev[i] + h * d_prev[i]
        for i in range(n):
            yp[i] = y_prev[i] + 0.5 * h * (y_prev[n + i] + yp[n + i])
        for i in range(ny):
            y[i] = yp[i]
        # 2. Newton
        st, nit = integ_newton(t + h, h, y_prev, y, f, R, Jm, piv, yt, ft, n, ip, p, fp, ws, cnt)
        # 3.-4. local error and step rule
        lerr = np.nan
        if st == OK:
            lerr = 0.0
            for i in range(n):
                lerr = max(lerr, 0.5 * abs(yp[n + i] - y[n + i]))
            dt_rec = step_rule(h, lerr, delta_l, c, cap)
            if dt_max > 0.0 and dt_rec > dt_max:
                dt_rec = dt_max
        else:
            dt_rec = h * NEWTON_SHRINK
        # 5. reject and retry
        if st != OK or lerr > delta_l:
            cnt[C_REJECTED] += 1
            if dt_rec < dt_min:
                for i in range(ny):
                    y[i] = y_prev[i]
                if st == OK:
                    return STEP_FLOOR, k
                return st, k
            dt = dt_rec
            continue
        t_new = t_end if last else t + h
        for i in range(n, ny):
            d_prev[i] = (y[i] - y_prev[i]) / h
        if form_has_post_step():
            st = form_post_step(t_new, y, p, fp, ws, cnt)
            if st != OK:
                return st, k
        st = state_status(y, DIVERGENCE_BOUND)
        if st != OK:
            return st, k
        # outputs in (t, t_new]: the scheme's interpolant (module docstring)
        while k + 1 < n_out and t_out[k + 1] <= t_new:
            k += 1
            s = t_out[k] - t
            r = s / h
            for i in range(n):
                vp0 = y_prev[n + i]
                dv = y[n + i] - vp0
                corr = y[i] - y_prev[i] - 0.5 * h * (vp0 + y[n + i])
                Y[k, i] = y_prev[i] + vp0 * s + 0.5 * dv * s * r + r * corr
            for i in range(n, ny):
                Y[k, i] = y_prev[i] + (y[i] - y_prev[i]) * r
        t = t_new
        for i in range(ny):
            y_prev[i] = y[i]
        cnt[C_STEPS] += 1
        dt = max(dt_rec, dt_min)
    return OK, k
