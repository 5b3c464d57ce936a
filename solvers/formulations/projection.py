"""Position and velocity projection after every accepted step
(docs/explanation/methods.md#projection).

The equations of motion are the unstabilized index-1 form; after each accepted step

    q <- q - phi_q^+ phi(q)            (iterated until |phi| <= tol, at most max_iter)
    v <- v - phi_q^+ (phi_q v + phi_t)

with the Moore–Penrose inverse phi_q^+ = phi_q^T (phi_q phi_q^T)^-1 (Cholesky of the
m x m Gram matrix). Redundant constraints make the Gram matrix singular: the case ends
with status ``singular`` (use ``qr`` for those mechanisms).

References
----------
Marques, Souto & Flores (2017), Multibody Syst Dyn 39:385-419, Sect. 3.2; seed 004 (the
projection comparison). Choice recorded: projection at the end of each step (not at each
stage), tolerance and iteration limit are parameters.
"""

import numpy as np
from mbstudy.solvers.formulations._common import (
    common_alloc,
    common_constraint_levels,
    common_diag_at_rhs,
    common_fill_rhs,
    common_solve_index1,
)
from mbstudy.solvers.kernel_names import model_phi, model_phi_q
from mbstudy.solvers.linalg import chol_factor, chol_solve, norm2
from mbstudy.solvers.spec import FormulationSpec, Param
from mbstudy.solvers.status import C_PROJ, OK
from mbstudy.solvers.workspace import WS_A, WS_DPHI, WS_PHI, WS_PHI_Q, WS_TMP, WS_U

SPEC = FormulationSpec(
    name="projection",
    summary="index-1 system + Moore-Penrose position/velocity projection after each step",
    params=(
        Param("proj_tol", 1e-12, "tolerance on |phi| of the position projection (m)",
              positive=True),
        Param("proj_max_iter", 20, "iteration limit of the position projection", kind="int",
              minimum=1),
    ),
    source="Marques, Souto & Flores 2017, Sect. 3.2; docs/explanation/methods.md#projection",
    form="post-step-projection",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_rhs",
    "form_pinv_apply",
    "form_post_step",
    "form_has_post_step",
)


# Slots of the projection workspace tuple (form_alloc)
PROJ_INDEX1 = 0  # the index-1 workspace (common_alloc; slots WS_*)
PROJ_GRAM = 1  # (m, m) Gram matrix G G^T and its Cholesky factor
PROJ_BUF = 2  # (m,) right-hand side / solution buffer


def form_alloc(n, m, fp):
    """Augmented-solve workspace plus the Gram matrix and a length-m buffer."""
    return (common_alloc(n, m), np.zeros((m, m)), np.zeros(m))


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power] with a from (0.1), u = 0."""
    w = ws[PROJ_INDEX1]
    n = w[WS_A].size
    q = y[:n]
    v = y[n : 2 * n]
    u = w[WS_U]
    u[:] = 0.0
    st = common_solve_index1(q, v, t, p, u, w)
    if st != OK:
        return st
    common_fill_rhs(q, v, t, p, w, dy)
    return OK


def form_pinv_apply(G, x, A, b, n, m, out):
    """out = G^+ x = G^T (G G^T)^-1 x; return a status (SINGULAR for redundant rows)."""
    for i in range(m):
        for j in range(m):
            s = 0.0
            for k in range(n):
                s += G[i, k] * G[j, k]
            A[i, j] = s
        b[i] = x[i]
    st = chol_factor(A, m)
    if st != OK:
        return st
    chol_solve(A, b, m)
    for k in range(n):
        s = 0.0
        for i in range(m):
            s += G[i, k] * b[i]
        out[k] = s
    return OK


def form_post_step(t, y, p, fp, ws, cnt):
    """Project q onto phi = 0 (Newton-type iteration), then v onto phi_q v = -phi_t."""
    w = ws[PROJ_INDEX1]
    A = ws[PROJ_GRAM]
    b = ws[PROJ_BUF]
    G = w[WS_PHI_Q]
    ph = w[WS_PHI]
    pt = w[WS_DPHI]
    dq = w[WS_TMP]
    n = dq.size
    m = ph.size
    tol = fp[0]
    max_iter = int(fp[1])
    q = y[:n]
    v = y[n : 2 * n]
    it = 0
    while True:
        model_phi(q, t, p, ph)
        if norm2(ph, m) <= tol:
            break
        if it >= max_iter:
            break  # keep the best iterate; the violation shows in the metrics
        model_phi_q(q, t, p, G)
        st = form_pinv_apply(G, ph, A, b, n, m, dq)
        if st != OK:
            return st
        for k in range(n):
            q[k] -= dq[k]
        it += 1
        cnt[C_PROJ] += 1
    common_constraint_levels(q, v, t, p, w)
    st = form_pinv_apply(G, pt, A, b, n, m, dq)
    if st != OK:
        return st
    for k in range(n):
        v[k] -= dq[k]
    return OK


def form_has_post_step():
    return True


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics of the projected state."""
    return common_diag_at_rhs(t, y, p, fp, ws, ws[PROJ_INDEX1], out)
