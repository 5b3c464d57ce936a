"""Every model parameter set of a study must assemble before anything is launched."""

from __future__ import annotations

from mbstudy.pipeline.plan.grid import Grid
from mbstudy.pipeline.plan.purepy import pure_python
from mbstudy.pipeline.study.spec import StudyError, StudySpec
from mbstudy.solvers.api import AssemblyError, pack_params

__all__ = ["check_assembly", "check_model_file"]


def check_assembly(study: StudySpec, grid: Grid) -> None:
    """Assemble the initial state of every reference's model parameters; a set that does not
    assemble raises :class:`StudyError` naming the parameters that differ from the defaults.

    The model's functions run as plain Python (:func:`mbstudy.pipeline.plan.purepy.pure_python`),
    so the launcher never initialises numba nor loads a kernel: only the workers do.
    """
    entry = study.model_entry  # resolved once, when the study was loaded
    initial_state = pure_python(entry.module.initial_state)
    for key in grid.references:
        mp = dict(key.model_params)
        try:
            initial_state(pack_params(entry.params, mp))
        except AssemblyError as exc:
            changed = {k: v for k, v in mp.items()
                       if v != next(p.default for p in entry.params if p.name == k)}
            where = ", ".join(f"model.{k} = {v!r}" for k, v in changed.items()) or "model"
            raise StudyError(study.source, where, str(exc).splitlines()[0]) from None
    check_model_file(study)


def check_model_file(study: StudySpec) -> None:
    """A model from a mechanism file must pass the ``check-model`` checks at its default
    parameters (finite differences, mass matrix, forces, assembly) before a plan or launch;
    a failing check raises :class:`StudyError` on ``study.model``."""
    from mbstudy.pipeline.plan.purepy import pure_model
    from mbstudy.solvers.api import is_model_path, run_checks

    if not is_model_path(study.model):
        return
    entry = study.model_entry
    for check in run_checks(pure_model(entry.module), pack_params(entry.params, {})):
        if not check.ok:
            why = f"check-model: {check.name}: {check.detail}"
            raise StudyError(study.source, "study.model", why)
