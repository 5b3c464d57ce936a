"""QR null-space formulation with pre-correction of the state (seed 002,
docs/explanation/methods.md#qr).

At every right-hand side, from the integrator's raw state (q, v) (docs/explanation/methods.md#qr):

1. **QR with column pivoting** of Phi_q^T (n x m), Phi_q^T Pi = [Q1 Q2] [R11 R12; 0 0]
   (Householder, Businger-Golub pivoting on the constraint rows). The numerical rank r is
   the number of pivots with |R_kk| > rank_tol |R_00|; Q1 (n x r) spans the normal space
   range(Phi_q^T), Q2 (n x (n - r)) the tangent space ker(Phi_q), and the first r pivots
   Pi_{1:r} select the independent constraints I (redundant rows drop out dynamically).
2. **Position correction** (Gauss-Newton, the Euclidean orthogonal projection of Marques
   et al. 2017): q_c <- q_c - dq, dq = Q1 R11^{-T} Phi_I(q_c), the QR recomputed at every
   iterate, until |dq|_2 <= proj_tol, proj_max_iter steps, or a step that does not halve
   the previous one (the round-off floor; that step is not applied). The textbook form stops
   on |Phi_I|; the step is used instead because it measures the distance to the manifold
   also near singular configurations, where Phi is degenerate (see :func:`form_correct`).
3. **Velocity correction** v_c = Q2 Q2^T v + Q1 R11^{-T} nu_I, nu = -Phi_t, evaluated in
   the equivalent residual form v_c = v - Q1 R11^{-T} (Phi_q,I v - nu_I), which does not
   amplify round-off near singular configurations (see :func:`form_correct`).
4. **Tangent-space acceleration**: b = R11^{-T} gamma_I(q_c, v_c, t),
   (Q2^T M Q2) w = Q2^T (Q - M Q1 b) (Cholesky), a = Q1 b + Q2 w.
5. dy = [v_c, a, power(q_c, v_c)]: as many equations as coordinates (n first-order plus n
   second-order), no extra states; the tangent coordinates Q2^T v are never integrated
   because Q2 is discontinuous in time (pivot and sign changes, docs/explanation/methods.md#qr).

Q is never formed: the reflectors are applied to vectors, and only the n - r columns of
Q2 are built. The plain LU of the augmented matrix (0.1), singular for redundant
constraints, is never used.

Redundant constraints and singular configurations
(docs/explanation/methods.md#redundant-and-singular): redundant rows fall out of I at every
factorization (parallelogram: rank 11 of 12). Where Phi_q loses rank (nfourbar, the parallelogram
when horizontal) the rank drops only within |R_kk| <= rank_tol |R_00|; just outside that window the
normal-space quantities are fixed by the constraints only up to round-off amplified by powers of
1/sigma_min: a Gauss-Newton step's component along the near-singular normal is Phi_u / sigma_min, so
q_c lies off the branch by round-off / sigma_min; the velocity is then made tangent to the level set
through q_c, which near a crossing of two branches is tilted by that offset / sigma_min,
and gamma_I / sigma_min turns it into an acceleration error ~ eps |v|^2 / sigma_min^3 (on
the parallelogram's exact trajectory: 2e-2, 23, 9e4 m/s^2 at 1e-5, 1e-6, 1e-7 s from the
singular time). Without a remedy (``sing_mu`` = 0) dopri5 and dop853 stall at the first
crossing for rtol <= 1e-10, radau5 and bdf from 1e-8, and RK4 picks up velocity kicks
where a stage lands close to the singular position (errors not monotone in h).

The remedy, on by default, is the E3 window (``sing_mu`` = 1.5e-3; _qr_singular.py,
docs/explanation/methods.md#qr-through-singular-positions): inside a window around the singular
position the soft acceleration comes from the third time derivative of the constraints,
with its bias removed to third order. With it dopri5, dop853, radau5 and bdf cross at every
rtol from 1e-4 to 1e-12 (tests/formulations/test_qr.py) and RK4 converges at order 4
through the crossings. Outside the window the right-hand side is the plain one above, bit
for bit. One tangent DOF only (the models with singular positions); elsewhere plain qr.

Output convention (docs/explanation/methods.md#qr): the integrator advances its
raw state, which keeps a small drift of the order of the integration error (harmless,
every right-hand side corrects it); ``form_diag`` evaluates every diagnostic (|Phi|,
|Phi_q v + Phi_t|, |Phi_q a - gamma|, E) at the corrected state (q_c, v_c), and |u| = 0
(there is no stabilization input); ``form_output_state`` makes the output trajectory (q, v
at the samples, hence the trajectory errors) that same corrected state.
:func:`corrected_state` maps any raw state to the corrected one. Projection iterations
are counted as ``proj_iters``; jitted right-hand sides have no counter argument, so the
workspace accumulates the count and ``form_flush_counters`` moves it to the counters at
the end of the run (every integrator; the diagnostics' own right-hand sides are not
counted).

Multipliers and reactions (docs/explanation/methods.md#multipliers): :func:`reactions` returns the
**minimum-norm** multipliers lam = (Phi_q^T)^+ (Q - M a) at the corrected state. With
redundant constraints the reactions are statically indeterminate; the minimum-norm choice
is orthogonal to ker(Phi_q^T) and does not depend on which row the pivoting drops. By
virtual power, a cut joint whose constraint rows satisfy Phi_cut' = C [v_P,i - v_P,j;
omega_i - omega_j] carries the wrench [F; T] = -C^T lam_cut on body i; for the
point-coincidence rows Phi = r_P,i - r_P,j of a revolute joint C = I and F = -lam.

References
----------
Seed 002 (Zhao, Qi et al., *High precision methods for solving multi-body systems with
closed-loop constraints*, Appl. Math. Mech., doi 10.21656/1000-0887.450230),
docs/explanation/methods.md#qr; Blajer (2002), Multibody Syst Dyn 7:265-284 (the normal/tangent
split); Aghili & Piedbœuf (2003) (QR-based null space); Marques, Souto & Flores (2017), Multibody
Syst Dyn 39:385-419 (Moore-Penrose projection); Golub & Van Loan, *Matrix Computations*, 4th ed.,
2013, Alg. 5.4.1 (Householder QR with column pivoting).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.formulations import _qr_singular
from mbstudy.solvers.formulations._common import (
    N_DIAG,
    common_add_phi_q_v,
    common_alloc,
    common_copy_lam,
    common_diag,
    common_fill_rhs,
)
from mbstudy.solvers.formulations._qr_singular import (
    SW_INFO,
    SW_QF,
    SW_VF,
    form_sw_alloc,
    form_sw_blend,
    form_sw_rhs,
)
from mbstudy.solvers.kernel_names import (
    model_forces,
    model_gamma,
    model_mass,
    model_phi,
    model_phi_q,
    model_phi_t,
)
from mbstudy.solvers.linalg import chol_factor, chol_solve, norm2
from mbstudy.solvers.spec import FormulationSpec, Param
from mbstudy.solvers.status import C_PROJ, NAN, OK
from mbstudy.solvers.workspace import WS_A, WS_GAMMA, WS_M, WS_PHI, WS_PHI_Q, WS_Q, WS_TMP

SPEC = FormulationSpec(
    name="qr",
    summary="QR column-pivoted null-space ODE with position/velocity pre-correction in "
    "every right-hand side (seed 002)",
    params=(
        Param("rank_tol", 1e-10, "relative rank tolerance on |R_kk| / |R_00| (-)",
              positive=True),
        Param("proj_tol", 1e-14, "tolerance on the Gauss-Newton step |dq|_2 of the position "
              "correction (coordinate units)", positive=True),
        Param("proj_max_iter", 10, "iteration limit of the position correction", kind="int",
              minimum=0),
        Param("sing_mu", 1.5e-3, "E3 window at singular positions: opens where s_min < "
              "2 sing_mu s_max (-); 0 = off (plain qr stalls there for rtol <= 1e-10)",
              nonnegative=True),
        Param("sing_hfd", 1e-3, "E3 window: difference step of D and g_3 along the "
              "motion, divided by |v| (coordinate units)", positive=True),
        Param("sing_hj", 1e-4, "E3 window: time step of the bias correction's "
              "differences along the flow (s); 0 keeps E3's O(s_min) bias",
              nonnegative=True),
    ),
    source="seed 002; docs/explanation/methods.md#qr; Blajer 2002; Aghili 2003; "
    "Marques et al. 2017",
    form="nullspace-ode",
)

# the E3 window's templates (docs/explanation/methods.md#qr-through-singular-positions)
SHARED_TEMPLATES = (_qr_singular,)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_qrcp",
    "form_apply_qt",
    "form_apply_q",
    "form_r11t_solve",
    "form_r11_solve",
    "form_factor",
    "form_normal_step",
    "form_correct",
    "form_accel",
    "form_rhs",
    "form_flush_counters",
    "form_output_state",
)

# slots of the integer info array of the workspace
QR_RANK = 0
QR_PROJ = 1

# Slots of the qr workspace tuple (form_alloc)
QRW_INDEX1 = 0  # the index-1 workspace (common_alloc; slots WS_*)
QRW_QC = 1  # (n,) corrected positions q_c
QRW_VC = 2  # (n,) corrected velocities v_c
QRW_A = 3  # (n, m) Householder QR storage of phi_q^T
QRW_TAU = 4  # (m,) reflector coefficients
QRW_PERM = 5  # (m,) int64 column permutation
QRW_Q2 = 6  # (n, n) tangent basis Q2 (first n - r columns)
QRW_T = 7  # (n, n) reduced mass matrix Q2^T M Q2
QRW_X1 = 8  # (n,) scratch
QRW_X2 = 9  # (n,) scratch
QRW_XM = 10  # (m,) scratch
QRW_ZERO_M = 11  # (m,) zeros (the input u of the diagnostics)
QRW_INFO = 12  # (2,) int64 [rank, pending projection iterations] (QR_RANK, QR_PROJ)
QRW_SING = 13  # the E3 window's workspace (_qr_singular.form_sw_alloc; slots SW_*)


def form_alloc(n, m, fp):
    """(augmented workspace, qc, vc, QR storage A (n, m), tau (m), perm (m), Q2 (n, n),
    T (n, n), x1 (n), x2 (n), xm (m), zero_m (m), info [rank, pending proj iterations],
    the E3 window's workspace)."""
    return (
        common_alloc(n, m),
        np.zeros(n),
        np.zeros(n),
        np.zeros((n, m)),
        np.zeros(m),
        np.zeros(m, dtype=np.int64),
        np.zeros((n, n)),
        np.zeros((n, n)),
        np.zeros(n),
        np.zeros(n),
        np.zeros(m),
        np.zeros(m),
        np.zeros(2, dtype=np.int64),
        form_sw_alloc(n, m),
    )


def form_qrcp(A, n, m, rank_tol, tau, perm):
    """Householder QR with column pivoting of A[:n, :m] in place; return the rank.

    On return the upper triangle of A[:r, :] holds [R11 R12], the reflector k is
    H_k = I - tau[k] w w^T with w = [0 (k), 1, A[k+1:, k]], Q = H_0 H_1 ... H_{r-1}, and
    column j of A Pi is column perm[j] of the input. The factorization stops at the first
    pivot column whose remaining norm is <= rank_tol * |R_00| (the numerical rank r);
    returns -1 for a non-finite matrix. Column norms are recomputed at every step
    (no downdating: it is fragile near rank deficiency and costs the same order here).
    """
    for j in range(m):
        perm[j] = j
    kmax = min(n, m)
    r00 = 0.0
    for k in range(kmax):
        best = -1.0
        jb = k
        for j in range(k, m):
            s = 0.0
            for i in range(k, n):
                s += A[i, j] * A[i, j]
            if s > best:
                best = s
                jb = j
        if not np.isfinite(best):
            return -1
        nrm = np.sqrt(best)
        if k == 0:
            r00 = nrm
        if r00 == 0.0 or nrm <= rank_tol * r00:
            return k
        if jb != k:
            for i in range(n):
                tmp = A[i, k]
                A[i, k] = A[i, jb]
                A[i, jb] = tmp
            tp = perm[k]
            perm[k] = perm[jb]
            perm[jb] = tp
        x0 = A[k, k]
        beta = -nrm if x0 >= 0.0 else nrm
        v0 = x0 - beta
        tk = -v0 / beta
        for i in range(k + 1, n):
            A[i, k] /= v0
        A[k, k] = beta
        tau[k] = tk
        for j in range(k + 1, m):
            s = A[k, j]
            for i in range(k + 1, n):
                s += A[i, k] * A[i, j]
            s *= tk
            A[k, j] -= s
            for i in range(k + 1, n):
                A[i, j] -= s * A[i, k]
    return kmax


def form_apply_qt(A, tau, r, n, x):
    """x <- Q^T x with the r reflectors of :func:`form_qrcp`."""
    for k in range(r):
        s = x[k]
        for i in range(k + 1, n):
            s += A[i, k] * x[i]
        s *= tau[k]
        x[k] -= s
        for i in range(k + 1, n):
            x[i] -= s * A[i, k]


def form_apply_q(A, tau, r, n, x):
    """x <- Q x with the r reflectors of :func:`form_qrcp`."""
    for k in range(r - 1, -1, -1):
        s = x[k]
        for i in range(k + 1, n):
            s += A[i, k] * x[i]
        s *= tau[k]
        x[k] -= s
        for i in range(k + 1, n):
            x[i] -= s * A[i, k]


def form_r11t_solve(A, r, x):
    """x[:r] <- R11^{-T} x[:r] (forward substitution)."""
    for i in range(r):
        s = x[i]
        for j in range(i):
            s -= A[j, i] * x[j]
        x[i] = s / A[i, i]


def form_r11_solve(A, r, x):
    """x[:r] <- R11^{-1} x[:r] (back substitution)."""
    for i in range(r - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, r):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]


