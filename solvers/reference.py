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


def reference_params(integrator: str, formulation: str, params: dict
                     ) -> tuple[dict, dict, dict]:  # fmt: skip
    """``(formulation params, integrator params, check-run integrator params)`` of a
    reference: ``params`` split by owner, and the integrator's loosened for the check run
    (rtol/atol/delta_l x 100 for adaptive integrators, h x 2 for fixed-step ones)."""
    ispec = registry.integrator(integrator).spec
    fnames = {p.name for p in registry.formulation(formulation).params}
    fparams = {k: v for k, v in params.items() if k in fnames}
    iparams = {k: v for k, v in params.items() if k not in fnames}
    loose = dict(iparams)
    if ispec.fixed_step:
        h = float(loose.get("h", next(p.default for p in ispec.params if p.name == "h")))
        loose["h"] = 2 * h
    else:
        for key in ("rtol", "atol", "delta_l"):
            default = next((p.default for p in ispec.params if p.name == key), None)
            if default is not None:
                loose[key] = 100 * float(loose.get(key, default))
    return fparams, iparams, loose


def combine_reference(res, chk) -> Reference:
    """The :class:`Reference` of a reference run ``res`` and its check run ``chk`` (a
    ``RunResult`` or None): ``error_estimate = max |q_check - q|`` when both ended with
    status 0, NaN otherwise."""
    est = float("nan")
    if chk is not None and res.status == 0 and chk.status == 0:
        est = float(np.max(np.abs(chk.q - res.q)))
    return Reference(t=res.t, q=res.q.copy(), v=res.v.copy(), status=res.status,
                     error_estimate=est)


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

    A launch runs the two runs as separate tasks (at the same time on two workers) and
    joins them with :func:`combine_reference`; the result is the same.
    """
    fparams, iparams, loose = reference_params(integrator, formulation, params)
    res = run_case(
        model, formulation, integrator, t_end=t_end, samples=samples,
        model_params=model_params, formulation_params=fparams, integrator_params=iparams,
        kernel=kernel,
    )  # fmt: skip
    chk = None
    if check and res.status == 0:
        chk = run_case(
            model, formulation, integrator, t_end=t_end, samples=samples,
            model_params=model_params, formulation_params=fparams, integrator_params=loose,
            kernel=kernel,
        )  # fmt: skip
    return combine_reference(res, chk)
