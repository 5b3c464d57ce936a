"""Kernel templates shared by the formulations (composed by :mod:`solvers.compose`).

These are plain Python functions whose source is copied into each generated kernel
module, where the ``model_*`` names are the model's jitted functions. Every function here
is a template: its name starts with ``common_``.

Index-1 ("augmented") form, docs/explanation/methods.md (0.1)::

    [ M      phi_q^T ] [ a   ]   [ Q         ]
    [ phi_q  0       ] [ lam ] = [ gamma + u ]
"""

import numpy as np
from mbstudy.solvers.kernel_names import (
    KERNEL_CONSTANT_MASS,
    KERNEL_STRUCTURED_SOLVE,
    form_alloc,
    form_diag,
    form_flush_counters,
    form_init,
    form_n_extra,
    form_output_state,
    form_rhs,
    integ_run,
    model_constraint_terms,
    model_energy,
    model_forces,
    model_gamma,
    model_mass,
    model_phi,
    model_phi_q,
    model_phi_t,
    model_power,
    model_sizes,
)
from mbstudy.solvers.linalg import chol_factor, chol_solve, lu_factor, lu_solve, norm2
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import (
    WS_A,
    WS_DPHI,
    WS_GAMMA,
    WS_K,
    WS_LAM,
    WS_M,
    WS_PHI,
    WS_PHI_Q,
    WS_PIV,
    WS_Q,
    WS_R,
    WS_TMP,
    WS_U,
)

# Width of the per-sample diagnostics row filled by form_diag:
# |phi|, |phi_q v + phi_t|, |phi_q a - gamma|, E, |u|; a row of width N_DIAG + m carries
# the constraint multipliers lam (docs/explanation/methods.md (0.1): M a + phi_q^T lam = Q) after
# them.
N_DIAG = 5

# Mass-matrix structure cached by common_mass_factor (the structured index-1 solve)
MASS_UNKNOWN = 0
MASS_DIAG = 1
MASS_CHOL = 2
MASS_GENERAL = 3
# M counts as positive definite for the Schur complement when its smallest eigenvalue
# (estimated, common_inv_diag_max) exceeds MASS_COND_TOL times its largest diagonal entry
# (cond(M) below ~1e8); otherwise the augmented LU is used
MASS_COND_TOL = 1e-8

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates: the calls of the right-hand side path pass the 13-array workspace
# tuple, and the increfs and decrefs of its arrays were ~45 % of a four-bar RK4 step).
# None of them allocates an array or returns one.
NRT_FREE = (
    "common_solve_index1",
    "common_solve_index1_g",
    "common_augmented_lu",
    "common_mass_factor",
    "common_inv_diag_max",
    "common_schur_solve",
    "common_constraint_levels",
    "common_constraint_levels_gamma",
    "common_add_phi_q_v",
    "common_mass_plus_gtg",
    "default_model_constraint_terms",
    "common_fill_rhs",
    "common_diag",
    "common_copy_lam",
    "default_form_n_extra",
    "default_form_init",
    "default_form_post_step",
    "default_form_output_state",
    "default_form_flush_counters",
    "default_form_has_post_step",
)


def common_alloc(n, m):
    """Workspace of the index-1 solve: (M, Q, G, gam, K, r, piv, ph, pt, u, a, lam, tn),
    read by the named slots of solvers/workspace.py (WS_M ... WS_TMP, in this order).

    ``K`` ((n+m) x (n+m)), ``r`` (n+m) and ``piv`` hold either the LU factors of the
    augmented matrix (0.1) or, on the structured path (:func:`common_solve_index1`), the
    mass factor (K[:n, :n]), W = L^-1 phi_q^T (K[:n, n:]), the Schur complement
    (K[n:, n:]) and its right-hand side (r). ``piv[n + m]`` caches the mass structure
    (MASS_UNKNOWN / MASS_DIAG / MASS_CHOL / MASS_GENERAL) for constant-mass models.
    """
    M = np.zeros((n, n))
    Q = np.zeros(n)
    G = np.zeros((m, n))
    gam = np.zeros(m)
    K = np.zeros((n + m, n + m))
    r = np.zeros(n + m)
    piv = np.zeros(n + m + 1, dtype=np.int64)
    ph = np.zeros(m)
    pt = np.zeros(m)
    u = np.zeros(m)
    a = np.zeros(n)
    lam = np.zeros(m)
    tn = np.zeros(n)
    return (M, Q, G, gam, K, r, piv, ph, pt, u, a, lam, tn)


