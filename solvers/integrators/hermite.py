"""Hermite discrete variational integrator (DVI) of seed 001, fixed step, node multipliers.

On each interval [t_i, t_i + h] the coordinates are a Hermite polynomial in
tau = (t - t_i)/h, q_d(tau) = sum_a N_a(tau) X_a (docs/explanation/methods.md#hermite); the discrete
action is the Gauss–Legendre quadrature of the Lagrangian plus the node term
-h lam_i^T Phi(q_i, t_i); its stationarity gives the discrete Euler–Lagrange equations
(DEL), solved per step by Newton with a dense saddle-point LU.

``order`` selects the interpolation (docs/explanation/methods.md#hermite):

- 2 — two-point cubic with unknown derivatives (seed eq. (16); "H2"):
  interval DOFs X = (q_i, q_{i+1}, Z_i, Z_{i+1}), Z = h dq/dt internal to the interval;
  unknowns (q_{i+1}, Z_i, Z_{i+1}, lam_i). Symplectic (docs/explanation/hermite.md#properties 7).
- s >= 3 — s equidistant points, degree s, derivative known at tau = 0 (seed eqs.
  (5)-(9); s = 3 is the three-point cubic "H3"): X = (q_i, q_{i,2}, ...,
  q_{i,s} = q_{i+1}, Z_i) with the known derivative the post-impulse velocity
  Z_i = h M(q_i)^{-1} p_i^+; unknowns (q_{i,2}, ..., q_{i+1}, lam_i). Not symplectic,
  slightly dissipative (docs/explanation/hermite.md#properties 7). s <= HERMITE_ORDER_MAX; use
  n_gauss >= s to integrate the kinetic term exactly (degree 2s - 2).

Choices made here (see docs/explanation/hermite.md):

- Forces: discrete Lagrange–d'Alembert. The kinetic energy T = 1/2 v^T M(q) v is
  quadratured exactly as in the action; every other force is ``model_forces`` at the
  Gauss points, entering as h sum_j b_j N_a(c_j) Q_j (for gravity and other potential
  forces this is exactly the variational term -dV/dq). Since the contract's Q also holds
  the quadratic velocity terms of a configuration-dependent M (M a = Q - phi_q^T lam), the
  force term uses F = Q + (dM/dq . v) v, for which the velocity terms of Q and the
  1/2 v^T M_q v of the kinetic term cancel; dM/dq . v is a fourth-order central
  difference of M(q + s v) in s (exactly zero for a constant M).
- The element residual of DOF a is g_a = sum_j b_j [h N_a(c_j) F_j + N_a'(c_j) M(q_j) v_j]
  (= dL_d/dX_a for the scaled DOFs), with v_j = q_d'(c_j)/h.
- Start: p_0^- = M v0 + (h/2) phi_q(q0)^T lam_0, i.e. the first node impulse is split
  like every later one (RATTLE-style), so that the half-impulse velocity rule returns v0
  at t0; docs/explanation/methods.md#hermite takes p_0^- = M v0 (O(h^2) different). The trajectory
  does not depend on the velocity rule.
- Newton: unknown multiplier mu = h^2 lam and momentum rows multiplied by h, so the
  matrix is [~M, -phi_q^T; phi_q, 0]-scaled. Simplified Newton on the exact residual:
  the matrix is assembled and LU-factored once per step with the current phi_q(q_i) and
  phi_q at the predicted q_{i+1}; its element blocks dg/dX (force derivatives and
  d(M v)/dq by forward differences at the Gauss points, the expensive part) are reused
  across steps and recomputed when the contraction exceeds HERMITE_REJAC; a step that
  fails with reused blocks is retried once with fresh ones (Hairer & Wanner II, IV.8, as in
  RADAU5). Convergence: the error estimate theta/(1 - theta) |dy| of the iterate
  (scaled max-norm: positions / q_s, mu / (M_s q_s), q_s = max(1, |q0|_inf) and M_s the
  largest diagonal entry of M(q0)) <= newton_tol and |Phi(q_{i+1})|_inf <= newton_tol q_s.
  newton_tol must lie above the rounding floor of the Newton system (~1e-13; its
  condition grows like 1/h^2 with 2 Gauss points).
- Velocity at the nodes (docs/explanation/methods.md#node-velocity), ``velocity``: ``half_impulse``
(c,
  default) v_i = M^{-1}(p_i^- - h/2 phi_q^T lam_i), which needs lam_i of the step that
  starts at node i (one look-ahead step is solved past t_end; it is counted in
  newton_iters and rhs_evals, not in steps); ``end_slope`` (a) the interpolant's end
  slope; ``legendre`` (b) M^{-1} p_i^-; ``projection`` (d) the M-orthogonal projection
  of p_i^- onto phi_q v = -phi_t.
- W (work of the drives): h sum_j b_j model_power(q_j, v_j, t_j) per interval.
- Counters: steps (intervals advanced), newton_iters (linear solves), rhs_evals (element
  residual evaluations, each r Gauss points), jac_evals (Jacobian builds).

Status codes: NEWTON_FAILED when Newton does not converge within ``newton_max``
iterations or produces a non-finite residual or update; SINGULAR when the Newton matrix
(or M, for order >= 3 and the velocity rules that invert it) is singular; NAN/DIVERGED
from the node state; STEP_BUDGET past ``max_steps``; ERROR for parameters outside their
ranges (the registry's validation prevents that).

Not supported: models with a singular mass matrix (``top``: M(q) = 4 L^T J L has
M q = 0, so M^{-1} p and the derivative DOFs are undefined). The spec says
``needs_regular_mass``; a model runs here only if it declares ``regular_mass``.

References
----------
Seed 001 (Zhang, Wang & Ding, discrete variational method with Hermite interpolation),
eqs. (3)-(17); docs/explanation/methods.md#hermite, docs/explanation/hermite.md; Marsden &
West, Acta Numerica 10 (2001) 357-514
(discrete Lagrange–d'Alembert, Sect. 3.2); Ober-Blöbaum & Saake, Adv. Comput. Math. 41
(2015) 955-986; Leyendecker, Marsden & Ortiz, ZAMM 88 (2008) 677-708; Golub & Welsch,
Math. Comp. 23 (1969) (Gauss–Legendre nodes; here generated data, correctly rounded:
solvers/hermite_tables_gen.py).
"""

