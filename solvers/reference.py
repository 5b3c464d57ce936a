"""Reference trajectories: one tight integration per model parameter set, self-checked.

The reference of a study is a run of its ``[reference]`` method (by default the model's
``SPEC.reference``, e.g. dopri5 at rtol 1e-12 with projection). Its own accuracy is
estimated by a second run with the tolerance (rtol/atol, or delta_l) loosened 100x
(adaptive integrators) or the step doubled (fixed-step ones):
``error_estimate = max |q - q_check|`` over the output times, an upper estimate of the
coarse run's error and so of the reference's.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers import registry
from mbstudy.solvers.metrics import Reference
from mbstudy.solvers.runner import run_case


def compute_reference(
    model: str,
    model_params: dict,
    integrator: str,
    formulation: str,
    params: dict,
    t_end: float,
    samples: int,
    check: bool = True,
    kernel=None,
) -> Reference:
    """Integrate the reference and its check run; return a :class:`Reference`.

    Parameters
    ----------
    params : parameters of the reference integrator and formulation, by name.
    check : also run the loosened check (the error estimate is NaN otherwise).
    kernel : the :class:`~mbstudy.solvers.runner.Kernel` to run (default: the compiled one,
        :func:`~mbstudy.solvers.runner.load_kernel`); e.g. the interpreted one.
    """
    ispec = registry.integrator(integrator).spec
    fnames = {p.name for p in registry.formulation(formulation).params}
    fparams = {k: v for k, v in params.items() if k in fnames}
    iparams = {k: v for k, v in params.items() if k not in fnames}
    res = run_case(
        model, formulation, integrator, t_end=t_end, samples=samples,
        model_params=model_params, formulation_params=fparams, integrator_params=iparams,
        kernel=kernel,
    )  # fmt: skip
    est = float("nan")
    if check and res.status == 0:
        loose = dict(iparams)
        if ispec.fixed_step:
            h = float(loose.get("h", next(p.default for p in ispec.params if p.name == "h")))
            loose["h"] = 2 * h
        else:
            for key in ("rtol", "atol", "delta_l"):
                default = next((p.default for p in ispec.params if p.name == key), None)
                if default is not None:
                    loose[key] = 100 * float(loose.get(key, default))
        chk = run_case(
            model, formulation, integrator, t_end=t_end, samples=samples,
            model_params=model_params, formulation_params=fparams, integrator_params=loose,
            kernel=kernel,
        )  # fmt: skip
        if chk.status == 0:
            est = float(np.max(np.abs(chk.q - res.q)))
    return Reference(t=res.t, q=res.q.copy(), v=res.v.copy(), status=res.status,
                     error_estimate=est)
