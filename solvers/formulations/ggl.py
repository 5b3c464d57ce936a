"""Stabilized index-2 DAE form of Gear, Gupta and Leimkuhler (1985) (GGL).

The velocity-level constraint replaces the position-level one in the multiplier
equation, and a second multiplier mu keeps the positions on Phi = 0::

    q' = v - Phi_q(q, t)^T mu
    M(q) v' + Phi_q(q, t)^T lam = Q(q, v, t)
    W' = power(q, v, t)
    0 = Phi_q(q, t) v + Phi_t(q, t)
    0 = Phi(q, t)

On the exact solution mu = 0. State ``y = [q | v | W | lam | mu]`` (extra states: 2m).
The system has index 2 (lam and mu are index-2 variables, q, v, W differential;
Hairer & Wanner 1996, Sect. VII.1), so the error tests scale lam and mu as index-2
components (:func:`form_dae_index`). Its DAE form is ``index2-ggl-dae``
(solvers/forms.py): only the integrators that declare that form take it (``radau5``,
``bdf``).

References
----------
Gear, Gupta & Leimkuhler (1985), J. Comput. Appl. Math. 12-13:77-90; Hairer & Wanner,
*Solving ODEs II*, 2nd ed., 1996, Sect. VII.1 (eq. (1.23)).
"""

from mbstudy.solvers.formulations._common import (
    common_constraint_levels,
)
from mbstudy.solvers.formulations._dae_forms import (  # noqa: F401 (templates)
    DAE_FORM_TEMPLATES,
    form_dae_jac_yp,
    form_dae_yp0,
    form_diag,
    form_init,
    form_rhs,
)
from mbstudy.solvers.kernel_names import model_forces, model_mass, model_power
from mbstudy.solvers.spec import FormulationSpec
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_DPHI, WS_M, WS_PHI, WS_PHI_Q, WS_Q

# start, index-1 right-hand side, dF/dy' and diagnostics shared with index3 (_dae_forms.py)
SHARED_TEMPLATES = DAE_FORM_TEMPLATES

SPEC = FormulationSpec(
    name="ggl",
    summary="stabilized index-2 DAE of Gear-Gupta-Leimkuhler: velocity constraint with "
    "lam, position constraint with a second multiplier mu (radau5, bdf)",
    params=(),
    extra_states="lam (m), mu (m): the multipliers of the velocity and position constraints",
    source="Gear, Gupta & Leimkuhler 1985; Hairer & Wanner II, VII.1",
    form="index2-ggl-dae",
)


# Templates compiled without numba's reference counting (solvers/compose/nrt.py,
# nrt_free_templates): none allocates an array or returns one
NRT_FREE = ("form_rhs", "form_dae_residual")


def form_n_extra(n, m, fp):
    """lam (m) and mu (m)."""
    return 2 * m


def form_dae_residual(t, y, yp, p, fp, r, ws):
    """F = [q' - v + Phi_q^T mu, M v' + Phi_q^T lam - Q, W' - power, Phi_q v + Phi_t,
    Phi]; status."""
    M = ws[WS_M]
    Q = ws[WS_Q]
    G = ws[WS_PHI_Q]
    ph = ws[WS_PHI]
    pt = ws[WS_DPHI]
    n = Q.size
    m = ph.size
    q = y[:n]
    v = y[n : 2 * n]
    ol = 2 * n + 1
    om = ol + m
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    common_constraint_levels(q, v, t, p, ws)
    for i in range(n):
        s = yp[i] - v[i]
        s2 = -Q[i]
        for k in range(m):
            s += G[k, i] * y[om + k]
            s2 += G[k, i] * y[ol + k]
        for j in range(n):
            s2 += M[i, j] * yp[n + j]
        r[i] = s
        r[n + i] = s2
    r[2 * n] = yp[2 * n] - model_power(q, v, t, p)
    for k in range(m):
        r[ol + k] = pt[k]
        r[om + k] = ph[k]
    return OK


def form_dae_index(n, m, fp, idx):
    """q, v, W: 1; lam, mu: 2."""
    for i in range(idx.size):
        idx[i] = 1 if i <= 2 * n else 2
