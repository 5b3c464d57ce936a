"""Adaptive explicit Runge–Kutta method of order 8 by Dormand & Prince: DOP853.

The 12-stage order-8 formula of Prince & Dormand (1981) with the "5(3)" error estimator
of Hairer's code DOP853 (Hairer, Nørsett & Wanner I, Sect. II.10): two embedded
differences ``err5 = sum_j E5_j k_j`` (order 5) and ``err3 = sum_j E3_j k_j`` (order 3),
scaled by ``sk_i = atol + rtol max(|y_i|, |y_new_i|)`` and combined into

    err = |h| S5 / sqrt(ny (S5 + 0.01 S3)),   S5 = sum_i (err5_i / sk_i)^2,
                                                S3 = sum_i (err3_i / sk_i)^2,

which behaves like an order-8 estimate (``err ~ h err5^2 / err3 ~ h^8``), so the step
factor is 0.9 err^(-1/8), clamped to [0.2, 10] (at most 1 after a rejection), as in
scipy's ``DOP853`` (dopri5's bounds). The stage f(t + h, y_new) of an accepted step is
the first stage of the next one (one right-hand side fewer per rejected step than
evaluating it with the stages, as in dop853.f): 12 right-hand sides per accepted step,
11 per rejected one. Steps are shortened to land on output times exactly; the initial
step follows Hairer's heuristic with exponent 1/8 (dop853.f ``HINIT``, iord = 8). A step
below ``h_min`` ends the case with ``step_floor``, more than ``max_steps`` (accepted +
rejected) with ``step_budget``; a failed stage (singular matrix, ...) retries with a
quarter step, as in dopri5. After an accepted step the formulation's post-step
correction runs before that first stage is evaluated, so a projection costs no extra
right-hand side here (dopri5 re-evaluates its FSAL stage). No dense output: outputs are
the steps' end points.

Coefficients: copied as literals from scipy's ``scipy/integrate/_ivp/dop853_coefficients.py``
(scipy 1.17.1; the values of Hairer's ``dop853.f``): ``A`` rows 1-11 (stages 2-12),
``B = A[12, :12]``, ``C``, ``E5``, and ``E3 = B - (BHH1 at stage 1, BHH2 at stage 9,
BHH3 at stage 12)``. Only the step and the error estimate are used (no ``D``, no extra
stages).

References
----------
Prince & Dormand (1981), J. Comput. Appl. Math. 7:67-75; Hairer, Nørsett & Wanner,
*Solving ODEs I*, 2nd ed., 1993, Sect. II.4 (step control, starting step) and II.10
(DOP853 and its error estimator); E. Hairer, ``dop853.f``
(http://www.unige.ch/~hairer/software.html); scipy ``integrate._ivp.rk.DOP853``.
"""

from mbstudy.solvers.spec import IntegratorSpec, Param

SPEC = IntegratorSpec(
    name="dop853",
    summary="adaptive Dormand-Prince 8(5,3) explicit Runge-Kutta method (Hairer's DOP853)",
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
    order=8,
    source="Prince & Dormand 1981; Hairer, Nørsett & Wanner I, II.10 (DOP853)",
)

# Templates compiled without numba's reference counting (solvers/compose.py)
NRT_FREE = ("integ_dop853_err_norm",)

# Nodes c_s of stages 2..12 (scipy dop853_coefficients.C[1:12]); c_13 = 1.
C2 = 0.526001519587677318785587544488e-01
C3 = 0.789002279381515978178381316732e-01
C4 = 0.118350341907227396726757197510
C5 = 0.281649658092772603273242802490
C6 = 0.333333333333333333333333333333
C7 = 0.25
C8 = 0.307692307692307692307692307692
C9 = 0.651282051282051282051282051282
C10 = 0.6
C11 = 0.857142857142857142857142857142
C12 = 1.0

# Stage coefficients a_sj (scipy A[s-1, j-1]); the zero ones are left out.
A21 = 5.26001519587677318785587544488e-2

A31 = 1.97250569845378994544595329183e-2
A32 = 5.91751709536136983633785987549e-2

A41 = 2.95875854768068491816892993775e-2
A43 = 8.87627564304205475450678981324e-2

A51 = 2.41365134159266685502369798665e-1
A53 = -8.84549479328286085344864962717e-1
A54 = 9.24834003261792003115737966543e-1

A61 = 3.7037037037037037037037037037e-2
A64 = 1.70828608729473871279604482173e-1
A65 = 1.25467687566822425016691814123e-1

