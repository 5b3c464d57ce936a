"""Kernel templates shared by the formulations (composed by :mod:`solvers.compose`).

These are plain Python functions whose source is copied into each generated kernel
module, where the ``model_*`` names are the model's jitted functions. Every function here
is a template: its name starts with ``common_``.

Index-1 ("augmented") form, METHODS.md (0.1)::

    [ M      phi_q^T ] [ a   ]   [ Q         ]
    [ phi_q  0       ] [ lam ] = [ gamma + u ]
"""

# Width of the per-sample diagnostics row filled by form_diag:
# |phi|, |phi_q v + phi_t|, |phi_q a - gamma|, E, |u|
N_DIAG = 5


def common_alloc(n, m):
    """Workspace of the augmented solve: (M, Q, G, gam, K, r, piv, ph, pt, u, a, lam, tn)."""
    M = np.zeros((n, n))
    Q = np.zeros(n)
    G = np.zeros((m, n))
    gam = np.zeros(m)
    K = np.zeros((n + m, n + m))
    r = np.zeros(n + m)
    piv = np.zeros(n + m, dtype=np.int64)
    ph = np.zeros(m)
    pt = np.zeros(m)
    u = np.zeros(m)
    a = np.zeros(n)
    lam = np.zeros(m)
    tn = np.zeros(n)
    return (M, Q, G, gam, K, r, piv, ph, pt, u, a, lam, tn)


def common_solve_index1(q, v, t, p, u, ws):
    """Solve the augmented system (0.1) for a and lam (into ws); return a status code.

    Evaluates M, Q, phi_q and gamma at (q, v, t) into the workspace; ``u`` is the
    stabilization input added to gamma. A plain LU with partial pivoting: a redundant or
    singular constraint Jacobian makes it SINGULAR (seed 002's motivation for QR).
    """
    M, Q, G, gam, K, r, piv, ph, pt, uu, a, lam, tn = ws
    n = q.size
    m = gam.size
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    model_phi_q(q, t, p, G)
    model_gamma(q, v, t, p, gam)
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


def common_constraint_levels(q, v, t, p, ws):
    """Fill ws's ph = phi(q, t) and pt = phi_q v + phi_t (the velocity-level residual)."""
    M, Q, G, gam, K, r, piv, ph, pt, uu, a, lam, tn = ws
    m = ph.size
    n = q.size
    model_phi(q, t, p, ph)
    model_phi_q(q, t, p, G)
    model_phi_t(q, t, p, pt)
    for i in range(m):
        s = pt[i]
        for j in range(n):
            s += G[i, j] * v[j]
        pt[i] = s


def common_fill_rhs(q, v, t, p, ws, dy):
    """dy = [v, a, power] from the workspace's a (after common_solve_index1)."""
    a = ws[10]
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
    M, Q, G, gam, K, r, piv, ph, pt, uu, a, lam, tn = ws
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

    Returns (status, k_reached): rows 0..k_reached of Y and D are valid.
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
    row = np.zeros(D.shape[1])
    for k in range(k_reached + 1):
        for i in range(y.size):
            y[i] = Y[k, i]
        sd = form_diag(t_out[k], y, p, fp, ws, row)
        for j in range(D.shape[1]):
            D[k, j] = row[j] if sd == OK else np.nan
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


def default_form_has_post_step():
    """Whether form_post_step changes the state (integrators with FSAL must re-evaluate)."""
    return False


def common_diag_at_rhs(t, y, p, fp, ws, w, out):
    """Diagnostics from one rhs evaluation at the sample; ``w`` is the augmented-solve
    workspace inside the formulation's ``ws`` (``ws`` itself, or ``ws[0]`` where the
    formulation nests it), holding the acceleration and the input u after the rhs."""
    n = w[10].size
    dy = np.zeros(y.size)
    st = form_rhs(t, y, p, fp, dy, ws)
    if st != OK:
        return st
    common_diag(y[:n], y[n : 2 * n], t, p, w, w[9], out)
    return OK


def default_form_diag(t, y, p, fp, ws, out):
    """Diagnostics from one rhs evaluation at the sample (u is the input ws holds)."""
    return common_diag_at_rhs(t, y, p, fp, ws, ws, out)