def form_factor(q, t, p, fp, ws):
    """Evaluate Phi_q(q, t) and factor Phi_q^T; return the rank (-1: non-finite)."""
    w = ws[QRW_INDEX1]
    G = w[WS_PHI_Q]
    A = ws[QRW_A]
    tau = ws[QRW_TAU]
    perm = ws[QRW_PERM]
    info = ws[QRW_INFO]
    n = q.size
    m = tau.size
    model_phi_q(q, t, p, G)
    for i in range(m):
        for j in range(n):
            A[j, i] = G[i, j]
    r = form_qrcp(A, n, m, fp[0], tau, perm)
    info[QR_RANK] = r
    return r


def form_normal_step(ws, r, n, src, out):
    """out = Q1 R11^{-T} src[perm[:r]] (the minimum-norm solution of Phi_q,I x = src_I)."""
    A = ws[QRW_A]
    tau = ws[QRW_TAU]
    perm = ws[QRW_PERM]
    for i in range(r):
        out[i] = src[perm[i]]
    for i in range(r, n):
        out[i] = 0.0
    form_r11t_solve(A, r, out)
    form_apply_q(A, tau, r, n, out)


def form_correct(q, v, t, p, fp, ws):
    """Corrected state (qc, vc) into ws (steps 1-3 above); QR left at qc; status."""
    w = ws[QRW_INDEX1]
    ph = w[WS_PHI]
    qc = ws[QRW_QC]
    vc = ws[QRW_VC]
    dq = ws[QRW_X1]
    info = ws[QRW_INFO]
    n = q.size
    tol = fp[1]
    max_iter = int(fp[2])
    for i in range(n):
        qc[i] = q[i]
    model_phi(qc, t, p, ph)
    it = 0
    d_prev = np.inf
    while True:
        r = form_factor(qc, t, p, fp, ws)
        if r < 0:
            return NAN
        if it == 0:  # the E3 window's screen: |R_rr| / |R_00| at the raw state
            A = ws[QRW_A]
            ws[QRW_SING][SW_INFO][0] = abs(A[r - 1, r - 1]) / abs(A[0, 0]) if r > 0 else 1.0
        if it >= max_iter:
            break
        form_normal_step(ws, r, n, ph, dq)
        d = norm2(dq, n)
        if not np.isfinite(d):
            return NAN
        # The test is on the step |dq|, the distance to the manifold, not on |phi|: near
        # a singular configuration phi is degenerate (|phi| ~ sigma_min x distance), and
        # an offset left there bends the level set the velocity and acceleration are
        # made tangent to (acceleration error ~ |v|^2 offset / sigma_min^2). A step that
        # does not halve the previous one marks the round-off floor (~ eps / sigma_min
        # there): stop without applying it.
        if d <= tol or d > 0.5 * d_prev:
            break
        for i in range(n):
            qc[i] -= dq[i]
        model_phi(qc, t, p, ph)
        d_prev = d
        it += 1
    info[QR_PROJ] += it
    # velocity: vc = v - Q1 R11^{-T} (phi_q,I v + phi_t,I), equal in exact arithmetic to
    # Q2 Q2^T v + Q1 R11^{-T} nu_I (step 3 above) but computed from the constraint residual:
    # near a singular configuration the computed Q1 is accurate only to eps / sigma_min in
    # the near-singular direction, and projecting the whole v (not its small residual) on
    # it puts an error eps |v| / sigma_min into vc, which gamma_I / sigma_min turns into an
    # acceleration error eps |v| / sigma_min^2 (measured: 1e-2 at sigma_min ~ 1e-6 on
    # nfourbar; the residual form stays at the round-off of the acceleration itself)
    r = info[QR_RANK]
    G = w[WS_PHI_Q]  # phi_q at the final qc (form_factor's last call)
    xm = ws[QRW_XM]
    model_phi_t(qc, t, p, xm)
    common_add_phi_q_v(G, v, xm)
    form_normal_step(ws, r, n, xm, dq)
    for i in range(n):
        vc[i] = v[i] - dq[i]
    return OK