import numpy as np
from mbstudy.solvers import hermite_basis
from mbstudy.solvers.formulations._common import common_solve_index1
from mbstudy.solvers.kernel_names import (
    model_forces,
    model_mass,
    model_phi,
    model_phi_q,
    model_phi_t,
    model_power,
    model_sizes,
)
from mbstudy.solvers.linalg import lu_factor, lu_solve, state_status
from mbstudy.solvers.spec import IntegratorSpec, Param
from mbstudy.solvers.status import (
    C_JAC,
    C_NEWTON,
    C_RHS,
    C_STEPS,
    DIVERGENCE_BOUND,
    ERROR,
    NEWTON_FAILED,
    OK,
    SINGULAR,
    STEP_BUDGET,
)
from mbstudy.solvers.workspace import WS_A, WS_LAM, WS_U

# Velocity-recovery rules (docs/explanation/methods.md#node-velocity); the index is the kernel's
# code.
VELOCITY_RULES = ("end_slope", "legendre", "half_impulse", "projection")

SPEC = IntegratorSpec(
    name="hermite",
    summary="Hermite discrete variational integrator (seed 001), fixed step, node multipliers",
    params=(
        Param("h", 0.01, "step size (s)", positive=True),
        Param("order", 2, "interpolation: 2 = two-point cubic (unknown derivatives), "
              "s >= 3 = s-point degree-s with known start derivative (3 = three-point cubic)",
              kind="int", minimum=2, maximum=6),
        Param("n_gauss", 3, "Gauss-Legendre points per interval (>= 3 for order 2, >= s "
              "for order s)", kind="int", minimum=1, maximum=12),
        Param("newton_tol", 1e-10, "Newton tolerance on the scaled update and |Phi| (-)",
              positive=True),
        Param("newton_max", 20, "Newton iteration limit per step (newton_failed beyond)",
              kind="int", minimum=1),
        Param("velocity", "half_impulse",
              "node velocity rule (docs/explanation/methods.md#node-velocity)",
              kind="str",
              choices=VELOCITY_RULES),
        Param("max_steps", 100_000_000, "step budget (status step_budget when exhausted)",
              kind="int", minimum=1),
    ),
    fixed_step=True,
    adaptive=False,
    forms=("index1-ode",),
    forms_reason="the variational integrator enforces Phi = 0 itself with node multipliers, "
    "so the formulation must add nothing to the model's equations",
    needs_regular_mass=True,
    order=2,
    source="seed 001 (Zhang, Wang & Ding); docs/explanation/methods.md#hermite; "
    "Marsden & West 2001; Ober-Bloebaum & Saake 2015",
)

