"""DRCS: disturbance-rejection constraint stabilization with an extended-state observer.

Seed 004 (docs/explanation/methods.md#drcs). Each constraint channel y_i = Phi_i(q, t) is modelled
as y'' = u + d, d lumping the drift the integration introduces. A linear extended-state
observer (ESO) with bandwidth omega_o estimates x_e = [y; y'; d] from the position output
alone (e = y - y_hat)::

    y_hat'    = ydot_hat + 3 omega_o e
    ydot_hat' = d_hat + u + 3 omega_o^2 e
    d_hat'    = omega_o^3 e

(L_e = [3 omega_o; 3 omega_o^2; omega_o^3], so eig(A_e - L_e C_e) = -omega_o, triple),
and the stabilization input of the index-1 system (0.1) is computed from the observer
state only, so that there is no algebraic loop (docs/explanation/methods.md#drcs)::

    u = -Kp y_hat - Kd ydot_hat - d_hat,   Kp = omega_n^2, Kd = 2 xi omega_n.

The observer is integrated with the mechanical state: the extras of y are the 3 m values
[y_hat (m) | ydot_hat (m) | d_hat (m)]. They are initialized consistently
(docs/explanation/methods.md#drcs, "initial observer state"): y_hat = Phi(q0, t0), ydot_hat = Phi_q
v0 + Phi_t, d_hat = 0, so that with d = 0 (exact arithmetic) the estimation error stays zero and the
closed loop is exactly Baumgarte's phi'' + 2 xi omega_n phi' + omega_n^2 phi = 0 (separation
principle: closed-loop eigenvalues {-omega_n, -omega_n, -omega_o, -omega_o, -omega_o} per channel).

``form_diag`` reports |u| with the full input including -d_hat (docs/explanation/methods.md#drcs).

References
----------
Seed 004 (*Constraint stabilization as disturbance rejection in multibody system
dynamics*, Mechanism and Machine Theory), docs/explanation/methods.md#drcs; the linear ESO of
Han / Gao with the bandwidth parameterization (Gao 2003, "Scaling and bandwidth-
parameterization based controller tuning", Proc. ACC); Baumgarte 1972 for the PD law.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.formulations._common import (
    common_constraint_levels,
    common_fill_rhs,
    common_solve_index1,
)
from mbstudy.solvers.kernel_names import model_phi
from mbstudy.solvers.spec import FormulationSpec, Param
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_A, WS_DPHI, WS_PHI, WS_U

SPEC = FormulationSpec(
    name="drcs",
    summary="DRCS: extended-state observer (bandwidth omega_o) + Baumgarte-type law "
    "u = -Kp y_hat - Kd ydot_hat - d_hat",
    params=(
        Param("omega_n", 5.0, "natural frequency of the constraint error dynamics (1/s)",
              nonnegative=True),
        Param("xi", 1.0, "damping ratio of the constraint error dynamics (-)", nonnegative=True),
        Param("omega_o", 20.0, "observer bandwidth: ESO poles at -omega_o (1/s)", positive=True),
    ),
    extra_states="observer [y_hat, ydot_hat, d_hat], 3 m values",
    source="seed 004; docs/explanation/methods.md#drcs",
    form="stabilized-ode",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_n_extra",
    "form_init",
    "form_law",
    "form_observer_rhs",
    "form_rhs",
)


def form_n_extra(n, m, fp):
    """Three observer states per constraint channel."""
    return 3 * m


def form_init(t0, y, p, fp, ws):
    """Consistent observer: y_hat = Phi(q0), ydot_hat = Phi_q v0 + Phi_t, d_hat = 0."""
    n = ws[WS_A].size
    m = ws[WS_PHI].size
    q = y[:n]
    v = y[n : 2 * n]
    common_constraint_levels(q, v, t0, p, ws)
    ph = ws[WS_PHI]
    pt = ws[WS_DPHI]
    o = 2 * n + 1
    for i in range(m):
        y[o + i] = ph[i]
        y[o + m + i] = pt[i]
        y[o + 2 * m + i] = 0.0
    return OK


def form_law(xh, kp, kd, m, u):
    """u = -Kp y_hat - Kd ydot_hat - d_hat from the observer state xh (3 m values)."""
    for i in range(m):
        u[i] = -kp * xh[i] - kd * xh[m + i] - xh[2 * m + i]


def form_observer_rhs(ph, xh, u, omega_o, m, dxh):
    """ESO right-hand side dxh = A_e xh + B_e u + L_e (y - C_e xh), per channel.

    Parameters
    ----------
    ph : (m,) measured output y = Phi(q, t).
    xh : (3m,) observer state [y_hat, ydot_hat, d_hat].
    u : (m,) stabilization input (from :func:`form_law`).
    omega_o : observer bandwidth; L_e = [3 omega_o, 3 omega_o^2, omega_o^3].
    dxh : (3m,) receives the derivative.
    """
    l1 = 3.0 * omega_o
    l2 = 3.0 * omega_o * omega_o
    l3 = omega_o * omega_o * omega_o
    for i in range(m):
        e = ph[i] - xh[i]
        dxh[i] = xh[m + i] + l1 * e
        dxh[m + i] = xh[2 * m + i] + u[i] + l2 * e
        dxh[2 * m + i] = l3 * e


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power, observer'] with a from (0.1) and u from the observer state."""
    n = ws[WS_A].size
    m = ws[WS_PHI].size
    kp = fp[0] * fp[0]
    kd = 2.0 * fp[1] * fp[0]
    q = y[:n]
    v = y[n : 2 * n]
    o = 2 * n + 1
    xh = y[o : o + 3 * m]
    u = ws[WS_U]
    form_law(xh, kp, kd, m, u)
    st = common_solve_index1(q, v, t, p, u, ws)
    if st != OK:
        return st
    common_fill_rhs(q, v, t, p, ws, dy)
    ph = ws[WS_PHI]
    model_phi(q, t, p, ph)
    form_observer_rhs(ph, xh, u, fp[2], m, dy[o : o + 3 * m])
    return OK


def observer_matrices(omega_o: float, m: int = 1) -> tuple[np.ndarray, ...]:
    """The linear ESO of docs/explanation/methods.md#drcs for ``m`` channels (Python level, for
    analysis).

    Returns
    -------
    A_e, B_e, C_e, L_e, E : (3m, 3m), (3m, m), (m, 3m), (3m, m), (3m, m), the state order
    being [y_hat (m), ydot_hat (m), d_hat (m)] as in the kernel's extras.
    """
    eye = np.eye(m)
    z = np.zeros((m, m))
    A = np.block([[z, eye, z], [z, z, eye], [z, z, z]])
    B = np.vstack([z, eye, z])
    C = np.hstack([eye, z, z])
    L = np.vstack([3.0 * omega_o * eye, 3.0 * omega_o**2 * eye, omega_o**3 * eye])
    E = np.vstack([z, z, eye])
    return A, B, C, L, E