def common_solve_index1(q, v, t, p, u, ws):
    """Solve the index-1 system (0.1) for a and lam (into ws); return a status code.

    Evaluates M, Q, phi_q and gamma at (q, v, t) into the workspace; ``u`` is the
    stabilization input added to gamma. See :func:`common_solve_index1_g` for the two
    solution paths.
    """
    model_phi_q(q, t, p, ws[WS_PHI_Q])
    model_gamma(q, v, t, p, ws[WS_GAMMA])
    return common_solve_index1_g(q, v, t, p, u, ws)


def common_solve_index1_g(q, v, t, p, u, ws):
    """:func:`common_solve_index1` for a workspace whose phi_q (``ws[WS_PHI_Q]``) and gamma
    (``ws[WS_GAMMA]``) already hold phi_q(q, t) and gamma(q, v, t) (a formulation that
    just evaluated them, e.g. for the Baumgarte input,
    :func:`common_constraint_levels_gamma`).

    Structured path (the default, ``KERNEL_STRUCTURED_SOLVE``, set by solvers/compose/generate.py):
    where M is symmetric positive definite (diagonal for planar bodies in absolute
    coordinates, diag(m, m, J) per body), eliminate a = M^-1 (Q - phi_q^T lam) and solve
    the m x m Schur complement (range-space method, Nocedal & Wright, *Numerical
    Optimization*, 2nd ed., 2006, Sect. 16.2, eq. (16.16))::

        (phi_q M^-1 phi_q^T) lam = phi_q M^-1 Q - gamma - u

    by Cholesky (Golub & Van Loan Alg. 4.2.1): about m^2 n / 2 + m^3 / 6 flops (fewer
    where phi_q is sparse) instead of 2 (n + m)^3 / 3 for the LU, no allocation. M is classified and
    factored once per case when the model declares a constant mass matrix
    (``KERNEL_CONSTANT_MASS``). A singular or indefinite M, or a Schur complement that
    is singular to working precision (S squares the condition of phi_q: redundant
    constraints, singular configurations), falls back to the general path.

    General path (the straightforward reference, selected for every model by composing
    with ``augmented=True``): a plain LU with partial pivoting of the (n+m) augmented
    matrix; a redundant or singular constraint Jacobian makes it SINGULAR (seed 002's
    motivation for QR).
    """
    M = ws[WS_M]
    piv = ws[WS_PIV]
    mode = MASS_GENERAL
    if KERNEL_STRUCTURED_SOLVE:
        # a constant M is classified and factored on the first call of a case only, and
        # the call is not made once the mode is cached: even without reference counting
        # it cost ~5 % of a four-bar step (2.32 against 2.22 us, same run)
        mode = piv[piv.size - 1]
        if mode == MASS_UNKNOWN or not KERNEL_CONSTANT_MASS:
            mode = common_mass_factor(q, p, ws)
    else:
        model_mass(q, p, M)
    model_forces(q, v, t, p, ws[WS_Q])
    if mode != MASS_GENERAL:
        if common_schur_solve(mode, u, ws) == OK:
            return OK
        # the Schur complement is singular to working precision: let the augmented LU
        # (which pivots on phi_q itself) decide; it overwrites the cached mass factor
        piv[piv.size - 1] = MASS_UNKNOWN
        if KERNEL_CONSTANT_MASS:
            model_mass(q, p, M)
    elif KERNEL_STRUCTURED_SOLVE and KERNEL_CONSTANT_MASS:
        model_mass(q, p, M)  # a cached mode skips the evaluation
    return common_augmented_lu(u, ws)