A71 = 3.7109375e-2
A74 = 1.70252211019544039314978060272e-1
A75 = 6.02165389804559606850219397283e-2
A76 = -1.7578125e-2

A81 = 3.70920001185047927108779319836e-2
A84 = 1.70383925712239993810214054705e-1
A85 = 1.07262030446373284651809199168e-1
A86 = -1.53194377486244017527936158236e-2
A87 = 8.27378916381402288758473766002e-3

A91 = 6.24110958716075717114429577812e-1
A94 = -3.36089262944694129406857109825
A95 = -8.68219346841726006818189891453e-1
A96 = 2.75920996994467083049415600797e1
A97 = 2.01540675504778934086186788979e1
A98 = -4.34898841810699588477366255144e1

A101 = 4.77662536438264365890433908527e-1
A104 = -2.48811461997166764192642586468
A105 = -5.90290826836842996371446475743e-1
A106 = 2.12300514481811942347288949897e1
A107 = 1.52792336328824235832596922938e1
A108 = -3.32882109689848629194453265587e1
A109 = -2.03312017085086261358222928593e-2

A111 = -9.3714243008598732571704021658e-1
A114 = 5.18637242884406370830023853209
A115 = 1.09143734899672957818500254654
A116 = -8.14978701074692612513997267357
A117 = -1.85200656599969598641566180701e1
A118 = 2.27394870993505042818970056734e1
A119 = 2.49360555267965238987089396762
A1110 = -3.0467644718982195003823669022

A121 = 2.27331014751653820792359768449
A124 = -1.05344954667372501984066689879e1
A125 = -2.00087205822486249909675718444
A126 = -1.79589318631187989172765950534e1
A127 = 2.79488845294199600508499808837e1
A128 = -2.85899827713502369474065508674
A129 = -8.87285693353062954433549289258
A1210 = 1.23605671757943030647266201528e1
A1211 = 6.43392746015763530355970484046e-1

# Weights b_j of the order-8 solution (scipy B = A[12, :12]); b_2 .. b_5 = 0.
B1 = 5.42937341165687622380535766363e-2
B6 = 4.45031289275240888144113950566
B7 = 1.89151789931450038304281599044
B8 = -5.8012039600105847814672114227
B9 = 3.1116436695781989440891606237e-1
B10 = -1.52160949662516078556178806805e-1
B11 = 2.01365400804030348374776537501e-1
B12 = 4.47106157277725905176885569043e-2

# Order-5 error weights (scipy E5); E5_2 .. E5_5 = 0.
E5_1 = 0.1312004499419488073250102996e-1
E5_6 = -0.1225156446376204440720569753e1
E5_7 = -0.4957589496572501915214079952
E5_8 = 0.1664377182454986536961530415e1
E5_9 = -0.3503288487499736816886487290
E5_10 = 0.3341791187130174790297318841
E5_11 = 0.8192320648511571246570742613e-1
E5_12 = -0.2235530786388629525884427845e-1

# Order-3 error weights E3 = b - bhh (scipy E3; dop853.f BHH1, BHH2, BHH3).
E3_1 = B1 - 0.244094488188976377952755905512
E3_6 = B6
E3_7 = B7
E3_8 = B8
E3_9 = B9 - 0.733846688281611857341361741547
E3_10 = B10
E3_11 = B11
E3_12 = B12 - 0.220588235294117647058823529412e-1