HERMITE_ORDER_MAX = 6
HERMITE_GAUSS_MAX = 12
HERMITE_FD_DIR = 1e-3  # |s v|_inf / max(1, |q|_inf) of the dM/dq . v stencil
HERMITE_FD_JAC = 1.4901161193847656e-08  # sqrt(eps): forward-difference Jacobian steps
HERMITE_REJAC = 0.25  # rebuild the Jacobian when |dy_k| > HERMITE_REJAC |dy_{k-1}|
HERMITE_DIVERGE = 1e6  # a scaled Newton update beyond this ends the step (diverging)
HERMITE_V_SLOPE = 0
HERMITE_V_LEGENDRE = 1
HERMITE_V_HALF = 2
HERMITE_V_PROJ = 3
# rows of the (HERMITE_W_ROWS, n) scratch array
HERMITE_W_QW = 0
HERMITE_W_ACC = 1
HERMITE_W_QT = 2
HERMITE_W_VT = 3
HERMITE_W_FT = 4
HERMITE_W_MV = 5
HERMITE_W_ZC = 6
HERMITE_W_ROWS = 7

# Gauss–Legendre nodes/weights and the basis tables of every order 2..HERMITE_ORDER_MAX and
# n_gauss 1..HERMITE_GAUSS_MAX, each entry the double nearest to its exact value: data of
# solvers/hermite_tables_data.py, generated by solvers/hermite_tables_gen.py
# (solvers/hermite_basis.py, packed_tables: layout and offsets). Composition copies them
# into the kernel's text as array literals (numba freezes them as constants), so their
# values are part of the kernel's cache key; integ_tables reads one case's slice.
_TABLES = hermite_basis.packed_tables(HERMITE_ORDER_MAX, HERMITE_GAUSS_MAX)
HERMITE_GAUSS_C = _TABLES["c"]
HERMITE_GAUSS_B = _TABLES["b"]
HERMITE_N = _TABLES["N"]
HERMITE_DN = _TABLES["dN"]
HERMITE_N1 = _TABLES["N1"]
HERMITE_DN1 = _TABLES["dN1"]
HERMITE_KIND = _TABLES["kind"]
HERMITE_TAU = _TABLES["tau"]
HERMITE_E = _TABLES["E"]


def integ_tables(order, r, c, b, N, dN, N1, dN1, E, kind, tau):
    """Copy the case's basis and quadrature tables out of the module's packed constants.

    c, b (r,): Gauss–Legendre nodes and weights on [0, 1]; N, dN (n_dof, r): basis values
    and tau-derivatives at the nodes; N1, dN1 (n_dof,) at tau = 1; kind, tau (n_dof,);
    E (n_dof, n_dof) the Newton predictor (next interval's DOFs from this one's). Layout of
    the HERMITE_* tables: solvers/hermite_basis.py (packed_tables), which reads them from
    the generated, correctly rounded solvers/hermite_tables_data.py.
    """
    o = order - 2
    off = r * (r - 1) // 2
    nd = N.shape[0]
    for j in range(r):
        c[j] = HERMITE_GAUSS_C[off + j]
        b[j] = HERMITE_GAUSS_B[off + j]
    for a in range(nd):
        for j in range(r):
            N[a, j] = HERMITE_N[o, a, off + j]
            dN[a, j] = HERMITE_DN[o, a, off + j]
        N1[a] = HERMITE_N1[o, a]
        dN1[a] = HERMITE_DN1[o, a]
        kind[a] = HERMITE_KIND[o, a]
        tau[a] = HERMITE_TAU[o, a]
        for a2 in range(nd):
            E[a, a2] = HERMITE_E[o, a, a2]


def integ_force(q, v, t, p, F, M0, Mw, qw, acc):
    """F = model_forces(q, v, t) + (dM/dq . v) v, the force of the element residual.

    (dM/dq . v) v = d/ds [M(q + s v) v] at s = 0 by the fourth-order central difference
    (8 (f(s) - f(-s)) - (f(2s) - f(-2s))) / (12 s) with |s v|_inf = HERMITE_FD_DIR
    max(1, |q|_inf): truncation ~1e-13, rounding ~1e-13 relative. If M(q + s v) and
    M(q - s v) are both bitwise equal to M0 (M at the Gauss point: a constant M) the term
    is exactly zero and the outer evaluations are skipped.
    """
    model_forces(q, v, t, p, F)
    n = q.size
    vmax = 0.0
    qmax = 1.0
    for k in range(n):
        vmax = max(vmax, abs(v[k]))
        qmax = max(qmax, abs(q[k]))
    if vmax == 0.0:
        return
    s = HERMITE_FD_DIR * qmax / vmax
    for i in range(n):
        acc[i] = 0.0
    same = True
    for st in range(4):
        if st == 0:
            sig = s
            w = 8.0
        elif st == 1:
            sig = -s
            w = -8.0
        elif st == 2:
            sig = 2.0 * s
            w = -1.0
        else:
            sig = -2.0 * s
            w = 1.0
        for k in range(n):
            qw[k] = q[k] + sig * v[k]
        model_mass(qw, p, Mw)
        for i in range(n):
            sm = 0.0
            for k in range(n):
                sm += Mw[i, k] * v[k]
                if Mw[i, k] != M0[i, k]:
                    same = False
            acc[i] += w * sm
        if st == 1 and same:
            return
    f = 1.0 / (12.0 * s)
    for i in range(n):
        F[i] += acc[i] * f


