"""Newmark's method for index-3 systems: the generalized-α kernel with
alpha_m = alpha_f = 0 (a = q''), parameters beta and gamma. Second order only for
gamma = 1/2 (beta = 1/4, gamma = 1/2: the trapezoidal rule, no numerical dissipation);
gamma > 1/2 dissipates at first order (Géradin & Cardona 2001, Sect. 7.2). Everything
else is :mod:`solvers.integrators.genalpha`.

References
----------
Newmark (1959), J. Eng. Mech. Div. ASCE 85:67-94; Géradin & Cardona, *Flexible
Multibody Dynamics*, 2001; Arnold & Brüls (2007), Multibody Syst Dyn 18:185-202.
"""

from mbstudy.solvers.integrators import genalpha as _genalpha
from mbstudy.solvers.integrators.genalpha import NEWTON_PARAMS
from mbstudy.solvers.spec import IntegratorSpec, Param

# The generalized-alpha kernel (its templates and constants) with this parameter mapping
SHARED_TEMPLATES = (_genalpha,)
# genalpha.integ_ga_setup: alpha_m = alpha_f = 0, (beta, gamma) as given
GA_SCHEME = 2

SPEC = IntegratorSpec(
    name="newmark",
    summary="Newmark beta-gamma for index-3 DAEs (generalized-alpha with alpha_m = "
    "alpha_f = 0), fixed step",
    params=(
        Param("h", 1e-3, "step size (s)", positive=True),
        Param("beta", 0.25, "Newmark beta (-)", positive=True, maximum=0.5),
        Param("gamma", 0.5, "Newmark gamma (-); order 2 only at 1/2", minimum=0.5,
              maximum=1.0),
        *NEWTON_PARAMS,
    ),
    fixed_step=True,
    adaptive=False,
    forms=("index3-dae",),
    forms_reason="Newmark solves the index-3 system: the multipliers are unknowns of its "
    "step, it has no ODE or index-2 mode",
    order=2,
    source="Newmark 1959; Arnold & Bruls 2007",
)

