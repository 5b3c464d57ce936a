"""``launch``: run a study on a Dask cluster into its Zarr store (the public entry point).

::

    launch(study, store=..., cluster=...) -> LaunchSummary

    study file --load_study--> StudySpec --expand_grid--> Grid --check_assembly-->
    store (create, or resume with the batch sizes it recorded) --open_client-->
    run_study (warm kernels -> references -> batches) --> LaunchSummary

The command line (``mbstudy launch``) and ``mbstudy reproduce`` both call :func:`launch`.
With neither ``scheduler`` nor ``cluster`` (nor a ``[cluster]`` section in the study) the
workers are an embedded LocalCluster, started while the launcher reads the study
(:class:`~mbstudy.pipeline.cluster.local.WorkerForkServer`,
:class:`~mbstudy.pipeline.cluster.local.ClusterStart`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mbstudy.pipeline.run.errors import LaunchError
from mbstudy.pipeline.store.urls import store_location

if TYPE_CHECKING:
    from mbstudy.pipeline.plan.grid import Grid
    from mbstudy.pipeline.run.graph import LaunchSummary
    from mbstudy.pipeline.store.zarr_store import ResultStore
    from mbstudy.pipeline.study.spec import StudySpec

# This module imports only what is light at its top: :func:`launch` starts the workers'
# forkserver first, and the launcher's own imports (numba through the solvers, zarr,
# numpy: ~0.3 s) then run while the server imports the worker stack.

__all__ = ["EXIT_INTERRUPTED", "LaunchError", "LaunchSummary", "launch"]


def __getattr__(name: str):
    """``LaunchSummary`` (run/graph.py), imported when first asked for."""
    if name == "LaunchSummary":
        from mbstudy.pipeline.run.graph import LaunchSummary

        return LaunchSummary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

EXIT_INTERRUPTED = 130
PROGRESS_EVERY_S = 10.0  # run/progress.py's default (not imported here: it loads rich)
CLUSTER_KINDS = ("slurm", "pbs")


@dataclass(frozen=True)
class _Options:
    store: object | None  # a Path or an FsspecLocation (store/urls.py)
    cluster: str | None
    workers: int | None
    scheduler: str | None
    jobs: int | None
    resume: bool
    overwrite: bool
    retry_failed: bool
    quiet: bool
    echo: Callable[[str], None]
    engine: str = "auto"
    progress_every: float = PROGRESS_EVERY_S
    t_start: float = 0.0  # time.perf_counter() when launch() was called


def launch(
    study: StudySpec | str | Path,
    *,
    store: str | Path | None = None,
    cluster: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    jobs: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    retry_failed: bool = False,
    force: bool = False,
    quiet: bool = False,
    echo: Callable[[str], None] | None = None,
    engine: str = "auto",
    overrides: Sequence[str] = (),
    progress_every: float | None = None,
) -> LaunchSummary:
    """Run every case of ``study`` not yet done into its store; return what was done.

    Parameters
    ----------
    study : a study file (TOML) or a loaded :class:`StudySpec`.
    store : the store's path or URL (``s3://BUCKET/NAME.zarr``; default: the study's
        ``output.store``).
    cluster : ``"slurm"`` or ``"pbs"`` (dask-jobqueue; default: the study's ``[cluster]``).
    workers : LocalCluster worker processes (default: one per core).
    scheduler : address of an existing Dask scheduler.
    jobs : batch jobs to start (``cluster``).
    resume : require an existing store and resume it.
    overwrite : replace an existing store (excludes ``resume``).
    retry_failed : resume and also rerun the batches with cases of status ``error``.
    force : accept more cases than ``study.max_cases``.
    quiet : no progress bar.
    echo : where one-line messages go (default: ``print``).
    engine : ``auto`` (default: a kernel that is not cached runs interpreted when its
        cases cost less than its compile), ``compiled`` or ``python``
        (:mod:`mbstudy.pipeline.plan.engines`).
    overrides : ``KEY=VALUE`` strings set in the study file before validation
        (``--set``, :mod:`mbstudy.pipeline.study.overrides`), recorded in the store.
    progress_every : seconds between the plain progress lines printed where stderr is not
        a terminal (default 10; :class:`mbstudy.pipeline.run.progress.PlainProgress`).

    Returns
    -------
    LaunchSummary
        counts per status (``status_counts``, by code; ``status_names``), wall time, the
        store path and ``exit_code`` (0 done, solver failures included; 1 when any case
        ended with status ``error``, an unexpected exception, after everything else was
        written; 130 interrupted, the store is resumable).

    Raises
    ------
    LaunchError, StudyError, StoreError
        Bad input (nothing is written).
    StoreFault
        The store failed under the launch (full, read-only, unreachable); it is resumable.
    """
    t_start = time.perf_counter()  # the launch as the user waits for it (LaunchSummary.wall_s)
    forks = started = keys = None
    if scheduler is None and cluster is None and engine != "python":
        # the workers of a LocalCluster share this machine's kernel and numba caches, from
        # which code is loaded: another user's or a group-writable one is refused now
        from mbstudy.solvers.api import check_cache_dirs

        check_cache_dirs()
    if scheduler is None and cluster is None:
        # a LocalCluster unless the study names a [cluster]: the forkserver its workers fork
        # from imports their stack while the launcher reads the study (cluster.workerboot);
        # started first, stopped again on bad input
        from mbstudy.pipeline.cluster.local import WorkerForkServer

        forks = WorkerForkServer().start(kernels=True)
    try:
        from mbstudy.pipeline.plan.engines import POLICIES
        from mbstudy.pipeline.plan.grid import expand_grid
        from mbstudy.pipeline.study.spec import StudySpec

        resume = resume or retry_failed
        if resume and overwrite:
            flag = "--retry-failed" if retry_failed else "--resume"
            raise LaunchError(f"{flag} and --overwrite exclude each other")
        if engine not in POLICIES:
            raise LaunchError(f"--engine: expected one of {', '.join(POLICIES)}, got"
                              f" {engine!r}")  # fmt: skip
        if cluster is not None and cluster not in CLUSTER_KINDS:
            raise LaunchError(f"--cluster: expected slurm or pbs, got {cluster!r}")
        opts = _Options(
            store=store_location(store) if store is not None else None,
            cluster=cluster,
            workers=workers,
            scheduler=scheduler,
            jobs=jobs,
            resume=resume,
            overwrite=overwrite,
            retry_failed=retry_failed,
            quiet=quiet,
            echo=echo or print,
            engine=engine,
            progress_every=_interval(progress_every),
            t_start=t_start,
        )
        if isinstance(study, StudySpec) and overrides:
            raise LaunchError("overrides apply to a study file; pass its path, not a StudySpec")
        spec = study if isinstance(study, StudySpec) else _load(Path(study), force, overrides)
        if spec.searches:  # [[search]] blocks: rounds of proposed cases (a local folder)
            from mbstudy.pipeline.run.search import search_location

            search_location(spec, opts.store, opts.retry_failed)
        if spec.searches and not spec.runs:
            if forks is not None:
                forks.stop(unused=True)
                forks = None
            return _launch_searches(spec, opts)
        grid = expand_grid(spec)
        if forks is not None and not (spec.cluster and spec.cluster.kind):
            # the study is valid: start the LocalCluster now, while the launcher checks the
            # assembly and the store and writes the template (shut down on every error)
            from mbstudy.pipeline.cluster.local import ClusterStart

            server = forks
            started, forks = ClusterStart(workers, forks), None  # it owns the forkserver
            # the forkserver loads the cached kernels once, before it forks the workers;
            # it is always given a list (an empty one if the keys fail), never left waiting
            names: list[tuple[str, str, str]] = []
            try:
                keys = kernel_keys(spec, grid)
                if engine != "python":
                    names = cached_kernels(keys)
            finally:
                server.preload(names)
        summary = _launch_store(spec, grid, opts, started, keys)
    finally:
        if started is not None:
            started.close()
        if forks is not None:  # bad input, or a study that runs on SLURM/PBS
            forks.stop(unused=True)
    if spec.searches and not summary.interrupted:  # [[runs]] then [[search]] blocks
        return _and_searches(spec, opts, summary)
    return summary


def _launch_searches(spec: StudySpec, opts: _Options, resume: bool | None = None):
    """The study's search blocks (:func:`mbstudy.pipeline.run.search.launch_searches`)."""
    from mbstudy.pipeline.run.search import launch_searches, search_location

    kw = {k: getattr(opts, k) for k in ("workers", "scheduler", "cluster", "jobs", "quiet",
                                        "echo", "t_start")}  # fmt: skip
    return launch_searches(spec, search_location(spec, opts.store, opts.retry_failed),
                           resume=opts.resume if resume is None else resume,
                           overwrite=opts.overwrite and not spec.runs, **kw)


def _and_searches(spec: StudySpec, opts: _Options, grid: LaunchSummary) -> LaunchSummary:
    """After the grid blocks of a study that has both, its search blocks in the store's
    ``search`` group (resumed if begun: the grid's launch checked the store and options);
    the grid's summary with the searches' blocks and cases added, the worse exit status."""
    found = _launch_searches(spec, opts, resume=False)
    grid.per_block.update(found.per_block)
    grid.cases_run, grid.interrupted = grid.cases_run + found.cases_run, found.interrupted
    grid.exit_code = found.exit_code if found.interrupted else max(grid.exit_code, found.exit_code)
    grid.wall_s = time.perf_counter() - opts.t_start
    return grid


def _interval(seconds: float | None) -> float:
    """The plain progress interval: the default for None, else a number of seconds > 0."""
    if seconds is None:
        return PROGRESS_EVERY_S
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise LaunchError(f"--progress-every: expected a number of seconds > 0, got"
                          f" {seconds!r}")  # fmt: skip
    return float(seconds)


def _load(path: Path, force: bool, overrides: Sequence[str] = ()) -> StudySpec:
    from mbstudy.pipeline.study.parse import load_study

    if not path.exists():
        raise LaunchError(f"{path}: no such study file")
    return load_study(path, force=force, overrides=overrides)


def kernel_keys(spec: StudySpec, grid: Grid) -> dict[tuple[str, str, str], str | None]:
    """The kernel key (:func:`mbstudy.solvers.kernel_cache.current_key`) of every kernel
    the study needs, composed once per launch (the engine choice reuses them)."""
    from mbstudy.pipeline.run.graph import study_kernels
    from mbstudy.solvers import api as solvers
    return {t: solvers.kernel_cache_key(t, False, spec.model_entry)
            for t in study_kernels(spec, grid)}


def cached_kernels(keys: dict) -> list[tuple[str, str, str]]:
    """The kernels of ``keys`` whose compiled code is in the caches (loading is cheap)."""
    from mbstudy.solvers import api as solvers
    return [t for t, key in keys.items()
            if key is not None and solvers.kernel_is_cached(*t, key=key)]  # fmt: skip


def _launch_store(spec: StudySpec, grid: Grid, opts: _Options, started,
                  keys: dict | None = None) -> LaunchSummary:  # fmt: skip
    """Check the assembly, create or reopen the store (locked), run the study on it."""
    from mbstudy.pipeline.plan.assembly import check_assembly
    from mbstudy.pipeline.store.location import location
    from mbstudy.pipeline.store.recover import lost_root, recover_root
    from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError, changed_files
    from mbstudy.pipeline.study.hashing import store_hash_matches

    if opts.scheduler is None:  # an existing scheduler's workers are not ours to size
        from mbstudy.pipeline.cluster.local import default_workers
        from mbstudy.pipeline.plan.memory import check_memory

        check_memory(spec, grid, opts.workers or default_workers())
    check_assembly(spec, grid)
    path = opts.store if opts.store is not None else store_location(spec.output.store)
    loc = location(path)
    lock = loc.lock()  # refuses a location that cannot be written before anything else
    exists = loc.holds_other_files()
    rootless = exists and lost_root(path)  # arrays whose root zarr.json was lost
    if exists and not ResultStore.exists(path) and not rootless:
        raise StoreError(f"{path}: exists and is not an mbstudy store; choose another --store")
    if opts.resume and not (ResultStore.exists(path) or rootless):
        flag = "--retry-failed" if opts.retry_failed else "--resume"
        raise StoreError(f"{path}: {flag}: no store to resume")
    lock.acquire()
    try:
        rs = None
        for doc in loc.irregular_documents():  # a FIFO where a zarr.json was: lost metadata
            doc.unlink() if not doc.is_dir() or doc.is_symlink() else shutil.rmtree(doc)
            opts.echo(f"{doc}: not a regular file; removed (what it described is rebuilt)")
        rootless = rootless or (exists and lost_root(path))
        if rootless and not opts.overwrite and lost_root(path):
            _check_scheduler(opts.scheduler)  # every check before the first write
            recover_root(path, spec, grid)
            opts.echo(f"{path}: the root zarr.json was missing; rebuilt from the study (every"
                      " block holds its case ids)")
        if ResultStore.setup_incomplete(path):  # a setup that never finished: build it again
            opts.echo(f"{path}: the template was not finished; writing it again")
        elif ResultStore.exists(path) and not opts.overwrite:
            rs = ResultStore.open(path)
            if not store_hash_matches(spec, rs.spec_hash(), rs.batch_sizes()):
                from mbstudy.pipeline.study.references import changed_model_file

                attrs = rs.root_attrs()
                changed = (changed_files(attrs.get("referenced_files") or {}, spec)
                           + changed_model_file(attrs, spec))  # fmt: skip
                if changed:
                    raise StoreError(
                        f"{path}: {', '.join(changed)} changed since the store was made; use"
                        " --overwrite to start again or --store to choose another path"
                    )
                raise StoreError(_other_study(path, rs.root_attrs(), spec))
            grid = grid.with_batch_sizes(rs.batch_sizes())  # the store's chunks, as made
            _check_scheduler(opts.scheduler)
            opts.echo(f"resuming {path}")
            with store_faults(path):
                _repair_before_resume(rs, spec, grid, opts.echo)
                if opts.retry_failed:
                    n = sum(rs.reopen_failed_batches(b.name) for b in grid.blocks)
                    opts.echo(f"rerunning {n} batches with failed ('error') cases")
                    if n:
                        rs.mark_complete(False)
        if rs is None:
            if exists and opts.overwrite:
                loc.remove()
            _check_scheduler(opts.scheduler)
            rs = _create(path, spec, grid, fresh=not exists)
        with store_faults(path):
            summary = _run_on_cluster(spec, grid, rs, opts, started, keys)
        if getattr(lock, "lost", False):
            opts.echo(f"{path}: warning: the store's lease lock was taken over during the"
                      " launch (the launcher was paused longer than the lease); run"
                      " mbstudy verify on it")
        return summary
    finally:
        with store_faults(path):  # an object store gone by now: exit 1, not a traceback
            lock.release()


# what a fault of the store during a launch says after its cause (StoreFault, exit 1)
RESUMABLE = ("the launch stopped; the batches written so far are kept and the store is"
             " resumable: launch again once the cause is fixed (mbstudy verify checks it)")


@contextmanager
def store_faults(path) -> Iterator[None]:
    """Turn a failure of the store while the launch writes it (a full or read-only file
    system, a directory or FIFO in place of a chunk, an object store that stops
    answering, a store damaged meanwhile) into :class:`StoreFault`: one line, exit 1."""
    from mbstudy.pipeline.store.errors import (
        StoreError,
        StoreFault,
        storage_fault,
        storage_fault_text,
    )

    try:
        yield
    except StoreFault:
        raise
    except StoreError as exc:  # the store unreachable or damaged under the launch
        raise StoreFault(f"{str(exc).splitlines()[0]}; {RESUMABLE}") from None
    except Exception as exc:
        if not storage_fault(exc):
            raise
        raise StoreFault(f"{storage_fault_text(path, exc)}; {RESUMABLE}") from None


def _other_study(path, attrs: dict, spec: StudySpec) -> str:
    """Why a store of another study is refused: the command line's overrides differ (the
    file is the same), or the study itself does."""
    old, new = list(attrs.get("study_overrides") or []), list(spec.overrides)
    fix = "; use --overwrite to replace it or --store to choose another path"
    if attrs.get("study_text") == spec.text and old != new:
        def shown(items: list[str]) -> str:
            return " ".join(f"--set {o}" for o in items) or "no --set"

        return (f"{path}: made from the same study file with other overrides ({shown(old)});"
                f" this launch has {shown(new)}{fix}")
    return (f"{path}: made by another study ({attrs.get('study_name')!r}, hash"
            f" {str(attrs.get('spec_hash', ''))[:12]}){fix}")


def _check_scheduler(address: str | None, timeout: float = 5.0) -> None:
    """An existing scheduler's address must parse and accept a connection before anything
    is written (LaunchError, one line, otherwise)."""
    if address is None:
        return
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address, strict=True)
        if scheme not in ("tcp", "tls"):
            raise ValueError(f"expected tcp:// or tls://, found {scheme}://")
        host, port = parse_host_port(loc)
        if not port:
            raise ValueError("no port")
    except (ValueError, TypeError) as exc:
        raise LaunchError(f"--scheduler {address!r}: not a scheduler address ({exc})") from None
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise LaunchError(f"--scheduler {address}: cannot connect ({exc.strerror or exc})"
                          ) from None


