"""qr's E3 window at singular positions (docs/explanation/methods.md#qr-through-singular-positions).

Templates shared into the qr kernel (qr.py's ``SHARED_TEMPLATES``; not a registry entry).
Where the smallest non-zero singular value s_min of Phi_q falls below 2 mu s_max
(``sing_mu``), qr's index-1 acceleration (E2) divides round-off by s_min; inside that
window :func:`form_sw_rhs` replaces the right-hand side of qr (already evaluated in the
workspace) by:

- q_c = q_f, qr's full projection, except where s_min < 2e-4 mu s_max (|t - t_s| ~ 1e-6 s
  at mu = 1.5e-3): there q_c = q_h + W_q (q_f - q_h), q_h the Gauss-Newton projection
  without the soft directions (q_f's offset eps / s_min grows there). The NumPy reference
  releases the position over the whole window; in the kernel that made errors grow from
  crossing to crossing;
- v_c with the soft part of its correction scaled by W_v = S(s_min / (0.1 mu s_max)), S
  the C-infinity step in log2 below (1 above 2x, 0 below x / 2), i.e. released only where
  s_min < 0.2 mu s_max (the same release over the whole window left the raw state's
  tolerance-sized soft velocity drift uncorrected: ten times the error of plain qr at
  rtol 1e-8); the soft directions are those with s_i < 10 mu s_max, W = S(s_min / mu s_max);
- a = W a_E2 + (1 - W) a_E3: a_E3 = b_h + N z, b_h the minimum-norm solution of the hard
  rows of Phi_q a = gamma, N the null space of the hard rows (the SVD's right singular
  vectors past the hard ones), z from the k soft rows of the
  third time derivative of the constraints, U_s^T (D a - gamma_v a - g_3) = 0
  (D = d/dh Phi_q(q + h v, t + h), g_3 = d/dh gamma(q + h v, v, t + h), 4-point
  differences; gamma_v x by polarization) and the tangent equation v^T (M a - Q) = 0;
- E3's bias a_E3 - a = B j (B = N C^{-1} [U_s^T Phi_q; 0]) removed to O(s_min^3) from
  central differences of a_E3 and B at states t +- h_j along the flow (``sing_hj``):
  a' = (I + B')^{-1} (a_E3' - B a''), a'' = (I + 2B')^{-1} (a_E3'' - B'' a').

The singular values and vectors come from LAPACK's SVD of Phi_q (solvers/svd.py, dgesdd,
one thread), computed only where qr's column-pivoted QR at the raw state has
|R_rr| < 20 mu |R_00| (a screen: s_min <= |R_rr|). One tangent DOF only (n - rank = 1, the
models with singular positions); elsewhere qr's right-hand side is unchanged. The NumPy
reference is tests/qr_singular_testkit.py.

Cost (docs/explanation/methods.md#qr-through-singular-positions, benchmarks/qr_window_cost.py): six
SVDs per window right-hand side (one at the raw state for W and k, one at the corrected
state, one at each of the four shifted states, whose hard-only Gauss-Newton steps use the
centre's factorization: :func:`form_sw_gn_centre`; two more in the narrow position
window). nfourbar with N = 40 (n = 243, k = 40): about 0.11 s per window right-hand side
(0.13 s in the narrow position window) against 0.02-0.03 s for qr's own (an SVD of the
242 x 243 Jacobian: 9 ms).

References: Golub & Van Loan, *Matrix Computations*, 4th ed., 2013, Sect. 8.6 (the SVD,
its perturbation theory and the Golub-Kahan algorithm); Hairer & Wanner, *Solving ODEs
II*, 1996, Sect. VII.1 (derivatives of the constraints); docs/explanation/methods.md#qr.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.formulations._common import common_add_phi_q_v
from mbstudy.solvers.kernel_names import (
    model_forces,
    model_gamma,
    model_mass,
    model_phi,
    model_phi_q,
    model_phi_t,
)
from mbstudy.solvers.linalg import lu_factor_rtol, lu_solve
from mbstudy.solvers.status import OK
from mbstudy.solvers.svd import svd_into
from mbstudy.solvers.workspace import WS_A

# the compiled helper the templates call (solvers/compose/harvest.py, _kernel_imports): LAPACK's SVD
KERNEL_IMPORTS = {"mbstudy.solvers.svd": ("svd_into",)}

NRT_FREE = (
    "form_sw_step",
    "form_sw_svd",
    "form_sw_hard_step",
    "form_sw_hard_velocity",
    "form_sw_gn_hard",
    "form_sw_gn",
    "form_sw_gamma_v",
    "form_sw_terms",
    "form_sw_e3",
    "form_sw_keep_centre",
    "form_sw_gn_centre",
    "form_sw_state",
    "form_sw_shift",
    "form_sw_solve_shift",
    "form_sw_rhs",
    "form_sw_unbias",
    "form_sw_blend",
)

# slots of the window workspace (form_sw_alloc)
SW_Z = 0  # (m, m) left singular vectors U
SW_S = 1  # (m,) singular values, descending
SW_V = 2  # (n, n) right singular vectors; columns h.. span the null space of the hard rows
SW_D = 3  # (m, n) D = d/dh Phi_q(q + h v, t + h)
SW_JT = 4  # (m, n) Phi_q scratch
SW_G3 = 5  # (m,) g_3
SW_GA = 6  # (m,) gamma scratch
SW_GB = 7  # (m,) gamma scratch
SW_C = 8  # (n, n) E3 system matrix
SW_PIV = 9  # (n,) int64 pivots
SW_B = 10  # (n, n) B at the centre
SW_BP = 11  # (n, n) B at t + h_j
SW_BM = 12  # (n, n) B at t - h_j
SW_AE = 13  # (n,) a_E3 at the centre
SW_AP = 14  # (n,) a_E3 at t + h_j
SW_AM = 15  # (n,) a_E3 at t - h_j
SW_J1 = 16  # (n,) a'
SW_A2 = 17  # (n,) a''
SW_E = 18  # (n, n) I + c B' and its LU
SW_QH = 19  # (n,) hard-corrected q
SW_VH = 20  # (n,) hard-corrected v
SW_QS = 21  # (n,) shifted raw q
SW_VS = 22  # (n,) shifted raw v
SW_X1 = 23  # (n,) scratch
SW_X2 = 24  # (n,) scratch
SW_XM = 25  # (m,) scratch
SW_XM2 = 26  # (m,) scratch
SW_M = 27  # (n, n) mass matrix
SW_Q = 28  # (n,) forces
SW_Y = 29  # (n,) E3 right-hand side / solution
SW_QT = 30  # (n,) stencil point / polarization velocity
SW_AF = 31  # (n,) Taylor base acceleration of the shifted states
SW_INFO = 32  # (2,) float [|R_rr| / |R_00| at the raw state, W]
SW_QF = 33  # (n,) qr's fully corrected q (the output state inside the window)
SW_VF = 34  # (n,) qr's fully corrected v
SW_ZC = 35  # (m, m) Z at the centre (the shifted states' Gauss-Newton steps)
SW_SC = 36  # (m,) s at the centre
SW_VC = 37  # (n, n) V at the centre

SW_SCREEN = 20.0  # window searched where |R_rr| < SW_SCREEN mu |R_00|
SW_QREL = 1e-4  # the position's soft part is released where s_min < 2 SW_QREL mu s_max
SW_VREL = 0.1  # the velocity's soft part is released where s_min < 2 SW_VREL mu s_max


def form_sw_alloc(n, m):
    """The window workspace (slots SW_*)."""
    return (
        np.zeros((m, m)), np.zeros(m), np.zeros((n, n)),
        np.zeros((m, n)), np.zeros((m, n)), np.zeros(m),
        np.zeros(m), np.zeros(m), np.zeros((n, n)), np.zeros(n, dtype=np.int64),
        np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n)), np.zeros(n), np.zeros(n),
        np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((n, n)), np.zeros(n), np.zeros(n),
        np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(m), np.zeros(m),
        np.zeros((n, n)), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(2),
        np.zeros(n), np.zeros(n), np.zeros((m, m)), np.zeros(m), np.zeros((n, n)),
    )  # fmt: skip


def form_sw_step(x):
    """C-infinity step in log2(x): 0 for x <= 1/2, 1 for x >= 2."""
    if x <= 0.5:
        return 0.0
    u = (np.log2(x) + 1.0) / 2.0
    if u >= 1.0:
        return 1.0
    a = np.exp(-1.0 / u)
    b = np.exp(-1.0 / (1.0 - u))
    return a / (a + b)


def form_sw_svd(q, t, p, sw, rank_tol):
    """SVD of Phi_q(q, t) = Z S V^T (LAPACK, solvers/svd.py): Z (m x m) -> SW_Z, s
    descending -> SW_S, V (n x n; its columns h.. span the null space of the first h
    singular directions) -> SW_V, Phi_q -> SW_JT. Returns the numerical rank r
    (s > rank_tol s_0); 0 when the SVD failed (non-finite Phi_q): the window then stays
    closed."""
    J = sw[SW_JT]
    s = sw[SW_S]
    model_phi_q(q, t, p, J)
    if svd_into(J, sw[SW_Z], s, sw[SW_V]) != OK or s[0] == 0.0:
        return 0
    rank = 0
    for j in range(s.size):
        if s[j] > rank_tol * s[0]:
            rank += 1
    return rank


def form_sw_hard_step(Z, s, V, h, src, out):
    """out = V_h S_h^{-1} U_h^T src (the first h singular triplets of Z S V^T)."""
    n = out.size
    m = src.size
    for r in range(n):
        out[r] = 0.0
    for i in range(h):
        c = 0.0
        for j in range(m):
            c += Z[j, i] * src[j]
        c /= s[i]
        for r in range(n):
            out[r] += V[r, i] * c


def form_sw_hard_velocity(q, v, t, p, sw, h, vout):
    """vout = v minus the hard part of qr's velocity correction at q: the residual
    Phi_t + Phi_q v taken back along the h hard singular directions of the SVD of
    Phi_q(q) that :func:`form_sw_svd` left in sw (Phi_q in SW_JT)."""
    rr = sw[SW_XM]
    dv = sw[SW_X1]
    model_phi_t(q, t, p, rr)
    common_add_phi_q_v(sw[SW_JT], v, rr)
    form_sw_hard_step(sw[SW_Z], sw[SW_S], sw[SW_V], h, rr, dv)
    for i in range(v.size):
        vout[i] = v[i] - dv[i]


def form_sw_gn_hard(q, t, p, fp, sw, k, out):
    """Gauss-Newton projection of q without the last k non-zero singular directions
    (stop on the step as qr's, docs/explanation/methods.md#qr step 2) into out; returns the rank of
    Phi_q(out), whose SVD it leaves in sw (the last iterate's factorization where the
    iteration stopped on the step, one more SVD where it ran out of iterations)."""
    return form_sw_gn(q, t, p, fp, sw, k, -1, out)


def form_sw_gn(q, t, p, fp, sw, k, hc, out):
    """The Gauss-Newton iteration of :func:`form_sw_gn_hard` (hc < 0: Phi_q factored at
    every iterate, its r - k hard directions) and of :func:`form_sw_gn_centre` (hc >= 0:
    the centre's hc hard directions, SW_ZC, SW_SC, SW_VC, a chord iteration); the SVD of
    Phi_q(out) is left in sw; returns its rank."""
    ph = sw[SW_XM]
    dq = sw[SW_X1]
    n = q.size
    for i in range(n):
        out[i] = q[i]
    d_prev = np.inf
    current = False  # whether the SVD in sw is that of Phi_q(out)
    r = 0
    for _ in range(int(fp[2])):
        model_phi(out, t, p, ph)
        if hc < 0:
            r = form_sw_svd(out, t, p, sw, fp[0])
            current = True
            form_sw_hard_step(sw[SW_Z], sw[SW_S], sw[SW_V], r - k, ph, dq)
        else:
            form_sw_hard_step(sw[SW_ZC], sw[SW_SC], sw[SW_VC], hc, ph, dq)
        d = 0.0
        for i in range(n):
            d += dq[i] * dq[i]
        d = np.sqrt(d)
        if d <= fp[1] or d > 0.5 * d_prev:
            break
        for i in range(n):
            out[i] -= dq[i]
        current = False
        d_prev = d
    if not current:
        r = form_sw_svd(out, t, p, sw, fp[0])
    return r


def form_sw_gamma_v(q, v, t, p, sw, x, out):
    """out = gamma_v(q, v, t) x, exact by polarization (gamma is quadratic in v)."""
    ga = sw[SW_GA]
    gb = sw[SW_GB]
    w = sw[SW_QT]
    n = q.size
    m = out.size
    nx = 0.0
    nv = 0.0
    for i in range(n):
        nx += x[i] * x[i]
        nv += v[i] * v[i]
    if nx == 0.0:
        for i in range(m):
            out[i] = 0.0
        return
    cc = max(np.sqrt(nv), 1.0) / np.sqrt(nx)
    for i in range(n):
        w[i] = v[i] + cc * x[i]
    model_gamma(q, w, t, p, ga)
    for i in range(n):
        w[i] = v[i] - cc * x[i]
    model_gamma(q, w, t, p, gb)
    for i in range(m):
        out[i] = (ga[i] - gb[i]) / (2.0 * cc)


def form_sw_terms(q, v, t, p, fp, sw):
    """D -> SW_D and g_3 -> SW_G3: 4-point central differences along (v, 1) with step
    h = sing_hfd / |v| (error ~ h^4 + eps / h)."""
    D = sw[SW_D]
    g3 = sw[SW_G3]
    J = sw[SW_JT]
    g = sw[SW_GA]
    w = sw[SW_QT]
    m, n = D.shape
    nv = 0.0
    for i in range(n):
        nv += v[i] * v[i]
    h = fp[4] / max(np.sqrt(nv), 1e-300)
    for i in range(m):
        g3[i] = 0.0
        for j in range(n):
            D[i, j] = 0.0
    for st in range(4):
        off = (1.0, -1.0, 2.0, -2.0)[st]
        c = (8.0, -8.0, -1.0, 1.0)[st] / (12.0 * h)
        for i in range(n):
            w[i] = q[i] + off * h * v[i]
        model_phi_q(w, t + off * h, p, J)
        model_gamma(w, v, t + off * h, p, g)
        for i in range(m):
            g3[i] += c * g[i]
            for j in range(n):
                D[i, j] += c * J[i, j]


def form_sw_e3(q, v, t, p, fp, sw, r, k, aout, Bout):
    """a_E3 -> aout and B -> Bout at (q, v) (SVD of Phi_q(q) in sw, rank r, k soft);
    returns a status (SINGULAR: the E3 system is singular)."""
    Z = sw[SW_Z]
    V = sw[SW_V]
    D = sw[SW_D]
    g3 = sw[SW_G3]
    C = sw[SW_C]
    piv = sw[SW_PIV]
    M = sw[SW_M]
    Q = sw[SW_Q]
    y = sw[SW_Y]
    gam = sw[SW_XM]
    lx = sw[SW_XM2]
    bh = sw[SW_X1]
    col = sw[SW_X2]
    J = sw[SW_JT]
    n = q.size
    m = gam.size
    h = r - k
    nz = n - h
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    model_gamma(q, v, t, p, gam)
    form_sw_hard_step(sw[SW_Z], sw[SW_S], sw[SW_V], h, gam, bh)
    form_sw_terms(q, v, t, p, fp, sw)
    nv = 0.0
    for i in range(n):
        nv += v[i] * v[i]
    nv = np.sqrt(nv)
    for c in range(nz):
        for i in range(n):
            col[i] = V[i, h + c]
        form_sw_gamma_v(q, v, t, p, sw, col, lx)
        for j in range(m):
            sm = 0.0
            for i in range(n):
                sm += D[j, i] * col[i]
            lx[j] = sm - lx[j]
        for a in range(k):
            sm = 0.0
            for j in range(m):
                sm += Z[j, h + a] * lx[j]
            C[a, c] = sm
        sm = 0.0
        for i in range(n):
            mi = 0.0
            for j in range(n):
                mi += M[i, j] * col[j]
            sm += v[i] * mi
        C[k, c] = sm / nv
    form_sw_gamma_v(q, v, t, p, sw, bh, lx)
    for j in range(m):
        sm = 0.0
        for i in range(n):
            sm += D[j, i] * bh[i]
        lx[j] = sm - lx[j] - g3[j]
    for a in range(k):
        sm = 0.0
        for j in range(m):
            sm += Z[j, h + a] * lx[j]
        y[a] = -sm
    sm = 0.0
    for i in range(n):
        mi = Q[i]
        for j in range(n):
            mi -= M[i, j] * bh[j]
        sm += v[i] * mi
    y[k] = sm / nv
    st = lu_factor_rtol(C, piv, nz, 1e-14)
    if st != OK:
        return st
    lu_solve(C, piv, y, nz)
    for i in range(n):
        sm = bh[i]
        for c in range(nz):
            sm += V[i, h + c] * y[c]
        aout[i] = sm
    model_phi_q(q, t, p, J)
    P = D  # D is not needed any more: its first k rows take U_s^T Phi_q (row by row)
    for a in range(k):
        for j in range(n):
            P[a, j] = 0.0
    for l2 in range(m):
        for a in range(k):
            z = Z[l2, h + a]
            for j in range(n):
                P[a, j] += z * J[l2, j]
    for j in range(n):  # column j of B = N C^{-1} [U_s^T Phi_q e_j; 0]
        for a in range(k):
            y[a] = P[a, j]
        y[k] = 0.0
        lu_solve(C, piv, y, nz)
        for i in range(n):
            sm = 0.0
            for c in range(nz):
                sm += V[i, h + c] * y[c]
            Bout[i, j] = sm
    return OK


def form_sw_keep_centre(sw, rank_tol, k):
    """Copy the SVD in sw (the centre's) to SW_ZC, SW_SC, SW_VC; returns its number of
    hard directions (rank - k)."""
    s = sw[SW_S]
    sc = sw[SW_SC]
    Z = sw[SW_Z]
    Zc = sw[SW_ZC]
    V = sw[SW_V]
    Vc = sw[SW_VC]
    m = s.size
    n = V.shape[0]
    r = 0
    for i in range(m):
        sc[i] = s[i]
        if s[i] > rank_tol * s[0]:
            r += 1
        for j in range(m):
            Zc[i, j] = Z[i, j]
    for i in range(n):
        for j in range(n):
            Vc[i, j] = V[i, j]
    return r - k


def form_sw_gn_centre(q, t, p, fp, sw, h, out):
    """Gauss-Newton projection of a shifted state q (within h_j |v| of the centre) along
    the centre's h hard singular directions (SW_ZC, SW_SC, SW_VC: a chord iteration, stop
    rule as qr's, docs/explanation/methods.md#qr step 2) into out; then the SVD of Phi_q(out) into
    sw. Returns its rank. The shifted states start within O(h_j^3) of the constraint manifold
    and the centre's factorization contracts their hard residual by O(h_j) per step, so
    one SVD per shifted state (instead of one per iterate) changes the end point by
    round-off only (docs/explanation/methods.md#qr-through-singular-positions, cost)."""
    return form_sw_gn(q, t, p, fp, sw, 0, h, out)


def form_sw_state(q, v, t, p, fp, sw, k, hc, qout, vout):
    """Hard-only correction of a raw shifted state: q -> qout (Gauss-Newton without the
    soft directions, :func:`form_sw_gn_centre` with the centre's hc hard directions),
    v -> vout (the hard part of qr's velocity correction); returns the rank, with the SVD
    of Phi_q(qout) left in sw."""
    r = form_sw_gn_centre(q, t, p, fp, sw, hc, qout)
    form_sw_hard_velocity(qout, v, t, p, sw, r - k, vout)
    return r


def form_sw_shift(t, p, fp, sw, qc, vc, a, j, k, hc, sg, aout, Bout):
    """a_E3 and B at the state t + sg h_j along the flow (Taylor to h^3 j, hard-corrected)."""
    qs = sw[SW_QS]
    vs = sw[SW_VS]
    qh = sw[SW_QH]
    vh = sw[SW_VH]
    h = fp[5]
    n = qc.size
    for i in range(n):
        qs[i] = qc[i] + sg * h * vc[i] + 0.5 * h * h * a[i] + sg * h * h * h / 6.0 * j[i]
        vs[i] = vc[i] + sg * h * a[i] + 0.5 * h * h * j[i]
    r = form_sw_state(qs, vs, t + sg * h, p, fp, sw, k, hc, qh, vh)
    return form_sw_e3(qh, vh, t + sg * h, p, fp, sw, r, k, aout, Bout)


def form_sw_solve_shift(sw, c, rhs, out):
    """out = (I + c B')^{-1} rhs with B' = (B_+ - B_-) / 2 h_j (h_j folded into c)."""
    E = sw[SW_E]
    Bp = sw[SW_BP]
    Bm = sw[SW_BM]
    piv = sw[SW_PIV]
    n = out.size
    for i in range(n):
        out[i] = rhs[i]
        for j in range(n):
            E[i, j] = (1.0 if i == j else 0.0) + c * (Bp[i, j] - Bm[i, j])
    st = lu_factor_rtol(E, piv, n, 1e-14)
    if st != OK:
        return st
    lu_solve(E, piv, out, n)
    return OK


def form_sw_rhs(t, q, v, p, fp, ws_qc, ws_vc, w, sw):
    """Inside the window, overwrite qr's corrected state (ws_qc: only within the narrow
    position window; ws_vc) and acceleration (w's WS_A) by the E3 window's; outside
    leave them.
    Returns (status, W); W = 1: nothing changed; 0 < W < 1 needs qr's E2 acceleration
    recomputed at the new state by the caller before :func:`form_sw_blend` (W = 0: the
    blend takes the window's acceleration alone; qr.form_rhs skips it). qr's fully
    corrected state is kept (SW_QF, SW_VF): inside the window the outputs are that state
    (|Phi| at round-off), the right-hand side the window's."""
    info = sw[SW_INFO]
    mu = fp[3]
    info[1] = 1.0
    if mu <= 0.0 or info[0] >= SW_SCREEN * mu:
        return OK, 1.0
    n = q.size
    r = form_sw_svd(q, t, p, sw, fp[0])
    s = sw[SW_S]
    if r == 0 or n - r != 1:
        return OK, 1.0
    W = form_sw_step(s[r - 1] / (mu * s[0]))
    if W >= 1.0:
        return OK, 1.0
    k = 0
    for i in range(r):
        if s[i] < 10.0 * mu * s[0]:
            k += 1
    qf = sw[SW_QF]
    vf = sw[SW_VF]
    for i in range(n):
        qf[i] = ws_qc[i]
        vf[i] = ws_vc[i]
    # the position stays qr's full projection q_f except in a much narrower window
    # (s_min < 2 SW_QREL mu s_max, |t - t_s| ~ 1e-6 s), where q_f's round-off offset
    # eps / s_min along the soft directions grows: there q_c = q_h + W_q (q_f - q_h), q_h
    # the projection without the soft directions. Releasing over the whole window (as
    # tests/qr_singular_testkit.py does) made the error grow from crossing to crossing
    # (docs/explanation/methods.md#qr-through-singular-positions).
    Wq = form_sw_step(s[r - 1] / (SW_QREL * mu * s[0]))
    qw = sw[SW_QS]
    for i in range(n):
        qw[i] = ws_qc[i]
    if Wq < 1.0:
        qh = sw[SW_QH]
        form_sw_gn_hard(q, t, p, fp, sw, k, qh)
        for i in range(n):
            qw[i] = qh[i] + Wq * (qw[i] - qh[i])
    r = form_sw_svd(qw, t, p, sw, fp[0])
    if n - r != 1 or r - k < 0:
        return OK, 1.0  # the soft values fell below rank_tol: leave qr's state
    for i in range(n):
        ws_qc[i] = qw[i]
    Z = sw[SW_Z]
    V = sw[SW_V]
    form_sw_hard_velocity(ws_qc, v, t, p, sw, r - k, ws_vc)
    rr = sw[SW_XM]  # the velocity residual Phi_t + Phi_q v, left by the call above
    m = rr.size
    # the velocity's soft correction is released (scaled by Wv) only where s_min < 2 SW_VREL
    # mu s_max: released over the whole window (Wv = W), the raw state's soft velocity
    # drift, of the order of the integrator's tolerance, stayed uncorrected there and
    # the error at rtol 1e-8 grew tenfold over 20 crossings (1.6e-6 against 1.8e-7 of
    # plain qr; docs/explanation/methods.md#qr-through-singular-positions)
    s = sw[SW_S]
    Wv = form_sw_step(s[r - 1] / (SW_VREL * mu * s[0]))
    if Wv > 0.0:
        for a in range(r - k, r):
            c = 0.0
            for j in range(m):
                c += Z[j, a] * rr[j]
            c *= Wv / s[a]
            for i in range(n):
                ws_vc[i] -= V[i, a] * c
    info[1] = W
    ae = sw[SW_AE]
    B = sw[SW_B]
    st = form_sw_e3(ws_qc, ws_vc, t, p, fp, sw, r, k, ae, B)
    if st != OK:
        return st, W
    if fp[5] > 0.0:
        st = form_sw_unbias(t, p, fp, sw, ws_qc, ws_vc, k)
        if st != OK:
            return st, W
    return OK, W


def form_sw_unbias(t, p, fp, sw, qc, vc, k):
    """a_E3 <- a_E3 - B a', a' to second order in s (module docstring); status."""
    ae = sw[SW_AE]
    B = sw[SW_B]
    ap = sw[SW_AP]
    am = sw[SW_AM]
    Bp = sw[SW_BP]
    Bm = sw[SW_BM]
    j1 = sw[SW_J1]
    a2 = sw[SW_A2]
    base = sw[SW_AF]
    rhs = sw[SW_Y]
    h = fp[5]
    n = qc.size
    hc = form_sw_keep_centre(sw, fp[0], k)
    for i in range(n):
        j1[i] = 0.0
    for it in range(2):
        if it == 1:
            for i in range(n):
                sm = ae[i]
                for j in range(n):
                    sm -= B[i, j] * j1[j]
                base[i] = sm
        else:
            for i in range(n):
                base[i] = ae[i]
        st = form_sw_shift(t, p, fp, sw, qc, vc, base, j1, k, hc, 1.0, ap, Bp)
        if st != OK:
            return st
        st = form_sw_shift(t, p, fp, sw, qc, vc, base, j1, k, hc, -1.0, am, Bm)
        if st != OK:
            return st
        d2 = sw[SW_X2]
        for i in range(n):
            d2[i] = (ap[i] - am[i]) / (2.0 * h)
        st = form_sw_solve_shift(sw, 1.0 / (2.0 * h), d2, j1)  # a' to first order
        if st != OK:
            return st
    # a'' = (I + 2B')^{-1} (a_E3'' - B'' a')
    for i in range(n):
        sm = (ap[i] - 2.0 * ae[i] + am[i]) / (h * h)
        for j in range(n):
            sm -= (Bp[i, j] - 2.0 * B[i, j] + Bm[i, j]) / (h * h) * j1[j]
        rhs[i] = sm
    st = form_sw_solve_shift(sw, 2.0 / (2.0 * h), rhs, a2)
    if st != OK:
        return st
    # a' = (I + B')^{-1} (a_E3' - B a'')
    for i in range(n):
        sm = (ap[i] - am[i]) / (2.0 * h)
        for j in range(n):
            sm -= B[i, j] * a2[j]
        rhs[i] = sm
    st = form_sw_solve_shift(sw, 1.0 / (2.0 * h), rhs, j1)
    if st != OK:
        return st
    for i in range(n):
        sm = ae[i]
        for j in range(n):
            sm -= B[i, j] * j1[j]
        ae[i] = sm
    return OK


def form_sw_blend(w, sw, W):
    """w's acceleration (qr's E2 at the window's state) <- W a_E2 + (1 - W) a_E3."""
    a = w[WS_A]
    ae = sw[SW_AE]
    for i in range(a.size):
        a[i] = W * a[i] + (1.0 - W) * ae[i]