def form_accel(t, p, fp, ws):
    """Tangent-space acceleration at the corrected state (step 4 above) into ws's a."""
    w = ws[QRW_INDEX1]
    M = w[WS_M]
    Q = w[WS_Q]
    gam = w[WS_GAMMA]
    a = w[WS_A]
    tn = w[WS_TMP]
    qc = ws[QRW_QC]
    vc = ws[QRW_VC]
    A = ws[QRW_A]
    tau = ws[QRW_TAU]
    Q2 = ws[QRW_Q2]
    T = ws[QRW_T]
    x1 = ws[QRW_X1]
    x2 = ws[QRW_X2]
    info = ws[QRW_INFO]
    n = qc.size
    r = info[QR_RANK]
    k = n - r
    model_gamma(qc, vc, t, p, gam)
    form_normal_step(ws, r, n, gam, x1)  # x1 = Q1 b, b = R11^{-T} gamma_I
    model_mass(qc, p, M)
    model_forces(qc, vc, t, p, Q)
    for i in range(n):
        s = Q[i]
        for j in range(n):
            s -= M[i, j] * x1[j]
        x2[i] = s  # f = Q - M Q1 b
    for c in range(k):
        for i in range(n):
            tn[i] = 0.0
        tn[r + c] = 1.0
        form_apply_q(A, tau, r, n, tn)
        for i in range(n):
            Q2[i, c] = tn[i]
    form_apply_qt(A, tau, r, n, x2)  # Q2^T f = (Q^T f)[r:]
    for c in range(k):
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += M[i, j] * Q2[j, c]
            tn[i] = s
        for d in range(k):
            s = 0.0
            for i in range(n):
                s += Q2[i, d] * tn[i]
            T[d, c] = s
    st = OK
    if k > 0:
        st = chol_factor(T, k)
        if st != OK:
            return st
        rhs = x2[r:]
        chol_solve(T, rhs, k)
    for i in range(n):
        s = x1[i]
        for c in range(k):
            s += Q2[i, c] * x2[r + c]
        a[i] = s
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v_c, a, power(q_c, v_c)] (docs/explanation/methods.md#qr steps 1-5)."""
    n = ws[QRW_QC].size
    st = form_correct(y[:n], y[n : 2 * n], t, p, fp, ws)
    if st != OK:
        return st
    st = form_accel(t, p, fp, ws)
    if st != OK:
        return st
    # the E3 window (docs/explanation/methods.md#qr-through-singular-positions); W = 1: qr unchanged
    st, W = form_sw_rhs(t, y[:n], y[n : 2 * n], p, fp, ws[QRW_QC], ws[QRW_VC],
                        ws[QRW_INDEX1], ws[QRW_SING])  # fmt: skip
    if st != OK:
        return st
    if W < 1.0:  # qr's acceleration at the window's state, then the blend
        # the QR is still at q_c unless the window moved it (the narrow position window);
        # with W = 0 the blend takes the window's acceleration alone
        qc = ws[QRW_QC]
        qf = ws[QRW_SING][SW_QF]
        for i in range(n):
            if qc[i] != qf[i]:
                if form_factor(qc, t, p, fp, ws) < 0:
                    return NAN
                break
        if W > 0.0:
            st = form_accel(t, p, fp, ws)
            if st != OK:
                return st
        form_sw_blend(ws[QRW_INDEX1], ws[QRW_SING], W)
    common_fill_rhs(ws[QRW_QC], ws[QRW_VC], t, p, ws[QRW_INDEX1], dy)
    return OK


def form_flush_counters(ws, cnt):
    """Move the projection iterations of every right-hand side so far to the counters."""
    info = ws[QRW_INFO]
    cnt[C_PROJ] += info[QR_PROJ]
    info[QR_PROJ] = 0
    return OK


def form_output_state(y, ws):
    """Replace q, v of ``y`` by the corrected state of the last :func:`form_rhs` (the
    state every diagnostic is evaluated at, docs/explanation/methods.md#qr); True: the output
    changed."""
    sw = ws[QRW_SING]
    inside = sw[SW_INFO][1] < 1.0  # the E3 window: qr's fully corrected state
    qc = sw[SW_QF] if inside else ws[QRW_QC]
    vc = sw[SW_VF] if inside else ws[QRW_VC]
    n = qc.size
    for i in range(n):
        y[i] = qc[i]
        y[n + i] = vc[i]
    return True


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics at the corrected state (q_c, v_c) with the tangent-space a; |u| = 0.

    A row wider than N_DIAG also receives the minimum-norm multipliers
    (:func:`form_multipliers`, docs/explanation/methods.md#multipliers)."""
    dy = np.zeros(y.size)
    st = form_rhs(t, y, p, fp, dy, ws)
    if st != OK:
        return st
    if out.size > N_DIAG:
        lam = np.zeros(ws[QRW_TAU].size)
        st = form_multipliers(t, p, fp, ws, lam)
        if st != OK:
            return st
        common_copy_lam(lam, out)
    sw = ws[QRW_SING]
    if sw[SW_INFO][1] < 1.0:  # inside the E3 window: at the output state (qr's projection)
        common_diag(sw[SW_QF], sw[SW_VF], t, p, ws[QRW_INDEX1], ws[QRW_ZERO_M], out)
    else:
        common_diag(ws[QRW_QC], ws[QRW_VC], t, p, ws[QRW_INDEX1], ws[QRW_ZERO_M], out)
    return OK


def form_multipliers(t, p, fp, ws, lam):
    """Minimum-norm multipliers lam = (Phi_q^T)^+ (Q - M a) after :func:`form_rhs`.

    The basic solution lam_b (lam_I = R11^{-1} Q1^T (Q - M a), zeros on the redundant
    rows) is made minimum-norm by removing its component in
    ker(Phi_q^T) = range(Pi [-R11^{-1} R12; I]) (docs/explanation/methods.md#multipliers). Allocates
    (reporting only, never called in the step loop). Returns a status.
    """
    w = ws[QRW_INDEX1]
    M = w[WS_M]
    Q = w[WS_Q]
    a = w[WS_A]
    qc = ws[QRW_QC]
    vc = ws[QRW_VC]
    A = ws[QRW_A]
    tau = ws[QRW_TAU]
    perm = ws[QRW_PERM]
    info = ws[QRW_INFO]
    n = qc.size
    m = lam.size
    r = info[QR_RANK]
    model_mass(qc, p, M)
    model_forces(qc, vc, t, p, Q)
    f = np.zeros(n)
    for i in range(n):
        s = Q[i]
        for j in range(n):
            s -= M[i, j] * a[j]
        f[i] = s
    form_apply_qt(A, tau, r, n, f)
    form_r11_solve(A, r, f)
    z = np.zeros(m)  # permuted basic solution [R11^{-1} Q1^T f; 0]
    for i in range(r):
        z[i] = f[i]
    k = m - r
    if k > 0:
        S = np.zeros((r, k))  # R11^{-1} R12
        col = np.zeros(r)
        for c in range(k):
            for i in range(r):
                col[i] = A[i, r + c]
            form_r11_solve(A, r, col)
            for i in range(r):
                S[i, c] = col[i]
        # N = [-S; I]: N^T N = I + S^T S, N^T z = -S^T z[:r]
        NN = np.zeros((k, k))
        g = np.zeros(k)
        for c in range(k):
            s = 0.0
            for i in range(r):
                s -= S[i, c] * z[i]
            g[c] = s
            for d in range(k):
                s = 1.0 if c == d else 0.0
                for i in range(r):
                    s += S[i, c] * S[i, d]
                NN[c, d] = s
        st = chol_factor(NN, k)
        if st != OK:
            return st
        chol_solve(NN, g, k)
        for i in range(r):
            s = 0.0
            for c in range(k):
                s -= S[i, c] * g[c]
            z[i] -= s
        for c in range(k):
            z[r + c] -= g[c]
    for i in range(m):
        lam[perm[i]] = z[i]
    return OK


# ---------------------------------------------------------------------------------------
# Python level: reporting helpers built on the composed kernel's jitted functions.


def _kernel(model_name: str):
    from mbstudy.solvers.compose import kernel_module

    # any integrator composes the same formulation functions; rk4 shares the cache with
    # the rk4 kernels of the studies
    return kernel_module(model_name, "qr", "rk4")


def _evaluate(model_name, q, v, t, p, fp):
    mod = _kernel(model_name)
    n, m = (int(x) for x in mod.model_sizes(p))
    ws = mod.form_alloc(n, m, fp)
    y = np.zeros(2 * n + 1)
    y[:n] = q
    y[n : 2 * n] = v
    dy = np.zeros_like(y)
    st = int(mod.form_rhs(float(t), y, p, fp, dy, ws))
    return mod, ws, n, m, st


def _fp(fp):
    if fp is None:
        from mbstudy.solvers.spec import pack_params

        return pack_params(SPEC.params, {})
    return np.asarray(fp, dtype=float)


def corrected_state(model_name: str, q, v, t: float, p, fp=None):
    """Map a raw state to the corrected one the qr right-hand side uses (steps 1-3 above).

    Parameters
    ----------
    model_name : registry name of the model.
    q, v : (n,) raw state (a row of a qr trajectory).
    t : time.
    p : model parameter vector; fp : qr parameter vector (defaults if None).

    Returns
    -------
    qc, vc : (n,) corrected positions and velocities.
    rank : numerical rank of Phi_q at qc.
    """
    mod, ws, n, m, st = _evaluate(model_name, q, v, t, np.asarray(p, float), _fp(fp))
    if st != 0:
        raise FloatingPointError(f"qr right-hand side failed with status {st}")
    sw = ws[QRW_SING]
    if sw[SW_INFO][1] < 1.0:  # inside the E3 window: the output state, qr's projection
        return sw[SW_QF].copy(), sw[SW_VF].copy(), int(ws[QRW_INFO][QR_RANK])
    return ws[QRW_QC].copy(), ws[QRW_VC].copy(), int(ws[QRW_INFO][QR_RANK])


def tangent_basis(model_name: str, q, t: float, p, fp=None):
    """QR-CP bases at q (no correction): rank r, Q1 (n, r), Q2 (n, n - r), independent rows.

    Built by applying the kernel's reflectors to the unit vectors (for tests and analysis).
    """
    fp = _fp(fp)
    p = np.asarray(p, float)
    mod = _kernel(model_name)
    n, m = (int(x) for x in mod.model_sizes(p))
    ws = mod.form_alloc(n, m, fp)
    q = np.ascontiguousarray(q, dtype=float)
    r = int(mod.form_factor(q, float(t), p, fp, ws))
    if r < 0:
        raise FloatingPointError("non-finite constraint Jacobian")
    Qfull = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        mod.form_apply_q(ws[QRW_A], ws[QRW_TAU], r, n, e)
        Qfull[:, j] = e
    return r, Qfull[:, :r], Qfull[:, r:], ws[QRW_PERM][:r].copy()


def reactions(
    model_name: str,
    q,
    v,
    t: float,
    p,
    fp=None,
    cut: list[tuple[list[int], np.ndarray]] | None = None,
):
    """Minimum-norm multipliers and cut-joint reactions at the corrected state
    (docs/explanation/methods.md#multipliers).

    Runs the kernel's right-hand side at (q, v, t) (so the state is corrected first), then
    lam = (Phi_q^T)^+ (Q - M a) (minimum norm: the convention for redundant joints, whose
    reactions are statically indeterminate). By virtual power, a cut joint with constraint
    rows ``rows`` and Phi_rows' = C [v_P,i - v_P,j; omega_i - omega_j] exerts the wrench
    -C^T lam[rows] on body i (the body whose point enters Phi with a + sign).

    Parameters
    ----------
    model_name : registry name of the model.
    q, v : (n,) state; t : time; p : model parameters; fp : qr parameters (None: defaults).
    cut : list of (rows, C) pairs, C of shape (len(rows), k). None: every constraint row is
        a point-coincidence component (C = I), the case of the planar revolute joints of
        the models here, and the reactions are -lam row by row.

    Returns
    -------
    lam : (m,) minimum-norm multipliers.
    forces : (m,) -lam if ``cut`` is None, else a list of the wrenches -C^T lam[rows].

    Raises
    ------
    FloatingPointError
        If the kernel reports a non-ok status (singular tangent mass matrix, NaN).
    """
    p = np.asarray(p, float)
    mod, ws, n, m, st = _evaluate(model_name, q, v, t, p, _fp(fp))
    if st == 0:
        lam = np.zeros(m)
        st = int(mod.form_multipliers(float(t), p, _fp(fp), ws, lam))
    if st != 0:
        raise FloatingPointError(f"qr kernel failed with status {st}")
    if cut is None:
        return lam, -lam
    return lam, [-(np.asarray(C, float).T @ lam[list(rows)]) for rows, C in cut]