def _create(path, spec: StudySpec, grid: Grid, fresh: bool) -> ResultStore:
    """Write the store's template; a file-system error (a path under a regular file, a
    read-only or full file system, a name too long) is one line, and a store this launch
    began is removed again (nothing written). An interrupted template stays unmarked and
    the next launch writes it again (ResultStore.setup_incomplete)."""
    from mbstudy.pipeline.store.location import location
    from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError

    try:
        return ResultStore.create(path, spec, grid)
    except OSError as exc:
        if fresh:
            location(path).remove()
        raise StoreError(f"{path}: cannot write the store ({exc.strerror or exc})") from None


def _run_on_cluster(spec: StudySpec, grid: Grid, rs: ResultStore, opts: _Options,
                    started, keys: dict | None = None) -> LaunchSummary:  # fmt: skip
    from mbstudy.pipeline.cluster.backends import open_client
    from mbstudy.pipeline.cluster.jobs import job_name
    from mbstudy.pipeline.cluster.local import DelayedDashboard
    from mbstudy.pipeline.run.graph import LaunchSummary, run_study
    from mbstudy.pipeline.run.progress import (
        console,
        print_summary,
        progress_bar,
        update_kernel_task,
    )

    out = console()
    try:
        kind = opts.cluster or (spec.cluster.kind if spec.cluster else None)
        name = job_name(rs.path) if kind else None
        with open_client(opts.workers, opts.scheduler, kind, spec.cluster, opts.jobs,
                         job_name=name, started=started) as client:  # fmt: skip
            link = getattr(client, "dashboard_link", None)
            out.print(f"cluster: {client.scheduler.address}  dashboard: {link}")
            progress = progress_bar(out, disable=opts.quiet, every=opts.progress_every)
            dashboard = DelayedDashboard(client)  # a LocalCluster's, if the launch lasts
            with progress, _cancelled(dashboard):
                ktask = progress.add_task("kernels", total=None, failed=0, role="kernels")
                task = progress.add_task("cases", total=grid.n_cases, failed=0, role="cases")
                done_before = sum(int(rs.read(b.name, "done").sum()) for b in grid.blocks)
                progress.update(task, completed=done_before)
                state = {"failed": 0}

                def on_kernel(info, waiting):
                    if not info:  # tasks submitted: the dashboard serves a few s later
                        dashboard.start()
                    update_kernel_task(progress, ktask, info, waiting)

                on_batch = _case_progress(client, progress, task, state)

                summary = run_study(spec, grid, rs, client, on_batch=on_batch,
                                    on_kernel=on_kernel, engine=opts.engine, kernel_keys=keys,
                                    wait_stopped=opts.scheduler is not None)  # fmt: skip
    except KeyboardInterrupt:  # before or after run_study (cluster start / teardown)
        summary = LaunchSummary(store=str(rs.path), cases_total=grid.n_cases, interrupted=True)
    if summary.interrupted:
        return _interrupted(summary, rs, grid, opts, out)
    run_s = _whole_wall(summary, rs, opts.t_start)
    print_summary(summary, rs, out, run_s=run_s)
    summary.exit_code = _error_exit(rs, grid, out)
    return summary


