"""Stabilized index-2 DAE form of Gear, Gupta and Leimkuhler (1985) (GGL).

The velocity-level constraint replaces the position-level one in the multiplier
equation, and a second multiplier mu keeps the positions on Phi = 0::

    q' = v - Phi_q(q, t)^T mu
    M(q) v' + Phi_q(q, t)^T lam = Q(q, v, t)
    W' = power(q, v, t)
    0 = Phi_q(q, t) v + Phi_t(q, t)
    0 = Phi(q, t)

On the exact solution mu = 0. State ``y = [q | v | W | lam | mu]`` (extra states: 2m).
The system has index 2 (lam and mu are index-2 variables, q, v, W differential;
Hairer & Wanner 1996, Sect. VII.1), so the error tests scale lam and mu as index-2
components (:func:`form_dae_index`). Only the implicit DAE integrators ``radau5`` and
``bdf`` take it (:func:`check_compatible`).

References
----------
Gear, Gupta & Leimkuhler (1985), J. Comput. Appl. Math. 12-13:77-90; Hairer & Wanner,
*Solving ODEs II*, 2nd ed., 1996, Sect. VII.1 (eq. (1.23)).
"""

from mbstudy.solvers.spec import FormulationSpec

SPEC = FormulationSpec(
    name="ggl",
    summary="stabilized index-2 DAE of Gear-Gupta-Leimkuhler: velocity constraint with "
    "lam, position constraint with a second multiplier mu (radau5, bdf)",
    params=(),
    extra_states="lam (m), mu (m): the multipliers of the velocity and position constraints",
    source="Gear, Gupta & Leimkuhler 1985; Hairer & Wanner II, VII.1",
)

DAE_INTEGRATORS = ("radau5", "bdf")


# Templates compiled without numba's reference counting (solvers/compose.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = ("form_rhs", "form_dae_residual")

def check_compatible(model_name: str, integrator_name: str) -> str | None:
    """Only radau5 and bdf solve the GGL system; the reason otherwise."""
    if integrator_name in DAE_INTEGRATORS:
        return None
    return (
        f"formulation 'ggl' needs an implicit DAE integrator for index-2 systems; "
        f"{integrator_name!r} is not one (allowed: {', '.join(DAE_INTEGRATORS)})"
    )


def form_n_extra(n, m, fp):
    """lam (m) and mu (m)."""
    return 2 * m


def form_init(t0, y, p, fp, ws):
    """lam(t0) from the index-1 solve at the initial state, mu(t0) = 0; status."""
    n = ws[10].size
    m = ws[11].size
    u = ws[9]
    u[:] = 0.0
    st = common_solve_index1(y[:n], y[n : 2 * n], t0, p, u, ws)
    if st != OK:
        return st
    for i in range(m):
        y[2 * n + 1 + i] = ws[11][i]
        y[2 * n + 1 + m + i] = 0.0
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """Index-1 right-hand side [v, a, power, 0, 0] (start values and diagnostics only)."""
    n = ws[10].size
    u = ws[9]
    u[:] = 0.0
    st = common_solve_index1(y[:n], y[n : 2 * n], t, p, u, ws)
    if st != OK:
        return st
    common_fill_rhs(y[:n], y[n : 2 * n], t, p, ws, dy)
    for i in range(2 * n + 1, y.size):
        dy[i] = 0.0
    return OK


def form_dae_residual(t, y, yp, p, fp, r, ws):
    """F = [q' - v + Phi_q^T mu, M v' + Phi_q^T lam - Q, W' - power, Phi_q v + Phi_t,
    Phi]; status."""
    M = ws[0]
    Q = ws[1]
    G = ws[2]
    ph = ws[7]
    pt = ws[8]
    n = Q.size
    m = ph.size
    q = y[:n]
    v = y[n : 2 * n]
    ol = 2 * n + 1
    om = ol + m
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    common_constraint_levels(q, v, t, p, ws)
    for i in range(n):
        s = yp[i] - v[i]
        s2 = -Q[i]
        for k in range(m):
            s += G[k, i] * y[om + k]
            s2 += G[k, i] * y[ol + k]
        for j in range(n):
            s2 += M[i, j] * yp[n + j]
        r[i] = s
        r[n + i] = s2
    r[2 * n] = yp[2 * n] - model_power(q, v, t, p)
    for k in range(m):
        r[ol + k] = pt[k]
        r[om + k] = ph[k]
    return OK


def form_dae_jac_yp(t, y, p, fp, B, ws):
    """B = dF/dy' = diag(I, M(q), 1, 0, 0); status."""
    M = ws[0]
    n = ws[10].size
    ny = y.size
    for i in range(ny):
        for j in range(ny):
            B[i, j] = 0.0
    model_mass(y[:n], p, M)
    for i in range(n):
        B[i, i] = 1.0
        for j in range(n):
            B[n + i, n + j] = M[i, j]
    B[2 * n, 2 * n] = 1.0
    return OK


def form_dae_index(n, m, fp, idx):
    """q, v, W: 1; lam, mu: 2."""
    for i in range(idx.size):
        idx[i] = 1 if i <= 2 * n else 2


def form_dae_yp0(t, y, p, fp, yp, ws):
    """y'(t0) = [v, a, power, 0, 0] with a from the index-1 solve; status."""
    return form_rhs(t, y, p, fp, yp, ws)


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics with the state's lam: a = M^-1 (Q - Phi_q^T lam), |u| = 0."""
    return common_dae_diag(t, y, p, ws, 2 * ws[10].size + 1, out)
