"""Adaptive Dormand–Prince 5(4) embedded Runge–Kutta pair with FSAL.

Error control on the whole state with the mixed norm
err = sqrt(mean((e_i / (atol + rtol max(|y_i|, |y_new_i|)))^2)); step factor
0.9 err^(-1/5) clamped to [0.2, 10] (5 after a rejection); steps are shortened to land
on output times exactly; the initial step follows Hairer's heuristic (algorithm of
Hairer, Nørsett & Wanner I, II.4). A step below ``h_min`` ends the case with
``step_floor``, more than ``max_steps`` with ``step_budget``. After an accepted step the
formulation's post-step correction runs; if it changes the state, the FSAL stage is
re-evaluated (one extra right-hand side per step).

References
----------
Dormand & Prince (1980), J. Comput. Appl. Math. 6:19-26; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.4-II.5 (DOPRI5).
"""

from mbstudy.solvers.spec import IntegratorSpec, Param

SPEC = IntegratorSpec(
    name="dopri5",
    summary="adaptive Dormand-Prince 5(4) embedded Runge-Kutta pair",
    params=(
        Param("rtol", 1e-8, "relative error tolerance (-)", positive=True),
        Param("atol", 1e-10, "absolute error tolerance (state units)", positive=True),
        Param("h0", 0.0, "initial step (s); 0 = automatic", nonnegative=True),
        Param("h_max", 0.0, "largest step (s); 0 = no limit", nonnegative=True),
        Param("h_min", 1e-14, "step floor (s): smaller steps end the case (step_floor)",
              nonnegative=True),
        Param("max_steps", 10_000_000, "step budget (accepted + rejected)", kind="int",
              minimum=1),
    ),
    fixed_step=False,
    adaptive=True,
    order=5,
    source="Dormand & Prince 1980; Hairer, Nørsett & Wanner I, II.4-II.5",
)

# Templates compiled without numba's reference counting (solvers/compose.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "integ_err_norm",
)


def integ_err_norm(e, y0, y1, rtol, atol):
    """RMS of e scaled by atol + rtol max(|y0|, |y1|)."""
    s = 0.0
    n = e.size
    for i in range(n):
        sc = atol + rtol * max(abs(y0[i]), abs(y1[i]))
        r = e[i] / sc
        s += r * r
    return np.sqrt(s / n)


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time; see docs/solver-contract.md."""
    rtol = ip[0]
    atol = ip[1]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    ny = y.size
    # Dormand–Prince coefficients (Hairer–Nørsett–Wanner I, Table 5.2)
    a21 = 1.0 / 5.0
    a31 = 3.0 / 40.0
    a32 = 9.0 / 40.0
    a41 = 44.0 / 45.0
    a42 = -56.0 / 15.0
    a43 = 32.0 / 9.0
    a51 = 19372.0 / 6561.0
    a52 = -25360.0 / 2187.0
    a53 = 64448.0 / 6561.0
    a54 = -212.0 / 729.0
    a61 = 9017.0 / 3168.0
    a62 = -355.0 / 33.0
    a63 = 46732.0 / 5247.0
    a64 = 49.0 / 176.0
    a65 = -5103.0 / 18656.0
    b1 = 35.0 / 384.0
    b3 = 500.0 / 1113.0
    b4 = 125.0 / 192.0
    b5 = -2187.0 / 6784.0
    b6 = 11.0 / 84.0
    e1 = 71.0 / 57600.0
    e3 = -71.0 / 16695.0
    e4 = 71.0 / 1920.0
    e5 = -17253.0 / 339200.0
    e6 = 22.0 / 525.0
    e7 = -1.0 / 40.0
    k1 = np.empty(ny)
    k2 = np.empty(ny)
    k3 = np.empty(ny)
    k4 = np.empty(ny)
    k5 = np.empty(ny)
    k6 = np.empty(ny)
    k7 = np.empty(ny)
    yt = np.empty(ny)
    y1 = np.empty(ny)
    err = np.empty(ny)
    for i in range(ny):
        Y[0, i] = y[i]
    t = t_out[0]
    t_end = t_out[t_out.size - 1]
    st = form_rhs(t, y, p, fp, k1, ws)
    cnt[C_RHS] += 1
    if st != OK:
        return st, 0
    # initial step (Hairer, Nørsett & Wanner I, II.4; common_initial_step)
    h = ip[2]
    if h <= 0.0:
        st, h = common_initial_step(t, t_end, y, k1, k2, yt, p, fp, ws, cnt, rtol, atol, 5)
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
        for i in range(ny):
            yt[i] = y[i] + h * a21 * k1[i]
        st = form_rhs(t + 0.2 * h, yt, p, fp, k2, ws)
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (a31 * k1[i] + a32 * k2[i])
            st = form_rhs(t + 0.3 * h, yt, p, fp, k3, ws)
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (a41 * k1[i] + a42 * k2[i] + a43 * k3[i])
            st = form_rhs(t + 0.8 * h, yt, p, fp, k4, ws)
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (a51 * k1[i] + a52 * k2[i] + a53 * k3[i] + a54 * k4[i])
            st = form_rhs(t + 8.0 / 9.0 * h, yt, p, fp, k5, ws)
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    a61 * k1[i] + a62 * k2[i] + a63 * k3[i] + a64 * k4[i] + a65 * k5[i]
                )
            st = form_rhs(t + h, yt, p, fp, k6, ws)
        if st == OK:
            for i in range(ny):
                y1[i] = y[i] + h * (
                    b1 * k1[i] + b3 * k3[i] + b4 * k4[i] + b5 * k5[i] + b6 * k6[i]
                )
            st = form_rhs(t + h, y1, p, fp, k7, ws)
        cnt[C_RHS] += 6
        if st != OK:
            # a failed stage (singular matrix, ...) : retry with a smaller step
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            if h < h_min:
                return st, k - 1
            continue
        for i in range(ny):
            err[i] = h * (
                e1 * k1[i] + e3 * k3[i] + e4 * k4[i] + e5 * k5[i] + e6 * k6[i] + e7 * k7[i]
            )
        en = integ_err_norm(err, y, y1, rtol, atol)
        if not np.isfinite(en):
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            continue
        if en <= 1.0:
            t = t_next if last else t + h
            for i in range(ny):
                y[i] = y1[i]
                k1[i] = k7[i]
            cnt[C_STEPS] += 1
            if form_has_post_step():
                st = form_post_step(t, y, p, fp, ws, cnt)
                if st != OK:
                    return st, k - 1
                st = form_rhs(t, y, p, fp, k1, ws)
                cnt[C_RHS] += 1
                if st != OK:
                    return st, k - 1
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
            if last:
                for i in range(ny):
                    Y[k, i] = y[i]
                k += 1
            h = min(h * common_step_factor(en, 5, rejected_last), h_max)
            rejected_last = False
        else:
            cnt[C_REJECTED] += 1
            rejected_last = True
            h *= common_step_factor(en, 5, rejected_last)
    return OK, t_out.size - 1