def _interrupted(summary: LaunchSummary, rs: ResultStore, grid: Grid, opts: _Options,
                 out) -> LaunchSummary:  # fmt: skip
    """Ctrl-C: one line, with the counts the store holds once the cluster is closed or (an
    existing scheduler) its tasks ended (what ``mbstudy status`` then reports), exit 130."""
    from mbstudy.solvers.api import OK

    done = ok = 0
    for b in grid.blocks:
        d = rs.read(b.name, "done").astype(bool)
        done += int(d.sum())
        ok += int((d & (rs.read(b.name, "status") == OK)).sum())
    summary.wall_s = time.perf_counter() - opts.t_start
    busy = f" ({summary.still_running} tasks still running)" if summary.still_running else ""
    out.print(f"interrupted: {done}/{grid.n_cases} cases done ({ok} ok, {done - ok} failed),"
              f" {grid.n_cases - done} pending{busy}; the store is resumable, launch again:"
              f" {rs.path}", markup=False, soft_wrap=True)  # fmt: skip
    summary.exit_code = EXIT_INTERRUPTED
    return summary


def _whole_wall(summary: LaunchSummary, rs: ResultStore, t_start: float) -> float:
    """``summary.wall_s``: the launch as the user waited for it, start-up (reading the
    study, starting the cluster, writing the template) and shutdown included; the part
    that ran the cases (run_study's own clock) is kept as ``run_s`` in the store's
    ``last_launch`` beside it."""
    from mbstudy.pipeline.run.graph import summary_dict

    run_s = summary.wall_s
    summary.wall_s = time.perf_counter() - t_start
    rs.mark_complete(bool(rs.root_attrs().get("complete")),
                     summary={**summary_dict(summary), "run_s": run_s})  # fmt: skip
    return run_s