def common_augmented_lu(u, ws):
    """LU with partial pivoting of the augmented matrix (0.1) from the workspace's M, Q,
    phi_q and gamma (Golub & Van Loan Alg. 3.4.1); a and lam into ws; status."""
    M = ws[WS_M]
    Q = ws[WS_Q]
    G = ws[WS_PHI_Q]
    gam = ws[WS_GAMMA]
    K = ws[WS_K]
    r = ws[WS_R]
    piv = ws[WS_PIV]
    a = ws[WS_A]
    lam = ws[WS_LAM]
    n = a.size
    m = gam.size
    for i in range(n):
        for j in range(n):
            K[i, j] = M[i, j]
        r[i] = Q[i]
    for i in range(m):
        for j in range(n):
            K[n + i, j] = G[i, j]
            K[j, n + i] = G[i, j]
        for j in range(m):
            K[n + i, n + j] = 0.0
        r[n + i] = gam[i] + u[i]
    st = lu_factor(K, piv, n + m)
    if st != OK:
        return st
    lu_solve(K, piv, r, n + m)
    for i in range(n):
        a[i] = r[i]
    for i in range(m):
        lam[i] = r[n + i]
    return OK


def common_mass_factor(q, p, ws):
    """Evaluate and classify M(q) for the structured solve; return the mass mode.

    MASS_DIAG: M diagonal, K[i, i] = 1 / M_ii. MASS_CHOL: M = L L^T (Cholesky) in the
    lower triangle of K[:n, :n]. Either needs the
    smallest eigenvalue (the smallest diagonal entry; its estimate
    :func:`common_inv_diag_max`) above MASS_COND_TOL times
    the largest diagonal entry; MASS_GENERAL otherwise
    (singular or indefinite M: Euler-parameter bodies).

    The classification is made once per workspace (one case) and kept in piv[n + m].
    With ``KERNEL_CONSTANT_MASS`` the factor is kept too, and :func:`common_solve_index1_g`
    calls this function only while the mode is unknown. Otherwise M(q) is evaluated at
    every call: a case classified MASS_GENERAL stays on the LU, and a case classified
    MASS_CHOL refactors M by Cholesky and checks only the pivots (min L_ii^2 above the
    same tolerance; lambda_min <= min L_ii^2, so a failing pivot proves
    ill-conditioning). A failure takes the LU for that call and re-classifies at the next
    call. The full condition estimate, O(n^3), is paid once per case: a singular mass
    matrix comes from the coordinates (Euler parameters), not from one configuration. A
    non-constant diagonal M is re-classified at every call, because its off-diagonal
    entries may be zero only at some configurations.
    """
    M = ws[WS_M]
    K = ws[WS_K]
    piv = ws[WS_PIV]
    n = q.size
    slot = piv.size - 1
    cached = piv[slot]
    model_mass(q, p, M)
    if cached == MASS_GENERAL:
        return MASS_GENERAL
    if cached == MASS_CHOL:
        dmax = 0.0
        for i in range(n):
            dmax = max(dmax, M[i, i])
            for j in range(i + 1):
                K[i, j] = M[i, j]
        if chol_factor(K, n) == OK:
            tol = MASS_COND_TOL * dmax
            ok = True
            for i in range(n):
                if not K[i, i] * K[i, i] > tol:
                    ok = False
            if ok:
                return MASS_CHOL
        piv[slot] = MASS_UNKNOWN
        return MASS_GENERAL
    diag = True
    dmax = 0.0
    for i in range(n):
        for j in range(n):
            if i != j and M[i, j] != 0.0:
                diag = False
        dmax = max(dmax, M[i, i])
    mode = MASS_GENERAL
    if dmax > 0.0 and np.isfinite(dmax):
        tol = MASS_COND_TOL * dmax
        if diag:
            mode = MASS_DIAG
            for i in range(n):
                if not M[i, i] > tol:
                    mode = MASS_GENERAL
            if mode == MASS_DIAG:
                for i in range(n):
                    K[i, i] = 1.0 / M[i, i]
        else:
            for i in range(n):
                for j in range(i + 1):
                    K[i, j] = M[i, j]
            if chol_factor(K, n) == OK and common_inv_diag_max(K, n, ws[WS_TMP]) * tol < 1.0:
                mode = MASS_CHOL
    piv[slot] = mode if (KERNEL_CONSTANT_MASS or mode != MASS_DIAG) else MASS_UNKNOWN
    return mode


