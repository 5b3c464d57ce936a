"""A lower estimate of the memory one batch task needs on a worker, checked at plan time
against the memory of a worker, so that a study that would run its workers out of memory
is refused with the figure and how to lower it, before anything runs or is written.

A batch task (:func:`mbstudy.pipeline.run.batch.run_batch`) holds, for a model of ``n``
coordinates and ``m`` constraints and ``S`` output times:

* the sampled series of every case of the batch until the batch is written:
  ``batch_size * S * sum(width) * 8`` bytes (``q``/``v`` have width ``n``, ``lam`` ``m``,
  the others 1: :func:`mbstudy.pipeline.plan.summary.series_width`);
* the case being solved: its sampled trajectory and the reference's (``2 * S * (2n + m)``
  float64) and the solver's dense matrices, at least the mass matrix, the constraint
  Jacobian and the augmented matrix ``(n + m)^2`` (the workspace of
  ``mbstudy.solvers.workspace``): counted as ``3 (n + m)^2`` float64.

The check is against Dask's pause threshold (``distributed.worker.memory.pause``, 80 % by
default) of one worker's memory: a ``[cluster]`` job's ``memory`` split over its
``processes``, or what a local worker gets (``distributed``'s ``memory_limit="auto"``,
the machine's memory over the LocalCluster's workers).
"""

from __future__ import annotations

from mbstudy.pipeline.plan.batches import model_sizes_of
from mbstudy.pipeline.plan.grid import Grid
from mbstudy.pipeline.plan.summary import series_width
from mbstudy.pipeline.study.spec import StudyError, StudySpec

__all__ = ["MATRICES", "batch_bytes", "check_memory", "worker_memory"]

MATRICES = 3  # dense (n + m)^2 float64 matrices a solver holds at least
MAX_SIZES = 10_000  # distinct model parameter sets whose sizes are asked


def batch_bytes(samples: int, series: tuple[str, ...], n: int, m: int,
                batch_size: int) -> tuple[float, float]:  # fmt: skip
    """``(bytes of one batch task, bytes of one case)`` by the module's estimate."""
    width = sum(series_width(s, n, m) for s in series)
    case = 2.0 * samples * (2 * n + m) * 8 + MATRICES * float(n + m) ** 2 * 8
    return batch_size * float(samples) * width * 8 + case, case + float(samples) * width * 8


def worker_memory(spec: StudySpec, workers: int = 1) -> tuple[float, str]:
    """``(bytes, where the figure comes from)`` of one worker of the study's cluster: a
    ``[cluster]`` job's memory over its processes, else what a LocalCluster of ``workers``
    processes gives each (``distributed``'s ``"auto"``: the machine's memory split evenly;
    ``workers = 1`` for a case run in this process)."""
    from dask.utils import parse_bytes

    cluster = spec.cluster
    if cluster is not None and cluster.kind:
        procs = getattr(cluster, "processes", None) or 1
        mem = getattr(cluster, "memory", None) or "2GB"  # jobqueue_cluster's default
        return parse_bytes(mem) / procs, f"[cluster] memory = {mem!r} over {procs} process(es)"
    import logging

    from distributed.worker_memory import parse_memory_limit

    limit = parse_memory_limit("auto", 1, max(1, workers), logger=logging.getLogger(__name__))
    return float(limit), f"this machine's memory over {max(1, workers)} local worker(s)"


def check_memory(spec: StudySpec, grid: Grid, workers: int = 1) -> None:
    """Refuse (:class:`StudyError`, one line naming the key to change) a study whose batch
    tasks need more than the pause threshold of a worker's memory (``workers``: the
    processes of a LocalCluster, see :func:`worker_memory`)."""
    import dask

    limit, where = worker_memory(spec, workers)
    usable = limit * float(dask.config.get("distributed.worker.memory.pause", 0.8) or 0.8)
    memo: dict = {}
    for block in grid.blocks:
        sets = {block.model_params}
        sets |= {r.model_params for r in grid.references[:MAX_SIZES]}
        for params in sets:
            n, m = model_sizes_of(spec.model_entry, params, memo)
            need, case = batch_bytes(block.samples, spec.output.series, n, m, block.batch_size)
            if need > usable:
                key, how = _advice(spec, block.samples, n, m, case, usable)
                raise StudyError(
                    spec.source, key,
                    f"block {block.name!r} needs ~{_gb(need)} per batch task of"
                    f" {block.batch_size} case(s) (~{_gb(case)} per case: n = {n}, m = {m},"
                    f" {block.samples} samples), more than the {_gb(usable)} usable of"
                    f" {_gb(limit)} per worker ({where}); {how}, or raise [cluster] memory",
                )


def _advice(spec: StudySpec, samples: int, n: int, m: int, case: float,
            usable: float) -> tuple[str, str]:  # fmt: skip
    """The key to change and how, for a batch task that does not fit."""
    if case <= usable:
        most = max(1, int(usable // max(case, 1.0)))
        return "study.batch_size", (f"set study.batch_size to at most {most}, lower"
                                    " study.samples or drop series from output.series")
    matrices = MATRICES * float(n + m) ** 2 * 8
    if matrices > usable / 2:
        return "model", "use a smaller model (its dense matrices alone do not fit)"
    return "study.samples", "lower study.samples or drop q, v, lam from output.series"


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.3g} GB"