@contextmanager
def _cancelled(dashboard) -> Iterator[None]:
    """Cancel the delayed dashboard when the body ends (before the cluster closes)."""
    try:
        yield
    finally:
        dashboard.cancel()


def _case_progress(client, progress, task, state: dict):
    """Advance the case bar per case, not per batch: batch tasks publish how many of their
    cases are done (``batch.PROGRESS_TOPIC``, at most every ``PROGRESS_EVERY_S``), the bar
    advances by the difference, and a finished batch tops its own count up to its size.
    Returns the ``on_batch`` callback of ``run_study``."""
    import threading

    from mbstudy.pipeline.run.batch import PROGRESS_TOPIC

    lock = threading.Lock()
    partial: dict[tuple[str, int], int] = {}
    finished: set[tuple[str, int]] = set()

    def on_event(event) -> None:  # in the client's event-loop thread
        block, batch, done = event[1]
        with lock:
            key = (block, int(batch))
            if key in finished or done <= partial.get(key, 0):
                return
            step, partial[key] = int(done) - partial.get(key, 0), int(done)
        progress.update(task, advance=step)

    try:
        client.subscribe_topic(PROGRESS_TOPIC, on_event)
    except Exception:  # per-batch progress then, never a failed launch
        pass

    def on_batch(report) -> None:
        with lock:
            key = (report.block, int(report.batch))
            finished.add(key)
            step = report.n - partial.pop(key, 0)
        state["failed"] += report.failed
        progress.update(task, advance=step, failed=state["failed"])

    return on_batch