def common_inv_diag_max(L, n, x):
    """max_c (M^-1)_cc = max_c |L^-1 e_c|^2 for the Cholesky factor L of M (x: scratch).

    1 / max_c (M^-1)_cc lies in [lambda_min(M), n lambda_min(M)], a condition check that
    Cholesky pivots alone do not give: the factorization of a singular M in floating point
    can end with a pivot far above round-off (the Euler-parameter top: lambda_min ~ 1e-17,
    last pivot^2 ~ 1e-9 max M_ii).
    """
    big = 0.0
    for c in range(n):
        s2 = 0.0
        for i in range(c, n):  # x = L^-1 e_c (zero above row c)
            s = 1.0 if i == c else 0.0
            for j in range(c, i):
                s -= L[i, j] * x[j]
            x[i] = s / L[i, i]
            s2 += x[i] * x[i]
        big = max(big, s2)
    return big


def common_schur_solve(mode, u, ws):
    """Range-space solve of (0.1) with the factor of :func:`common_mass_factor`; status.

    With M = L L^T, W^T = phi_q L^-T (rows of K[n:, :n]) and z = L^-1 Q (r[:n])::

        S = W^T W,   S lam = W^T z - gamma - u,   a = L^-T (z - W lam)

    (Nocedal & Wright 2006, eq. (16.16)); S in K[n:, n:] is factored by Cholesky. For
    MASS_DIAG the products are scalings: W^T = phi_q M^-1, S = W^T phi_q^T (accumulated
    over the non-zeros of W^T only: planar joints fill 3-4 of the n entries of a row),
    b = W^T Q - gamma - u, a = M^-1 (Q - phi_q^T lam).
    """
    Q = ws[WS_Q]
    G = ws[WS_PHI_Q]
    gam = ws[WS_GAMMA]
    K = ws[WS_K]
    r = ws[WS_R]
    a = ws[WS_A]
    lam = ws[WS_LAM]
    tn = ws[WS_TMP]
    n = a.size
    m = gam.size
    if mode == MASS_DIAG:
        for i in range(m):
            s0 = -gam[i] - u[i]
            for j in range(i + 1):
                K[n + i, n + j] = 0.0
            for k in range(n):
                w = G[i, k] * K[k, k]
                K[n + i, k] = w
                if w != 0.0:  # skipped terms are exact zeros: same sums in the same order
                    s0 += w * Q[k]
                    for j in range(i + 1):
                        K[n + i, n + j] += w * G[j, k]
            r[n + i] = s0
    else:
        for i in range(m):  # row i of W^T = L^-1 phi_q[i, :] (forward substitution)
            for k in range(n):
                s = G[i, k]
                for j in range(k):
                    s -= K[k, j] * K[n + i, j]
                K[n + i, k] = s / K[k, k]
        for k in range(n):  # z = L^-1 Q
            s = Q[k]
            for j in range(k):
                s -= K[k, j] * r[j]
            r[k] = s / K[k, k]
        for i in range(m):
            s0 = -gam[i] - u[i]
            for k in range(n):
                s0 += K[n + i, k] * r[k]
            r[n + i] = s0
            for j in range(i + 1):
                s = 0.0
                for k in range(n):
                    s += K[n + i, k] * K[n + j, k]
                K[n + i, n + j] = s
    S = K[n:, n:]  # views: no allocation
    b = r[n:]
    st = chol_factor(S, m)
    if st != OK:
        return st
    chol_solve(S, b, m)
    if mode == MASS_DIAG:
        for k in range(n):
            a[k] = Q[k]
    for i in range(m):
        li = b[i]
        lam[i] = li
        if mode == MASS_DIAG:
            for k in range(n):  # independent updates (no dependent reduction chain)
                a[k] -= G[i, k] * li
    if mode == MASS_DIAG:
        for k in range(n):
            a[k] *= K[k, k]
    else:
        for k in range(n):  # y = z - W lam
            s = r[k]
            for i in range(m):
                s -= K[n + i, k] * lam[i]
            tn[k] = s
        for k in range(n - 1, -1, -1):  # a = L^-T y (column-oriented back substitution)
            ak = tn[k] / K[k, k]
            a[k] = ak
            for j in range(k):
                tn[j] -= K[k, j] * ak
    return OK