def integ_interval(X, nd, ti, h, p, c, b, N, dN, g, QV, MJ, wn, Mw):
    """Element residuals g (n_dof, n) of the interval with DOFs X; return the drive work.

    g_a = sum_j b_j [h N_a(c_j) F(q_j, v_j, t_j) + N_a'(c_j) M(q_j) v_j] with
    q_j = sum_a N_a(c_j) X_a, v_j = sum_a N_a'(c_j) X_a / h (docs/explanation/methods.md#hermite
    with the force of :func:`integ_force`). Leaves q_j, v_j, F_j in QV[0:3, j] and M(q_j) in
    MJ[0, j] for the Jacobian. Returns h sum_j b_j power(q_j, v_j, t_j).
    """
    n = X.shape[1]
    r = c.size
    acc = wn[HERMITE_W_ACC]
    qw = wn[HERMITE_W_QW]
    for a in range(nd):
        for k in range(n):
            g[a, k] = 0.0
    dW = 0.0
    for j in range(r):
        t = ti + c[j] * h
        q = QV[0, j]
        v = QV[1, j]
        F = QV[2, j]
        for k in range(n):
            sq = 0.0
            sv = 0.0
            for a in range(nd):
                sq += N[a, j] * X[a, k]
                sv += dN[a, j] * X[a, k]
            q[k] = sq
            v[k] = sv / h
        M = MJ[0, j]
        model_mass(q, p, M)
        integ_force(q, v, t, p, F, M, Mw, qw, acc)
        for i in range(n):
            sm = 0.0
            for k in range(n):
                sm += M[i, k] * v[k]
            acc[i] = sm
        for a in range(nd):
            wa = b[j] * h * N[a, j]
            wd = b[j] * dN[a, j]
            for i in range(n):
                g[a, i] += wa * F[i] + wd * acc[i]
        dW += b[j] * model_power(q, v, t, p)
    return h * dW


def integ_jac_blocks(nd, ti, h, p, c, b, N, dN, QV, MJ, Hb, wn, Mw):
    """Hb[a, b] = dg_a/dX_b (n x n blocks) at the Gauss-point states left in QV, MJ.

    dg_a/dX_b = sum_j b_j [h N_a N_b F_q + N_a N_b' F_v + N_a' N_b (M v)_q + N_a' N_b' M / h]
    with F_q, F_v, (M v)_q by forward differences (step sqrt(eps) max(1, |x|)), stored in
    MJ[1:4, j].
    """
    n = QV.shape[2]
    r = c.size
    acc = wn[HERMITE_W_ACC]
    qw = wn[HERMITE_W_QW]
    qt = wn[HERMITE_W_QT]
    vt = wn[HERMITE_W_VT]
    Ft = wn[HERMITE_W_FT]
    Mv = wn[HERMITE_W_MV]
    for j in range(r):
        t = ti + c[j] * h
        q = QV[0, j]
        v = QV[1, j]
        F = QV[2, j]
        M = MJ[0, j]
        Fq = MJ[1, j]
        Fv = MJ[2, j]
        Pq = MJ[3, j]
        for i in range(n):
            sm = 0.0
            for k in range(n):
                sm += M[i, k] * v[k]
            Mv[i] = sm
        for k in range(n):
            for i in range(n):
                qt[i] = q[i]
                vt[i] = v[i]
            d = HERMITE_FD_JAC * max(1.0, abs(q[k]))
            qt[k] += d
            integ_force(qt, v, t, p, Ft, M, Mw, qw, acc)
            for i in range(n):
                Fq[i, k] = (Ft[i] - F[i]) / d
            model_mass(qt, p, Mw)
            for i in range(n):
                sm = 0.0
                for kk in range(n):
                    sm += Mw[i, kk] * v[kk]
                Pq[i, k] = (sm - Mv[i]) / d
            d = HERMITE_FD_JAC * max(1.0, abs(v[k]))
            vt[k] += d
            integ_force(q, vt, t, p, Ft, M, Mw, qw, acc)
            for i in range(n):
                Fv[i, k] = (Ft[i] - F[i]) / d
    for a in range(nd):
        for bb in range(nd):
            for i in range(n):
                for k in range(n):
                    Hb[a, bb, i, k] = 0.0
            for j in range(r):
                w00 = b[j] * h * N[a, j] * N[bb, j]
                w01 = b[j] * N[a, j] * dN[bb, j]
                w10 = b[j] * dN[a, j] * N[bb, j]
                w11 = b[j] * dN[a, j] * dN[bb, j] / h
                for i in range(n):
                    for k in range(n):
                        s1 = w00 * MJ[1, j, i, k] + w01 * MJ[2, j, i, k]
                        s2 = w10 * MJ[3, j, i, k] + w11 * MJ[0, j, i, k]
                        Hb[a, bb, i, k] += s1 + s2


