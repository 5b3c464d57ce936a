"""Unstabilized index-1 formulation: u = 0 (docs/explanation/methods.md#none).

The acceleration-level constraint is satisfied at every right-hand side, but position and
velocity drift grow with time (the baseline every stabilization method is measured
against).
"""

from mbstudy.solvers.formulations._common import common_fill_rhs, common_solve_index1
from mbstudy.solvers.spec import FormulationSpec
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_A, WS_U

SPEC = FormulationSpec(
    name="none",
    summary="index-1 augmented system, unstabilized (u = 0)",
    params=(),
    source="docs/explanation/methods.md#none; seed 004",
    form="index1-ode",
)

# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = (
    "form_rhs",
)


def form_rhs(t, y, p, fp, dy, ws):
    """dy = [v, a, power] with a from (0.1), u = 0."""
    n = ws[WS_A].size
    q = y[:n]
    v = y[n : 2 * n]
    u = ws[WS_U]
    u[:] = 0.0
    st = common_solve_index1(q, v, t, p, u, ws)
    if st != OK:
        return st
    common_fill_rhs(q, v, t, p, ws, dy)
    return OK
