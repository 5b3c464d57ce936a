"""The public stages of a study besides ``launch``: ``plan``, ``warm`` and ``report``.

::

    plan(study)    -> PlanSummary    (load_study -> expand_grid -> check_assembly ->
                                      plan_summary + choose_engines [+ job script])
    warm(study)    -> WarmSummary    (load_study -> expand_grid -> study_kernels ->
                                      warm_study: compile into the shared caches)
    launch(study)  -> LaunchSummary  (run/launch.py)
    report(stores) -> ReportSummary  (analysis/report.py's write_report)

Each is ``mbstudy.plan`` / ``mbstudy.warm`` / ``mbstudy.report``, and the command line's
``mbstudy plan`` / ``warm`` / ``report`` call them and only print what they return. Bad
input raises :class:`~mbstudy.pipeline.run.launch.LaunchError`,
:class:`~mbstudy.pipeline.study.spec.StudyError` or
:class:`~mbstudy.pipeline.store.zarr_store.StoreError` before anything is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mbstudy.pipeline.study.spec import StudySpec

__all__ = ["PlanSummary", "ReportSummary", "WarmSummary", "plan", "report", "warm"]


@dataclass(frozen=True)
class PlanSummary:
    """What a study would run: ``details`` is :func:`mbstudy.pipeline.plan.summary.plan_summary`
    (JSON-serializable: blocks with their axes, batches, estimated sizes) with the
    ``overrides``, the ``engines`` and, for a SLURM/PBS plan, the ``job_script``."""

    study: str
    model: str
    n_cases: int
    n_batches: int
    n_references: int
    est_store_bytes: int
    overrides: tuple[str, ...]
    engines: Mapping[str, Mapping[str, str]]
    job_script: str | None
    details: Mapping[str, Any] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The whole plan as one JSON-serializable dict (``mbstudy plan --json``)."""
        return dict(self.details)


@dataclass(frozen=True)
class WarmSummary:
    """The kernels a study needs, each ``{"s": seconds, "compiled": bool}`` (False: it was
    found in the caches), the kernel directory they are in and the whole wall time."""

    kernels: Mapping[str, Mapping[str, Any]]
    kernel_dir: str
    wall_s: float

    @property
    def n_compiled(self) -> int:
        """Kernels this call compiled (the others were in the caches)."""
        return sum(bool(k["compiled"]) for k in self.kernels.values())


@dataclass(frozen=True)
class ReportSummary:
    """The report's page (``OUT/index.html``, figures beside it) and the stores it covers."""

    path: Path
    stores: tuple[str, ...]


def _spec(study: StudySpec | str | Path, force: bool, overrides: Sequence[str]) -> StudySpec:
    """A loaded study, or ``study`` itself if it is one (overrides need a file)."""
    from mbstudy.pipeline.run.launch import LaunchError, _load
    from mbstudy.pipeline.study.spec import StudySpec

    if isinstance(study, StudySpec):
        if overrides:
            raise LaunchError("overrides apply to a study file; pass its path, not a StudySpec")
        return study
    return _load(Path(study), force, overrides)


def plan(
    study: StudySpec | str | Path,
    *,
    force: bool = False,
    cluster: str | None = None,
    overrides: Sequence[str] = (),
) -> PlanSummary:
    """Blocks, axes, case counts, batches, store size and kernel engines of ``study``;
    runs nothing and writes nothing. ``cluster`` (``"slurm"`` or ``"pbs"``) adds the
    dask-jobqueue job script of the study's ``[cluster]`` section."""
    from mbstudy.pipeline.plan.assembly import check_assembly
    from mbstudy.pipeline.plan.engines import choose_engines
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.plan.summary import plan_summary
    from mbstudy.pipeline.run.launch import CLUSTER_KINDS, LaunchError

    if cluster is not None and cluster not in CLUSTER_KINDS:
        raise LaunchError(f"--cluster: expected slurm or pbs, got {cluster!r}")
    from mbstudy.pipeline.cluster.local import default_workers
    from mbstudy.pipeline.plan.memory import check_memory

    spec = _spec(study, force, overrides)
    grid = expand_grid(spec)
    # before the assembly, which allocates the model's matrices; the workers of a
    # default launch (a [cluster] job's memory when the study names one)
    check_memory(spec, grid, default_workers())
    check_assembly(spec, grid)
    details = plan_summary(spec, grid)
    details["overrides"] = list(spec.overrides)  # --set, as the store records them
    details["engines"] = {c.name: {"engine": c.engine, "reason": c.reason}
                          for c in choose_engines(spec, grid).values()}  # fmt: skip
    script = None
    if cluster:
        # the script launch submits (the same job name), rendered without a scheduler
        from mbstudy.pipeline.cluster.jobqueue import render_job_script
        from mbstudy.pipeline.cluster.jobs import job_name
        from mbstudy.pipeline.store.urls import store_location

        script = render_job_script(cluster, spec.cluster,
                                   job_name(store_location(spec.output.store)))  # fmt: skip
        details["job_script"] = script
    return PlanSummary(
        study=details["study"],
        model=details["model"],
        n_cases=details["n_cases"],
        n_batches=details["n_batches"],
        n_references=details["n_references"],
        est_store_bytes=details["est_store_bytes"],
        overrides=tuple(spec.overrides),
        engines=details["engines"],
        job_script=script,
        details=details,
    )


def warm(
    study: StudySpec | str | Path,
    *,
    workers: int | None = None,
    overrides: Sequence[str] = (),
    on_start: Callable[[int, str], None] | None = None,
    on_kernel: Callable[[dict], None] | None = None,
) -> WarmSummary:
    """Compile every kernel ``study`` needs into the shared caches without running it
    (:func:`mbstudy.pipeline.run.prewarm.warm_study`, ``workers`` processes, default the
    cores). ``on_start(n_kernels, kernel_dir)`` is called before the first compile,
    ``on_kernel(info)`` after each kernel (``kernel``, ``s``, ``compiled``)."""
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.run.graph import study_kernels
    from mbstudy.pipeline.run.prewarm import warm_study
    from mbstudy.solvers.api import kernel_dir

    spec = _spec(study, True, overrides)  # warming is no launch: max_cases does not apply
    triples = study_kernels(spec, expand_grid(spec))
    t0 = time.perf_counter()
    where = str(kernel_dir())
    if on_start is not None:
        on_start(len(triples), where)
    kernels = warm_study(triples, workers, on_kernel)
    return WarmSummary(kernels=kernels, kernel_dir=where, wall_s=time.perf_counter() - t0)


def report(
    stores: str | Path | Sequence[str | Path],
    *,
    out: str | Path = "report",
    baseline: str | None = None,
) -> ReportSummary:
    """The self-contained HTML report of one store or several
    (:func:`mbstudy.pipeline.analysis.report.write_report`) in the folder ``out``."""
    from mbstudy.pipeline.analysis.report import write_report

    if isinstance(stores, str | Path):
        stores = [stores]
    stores = [str(s) for s in stores]
    path = write_report(stores, out, baseline=baseline)
    return ReportSummary(path=Path(path), stores=tuple(stores))
