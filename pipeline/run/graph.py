"""The Dask graph of a study: kernel warm-up -> reference task(s) -> batch tasks.

``run_study`` is the one place that writes out the whole chain (docs/explanation/architecture.md)::

    StudySpec -> expand_grid -> ResultStore (template, or resume) -> warm kernels on the
    workers -> reference tasks -> chunk-aligned batch tasks (each writes its own rows)
    -> completion flag

Batch tasks depend on the reference futures, so the reference is computed once and sent
to each worker once. A reference is two tasks, its run and its check run (they run at the
same time on two workers), joined and stored by a third; they depend only on the reference
kernel's compile task, so they run while the other kernels are still being loaded. A batch
depends on its own kernel's compile task only (none when it runs interpreted), and batches
are submitted the most expensive first. Tasks carry ``retries`` for unexpected failures; a
worker that dies has its tasks rescheduled by the scheduler, and since the solvers are
deterministic the retried batch writes the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
from mbstudy.pipeline.run.batch import (
    REFERENCE_RUNS,
    BatchReport,
    compile_kernel,
    reference_run,
    run_batch,
    store_reference,
)
from mbstudy.pipeline.store.errors import StoreError, storage_fault
from mbstudy.pipeline.store.zarr_store import ResultStore


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
    started_at: float = 0.0  # time.time() when run_study began
    first_batch_started_at: float = float("nan")  # time.time() the first batch began computing
    first_batch_s: float = float("nan")  # seconds from run_study's start to the first batch done
    interrupted: bool = False
    still_running: int = 0  # tasks of an interrupted launch still running when it returned
    per_block: dict[str, dict] = field(default_factory=dict)
    # per kernel "model/formulation/integrator": {"s": seconds, "compiled": bool}
    kernels: dict[str, dict] = field(default_factory=dict)
    # per kernel: {"engine": "compiled" | "python", "reason": str, "cases": int}
    engines: dict[str, dict] = field(default_factory=dict)
    cases_python: int = 0  # cases run on an interpreted kernel (their wall_s not comparable)
    exit_code: int = 0  # of the command: 0 done (failed cases are data), 130 interrupted

    @property
    def failed(self) -> int:
        return self.cases_run - self.ok

    @property
    def status_names(self) -> dict[str, int]:
        """Cases run per status name (``ok``, ``diverged``...)."""
        from mbstudy.solvers.api import STATUS_NAMES

        return {STATUS_NAMES.get(k, str(k)): v for k, v in self.status_counts.items()}

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
    on_kernel: Callable[[dict, list[str]], None] | None = None,
    engine: str = "auto",
    kernel_keys: dict | None = None,
    wait_stopped: bool = False,
) -> LaunchSummary:
    """Run every batch of ``grid`` not yet done in ``store`` on ``client``'s cluster.

    ``wait_stopped``: on Ctrl-C, return only once no task of this launch runs on a worker
    (:func:`_wait_stopped`; for a cluster the launch does not close, an existing scheduler).

    ``engine``: ``auto``, ``compiled`` or ``python``, the policy that picks each kernel's
    engine (:func:`mbstudy.pipeline.plan.engines.choose_engines`): interpreted kernels get
    no compile task and their cases run the generated code as Python.

    ``on_kernel(info, waiting)``: called with ``waiting`` (the kernels not ready yet) once
    with ``info={}`` when the compile tasks are submitted, then as each kernel is ready,
    with ``info`` from :func:`~mbstudy.pipeline.run.batch.compile_kernel`.

    ``kernel_keys``: the kernels' keys, if the caller composed them already (launch.py).
    """
    from distributed import as_completed, wait

    t0 = time.perf_counter()
    summary = LaunchSummary(store=str(store.path), cases_total=grid.n_cases)
    summary.started_at = time.time()
    summary.workers = max(1, len(client.scheduler_info().get("workers", {})))
    spath = str(store.path)
    plan = tuple(grid.batch_sizes.items())  # the workers cut blocks as the store's chunks

    pending: Iterable = ()
    fresh_refs: list = []  # references computed by this launch (awaited even with no batch)
    try:
        # 1. warm-up: one compile task per kernel, spread over the workers so that different
        #    kernels compile at the same time (each writes the numba cache; a worker that
        #    needs a kernel another is compiling waits on its lock and loads the cache),
        #    then every worker loads all of them from the cache once.
        # 2. references: stored ones are reused (resume), missing ones are three tasks each
        #    (run, check run, join-and-store), submitted with the warm-up: a reference waits
        #    only for its own kernel's compile task, not for the other kernels nor for the
        #    plugin that loads every kernel on every worker.
        triples = study_kernels(study, grid)
        stored_refs = [store.read_reference(i) for i in range(len(grid.references))]
        choices = _engines(study, grid, store, engine, any(r is None for r in stored_refs),
                           kernel_keys)  # fmt: skip
        summary.engines = {c.name: {"engine": c.engine, "reason": c.reason, "cases": c.cases}
                           for c in choices.values()}  # fmt: skip
        engines = {t: c.engine for t, c in choices.items()}
        from mbstudy.pipeline.plan.engines import record_interpreted

        # the rent of the rent-or-buy rule (plan/engines.py)
        record_interpreted(choices, study.model_entry)
        compiled = [t for t in triples if engines.get(t, "compiled") == "compiled"]
        tw = time.perf_counter()
        warm = {
            t: client.submit(
                compile_kernel, t, key=f"compile-{'-'.join(t)}-{study.spec_hash[:8]}",
                priority=REFERENCE_PRIORITY, pure=False,  # the longest tasks: first
            )
            for t in compiled
        }
        ref_triple = triples[0]  # study_kernels puts the reference's kernel first
        after = [warm[ref_triple]] if ref_triple in warm else []
        refs = []
        tag = study.spec_hash[:8]
        for i, stored in enumerate(stored_refs):
            if stored is not None:
                refs.append(client.scatter(stored, broadcast=True))
                continue
            # the reference run and its check run are two tasks (they run at the same time
            # on two workers), joined and stored by a third
            runs = [client.submit(reference_run, study, i, which,
                                  *after,  # the reference kernel's compile task, if any
                                  plan=plan, engine=engines.get(ref_triple, "compiled"),
                                  key=f"reference-{which}-{i}-{tag}", retries=retries,
                                  priority=REFERENCE_PRIORITY, pure=False)
                    for which in REFERENCE_RUNS]  # fmt: skip
            refs.append(client.submit(store_reference, *runs, i, spath,
                                      key=f"reference-{i}-{tag}", retries=retries,
                                      priority=REFERENCE_PRIORITY, pure=False))  # fmt: skip
            fresh_refs.append(refs[-1])
        waiting = ["/".join(t) for t in compiled]
        if on_kernel is not None:
            on_kernel({}, list(waiting))
            for c in choices.values():  # interpreted kernels are ready at once
                if c.engine == "python":
                    on_kernel({"kernel": c.name, "s": 0.0, "compiled": False,
                               "engine": "python"}, list(waiting))  # fmt: skip
        from mbstudy.pipeline.run.warmup import WarmKernelsPlugin

        def kernels_ready() -> None:  # every compile task done: every worker loads them
            if compiled:
                client.register_plugin(WarmKernelsPlugin(compiled))
            summary.warm_s = time.perf_counter() - tw
            # a report only: a worker that dies meanwhile (its batches are resubmitted)
            # is left out instead of failing the launch
            answers = client.run(_worker_warm_seconds, on_error="return")
            summary.warm_per_worker = {addr: float(sum(v.values())) for addr, v
                                       in answers.items() if isinstance(v, dict)}  # fmt: skip

        # 3. batches not done yet, the most expensive first (longest processing time
        #    first: the launch ends near max(total work / workers, longest batch)), each
        #    depending on the reference futures and, for a compiled kernel, on its compile
        #    task, so interpreted batches start while kernels compile. At most `window`
        #    batch futures exist at a time (one per worker while the next batch is
        #    estimated LONG_BATCH_S or more: such batches are handed out as workers free up,
        #    which is list scheduling in that order): one more is submitted as one
        #    completes, and a completed future is dropped at once, so the launcher and the
        #    scheduler hold O(workers) batch objects however many cases the study has.
        todo = _pending_batches(store, grid, summary, _batch_cost(study, grid, choices))
        ac = as_completed(list(warm.values()))
        pending = ac.futures  # the futures not finished yet (cancelled on Ctrl-C)
        compiling = {f.key for f in warm.values()}
        if not compiling:
            kernels_ready()
        where: dict[str, tuple[int, int]] = {}
        window = submit_window(summary.workers)
        t_window = time.perf_counter()
        head = [next(todo, None)]

        def fill() -> None:
            while head[0] is not None:
                bi, b, cost = head[0]
                if len(where) >= (summary.workers if cost >= LONG_BATCH_S else window):
                    return
                head[0] = next(todo, None)
                t = (study.model, grid.blocks[bi].formulation, grid.blocks[bi].integrator)
                fut = client.submit(run_batch, study, bi, b, spath, *refs, plan=plan,
                                    engine=engines.get(t, "compiled"), after=warm.get(t),
                                    key=f"batch-{grid.blocks[bi].name}-{b}-{study.spec_hash[:8]}",
                                    retries=retries, pure=False)  # fmt: skip
                where[fut.key] = (bi, b)
                ac.add(fut)

        fill()
        for fut in ac:
            if fut.key in compiling:  # a kernel is ready
                compiling.discard(fut.key)
                info = fut.result()
                waiting.remove(info["kernel"])
                summary.kernels[info["kernel"]] = {"s": info["s"], "compiled": info["compiled"]}
                if on_kernel is not None:
                    on_kernel(info, list(waiting))
                if not compiling:
                    kernels_ready()
                fill()
                continue
            bi, b = where.pop(fut.key)
            try:
                report: BatchReport = fut.result()
            except Exception as exc:  # retries exhausted, or the worker kept dying
                if storage_fault(exc):  # the store failed, not the case: no 'error'
                    raise  # recorded; launch.store_faults: one line, exit 1
                report = record_failed_batch(store, grid, bi, b, exc)
            if report.storage_fault:  # the worker's write failed on the storage itself
                raise StoreError(report.storage_fault)  # launch.store_faults: exit 1
            fut.release()  # drop it now: nothing per batch outlives its accounting
            del fut
            _account(summary, report, t0)
            if on_batch is not None:
                on_batch(report)
            if time.perf_counter() - t_window > WINDOW_REFRESH_S:  # workers may join later
                workers = len(client.scheduler_info().get("workers", {}))
                summary.workers = max(summary.workers, workers)
                window = submit_window(workers)
                t_window = time.perf_counter()
            fill()
        # a reference repaired when every batch is done has no batch waiting for it (a
        # failed one stays pending; nothing is sent back to the launcher)
        wait(fresh_refs)
    except KeyboardInterrupt:
        summary.interrupted = True
        client.cancel([*pending, *fresh_refs])
        if wait_stopped:
            summary.still_running = _wait_stopped(client, study.spec_hash[:8])
    summary.wall_s = time.perf_counter() - t0
    complete = not summary.interrupted and all(
        store.done_batches(b.name).all() for b in grid.blocks
    ) and all(store.read_reference(i) is not None for i in range(len(grid.references)))
    store.mark_complete(complete, summary=summary_dict(summary))
    return summary


# how long Ctrl-C on an existing scheduler waits for the launch's running tasks to end
STOP_WAIT_S = 60.0


def _wait_stopped(client, tag: str, timeout: float = STOP_WAIT_S) -> int:
    """After Ctrl-C on a cluster the launch does not close (an existing scheduler): wait
    until no task of this launch (its key carries the study hash ``tag``) runs on a worker;
    return how many still ran at the timeout (0: none).

    Cancelling a future does not stop its task: distributed cannot stop a worker's thread,
    and the scheduler forgets the task at once. A batch still computing would write the
    store after the launch released its lock, into whatever the next launch made of it
    (with ``--overwrite``: another study's store, whose batch it would mark done)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            counts = client.run(_running_tasks, tag, on_error="return")
        except Exception:  # the scheduler is gone: nothing can be waited for
            return 0
        running = sum(n for n in counts.values() if isinstance(n, int))
        if running == 0 or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def _running_tasks(tag: str, dask_worker=None) -> int:
    """On a worker: its tasks executing (cancelled ones included) whose key holds ``tag``."""
    return sum(1 for ts in dask_worker.state.executing if tag in str(ts.key))


def _engines(study, grid, store: ResultStore, policy: str, with_reference: bool,
             keys: dict | None = None) -> dict:  # fmt: skip
    """Each kernel's engine for the cases still to run (plan/engines.py); ``keys``: the
    kernels' keys when the caller has them (else composed here)."""
    from mbstudy.pipeline.plan.engines import choose_engines

    pending = {}
    for block in grid.blocks:
        done = store.done_batches(block.name)
        starts = block.batch_size * np.arange(done.size)
        sizes = np.minimum(block.batch_size, block.n_cases - starts)
        pending[block.name] = int(sizes[~done].sum())
    known: dict = {}
    if keys:
        from mbstudy.solvers import api as solvers
        def cached(t) -> bool:
            return solvers.kernel_is_cached(*t, key=keys.get(t))

        def spent(t) -> float:
            return solvers.kernel_interpreted_seconds(t, key=keys.get(t))

        known = {"cached": cached, "spent": spent}
    return choose_engines(study, grid, policy, pending=pending, with_reference=with_reference,
                          **known)  # fmt: skip


def _worker_warm_seconds(dask_worker=None) -> dict[str, float]:
    """Seconds each kernel took to compile or load on this worker (set by the plugin)."""
    return dict(getattr(dask_worker, "mbstudy_warm_s", {}) or {})


REFERENCE_PRIORITY = 1_000_000  # Dask priority: compile and reference tasks before batches
WINDOW_PER_WORKER = 4  # batch futures in flight per worker
# estimated CPU seconds from which a batch is handed out only to a free worker (one batch
# future per worker): a launcher round trip (a few ms) is then under 1 % of the batch,
# and the most expensive batches cannot queue behind one another on one worker while
# another idles. Auto batch sizes aim at BATCH_SECONDS = 2 s compiled, so this concerns
# interpreted batches (and long fixed-size ones).
LONG_BATCH_S = 5.0
MIN_WINDOW = 16
WINDOW_REFRESH_S = 5.0  # how often the launcher re-reads the number of workers


def submit_window(workers: int) -> int:
    """Batch futures kept in flight: enough that no worker waits for the launcher to submit
    (``WINDOW_PER_WORKER`` per worker, at least ``MIN_WINDOW``), few enough that launcher
    and scheduler memory do not grow with the number of batches."""
    return max(MIN_WINDOW, WINDOW_PER_WORKER * max(1, workers))


def _batch_cost(study, grid, choices: dict) -> Callable[[int], float]:
    """Estimated CPU seconds of one case of block ``bi`` on its kernel's engine (the cost
    model, times the interpreted factor for an interpreted kernel: plan/engines.py)."""
    from mbstudy.pipeline.plan.engines import case_seconds

    costs = []
    for block in grid.blocks:
        c = choices.get((study.model, block.formulation, block.integrator))
        costs.append(case_seconds(block, c.engine if c is not None else "compiled",
                                  study.model_entry))
    return costs.__getitem__


def _pending_batches(store: ResultStore, grid, summary: LaunchSummary,
                     case_cost: Callable[[int], float] | None = None,
                     ) -> Iterator[tuple[int, int, float]]:  # fmt: skip
    """(block index, batch, estimated seconds) of every batch not done yet, the most
    expensive first by
    ``case_cost(block index)`` x cases (longest processing time first, Graham 1969: the
    makespan is then at most 4/3 of the optimum; ties keep the grid's order), else in
    grid order; done batches are counted as skipped in ``summary`` up front (the store's
    done mask is read once per block)."""
    blocks, batches, costs = [], [], []
    for bi, block in enumerate(grid.blocks):
        done = store.done_batches(block.name)
        info = summary.per_block.setdefault(
            block.name, {"cases": block.n_cases, "ok": 0, "failed": 0, "skipped": 0}
        )
        sizes = np.minimum(
            block.batch_size, block.n_cases - block.batch_size * np.arange(done.size)
        )
        skipped = int(sizes[done].sum())
        summary.batches_skipped += int(done.sum())
        summary.cases_skipped += skipped
        info["skipped"] += skipped
        todo = np.flatnonzero(~done)
        blocks.append(np.full(todo.size, bi))
        batches.append(todo)
        costs.append(sizes[todo] * (case_cost(bi) if case_cost is not None else 0.0))
    if not blocks:
        return
    bis, bs, cost = np.concatenate(blocks), np.concatenate(batches), np.concatenate(costs)
    for j in np.argsort(-cost, kind="stable"):
        yield int(bis[j]), int(bs[j]), float(cost[j])


def _account(summary: LaunchSummary, report: BatchReport, t0: float | None = None) -> None:
    if t0 is not None and summary.batches_run == 0:
        summary.first_batch_s = time.perf_counter() - t0
        summary.first_batch_started_at = report.started or float("nan")
    summary.batches_run += 1
    summary.cases_run += report.n
    summary.ok += report.ok
    summary.kernel_s += report.kernel_s
    summary.compile_s += report.compile_s
    summary.cases_python += report.n if report.engine == "python" else 0
    for code, count in report.status_counts.items():
        summary.status_counts[code] = summary.status_counts.get(code, 0) + count
    info = summary.per_block[report.block]
    info["ok"] += report.ok
    info["failed"] += report.failed


def record_failed_batch(
    store: ResultStore, grid, block_index: int, batch: int, exc: BaseException
) -> BatchReport:
    """A batch task that failed after its retries becomes data: its cases get status
    ``error`` with the exception text (written by the launcher; the study carries on)."""
    import numpy as np
    from mbstudy.solvers.api import ERROR

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