def integ_step(X, mu, qa, P0, c0, ti, h, p, tol, max_iter, qscale, mscale, lay, c, b, N, dN,
               udof, rdof, yv, J, piv, g, QV, MJ, Hb, GG, ph, Mi, pivn, Bz, wn, Mw, jst, cnt):
    """Solve the discrete Euler–Lagrange equations of one interval
    (docs/explanation/methods.md#hermite).

    On entry X holds q_i in X[0] and a predictor in the unknown DOFs, ``mu`` the guess of
    mu = h^2 lam_i. Residual (momentum rows times h):

        h (P0 + g_0) - (1 - c0) phi_q(q_i)^T mu,   h g_a (a internal / derivative DOFs),
        Phi(q_{i+1}, t_i + h),

    with p_i^- = P0 + c0 phi_q^T mu / h (c0 = 1/2 on the first step, see the module
    docstring). For order >= 3 the derivative DOF is Z_i = h M(q_i)^{-1} p_i^+ =
    Zc - Bz mu. ``lay`` = (n_dof, n_unknown_blocks, end DOF, dependent DOF or -1, column
    block of the end DOF). ``jst`` (1,): whether the element Jacobian blocks Hb may be
    reused (1) or must be recomputed (0). A step that fails with reused blocks is retried
    once from the same predictor with fresh ones. On success X and mu hold the solution
    and g holds g(X), so p_{i+1}^- = g[end]. Returns (status, drive work over the
    interval).
    """
    nU = lay[1]
    idep = lay[3]
    n = X.shape[1]
    m = mu.size
    y0 = yv[3]
    Gi = GG[0]
    acc = wn[HERMITE_W_ACC]
    Zc = wn[HERMITE_W_ZC]
    model_phi_q(qa, ti, p, Gi)
    if idep >= 0:
        # Z_i = h M^{-1} (P0 - (1 - c0) phi_q^T mu / h) = Zc - Bz mu
        model_mass(qa, p, Mi)
        st = lu_factor(Mi, pivn, n)
        if st != OK:
            return st, 0.0
        for i in range(n):
            Zc[i] = h * P0[i]
        lu_solve(Mi, pivn, Zc, n)
        for lm in range(m):
            for i in range(n):
                acc[i] = (1.0 - c0) * Gi[lm, i]
            lu_solve(Mi, pivn, acc, n)
            for i in range(n):
                Bz[i, lm] = acc[i]
    for ci in range(nU):
        a = udof[ci]
        for k in range(n):
            y0[ci * n + k] = X[a, k]
    for lm in range(m):
        y0[nU * n + lm] = mu[lm]
    res = (NEWTON_FAILED, 0.0)
    for _attempt in range(2):
        reused = jst[0] == 1
        res = integ_newton(X, mu, P0, c0, ti, h, p, tol, max_iter, qscale, mscale, lay, c, b,
                           N, dN, udof, rdof, yv, J, piv, g, QV, MJ, Hb, GG, ph, Bz, wn, Mw,
                           jst, cnt)  # fmt: skip
        if res[0] == OK or res[0] == SINGULAR or not reused:
            return res
        jst[0] = 0
    return res


