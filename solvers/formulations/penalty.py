"""Acceleration-level penalty formulation with Baumgarte terms
(docs/explanation/methods.md#penalty).

One of seed 002's comparison methods. The constraint reactions are replaced by a penalty
force proportional to the stabilized acceleration-level violation::

    (M + alpha Phi_q^T Phi_q) a = Q + alpha Phi_q^T (gamma + u),
    u = -2 psi omega Phi_dot - omega^2 Phi,   Phi_dot = Phi_q v + Phi_t,

so Phi'' + 2 psi omega Phi' + omega^2 Phi = lam / alpha with the multiplier estimate
lam ~ alpha (Phi_q a - gamma - u). The leading matrix is symmetric positive definite
whenever M is, also with redundant constraints (no independence assumption), and is
factored by Cholesky. As alpha grows the solution tends to the constrained one (error
O(1/alpha)) and the matrix conditioning worsens like alpha |Phi_q|^2 / lambda_min(M): a
Cholesky pivot below 1e-13 of the largest diagonal entry ends the case with ``singular``
(scale alpha with the masses of the model).

``form_diag`` reports |u| with u the Baumgarte terms above; its acceleration violation
|Phi_q a - gamma| includes the penalty defect lam / alpha.

References
----------
Seed 002 (the penalty method it compares with); MBDS / mbde-matlab,
``toolbox_mbe/mbeDynFormulationPenalty.m`` (defaults alpha = 1e9, omega = 10, psi = 1);
García de Jalón & Bayo, *Kinematic and Dynamic Simulation of Multibody Systems*, 1994,
ch. 6; Bayo, García de Jalón & Serna 1988, Comput. Methods Appl. Mech. Eng. 71:183-195.
"""

import numpy as np
from mbstudy.solvers.formulations._common import (
    common_alloc,
    common_diag_at_rhs,
    common_fill_rhs,
)
from mbstudy.solvers.formulations._penalty_matrix import (
    PENALTY_TEMPLATES,
    form_penalty_matrix,
    form_penalty_rhs,
)
from mbstudy.solvers.linalg import chol_solve
from mbstudy.solvers.spec import FormulationSpec, Param
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import (
    WS_A,
    WS_GAMMA,
    WS_LAM,
    WS_PHI,
    WS_PHI_Q,
    WS_U,
)

SPEC = FormulationSpec(
    name="penalty",
    summary="acceleration-level penalty (M + alpha phi_q^T phi_q) a = Q + alpha phi_q^T "
    "(gamma + u), Baumgarte terms",
    params=(
        Param("alpha", 1e7, "penalty factor (force/acceleration units, scale with M)",
              positive=True),
        Param("omega", 10.0, "natural frequency of the Baumgarte terms (1/s)", nonnegative=True),
        Param("psi", 1.0, "damping ratio of the Baumgarte terms (-)", nonnegative=True),
    ),
    source="seed 002; docs/explanation/methods.md#penalty; MBDS mbeDynFormulationPenalty.m",
    form="stabilized-ode",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_penalty_matrix",
    "form_penalty_rhs",
    "form_penalty_solve",
    "form_rhs",
)

# the penalty matrix and right-hand side, shared with auglag (_penalty_matrix.py)
SHARED_TEMPLATES = PENALTY_TEMPLATES


# Slots of the penalty workspace tuple (form_alloc)
PEN_INDEX1 = 0  # the index-1 workspace (common_alloc; slots WS_*)
PEN_A = 1  # (n, n) M + alpha G^T G and its Cholesky factor
PEN_B = 2  # (n,) right-hand side / acceleration
PEN_ZERO_M = 3  # (m,) zeros (lam* of the plain penalty method)


def form_alloc(n, m, fp):
    """Augmented-solve workspace, the n x n penalty matrix, its right-hand side, zeros(m)."""
    return (common_alloc(n, m), np.zeros((n, n)), np.zeros(n), np.zeros(m))


def form_penalty_solve(q, v, t, p, alpha, omega, psi, w, A, b, lam_star):
    """Solve (M + alpha G^T G) a = Q + G^T (alpha (gamma + u) - lam_star) into w's a.

    Fills w's M, Q, G, gam, ph, pt, u (Baumgarte terms) at (q, v, t); ``lam_star`` is the
    augmented-Lagrangian multiplier estimate (zeros for the plain penalty method).
    Returns a status (SINGULAR when the Cholesky factorization fails).
    """
    st = form_penalty_matrix(q, v, t, p, alpha, 2.0 * psi * omega, omega * omega, w, A)
    if st != OK:
        return st
    form_penalty_rhs(alpha, w, b, lam_star)
    n = q.size
    a = w[WS_A]
    chol_solve(A, b, n)
    for j in range(n):
        a[j] = b[j]
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power] with a from the penalty system; lam = alpha (G a - gamma - u)."""
    w = ws[PEN_INDEX1]
    A = ws[PEN_A]
    b = ws[PEN_B]
    zero_m = ws[PEN_ZERO_M]
    n = w[WS_A].size
    m = w[WS_PHI].size
    q = y[:n]
    v = y[n : 2 * n]
    lam = w[WS_LAM]
    st = form_penalty_solve(q, v, t, p, fp[0], fp[1], fp[2], w, A, b, zero_m)
    if st != OK:
        return st
    G = w[WS_PHI_Q]
    gam = w[WS_GAMMA]
    u = w[WS_U]
    a = w[WS_A]
    for i in range(m):
        s = -gam[i] - u[i]
        for j in range(n):
            s += G[i, j] * a[j]
        lam[i] = fp[0] * s
    common_fill_rhs(q, v, t, p, w, dy)
    return OK


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics at the sample: the penalty acceleration and the Baumgarte terms u."""
    return common_diag_at_rhs(t, y, p, fp, ws, ws[PEN_INDEX1], out)
