"""Index-1 augmented Lagrangian formulation of Bayo (docs/explanation/methods.md#auglag).

One of seed 002's comparison methods. At every right-hand side the multipliers are found
by the fixed-point iteration (Bayo, García de Jalón & Serna 1988)::

    (M + alpha Phi_q^T Phi_q) a_{k+1} = Q + alpha Phi_q^T (gamma + u) - Phi_q^T lam*_k
    lam*_{k+1} = lam*_k + alpha (Phi_q a_{k+1} - gamma - u)
    u = -2 xi omega Phi_dot - omega^2 Phi,   Phi_dot = Phi_q v + Phi_t,

stopped when |a_{k+1} - a_k|_2 <= tol (1 + |a_{k+1}|_2), or when the increment no longer
decreases (the round-off floor, about eps cond(M + alpha Phi_q^T Phi_q) |a|, is reached:
for alpha = 1e7 on the light four-bar, cond ~ 7e9, it lies near 1e-9 |a|). The choice of
alpha is a trade-off: a smaller alpha lowers that floor, but the contraction factor of
the iteration, ~ lambda(M) / (lambda(M) + alpha sigma^2) for a singular value sigma of
Phi_q, tends to 1 near a singular configuration (sigma -> 0): on the parallelogram
alpha = 1e5 exhausts 100 iterations at the horizontal position, alpha = 1e7 (the MBDS
default, the default here) passes it with ~4 iterations per right-hand side.

At convergence a and lam* satisfy the index-1 system (0.1) with Baumgarte terms, without
ever factoring the (possibly singular) augmented matrix: the leading matrix is symmetric
positive definite whenever M is, so redundant constraints and singular configurations
are handled (Bayo & Avello 1994; Blajer 2002b); lam* then converges to one admissible
set of multipliers.

Choices recorded: the matrix is factored once per right-hand side (Cholesky) and re-used
by every iteration; lam*_0 is the previous right-hand side's converged value (zeros at
t0), the warm start docs/explanation/methods.md#auglag allows, which keeps the iteration short (3-4
solves per right-hand side measured); at least two solves are made so the increment test is
defined. No convergence within ``max_iter`` iterations ends the case with
``newton_failed``. The iterations are counted as ``newton_iters``; jitted right-hand
sides have no counter argument, so the workspace accumulates them and
``form_flush_counters`` moves them to the counters at the end of the run, for every
integrator (the diagnostics' own right-hand sides are not counted).

References
----------
Bayo, García de Jalón & Serna (1988), Comput. Methods Appl. Mech. Eng. 71:183-195; Bayo &
Avello (1994), Nonlinear Dyn. 5:209-231; Bayo & Ledesma (1996), Nonlinear Dyn. 9:113-130;
García de Jalón & Bayo, *Kinematic and Dynamic Simulation of Multibody Systems*, 1994,
ch. 6; Blajer (2002b); seed 002 ("augmented" comparison); docs/explanation/methods.md#auglag.
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
from mbstudy.solvers.status import C_NEWTON, NAN, NEWTON_FAILED, OK
from mbstudy.solvers.workspace import (
    WS_A,
    WS_GAMMA,
    WS_LAM,
    WS_PHI_Q,
    WS_U,
)

SPEC = FormulationSpec(
    name="auglag",
    summary="Bayo index-1 augmented Lagrangian: (M + alpha phi_q^T phi_q) a = ... iterated "
    "on lam*, Baumgarte terms",
    params=(
        Param("alpha", 1e7, "penalty factor of the iteration (mass units: scale with M)",
              positive=True),
        Param("omega", 10.0, "natural frequency of the Baumgarte terms (1/s)", nonnegative=True),
        Param("xi", 1.0, "damping ratio of the Baumgarte terms (-)", nonnegative=True),
        Param("al_tol", 1e-12, "relative tolerance on the acceleration increment (-)",
              positive=True),
        Param("al_max_iter", 20, "iteration limit per right-hand side", kind="int", minimum=1),
    ),
    source="Bayo, García de Jalón & Serna 1988; Bayo & Ledesma 1996; "
    "docs/explanation/methods.md#auglag",
    form="stabilized-ode",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_penalty_matrix",
    "form_penalty_rhs",
    "form_init",
    "form_rhs",
    "form_flush_counters",
)


# the penalty matrix and right-hand side, shared with penalty (_penalty_matrix.py)
SHARED_TEMPLATES = PENALTY_TEMPLATES

# Slots of the auglag workspace tuple (form_alloc)
AL_INDEX1 = 0  # the index-1 workspace (common_alloc; slots WS_*)
AL_A = 1  # (n, n) M + alpha G^T G and its Cholesky factor
AL_B = 2  # (n,) right-hand side / acceleration iterate
AL_A_PREV = 3  # (n,) previous acceleration iterate
AL_LAM_STAR = 4  # (m,) multiplier estimate lam*
AL_NIT = 5  # (1,) int64 iterations not yet moved to the counters


def form_alloc(n, m, fp):
    """(augmented workspace, A (n, n), b (n), a_prev (n), lam_star (m), iteration count)."""
    return (
        common_alloc(n, m),
        np.zeros((n, n)),
        np.zeros(n),
        np.zeros(n),
        np.zeros(m),
        np.zeros(1, dtype=np.int64),
    )


def form_init(t0, y, p, fp, ws):
    """lam*_0 = 0 at the initial time."""
    ws[AL_LAM_STAR][:] = 0.0
    ws[AL_NIT][0] = 0
    return OK


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power] with a from the converged augmented-Lagrangian iteration."""
    w = ws[AL_INDEX1]
    A = ws[AL_A]
    b = ws[AL_B]
    a_prev = ws[AL_A_PREV]
    lam_star = ws[AL_LAM_STAR]
    nit = ws[AL_NIT]
    G = w[WS_PHI_Q]
    gam = w[WS_GAMMA]
    u = w[WS_U]
    a = w[WS_A]
    lam = w[WS_LAM]
    n = a.size
    m = gam.size
    alpha = fp[0]
    tol = fp[3]
    max_iter = int(fp[4])
    q = y[:n]
    v = y[n : 2 * n]
    st = form_penalty_matrix(q, v, t, p, alpha, 2.0 * fp[2] * fp[1], fp[1] * fp[1], w, A)
    if st != OK:
        return st
    it = 0
    d_prev = np.inf
    while True:
        form_penalty_rhs(alpha, w, b, lam_star)
        chol_solve(A, b, n)
        it += 1
        for i in range(m):
            s = -gam[i] - u[i]
            for j in range(n):
                s += G[i, j] * b[j]
            lam_star[i] += alpha * s
        if it >= 2:
            d = 0.0
            na = 0.0
            for j in range(n):
                d += (b[j] - a_prev[j]) ** 2
                na += b[j] * b[j]
            d = np.sqrt(d)
            if d <= tol * (1.0 + np.sqrt(na)):
                break
            if d >= d_prev:
                break  # the increments stopped decreasing: round-off floor reached
            d_prev = d
        if not np.isfinite(b[0]):
            nit[0] += it
            return NAN
        if it >= max_iter:
            nit[0] += it
            return NEWTON_FAILED
        for j in range(n):
            a_prev[j] = b[j]
    nit[0] += it
    for j in range(n):
        a[j] = b[j]
    for i in range(m):
        lam[i] = lam_star[i]
    common_fill_rhs(q, v, t, p, w, dy)
    return OK


def form_flush_counters(ws, cnt):
    """Move the iteration count of every right-hand side so far to the counters."""
    nit = ws[AL_NIT]
    cnt[C_NEWTON] += nit[0]
    nit[0] = 0
    return OK


def form_diag(t, y, p, fp, ws, out):
    """Diagnostics at the sample: the converged acceleration and the Baumgarte terms u."""
    return common_diag_at_rhs(t, y, p, fp, ws, ws[AL_INDEX1], out)
