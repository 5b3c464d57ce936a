"""Templates shared by the penalty and augmented-Lagrangian formulations (not a registry
entry).

Both solve the leading system of the penalty method with Baumgarte terms
(docs/explanation/methods.md#penalty, docs/explanation/methods.md#auglag)::

    (M + alpha Phi_q^T Phi_q) a = Q + Phi_q^T (alpha (gamma + u) - lam*),
    u = -kd Phi_dot - kp Phi,   Phi_dot = Phi_q v + Phi_t,

penalty once with lam* = 0, auglag repeatedly with one factorization while it updates
the multiplier estimate lam*. :func:`form_penalty_matrix` evaluates the model terms and
factors the matrix (Cholesky: symmetric positive definite whenever M is, also with
redundant constraints), :func:`form_penalty_rhs` builds the right-hand side. A
formulation uses them by importing them and naming them in ``SHARED_TEMPLATES``.

References
----------
Bayo, García de Jalón & Serna (1988), Comput. Methods Appl. Mech. Eng. 71:183-195;
García de Jalón & Bayo, *Kinematic and Dynamic Simulation of Multibody Systems*, 1994,
ch. 6.
"""

from mbstudy.solvers.formulations._common import (
    common_constraint_levels_gamma,
    common_mass_plus_gtg,
)
from mbstudy.solvers.kernel_names import model_forces, model_mass
from mbstudy.solvers.linalg import chol_factor
from mbstudy.solvers.workspace import (
    WS_DPHI,
    WS_GAMMA,
    WS_M,
    WS_PHI,
    WS_PHI_Q,
    WS_Q,
    WS_R,
    WS_U,
)

# the templates penalty and auglag take from here (their SHARED_TEMPLATES; NRT-free)
PENALTY_TEMPLATES = ("form_penalty_matrix", "form_penalty_rhs")


def form_penalty_matrix(q, v, t, p, alpha, kd, kp, w, A):
    """Fill w's constraint levels, M, Q and the Baumgarte terms u = -kd Phi_dot - kp Phi
    at (q, v, t), then A = M + alpha G^T G, Cholesky-factored in place; status
    (SINGULAR when the factorization fails)."""
    M = w[WS_M]
    G = w[WS_PHI_Q]
    ph = w[WS_PHI]
    pt = w[WS_DPHI]
    u = w[WS_U]
    n = q.size
    m = ph.size
    common_constraint_levels_gamma(q, v, t, p, w)
    model_mass(q, p, M)
    model_forces(q, v, t, p, w[WS_Q])
    for i in range(m):
        u[i] = -kd * pt[i] - kp * ph[i]
    common_mass_plus_gtg(M, G, alpha, A)
    return chol_factor(A, n)


def form_penalty_rhs(alpha, w, b, lam_star):
    """b = Q + G^T (alpha (gamma + u) - lam_star) from w's terms (w's r holds the bracket)."""
    Q = w[WS_Q]
    G = w[WS_PHI_Q]
    gam = w[WS_GAMMA]
    r = w[WS_R]
    u = w[WS_U]
    n = Q.size
    m = gam.size
    for i in range(m):
        r[i] = alpha * (gam[i] + u[i]) - lam_star[i]
    for j in range(n):
        s = Q[j]
        for i in range(m):
            s += G[i, j] * r[i]
        b[j] = s