def integ_dop853_err_norm(k1, k6, k7, k8, k9, k10, k11, k12, y0, y1, h, rtol, atol):
    """Hairer's combined estimate |h| S5 / sqrt(ny (S5 + 0.01 S3)) (module docstring)."""
    s5 = 0.0
    s3 = 0.0
    n = y0.size
    for i in range(n):
        sc = atol + rtol * max(abs(y0[i]), abs(y1[i]))
        e5 = (
            E5_1 * k1[i] + E5_6 * k6[i] + E5_7 * k7[i] + E5_8 * k8[i] + E5_9 * k9[i]
            + E5_10 * k10[i] + E5_11 * k11[i] + E5_12 * k12[i]
        ) / sc
        e3 = (
            E3_1 * k1[i] + E3_6 * k6[i] + E3_7 * k7[i] + E3_8 * k8[i] + E3_9 * k9[i]
            + E3_10 * k10[i] + E3_11 * k11[i] + E3_12 * k12[i]
        ) / sc
        s5 += e5 * e5
        s3 += e3 * e3
    if s5 == 0.0 and s3 == 0.0:
        return 0.0
    return abs(h) * s5 / np.sqrt(n * (s5 + 0.01 * s3))


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time; see docs/solver-contract.md."""
    rtol = ip[0]
    atol = ip[1]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    ny = y.size
    k1 = np.empty(ny)
    k2 = np.empty(ny)
    k3 = np.empty(ny)
    k4 = np.empty(ny)
    k5 = np.empty(ny)
    k6 = np.empty(ny)
    k7 = np.empty(ny)
    k8 = np.empty(ny)
    k9 = np.empty(ny)
    k10 = np.empty(ny)
    k11 = np.empty(ny)
    k12 = np.empty(ny)
    yt = np.empty(ny)
    y1 = np.empty(ny)
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
        st, h = common_initial_step(t, t_end, y, k1, k2, yt, p, fp, ws, cnt, rtol, atol, 8)
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
        # stages 2..12 (stage 1 = f(t, y) is k1); an early failure skips the rest
        for i in range(ny):
            yt[i] = y[i] + h * A21 * k1[i]
        st = form_rhs(t + C2 * h, yt, p, fp, k2, ws)
        n_eval = 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (A31 * k1[i] + A32 * k2[i])
            st = form_rhs(t + C3 * h, yt, p, fp, k3, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (A41 * k1[i] + A43 * k3[i])
            st = form_rhs(t + C4 * h, yt, p, fp, k4, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (A51 * k1[i] + A53 * k3[i] + A54 * k4[i])
            st = form_rhs(t + C5 * h, yt, p, fp, k5, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (A61 * k1[i] + A64 * k4[i] + A65 * k5[i])
            st = form_rhs(t + C6 * h, yt, p, fp, k6, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (A71 * k1[i] + A74 * k4[i] + A75 * k5[i] + A76 * k6[i])
            st = form_rhs(t + C7 * h, yt, p, fp, k7, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    A81 * k1[i] + A84 * k4[i] + A85 * k5[i] + A86 * k6[i] + A87 * k7[i]
                )
            st = form_rhs(t + C8 * h, yt, p, fp, k8, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    A91 * k1[i] + A94 * k4[i] + A95 * k5[i] + A96 * k6[i] + A97 * k7[i]
                    + A98 * k8[i]
                )
            st = form_rhs(t + C9 * h, yt, p, fp, k9, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    A101 * k1[i] + A104 * k4[i] + A105 * k5[i] + A106 * k6[i]
                    + A107 * k7[i] + A108 * k8[i] + A109 * k9[i]
                )
            st = form_rhs(t + C10 * h, yt, p, fp, k10, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    A111 * k1[i] + A114 * k4[i] + A115 * k5[i] + A116 * k6[i]
                    + A117 * k7[i] + A118 * k8[i] + A119 * k9[i] + A1110 * k10[i]
                )
            st = form_rhs(t + C11 * h, yt, p, fp, k11, ws)
            n_eval += 1
        if st == OK:
            for i in range(ny):
                yt[i] = y[i] + h * (
                    A121 * k1[i] + A124 * k4[i] + A125 * k5[i] + A126 * k6[i]
                    + A127 * k7[i] + A128 * k8[i] + A129 * k9[i] + A1210 * k10[i]
                    + A1211 * k11[i]
                )
            st = form_rhs(t + C12 * h, yt, p, fp, k12, ws)
            n_eval += 1
        cnt[C_RHS] += n_eval
        if st != OK:
            # a failed stage (singular matrix, ...) : retry with a smaller step
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            if h < h_min:
                return st, k - 1
            continue
        for i in range(ny):
            y1[i] = y[i] + h * (
                B1 * k1[i] + B6 * k6[i] + B7 * k7[i] + B8 * k8[i] + B9 * k9[i]
                + B10 * k10[i] + B11 * k11[i] + B12 * k12[i]
            )
        en = integ_dop853_err_norm(k1, k6, k7, k8, k9, k10, k11, k12, y, y1, h, rtol, atol)
        if not np.isfinite(en):
            cnt[C_REJECTED] += 1
            h *= 0.25
            rejected_last = True
            continue
        if en <= 1.0:
            t_new = t_next if last else t + h
            post = form_has_post_step()
            if not post:
                # f at the new point (the next step's first stage), into the free k2
                st = form_rhs(t_new, y1, p, fp, k2, ws)
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
                for i in range(ny):
                    k1[i] = k2[i]
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
            if last:
                for i in range(ny):
                    Y[k, i] = y[i]
                k += 1
            h = min(h * common_step_factor(en, 8, rejected_last), h_max)
            rejected_last = False
        else:
            cnt[C_REJECTED] += 1
            rejected_last = True
            h *= common_step_factor(en, 8, rejected_last)
    return OK, t_out.size - 1
