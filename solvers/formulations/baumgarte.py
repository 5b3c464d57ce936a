"""Baumgarte stabilization: u = -omega_n^2 phi - 2 xi omega_n phi_dot
(docs/explanation/methods.md#baumgarte).

In exact arithmetic the constraint violation obeys
phi'' + 2 xi omega_n phi' + omega_n^2 phi = 0.

References
----------
Baumgarte, J. (1972), Comput. Methods Appl. Mech. Eng. 1:1-16; the (omega_n, xi)
parameterization of seed 004 (Kp = omega_n^2, Kd = 2 xi omega_n).
"""

from mbstudy.solvers.formulations._common import (
    common_constraint_levels_gamma,
    common_fill_rhs,
    common_solve_index1_g,
)
from mbstudy.solvers.spec import FormulationSpec, Param
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_A, WS_DPHI, WS_PHI, WS_U

SPEC = FormulationSpec(
    name="baumgarte",
    summary="Baumgarte stabilization u = -omega_n^2 phi - 2 xi omega_n phi_dot",
    params=(
        Param("omega_n", 5.0, "natural frequency of the constraint error dynamics (1/s)",
              nonnegative=True),
        Param("xi", 1.0, "damping ratio of the constraint error dynamics (-)", nonnegative=True),
    ),
    source="Baumgarte 1972; docs/explanation/methods.md#baumgarte; seed 004",
    form="stabilized-ode",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_input",
    "form_rhs",
)


def form_input(q, v, t, p, fp, ws):
    """u = -Kp phi - Kd (phi_q v + phi_t) into ws's u, with Kp = omega_n^2, Kd = 2 xi omega_n
    (gamma(q, v, t) is evaluated with phi and phi_q, into ws's gam, for the solve)."""
    kp = fp[0] * fp[0]
    kd = 2.0 * fp[1] * fp[0]
    common_constraint_levels_gamma(q, v, t, p, ws)
    ph = ws[WS_PHI]
    pt = ws[WS_DPHI]
    u = ws[WS_U]
    for i in range(u.size):
        u[i] = -kp * ph[i] - kd * pt[i]


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power] with a from (0.1) and the Baumgarte input u."""
    n = ws[WS_A].size
    q = y[:n]
    v = y[n : 2 * n]
    form_input(q, v, t, p, fp, ws)
    # form_input evaluated phi_q(q, t) and gamma into ws[WS_PHI_Q] and ws[WS_GAMMA]: the
    # solve reuses them
    st = common_solve_index1_g(q, v, t, p, ws[WS_U], ws)
    if st != OK:
        return st
    common_fill_rhs(q, v, t, p, ws, dy)
    return OK
