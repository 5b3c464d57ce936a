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
from mbstudy.solvers.integrators.genalpha import (  # noqa: F401 (templates, constants)
    GA_EPS,
    GA_FD_REL,
    NEWTON_PARAMS,
    NEWTON_RATE,
    integ_ga_matrix,
    integ_ga_residual,
    integ_ga_step,
    integ_run,
)
from mbstudy.solvers.spec import IntegratorSpec, Param

SHARED_TEMPLATES = (_genalpha,)  # its templates; integ_ga_setup below replaces its own

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
    formulations=("index3",),
    order=2,
    source="Hilber, Hughes & Taylor 1977; Arnold & Bruls 2007",
)


def integ_ga_setup(ip):
    """(h, alpha_m, alpha_f, beta, gamma, newton_tol, max_newton) of HHT-alpha."""
    alpha = ip[1]
    return (ip[0], 0.0, -alpha, 0.25 * (1.0 - alpha) ** 2, 0.5 - alpha, ip[ip.size - 2],
            int(ip[ip.size - 1]))