def integ_newton(X, mu, P0, c0, ti, h, p, tol, max_iter, qscale, mscale, lay, c, b, N, dN,
                 udof, rdof, yv, J, piv, g, QV, MJ, Hb, GG, ph, Bz, wn, Mw, jst, cnt):
    """One simplified-Newton attempt of :func:`integ_step` from the predictor yv[3].

    The matrix (momentum rows times h, unknowns [DOF blocks, mu]):

        h dg_a/dX_b (+ h dg_a/dZ dZ/dmu),  -(1 - c0) phi_q(q_i)^T (row block 0),
        phi_q(q_{i+1}) in the end-DOF column of the constraint rows,

    assembled and factored at the first iteration of every step from the blocks
    Hb = dg/dX, which are recomputed only when jst[0] == 0 or convergence slows (then
    jst[0] = 1: they stay valid for the next steps). Returns (status, drive work).
    """
    nd = lay[0]
    nU = lay[1]
    iend = lay[2]
    idep = lay[3]
    cend = lay[4]
    n = X.shape[1]
    m = mu.size
    nu = nU * n + m
    t1 = ti + h
    y = yv[0]
    dy = yv[1]
    R = yv[2]
    y0 = yv[3]
    Gi = GG[0]
    Ge = GG[1]
    Zc = wn[HERMITE_W_ZC]
    for i in range(nu):
        y[i] = y0[i]
    dnorm = 0.0
    err = np.inf
    need_jac = True
    need_blocks = jst[0] == 0
    for it in range(max_iter + 1):
        for ci in range(nU):
            a = udof[ci]
            for k in range(n):
                X[a, k] = y[ci * n + k]
        for lm in range(m):
            mu[lm] = y[nU * n + lm]
        if idep >= 0:
            for i in range(n):
                sm = Zc[i]
                for lm in range(m):
                    sm -= Bz[i, lm] * mu[lm]
                X[idep, i] = sm
        dW = integ_interval(X, nd, ti, h, p, c, b, N, dN, g, QV, MJ, wn, Mw)
        cnt[C_RHS] += 1
        for ri in range(nU):
            a = rdof[ri]
            for i in range(n):
                R[ri * n + i] = h * g[a, i]
            if a == 0:
                for i in range(n):
                    sm = h * P0[i]
                    for lm in range(m):
                        sm -= (1.0 - c0) * Gi[lm, i] * mu[lm]
                    R[i] += sm
        model_phi(X[iend], t1, p, ph)
        phin = 0.0
        for lm in range(m):
            R[nU * n + lm] = ph[lm]
            phin = max(phin, abs(ph[lm]))
        for i in range(nu):
            if not np.isfinite(R[i]):
                return NEWTON_FAILED, 0.0
        if it > 0 and err <= tol and phin <= tol * qscale:
            return OK, dW
        if it == max_iter:
            break
        if need_jac:
            if need_blocks:
                integ_jac_blocks(nd, ti, h, p, c, b, N, dN, QV, MJ, Hb, wn, Mw)
                cnt[C_JAC] += 1
                jst[0] = 1
                need_blocks = False
            for i in range(nu):
                for k in range(nu):
                    J[i, k] = 0.0
            for ri in range(nU):
                a = rdof[ri]
                for ci in range(nU):
                    bb = udof[ci]
                    for i in range(n):
                        for k in range(n):
                            J[ri * n + i, ci * n + k] = h * Hb[a, bb, i, k]
                for lm in range(m):
                    col = nU * n + lm
                    for i in range(n):
                        sm = 0.0
                        if a == 0:
                            sm -= (1.0 - c0) * Gi[lm, i]
                        if idep >= 0:
                            for k in range(n):
                                sm -= h * Hb[a, idep, i, k] * Bz[k, lm]
                        J[ri * n + i, col] = sm
            model_phi_q(X[iend], t1, p, Ge)
            for lm in range(m):
                for k in range(n):
                    J[nU * n + lm, cend * n + k] = Ge[lm, k]
            st = lu_factor(J, piv, nu)
            if st != OK:
                return st, 0.0
            need_jac = False
        for i in range(nu):
            dy[i] = -R[i]
        lu_solve(J, piv, dy, nu)
        cnt[C_NEWTON] += 1
        dn = 0.0
        for i in range(nU * n):
            dn = max(dn, abs(dy[i]) / qscale)
        for lm in range(m):
            dn = max(dn, abs(dy[nU * n + lm]) / (mscale * qscale))
        if not np.isfinite(dn) or dn > HERMITE_DIVERGE:
            return NEWTON_FAILED, 0.0
        for i in range(nu):
            y[i] += dy[i]
        # error estimate of the simplified Newton iterate (Hairer & Wanner II, IV.8):
        # |y_k - y*| <~ theta/(1 - theta) |dy_k| with the contraction theta measured in
        # this step; the first update counts as its own error (carrying eta over from the
        # previous step accepted wrong one-update steps with reused blocks)
        e = 1.0
        if it > 0:
            theta = dn / dnorm
            if theta > HERMITE_REJAC:
                need_jac = True
                need_blocks = True
            if theta < 1.0:
                e = max(theta / (1.0 - theta), 1e-3)
        err = e * dn
        dnorm = dn
    return NEWTON_FAILED, 0.0


