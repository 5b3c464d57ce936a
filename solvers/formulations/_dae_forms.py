"""Templates shared by the DAE formulations index3 and ggl (not a registry entry).

Both keep the multipliers as states after ``y = [q | v | W]``: index3 ``lam`` (m), ggl
``lam`` and ``mu`` (2m). Their start, their index-1 right-hand side (start values and
diagnostics only; the extra states have zero derivative), dF/dy' and the diagnostics are
the same; only the residual F(t, y, y') and the components' index differ, and stay in
the formulation modules. A formulation uses these by importing them and naming them in
its ``SHARED_TEMPLATES`` (solvers/compose/harvest.py).

References
----------
Hairer & Wanner, *Solving ODEs II*, 2nd ed., 1996, Sect. VII.1 (the mechanical system as
an implicit DAE, dF/dy' = diag(I, M, ...)).
"""

from mbstudy.solvers.formulations._common import (
    common_dae_diag,
    common_fill_rhs,
    common_solve_index1,
)
from mbstudy.solvers.kernel_names import model_mass
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_A, WS_LAM, WS_M, WS_U

# the templates index3 and ggl take from here (their SHARED_TEMPLATES)
DAE_FORM_TEMPLATES = ("form_init", "form_rhs", "form_dae_jac_yp", "form_dae_yp0", "form_diag")


def form_init(t0, y, p, fp, ws):
    """lam(t0) from the index-1 solve at the (consistent) initial state, the further
    multipliers (ggl's mu) zero; status."""
    n = ws[WS_A].size
    m = ws[WS_LAM].size
    u = ws[WS_U]
    u[:] = 0.0
    st = common_solve_index1(y[:n], y[n : 2 * n], t0, p, u, ws)
    if st != OK:
        return st
    for i in range(m):
        y[2 * n + 1 + i] = ws[WS_LAM][i]
    for i in range(2 * n + 1 + m, y.size):
        y[i] = 0.0
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """Index-1 right-hand side [v, a, power, 0...] (start values and diagnostics only)."""
    n = ws[WS_A].size
    u = ws[WS_U]
    u[:] = 0.0
    st = common_solve_index1(y[:n], y[n : 2 * n], t, p, u, ws)
    if st != OK:
        return st
    common_fill_rhs(y[:n], y[n : 2 * n], t, p, ws, dy)
    for i in range(2 * n + 1, y.size):
        dy[i] = 0.0
    return OK


def form_dae_jac_yp(t, y, p, fp, B, ws):
    """B = dF/dy' = diag(I, M(q), 1, 0...); status."""
    M = ws[WS_M]
    n = ws[WS_A].size
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


def form_dae_yp0(t, y, p, fp, yp, ws):
    """y'(t0) = [v, a, power, 0...] with a from the index-1 solve; status."""
    return form_rhs(t, y, p, fp, yp, ws)


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics with the state's lam: a = M^-1 (Q - Phi_q^T lam), |u| = 0."""
    return common_dae_diag(t, y, p, ws, 2 * ws[WS_A].size + 1, out)