def common_constraint_levels(q, v, t, p, ws):
    """Fill ws's ph = phi(q, t) and pt = phi_q v + phi_t (the velocity-level residual)."""
    G = ws[WS_PHI_Q]
    ph = ws[WS_PHI]
    pt = ws[WS_DPHI]
    model_phi(q, t, p, ph)
    model_phi_q(q, t, p, G)
    model_phi_t(q, t, p, pt)
    common_add_phi_q_v(G, v, pt)


def common_constraint_levels_gamma(q, v, t, p, ws):
    """:func:`common_constraint_levels` and gamma(q, v, t) into ws's gam, through the
    model's fused ``constraint_terms`` where it has one (shared trigonometry), else
    through :func:`default_model_constraint_terms`."""
    G = ws[WS_PHI_Q]
    pt = ws[WS_DPHI]
    model_constraint_terms(q, v, t, p, ws[WS_PHI], G, pt, ws[WS_GAMMA])
    common_add_phi_q_v(G, v, pt)


def common_add_phi_q_v(G, v, pt):
    """pt += phi_q v."""
    for i in range(pt.size):
        s = pt[i]
        for j in range(v.size):
            s += G[i, j] * v[j]
        pt[i] = s


def common_mass_plus_gtg(M, G, c, A):
    """A = M + c G^T G (n x n; G = Phi_q, m x n): the regularized mass matrix of the
    penalty method and of a DAE form's diagnostics with a singular M."""
    n = M.shape[0]
    m = G.shape[0]
    for j in range(n):
        for k in range(n):
            g = 0.0
            for i in range(m):
                g += G[i, j] * G[i, k]
            A[j, k] = M[j, k] + c * g


def default_model_constraint_terms(q, v, t, p, ph, G, pt, gam):
    """phi, phi_q, phi_t and gamma by the model's four functions (a model may define a
    fused ``constraint_terms`` that shares their trigonometry)."""
    model_phi(q, t, p, ph)
    model_phi_q(q, t, p, G)
    model_phi_t(q, t, p, pt)
    model_gamma(q, v, t, p, gam)


def common_fill_rhs(q, v, t, p, ws, dy):
    """dy = [v, a, power] from the workspace's a (after common_solve_index1)."""
    a = ws[WS_A]
    n = q.size
    for i in range(n):
        dy[i] = v[i]
        dy[n + i] = a[i]
    dy[2 * n] = model_power(q, v, t, p)


def common_diag(q, v, t, p, ws, u, out):
    """Diagnostics row (N_DIAG) from the workspace after a rhs evaluation at (q, v, t).

    out = [|phi|, |phi_q v + phi_t|, |phi_q a - gamma|, E, |u|] with the acceleration a
    in ws and gamma evaluated at (q, v, t).
    """
    G = ws[WS_PHI_Q]
    gam = ws[WS_GAMMA]
    ph = ws[WS_PHI]
    pt = ws[WS_DPHI]
    a = ws[WS_A]
    m = ph.size
    n = q.size
    model_phi_q(q, t, p, G)
    model_gamma(q, v, t, p, gam)
    s = 0.0
    for i in range(m):
        ga = -gam[i]
        for j in range(n):
            ga += G[i, j] * a[j]
        s += ga * ga
    common_constraint_levels(q, v, t, p, ws)
    out[0] = norm2(ph, m)
    out[1] = norm2(pt, m)
    out[2] = np.sqrt(s)
    out[3] = model_energy(q, v, t, p)
    out[4] = norm2(u, m)


