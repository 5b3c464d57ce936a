"""Index-3 DAE form: the multipliers are unknowns of the step (docs/methods-implicit.md).

The equations of motion with the position-level constraint enforced directly::

    q' = v
    M(q) v' + Phi_q(q, t)^T lam = Q(q, v, t)
    W' = power(q, v, t)
    0 = Phi(q, t)

State ``y = [q | v | W | lam]``: the multipliers are the formulation's extra states (m),
so every output row carries the integrator's own lam. Only the implicit DAE integrators
take this form (``genalpha``, ``hht``, ``newmark``, ``radau5``, ``bdf``:
:func:`check_compatible`); an explicit method has no equation for lam.

For the implicit integrators the form is F(t, y, y') = 0 (:func:`form_dae_residual`)
with dF/dy' = diag(I, M(q), 1, 0) (:func:`form_dae_jac_yp`) and the differential index
of the components (1 for q and W, 2 for v, 3 for lam; Hairer & Wanner 1996, Sect. VII.1,
the index-3 mechanical system), which the error tests use to scale the algebraic
components (:func:`form_dae_index`).

``form_rhs`` (the index-1 solve, as ``none``; lam' = 0) and ``form_init`` (lam(t0) from
the index-1 solve, consistent with the initial state) serve the start and the
diagnostics. ``form_diag`` reports the state's lam and the acceleration
a = M^-1 (Q - Phi_q^T lam) it implies.

References
----------
Hairer & Wanner, *Solving ODEs II*, 2nd ed., 1996, Sect. VII.1 and VII.7; Arnold &
Brüls (2007), Multibody Syst Dyn 18:185-202.
"""

from mbstudy.solvers.spec import FormulationSpec

SPEC = FormulationSpec(
    name="index3",
    summary="index-3 DAE: Phi(q) = 0 at position level, multipliers are unknowns of the "
    "step (implicit integrators only)",
    params=(),
    extra_states="lam (m): the constraint multipliers",
    source="Hairer & Wanner II, VII.1; Arnold & Brüls 2007",
)

# the integrators that solve for the multipliers (registry compatibility)
DAE_INTEGRATORS = ("genalpha", "hht", "newmark", "radau5", "bdf")


# Templates compiled without numba's reference counting (solvers/compose.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = ("form_rhs", "form_dae_residual")

def check_compatible(model_name: str, integrator_name: str) -> str | None:
    """Only the implicit DAE integrators solve for lam; the reason otherwise."""
    if integrator_name in DAE_INTEGRATORS:
        return None
    return (
        f"formulation 'index3' needs an implicit DAE integrator (the multipliers are "
        f"unknowns of the step); {integrator_name!r} is not one (allowed: "
        f"{', '.join(DAE_INTEGRATORS)})"
    )


def form_n_extra(n, m, fp):
    """The multipliers lam (m)."""
    return m


def form_init(t0, y, p, fp, ws):
    """lam(t0) from the index-1 solve at the (consistent) initial state; status."""
    n = ws[10].size
    m = ws[11].size
    u = ws[9]
    u[:] = 0.0
    st = common_solve_index1(y[:n], y[n : 2 * n], t0, p, u, ws)
    if st != OK:
        return st
    for i in range(m):
        y[2 * n + 1 + i] = ws[11][i]
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """Index-1 right-hand side [v, a, power, 0] (start values and diagnostics only)."""
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
    """F(t, y, y') = [q' - v, M v' + Phi_q^T lam - Q, W' - power, Phi]; status."""
    M = ws[0]
    Q = ws[1]
    G = ws[2]
    ph = ws[7]
    n = Q.size
    m = ph.size
    q = y[:n]
    v = y[n : 2 * n]
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    model_phi_q(q, t, p, G)
    model_phi(q, t, p, ph)
    for i in range(n):
        r[i] = yp[i] - v[i]
        s = -Q[i]
        for j in range(n):
            s += M[i, j] * yp[n + j]
        for k in range(m):
            s += G[k, i] * y[2 * n + 1 + k]
        r[n + i] = s
    r[2 * n] = yp[2 * n] - model_power(q, v, t, p)
    for k in range(m):
        r[2 * n + 1 + k] = ph[k]
    return OK


def form_dae_jac_yp(t, y, p, fp, B, ws):
    """B = dF/dy' = diag(I, M(q), 1, 0); status."""
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
    """q, W: 1; v: 2; lam: 3 (the index-3 mechanical system)."""
    for i in range(idx.size):
        idx[i] = 1
    for i in range(n):
        idx[n + i] = 2
    for i in range(2 * n + 1, idx.size):
        idx[i] = 3


def form_dae_yp0(t, y, p, fp, yp, ws):
    """y'(t0) = [v, a, power, 0] with a from the index-1 solve; status."""
    return form_rhs(t, y, p, fp, yp, ws)


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics with the state's lam: a = M^-1 (Q - Phi_q^T lam) (LU of M), |u| = 0."""
    return common_dae_diag(t, y, p, ws, 2 * ws[10].size + 1, out)