def _repair_before_resume(rs: ResultStore, spec: StudySpec, grid: Grid, echo) -> None:
    """Check every chunk of the store being resumed (its checksum, without decoding);
    batches (and references) with a missing or corrupt chunk, and lost template arrays,
    are made pending again (store/verify.py)."""
    from mbstudy.pipeline.store.verify import repair_store, verify_store

    report = verify_store(rs, full=False)  # listings and checksums (store/chunkscan.py)
    if report.ok:
        return
    reopened = repair_store(rs, spec, grid, report)
    parts = [f"{b}: {n} batches" for b, n in reopened.items()]
    if report.references:
        parts.append(f"{len(report.references)} references")
    echo(f"damaged chunks found; running again: {', '.join(parts) or 'template only'}")


EXIT_CASE_ERROR = 1


def _error_exit(rs: ResultStore, grid: Grid, out) -> int:
    """EXIT_CASE_ERROR if any case of the store ended with status ``error`` (an unexpected
    exception or a lost task, not a solver outcome), after everything else was written."""
    from mbstudy.solvers.api import ERROR

    n = sum(int((rs.read(b.name, "status") == ERROR).sum()) for b in grid.blocks)
    if n:
        out.print(f"[red]{n} cases ended with status 'error'[/red] (mbstudy status {rs.path}"
                  " lists them; launch --retry-failed runs them again)")
        return EXIT_CASE_ERROR
    return 0