def common_run(q0, v0, t_out, p, fp, ip, Y, D, cnt):
    """Entry point of a kernel: init, integrate, then the diagnostics at every sample row.

    Returns (status, k_reached): rows 0..k_reached of Y and D are valid. D has N_DIAG
    columns, or N_DIAG + m to receive the multipliers at every sample as well.
    """
    n = q0.size
    nm = model_sizes(p)
    m = nm[1]
    ws = form_alloc(n, m, fp)
    y = np.zeros(Y.shape[1])
    for i in range(n):
        y[i] = q0[i]
        y[n + i] = v0[i]
    y[2 * n] = 0.0
    st = form_init(t_out[0], y, p, fp, ws)
    if st != OK:
        return st, -1
    res = integ_run(y, t_out, p, fp, ip, ws, Y, cnt)
    st = res[0]
    k_reached = res[1]
    # work done inside right-hand sides (iterations) is counted once, for every integrator,
    # before the diagnostics below evaluate more right-hand sides
    form_flush_counters(ws, cnt)
    row = np.zeros(D.shape[1])
    for k in range(k_reached + 1):
        for i in range(y.size):
            y[i] = Y[k, i]
        sd = form_diag(t_out[k], y, p, fp, ws, row)
        for j in range(D.shape[1]):
            D[k, j] = row[j] if sd == OK else np.nan
        if sd == OK and form_output_state(y, ws):
            for i in range(y.size):
                Y[k, i] = y[i]
    return st, k_reached


def common_state_size(p, fp):
    """Length of the state y = [q, v, W, extras]."""
    nm = model_sizes(p)
    return 2 * nm[0] + 1 + form_n_extra(nm[0], nm[1], fp)


# Defaults: compose uses ``default_form_X`` as ``form_X`` where a formulation does not
# define its own.


def default_form_n_extra(n, m, fp):
    """No extra states."""
    return 0


def default_form_alloc(n, m, fp):
    """The augmented-solve workspace."""
    return common_alloc(n, m)


def default_form_init(t0, y, p, fp, ws):
    """Nothing to initialize."""
    return OK


def default_form_post_step(t, y, p, fp, ws, cnt):
    """No correction after a step."""
    return OK


def default_form_output_state(y, ws):
    """The integrator's state is the output state (nothing replaced): False."""
    return False


def default_form_flush_counters(ws, cnt):
    """No work counted inside the right-hand sides."""
    return OK


def default_form_has_post_step():
    """Whether form_post_step changes the state (integrators with FSAL must re-evaluate)."""
    return False


def common_diag_at_rhs(t, y, p, fp, ws, w, out):
    """Diagnostics from one rhs evaluation at the sample; ``w`` is the augmented-solve
    workspace inside the formulation's ``ws`` (``ws`` itself, or the slot of ``ws`` that
    holds it where the formulation nests it), holding the acceleration and the input u
    after the rhs."""
    n = w[WS_A].size
    dy = np.zeros(y.size)
    st = form_rhs(t, y, p, fp, dy, ws)
    if st != OK:
        return st
    common_diag(y[:n], y[n : 2 * n], t, p, w, w[WS_U], out)
    common_copy_lam(w[WS_LAM], out)
    return OK


def common_copy_lam(lam, out):
    """Multipliers into the diagnostics row's columns N_DIAG.. (if the row has them)."""
    for i in range(min(lam.size, out.size - N_DIAG)):
        out[N_DIAG + i] = lam[i]


def default_form_diag(t, y, p, fp, ws, out):
    """Diagnostics from one rhs evaluation at the sample (u is the input ws holds)."""
    return common_diag_at_rhs(t, y, p, fp, ws, ws, out)


# Implicit-DAE view of a formulation, F(t, y, y') = 0, for the implicit integrators
# (radau5, bdf; docs/explanation/methods-implicit.md). The ODE forms y' = f(t, y) take these
# defaults; index3 and ggl define their own (their multipliers are states).


def default_form_dae_residual(t, y, yp, p, fp, r, ws):
    """r = y' - f(t, y) with f the formulation's right-hand side; status."""
    st = form_rhs(t, y, p, fp, r, ws)
    if st != OK:
        return st
    for i in range(y.size):
        r[i] = yp[i] - r[i]
    return OK


def default_form_dae_jac_yp(t, y, p, fp, B, ws):
    """B = dF/dy' = I for an ODE form; status."""
    ny = y.size
    for i in range(ny):
        for j in range(ny):
            B[i, j] = 0.0
        B[i, i] = 1.0
    return OK


