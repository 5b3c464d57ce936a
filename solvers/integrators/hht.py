"""Hilber-Hughes-Taylor (HHT-α) for index-3 systems: the generalized-α kernel with
alpha_m = 0, alpha_f = -alpha, gamma = 1/2 - alpha, beta = (1 - alpha)^2 / 4,
alpha in [-1/3, 0] (Arnold & Brüls 2007, Sect. 2: the form in which HHT is a special
case of generalized-α; it averages accelerations, which for linear systems equals
Hilber, Hughes & Taylor's averaging of the forces). Second order; alpha = 0 is the
trapezoidal rule (no dissipation). Everything else, Newton, start and counters, is
:mod:`solvers.integrators.genalpha`.

References
----------
Hilber, Hughes & Taylor (1977), Earthquake Eng. Struct. Dyn. 5:283-292; Arnold & Brüls
(2007), Multibody Syst Dyn 18:185-202.
"""

from mbstudy.solvers.integrators import genalpha as _genalpha
from mbstudy.solvers.integrators.genalpha import NEWTON_PARAMS
from mbstudy.solvers.spec import IntegratorSpec, Param

# The generalized-alpha kernel (its templates and constants) with this parameter mapping
SHARED_TEMPLATES = (_genalpha,)
# genalpha.integ_ga_setup: alpha_m = 0, alpha_f = -alpha, beta = (1-alpha)^2/4, gamma = 1/2-alpha
GA_SCHEME = 1

SPEC = IntegratorSpec(
    name="hht",
    summary="Hilber-Hughes-Taylor alpha for index-3 DAEs (generalized-alpha with "
    "alpha_m = 0), fixed step",
    params=(
        Param("h", 1e-3, "step size (s)", positive=True),
        Param("alpha", -0.1, "HHT alpha in [-1/3, 0] (0: trapezoidal, no dissipation)",
              minimum=-1.0 / 3.0, maximum=0.0),
        *NEWTON_PARAMS,
    ),
    fixed_step=True,
    adaptive=False,
    forms=("index3-dae",),
    forms_reason="HHT-alpha solves the index-3 system: the multipliers are unknowns of its "
    "step, it has no ODE or index-2 mode",
    order=2,
    source="Hilber, Hughes & Taylor 1977; Arnold & Bruls 2007",
)