def integ_node_velocity(rule, qa, P0, c0, mu, Xp, ti, h, p, dN1, G, ph, Mw, K2, piv2, r2,
                        vout):
    """Velocity at node i by the rule (docs/explanation/methods.md#node-velocity) into ``vout``;
    status.

    end_slope: q_d'(1)/h of the previous interval (DOFs Xp); legendre: M^{-1} p_i^-;
    half_impulse: M^{-1}(p_i^- - h/2 phi_q^T lam_i) = M^{-1}(P0 + (c0 - 1/2) phi_q^T mu / h);
    projection: [M phi_q^T; phi_q 0] [v; nu] = [p_i^-; -phi_t]. (P0 = p_i^- for i >= 1.)
    """
    n = qa.size
    m = mu.size
    nd = Xp.shape[0]
    if rule == HERMITE_V_SLOPE:
        for k in range(n):
            sm = 0.0
            for a in range(nd):
                sm += dN1[a] * Xp[a, k]
            vout[k] = sm / h
        return OK
    model_mass(qa, p, Mw)
    for i in range(n):
        for k in range(n):
            K2[i, k] = Mw[i, k]
    model_phi_q(qa, ti, p, G)
    if rule == HERMITE_V_PROJ:
        model_phi_t(qa, ti, p, ph)
        for i in range(n):
            r2[i] = P0[i]
        for lm in range(m):
            for k in range(n):
                K2[n + lm, k] = G[lm, k]
                K2[k, n + lm] = G[lm, k]
            for k in range(m):
                K2[n + lm, n + k] = 0.0
            r2[n + lm] = -ph[lm]
        st = lu_factor(K2, piv2, n + m)
        if st != OK:
            return st
        lu_solve(K2, piv2, r2, n + m)
        for k in range(n):
            vout[k] = r2[k]
        return OK
    f = 0.0
    if rule == HERMITE_V_HALF:
        f = (c0 - 0.5) / h
    for i in range(n):
        sm = P0[i]
        for lm in range(m):
            sm += f * G[lm, i] * mu[lm]
        vout[i] = sm
    st = lu_factor(K2, piv2, n)
    if st != OK:
        return st
    lu_solve(K2, piv2, vout, n)
    return OK


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate from t_out[0] through every output time; see docs/explanation/solver-contract.md.

    Row k of Y gets [q_i, v_i (the ``velocity`` rule), W_i, extras] at the node
    t_i = t_out[k]. ip = [h, order, n_gauss, newton_tol, newton_max, velocity, max_steps].
    """
    h = ip[0]
    order = int(ip[1])
    r = int(ip[2])
    tol = ip[3]
    max_iter = int(ip[4])
    rule = int(ip[5])
    max_steps = int(ip[6])
    ny = y.size
    for i in range(ny):
        Y[0, i] = y[i]
    nm = model_sizes(p)
    n = nm[0]
    m = nm[1]
    if (order < 2 or order > HERMITE_ORDER_MAX or r < 1 or r > HERMITE_GAUSS_MAX
            or not h > 0.0 or max_iter < 1 or rule < 0 or rule > HERMITE_V_PROJ):  # fmt: skip
        return ERROR, 0
    if t_out.size < 2:
        return OK, 0
    # basis and quadrature tables of this (order, n_gauss), copied from the constants
    nd = 4 if order == 2 else order + 1
    kind = np.zeros(nd, dtype=np.int64)
    tau = np.zeros(nd)
    c = np.zeros(r)
    b = np.zeros(r)
    N = np.zeros((nd, r))
    dN = np.zeros((nd, r))
    N1 = np.zeros(nd)
    dN1 = np.zeros(nd)
    E = np.zeros((nd, nd))
    integ_tables(order, r, c, b, N, dN, N1, dN1, E, kind, tau)
    # unknown DOFs (udof) and residual DOFs (rdof): order 2 (q_{i+1}, Z_i, Z_{i+1}) and
    # rows (q_i, Z_i, Z_{i+1}); order s (q_{i,2..s}) and rows (q_{i,1..s-1})
    nU = 3 if order == 2 else order - 1
    udof = np.zeros(nU, dtype=np.int64)
    rdof = np.zeros(nU, dtype=np.int64)
    for ci in range(nU):
        udof[ci] = ci + 1
        rdof[ci] = ci
    if order == 2:
        rdof[1] = 2
        rdof[2] = 3
        lay = (nd, nU, 1, -1, 0)
    else:
        lay = (nd, nU, order - 1, order, order - 2)
    iend = lay[2]
    nu = nU * n + m
    # workspace (allocated once; the step loop allocates nothing)
    X = np.zeros((nd, n))
    Xp = np.zeros((nd, n))
    g = np.zeros((nd, n))
    yv = np.zeros((4, nu))
    J = np.zeros((nu, nu))
    piv = np.zeros(nu, dtype=np.int64)
    QV = np.zeros((3, r, n))
    MJ = np.zeros((4, r, n, n))
    Hb = np.zeros((nd, nd, n, n))
    GG = np.zeros((2, m, n))
    ph = np.zeros(m)
    Mi = np.zeros((n, n))
    pivn = np.zeros(n, dtype=np.int64)
    Bz = np.zeros((n, m))
    wn = np.zeros((HERMITE_W_ROWS, n))
    Mw = np.zeros((n, n))
    K2 = np.zeros((n + m, n + m))
    piv2 = np.zeros(n + m, dtype=np.int64)
    r2 = np.zeros(n + m)
    vout = np.zeros(n)
    qa = np.zeros(n)
    P0 = np.zeros(n)
    v0 = np.zeros(n)
    mu = np.zeros(m)
    jst = np.zeros(1, dtype=np.int64)
    t0 = t_out[0]
    for i in range(n):
        qa[i] = y[i]
        v0[i] = y[n + i]
    W = y[2 * n]
    # position scale of the convergence test, fixed from q0 (a scale from the current q
    # would loosen the test as angles wind up)
    qscale = 1.0
    for i in range(n):
        qscale = max(qscale, abs(qa[i]))
    # scale of the multiplier update in the convergence test; p_0 = M v0
    model_mass(qa, p, Mw)
    mscale = 0.0
    for i in range(n):
        mscale = max(mscale, abs(Mw[i, i]))
        s = 0.0
        for k in range(n):
            s += Mw[i, k] * v0[k]
        P0[i] = s
    if not mscale > 0.0:
        mscale = 1.0
    # first-step predictor: Taylor with the index-1 acceleration and multipliers at t0
    u = ws[WS_U]
    for i in range(m):
        u[i] = 0.0
    a0 = ws[WS_A]
    st = common_solve_index1(qa, v0, t0, p, u, ws)
    if st == OK:
        lam0 = ws[WS_LAM]
        for i in range(m):
            mu[i] = h * h * lam0[i]
    else:
        for i in range(n):
            a0[i] = 0.0
    n_last = int(np.rint((t_out[t_out.size - 1] - t0) / h))
    k = 1
    jk = int(np.rint((t_out[1] - t0) / h))
    c0 = 0.5
    j = 0
    dW = 0.0
    while True:
        ti = t0 + j * h
        if j < n_last or rule == HERMITE_V_HALF:
            if j < n_last and cnt[C_STEPS] >= max_steps:
                return STEP_BUDGET, k - 1
            for i in range(n):
                X[0, i] = qa[i]
            for ci in range(nU):
                a = udof[ci]
                for i in range(n):
                    if j == 0:
                        if kind[a] == 0:
                            X[a, i] = (qa[i] + tau[a] * h * v0[i]
                                       + 0.5 * (tau[a] * h) ** 2 * a0[i])  # fmt: skip
                        else:
                            X[a, i] = h * v0[i] + tau[a] * h * h * a0[i]
                    else:
                        sm = 0.0
                        for a2 in range(nd):
                            sm += E[a, a2] * Xp[a2, i]
                        X[a, i] = sm
            res = integ_step(X, mu, qa, P0, c0, ti, h, p, tol, max_iter, qscale, mscale, lay,
                             c, b, N, dN, udof, rdof, yv, J, piv, g, QV, MJ, Hb, GG, ph, Mi,
                             pivn, Bz, wn, Mw, jst, cnt)  # fmt: skip
            st = res[0]
            dW = res[1]
            if st != OK:
                return st, k - 1
        if j == jk:
            if j == 0:
                for i in range(n):
                    vout[i] = v0[i]
            else:
                st = integ_node_velocity(rule, qa, P0, c0, mu, Xp, ti, h, p, dN1, GG[0], ph,
                                         Mw, K2, piv2, r2, vout)  # fmt: skip
                if st != OK:
                    return st, k - 1
            for i in range(n):
                Y[k, i] = qa[i]
                Y[k, n + i] = vout[i]
            Y[k, 2 * n] = W
            for i in range(2 * n + 1, ny):
                Y[k, i] = y[i]
            k += 1
            if k >= t_out.size:
                break
            jk = int(np.rint((t_out[k] - t0) / h))
        if j >= n_last:
            break
        # advance to node j + 1: q_{j+1}, p_{j+1}^- = g_end, W
        for i in range(n):
            qa[i] = X[iend, i]
            P0[i] = g[iend, i]
        for a in range(nd):
            for i in range(n):
                Xp[a, i] = X[a, i]
        W += dW
        c0 = 0.0
        j += 1
        cnt[C_STEPS] += 1
        st = state_status(qa, DIVERGENCE_BOUND)
        if st == OK:
            st = state_status(P0, DIVERGENCE_BOUND)
        if st != OK:
            return st, k - 1
    last = t_out.size - 1
    for i in range(2 * n + 1):
        y[i] = Y[last, i]
    return OK, last