def default_form_dae_index(n, m, fp, idx):
    """Differential index of every state component (1: an ODE form has no algebraic
    variables); the implicit integrators scale their error estimates by it."""
    for i in range(idx.size):
        idx[i] = 1


def default_form_dae_yp0(t, y, p, fp, yp, ws):
    """Consistent y'(t0) = f(t0, y0); status."""
    return form_rhs(t, y, p, fp, yp, ws)


def common_dae_diag(t, y, p, ws, off, out):
    """Diagnostics row of a DAE form whose multipliers lam are states y[off:off+m]:
    a = M^-1 (Q - Phi_q^T lam) (LU of M in ws's K), the levels of :func:`common_diag`,
    |u| = 0, and lam into the multiplier columns; status.

    A singular M (Euler parameters normalized by a constraint row: M e = 0 for every
    body, docs/explanation/models.md#top) leaves a undetermined along null(M), which lies in the
    range of Phi_q^T; :func:`common_dae_regularized_accel` then takes the acceleration of the
    regularized mass matrix instead, which is the same where M is regular.
    """
    M, Q, G, gam, K, r, piv, ph, pt, uu, a, lam, tn = ws
    n = a.size
    m = lam.size
    q = y[:n]
    v = y[n : 2 * n]
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    model_phi_q(q, t, p, G)
    for i in range(m):
        lam[i] = y[off + i]
    for i in range(n):
        s = Q[i]
        for k in range(m):
            s -= G[k, i] * lam[k]
        a[i] = s
        for j in range(n):
            K[i, j] = M[i, j]
    piv[piv.size - 1] = MASS_UNKNOWN  # K no longer holds a cached mass factor
    if lu_factor(K, piv, n) == OK:
        lu_solve(K, piv, a, n)
    else:
        st = common_dae_regularized_accel(q, v, t, p, ws)
        if st != OK:
            return st
    for i in range(m):
        uu[i] = 0.0
    common_diag(q, v, t, p, ws, uu, out)
    common_copy_lam(lam, out)
    return OK


def common_dae_regularized_accel(q, v, t, p, ws):
    """a = (M + c Phi_q^T Phi_q)^-1 (Q - Phi_q^T lam + c Phi_q^T gamma) for a singular M
    (ws's a holds Q - Phi_q^T lam on entry, ws's lam the multipliers; status).

    M a + Phi_q^T lam = Q and Phi_q a = gamma imply this equation for every c, so it
    gives the index-1 acceleration when lam is the index-1 multiplier, and
    |Phi_q a - gamma| = |Phi_q (M + c Phi_q^T Phi_q)^-1 Phi_q^T (lam_1 - lam)| measures
    the multipliers' error otherwise, as M^-1 does for a regular M. The matrix is
    positive definite when M is positive semi-definite and definite on null(Phi_q) (the
    augmented matrix regular; the regularization of the augmented Lagrangian, Bayo,
    Garcia de Jalon & Serna 1988, and of docs/explanation/models.md#top). c = max|M_ij| /
    max_j (Phi_q^T Phi_q)_jj keeps it on M's scale
    (docs/explanation/methods-implicit.md#diagnostics-of-the-dae-forms).
    """
    M, Q, G, gam, K, r, piv, ph, pt, uu, a, lam, tn = ws
    n = a.size
    m = lam.size
    model_gamma(q, v, t, p, gam)
    smass = 0.0
    for i in range(n):
        for j in range(n):
            smass = max(smass, abs(M[i, j]))
    sg = 0.0
    for j in range(n):
        s = 0.0
        for k in range(m):
            s += G[k, j] * G[k, j]
        sg = max(sg, s)
    c = smass / sg if sg > 0.0 else 0.0
    for i in range(n):
        s = 0.0
        for k in range(m):
            s += G[k, i] * gam[k]
        a[i] += c * s
    common_mass_plus_gtg(M, G, c, K)
    st = lu_factor(K, piv, n)
    if st != OK:
        return st
    lu_solve(K, piv, a, n)
    return OK
