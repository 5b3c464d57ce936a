"""The Dask graph of a study: kernel warm-up -> reference task(s) -> batch tasks.

``run_study`` is the one place that writes out the whole chain (STYLE.md rule 1)::

    StudySpec -> expand_grid -> ResultStore (template, or resume) -> warm kernels on the
    workers -> reference tasks -> chunk-aligned batch tasks (each writes its own rows)
    -> completion flag

Batch tasks depend on the reference futures, so the reference is computed once and sent
to each worker once. Tasks carry ``retries`` for unexpected failures; a worker that dies
has its tasks rescheduled by the scheduler, and since the solvers are deterministic the
retried batch writes the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.batch import BatchReport, run_batch, run_reference, warm_kernels
from pipeline.store import ResultStore


@dataclass
class LaunchSummary:
    """What a launch did (printed by the CLI, kept in the store's attrs)."""

    store: str
    cases_total: int
    cases_run: int = 0
    cases_skipped: int = 0
    batches_run: int = 0
    batches_skipped: int = 0
    ok: int = 0
    status_counts: dict[int, int] = field(default_factory=dict)
    kernel_s: float = 0.0
    compile_s: float = 0.0
    warm_s: float = 0.0
    wall_s: float = 0.0
    workers: int = 0
    warm_per_worker: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    per_block: dict[str, dict] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.cases_run - self.ok

    @property
    def efficiency(self) -> float:
        """Sum of kernel wall times / (launch wall time x workers)."""
        if self.wall_s <= 0 or self.workers <= 0:
            return float("nan")
        return self.kernel_s / (self.wall_s * self.workers)


def study_kernels(study, grid) -> list[tuple[str, str, str]]:
    """Every (model, formulation, integrator) triple the study needs, reference first."""
    triples = [(study.model, study.reference.formulation, study.reference.integrator)]
    for block in grid.blocks:
        t = (study.model, block.formulation, block.integrator)
        if t not in triples:
            triples.append(t)
    return triples


def run_study(
    study,
    grid,
    store: ResultStore,
    client,
    on_batch: Callable[[BatchReport], None] | None = None,
    retries: int = 2,
) -> LaunchSummary:
    """Run every batch of ``grid`` not yet done in ``store`` on ``client``'s cluster."""
    from distributed import as_completed

    t0 = time.perf_counter()
    summary = LaunchSummary(store=str(store.path), cases_total=grid.n_cases)
    summary.workers = max(1, len(client.scheduler_info().get("workers", {})))
    spath = str(store.path)

    pending: list = []
    try:
        # 1. warm-up: one compile task per kernel, spread over the workers (each writes the
        #    numba cache), then every worker loads all of them from the cache once.
        triples = study_kernels(study, grid)
        tw = time.perf_counter()
        warm = [
            client.submit(warm_kernels, [t], key=f"compile-{'-'.join(t)}-{study.spec_hash[:8]}",
                          pure=False)
            for t in triples
        ]
        client.gather(warm)
        from pipeline.warmup import WarmKernelsPlugin

        client.register_plugin(WarmKernelsPlugin(triples))
        summary.warm_s = time.perf_counter() - tw
        summary.warm_per_worker = {
            addr: float(sum(v.values()))
            for addr, v in client.run(_worker_warm_seconds).items()
        }

        # 2. references: stored ones are reused (resume), missing ones are one task each.
        refs = []
        for i in range(len(grid.references)):
            stored = store.read_reference(i)
            if stored is not None:
                refs.append(client.scatter(stored, broadcast=True))
            else:
                refs.append(client.submit(run_reference, study, i, spath,
                                          key=f"reference-{i}-{study.spec_hash[:8]}",
                                          retries=retries, pure=False))

        # 3. batches not done yet, each depending on the reference futures.
        futures = pending
        where: dict[str, tuple[int, int]] = {}
        for bi, block in enumerate(grid.blocks):
            done = store.done_batches(block.name)
            info = summary.per_block.setdefault(
                block.name, {"cases": block.n_cases, "ok": 0, "failed": 0, "skipped": 0}
            )
            for b in range(block.n_batches):
                start, stop = block.batch_range(b)
                if done[b]:
                    summary.batches_skipped += 1
                    summary.cases_skipped += stop - start
                    info["skipped"] += stop - start
                    continue
                fut = client.submit(run_batch, study, bi, b, spath, *refs,
                                    key=f"batch-{block.name}-{b}-{study.spec_hash[:8]}",
                                    retries=retries, pure=False)  # fmt: skip
                futures.append(fut)
                where[fut.key] = (bi, b)
        for fut in as_completed(futures):
            try:
                report: BatchReport = fut.result()
            except Exception as exc:  # retries exhausted, or the worker kept dying
                bi, b = where[fut.key]
                report = record_failed_batch(store, grid, bi, b, exc)
            _account(summary, report)
            if on_batch is not None:
                on_batch(report)
    except KeyboardInterrupt:
        summary.interrupted = True
        client.cancel(pending)
    summary.wall_s = time.perf_counter() - t0
    complete = not summary.interrupted and all(
        store.done_batches(b.name).all() for b in grid.blocks
    )
    store.mark_complete(complete, summary=summary_dict(summary))
    return summary


def _worker_warm_seconds(dask_worker=None) -> dict[str, float]:
    """Seconds each kernel took to compile or load on this worker (set by the plugin)."""
    return dict(getattr(dask_worker, "mbstudy_warm_s", {}) or {})


def _account(summary: LaunchSummary, report: BatchReport) -> None:
    summary.batches_run += 1
    summary.cases_run += report.n
    summary.ok += report.ok
    summary.kernel_s += report.kernel_s
    summary.compile_s += report.compile_s
    for code, count in report.status_counts.items():
        summary.status_counts[code] = summary.status_counts.get(code, 0) + count
    info = summary.per_block[report.block]
    info["ok"] += report.ok
    info["failed"] += report.failed


def record_failed_batch(store: ResultStore, grid, block_index: int, batch: int,
                        exc: BaseException) -> BatchReport:
    """A batch task that failed after its retries becomes data: its cases get status
    ``error`` with the exception text (written by the launcher; the study carries on)."""
    import numpy as np

    from solvers.status import ERROR

    block = grid.blocks[block_index]
    start, stop = block.batch_range(batch)
    n = stop - start
    text = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    store.write_batch(block.name, start, stop, {
        "status": np.full(n, ERROR, dtype=np.int8),
        "error": np.array([text] * n, dtype=str),
        "done": np.ones(n, dtype=bool),
    })  # fmt: skip
    return BatchReport(block=block.name, batch=batch, n=n, ok=0, status_counts={ERROR: n})


def summary_dict(summary: LaunchSummary) -> dict:
    """A JSON-able view of a summary."""
    from dataclasses import asdict

    d = asdict(summary)
    d["failed"] = summary.failed
    d["efficiency"] = summary.efficiency
    d["status_counts"] = {str(k): v for k, v in summary.status_counts.items()}
    return d
