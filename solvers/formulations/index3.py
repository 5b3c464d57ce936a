"""Index-3 DAE form: the multipliers are unknowns of the step
(docs/explanation/methods-implicit.md).

The equations of motion with the position-level constraint enforced directly::

    q' = v
    M(q) v' + Phi_q(q, t)^T lam = Q(q, v, t)
    W' = power(q, v, t)
    0 = Phi(q, t)

State ``y = [q | v | W | lam]``: the multipliers are the formulation's extra states (m),
so every output row carries the integrator's own lam. Its DAE form is ``index3-dae``
(solvers/forms.py): only the implicit DAE integrators that declare that form take it
(``genalpha``, ``hht``, ``newmark``, ``radau5``, ``bdf``); an explicit method has no
equation for lam.

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

from mbstudy.solvers.formulations._dae_forms import (  # noqa: F401 (templates)
    DAE_FORM_TEMPLATES,
    form_dae_jac_yp,
    form_dae_yp0,
    form_diag,
    form_init,
    form_rhs,
)
from mbstudy.solvers.kernel_names import (
    model_forces,
    model_mass,
    model_phi,
    model_phi_q,
    model_power,
)
from mbstudy.solvers.spec import FormulationSpec
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_M, WS_PHI, WS_PHI_Q, WS_Q

# start, index-1 right-hand side, dF/dy' and diagnostics shared with ggl (_dae_forms.py)
SHARED_TEMPLATES = DAE_FORM_TEMPLATES

SPEC = FormulationSpec(
    name="index3",
    summary="index-3 DAE: Phi(q) = 0 at position level, multipliers are unknowns of the "
    "step (implicit integrators only)",
    params=(),
    extra_states="lam (m): the constraint multipliers",
    source="Hairer & Wanner II, VII.1; Arnold & Brüls 2007",
    form="index3-dae",
)


# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = ("form_rhs", "form_dae_residual")


def form_n_extra(n, m, fp):
    """The multipliers lam (m)."""
    return m


def form_dae_residual(t, y, yp, p, fp, r, ws):
    """F(t, y, y') = [q' - v, M v' + Phi_q^T lam - Q, W' - power, Phi]; status."""
    M = ws[WS_M]
    Q = ws[WS_Q]
    G = ws[WS_PHI_Q]
    ph = ws[WS_PHI]
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


def form_dae_index(n, m, fp, idx):
    """q, W: 1; v: 2; lam: 3 (the index-3 mechanical system)."""
    for i in range(idx.size):
        idx[i] = 1
    for i in range(n):
        idx[n + i] = 2
    for i in range(2 * n + 1, idx.size):
        idx[i] = 3
