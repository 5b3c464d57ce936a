"""Worker-side work: one batch of cases -> metrics -> its own chunk region of the store.

A batch task runs its cases one after another in the worker process, computes every
metric with :func:`solvers.metrics.compute_metrics`, and writes the rows of its batch
(whole chunks that no other task writes) directly into the store: results are not
funnelled through the client. A case that fails is data: its status code (and, for an
unexpected Python exception, the exception text) is written like any other row.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from mbstudy.pipeline.plan.engines import ENGINE_CODES
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.errors import storage_fault, storage_fault_text
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers import api as solvers
from mbstudy.solvers.api import (
    COUNTER_METRICS,
    ERROR,
    FLOAT_METRICS,
    OK,
    CaseResult,
    Reference,
    combine_reference,
    compute_metrics,
    load_kernel,
    pack_params,
    reference_params,
    run_case,
    sample_series,
)


def pairs_to_dict(value) -> dict:
    """A dict from a dict or a tuple of (key, value) pairs."""
    if isinstance(value, dict):
        return dict(value)
    return {k: v for k, v in value}


@lru_cache(maxsize=8)
def _grid_for(study, plan: tuple[tuple[str, int], ...] = ()):
    """The launcher's grid: the study cut into the batches of ``plan`` (the store's)."""
    return expand_grid(study, dict(plan))


@dataclass
class BatchReport:
    """What a batch task did (returned to the launcher; small)."""

    block: str
    batch: int
    n: int
    ok: int
    status_counts: dict[int, int] = field(default_factory=dict)
    kernel_s: float = 0.0
    compile_s: float = 0.0
    task_s: float = 0.0
    worker: str = ""
    started: float = 0.0  # time.time() when the task started (start-up figures)
    engine: str = "compiled"  # the kernel's engine (plan/engines.py)
    # the store failed under the write (full, read-only, unreachable): what and where, for
    # the launcher to stop with (a returned value, so the worker logs no traceback)
    storage_fault: str = ""

    @property
    def failed(self) -> int:
        return self.n - self.ok


def warm_kernels(triples: list[tuple[str, str, str]]) -> dict[str, float]:
    """Compile or load from numba's cache every kernel in ``triples``; seconds per kernel."""
    out = {}
    for triple in triples:
        out["/".join(triple)] = load_kernel(*triple).compile_s
    return out


def compile_kernel(triple: tuple[str, str, str]) -> dict:
    """Compile (or load from the caches) one kernel on this worker: what it cost.

    ``{"kernel": "model/formulation/integrator", "s": seconds, "compiled": bool}``;
    ``compiled`` is False when numba loaded the machine code from its cache (another
    worker compiled it first: workers sharing the caches compile a kernel once).
    """
    kernel = load_kernel(*triple)
    return {"kernel": "/".join(triple), "s": kernel.compile_s,
            "compiled": bool(getattr(kernel, "compiled", False))}  # fmt: skip


def engine_kernel(engine: str, model: str, formulation: str, integrator: str):
    """The kernel to hand to ``run_case``: None for the compiled one (its own cache), the
    interpreted one (:func:`mbstudy.pipeline.plan.purepy.pure_kernel`) for ``python``."""
    if engine == "python":
        from mbstudy.pipeline.plan.purepy import pure_kernel

        return pure_kernel(model, formulation, integrator)
    return None


REFERENCE_RUNS = ("run", "check")  # the two tasks of a reference (solvers/reference.py)


def reference_run(study, index: int, which: str, *after, plan=(),
                  engine: str = "compiled") -> CaseResult:  # fmt: skip
    """One of the two runs of reference ``index`` of the study's grid: ``which`` is ``run``
    (the reference itself) or ``check`` (its loosened check run). The launch submits them
    as two tasks, so that they run at the same time on two workers, and joins them with
    :func:`store_reference`; the numbers are those of ``compute_reference``.

    ``after``: results of tasks this one must follow (the reference kernel's warm-up);
    unused. ``plan``: the batch sizes of the launch (``Grid.batch_sizes`` as pairs).
    ``engine``: ``compiled`` or ``python`` (plan/engines.py).
    """
    grid = _grid_for(study, tuple(plan))
    return reference_key_run(study, grid.references[index], which, engine)


def reference_key_run(study, key, which: str, engine: str = "compiled") -> CaseResult:
    """One of the two runs of the reference of ``key`` (a
    :class:`~mbstudy.pipeline.plan.grid.ReferenceKey`: model parameters, t_end, samples):
    ``run`` (the study's ``[reference]`` method as given) or ``check`` (its loosened
    check run, :func:`~mbstudy.solvers.reference.reference_params`). The grid's
    :func:`reference_run` and the search blocks' references (pipeline/run/search.py) both
    run their references through it."""
    ref = study.reference
    fparams, iparams, loose = reference_params(ref.integrator, ref.formulation,
                                               pairs_to_dict(ref.params))  # fmt: skip
    return run_case(
        study.model, ref.formulation, ref.integrator, t_end=key.t_end, samples=key.samples,
        model_params=pairs_to_dict(key.model_params), formulation_params=fparams,
        integrator_params=iparams if which == "run" else loose,
        kernel=engine_kernel(engine, study.model, ref.formulation, ref.integrator),
    )  # fmt: skip


def store_reference(run: CaseResult, check: CaseResult, index: int,
                    store_path: str) -> Reference:  # fmt: skip
    """Join reference ``index``'s run and check run (:func:`reference_run`) into its
    :class:`Reference` and write it into the store."""
    ref_result = combine_reference(run, check)
    ResultStore.at(store_path).write_reference(index, ref_result)
    return ref_result


@lru_cache(maxsize=64)
def _angle_mask(model: str, model_params) -> np.ndarray:
    """The model's angle mask for one parameter set (once per process, not per case)."""
    entry = solvers.model(model)
    mask = np.asarray(entry.module.angle_mask(pack_params(entry.params, dict(model_params))))
    mask.setflags(write=False)
    return mask


def run_one(cp, reference: Reference | None, series: tuple[str, ...], kernel=None):
    """Run one case (CaseParams); return (status, metrics dict, series dict, error text).
    ``kernel``: see :func:`engine_kernel` (None: the compiled kernel)."""
    mp = pairs_to_dict(cp.model_params)
    try:
        res = run_case(
            cp.model, cp.formulation, cp.integrator,
            t_end=cp.t_end, samples=cp.samples, model_params=mp,
            formulation_params=pairs_to_dict(cp.formulation_params),
            integrator_params=pairs_to_dict(cp.integrator_params), kernel=kernel,
        )  # fmt: skip
        metrics = compute_metrics(res, reference, _angle_mask(cp.model, cp.model_params))
        ser = sample_series(res, series)
        return res.status, metrics, ser, res.error
    except Exception as exc:  # a failing case is data, never a crashed study
        return ERROR, {}, {}, exception_text(exc)


def exception_text(exc: BaseException) -> str:
    """The one-line text of a failed case or reference run (type and message, no
    traceback), as stored in a block's ``error`` array."""
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


PROGRESS_TOPIC = "mbstudy-cases"  # worker events: (block, batch, cases done so far)
PROGRESS_EVERY_S = 0.5  # at most one event per batch and this interval: cheap for short cases


def _progress_reporter(block: str, batch: int):
    """A function ``(cases_done) -> None`` that tells the launcher how far this batch is
    (``Worker.log_event`` on :data:`PROGRESS_TOPIC`, batched to the scheduler with the
    worker's other messages), at most every :data:`PROGRESS_EVERY_S`; a no-op outside
    a Dask worker."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return lambda done: None
    last = [time.perf_counter()]

    def report(done: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            worker.log_event(PROGRESS_TOPIC, (block, batch, done))

    return report


def _maybe_inject_fault(batch_index: int) -> None:
    """Testing hook for the fault-tolerance tests: with ``MBSTUDY_FAULT_BATCH=B`` set in the
    workers' environment, batch B raises (every attempt appends a line to
    ``MBSTUDY_FAULT_LOG`` if set); with ``MBSTUDY_FAULT_BATCH_SLEEP=S`` every batch first
    sleeps S seconds (a study of known minimum duration, whatever the machine's speed, for
    the worker-lifetime tests). Unset in normal use; it reads no user input."""
    pause = os.environ.get("MBSTUDY_FAULT_BATCH_SLEEP")
    if pause:
        time.sleep(float(pause))
    target = os.environ.get("MBSTUDY_FAULT_BATCH")
    if target is None or int(target) != batch_index:
        return
    log = os.environ.get("MBSTUDY_FAULT_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {batch_index}\n")
    raise RuntimeError(f"injected fault in batch {batch_index}")


def _widened(column: np.ndarray | None, n: int, row_shape: tuple[int, ...]) -> np.ndarray:
    """``column`` (n rows of a series, NaN where no case wrote) widened so that a row of
    ``row_shape`` fits: cases of one batch may have different numbers of coordinates or
    constraints (a swept model parameter); narrower rows keep NaN beyond their own size
    (the store's SERIES_PADDING)."""
    if column is None:
        return np.full((n, *row_shape), np.nan)
    if all(k <= c for k, c in zip(row_shape, column.shape[1:], strict=True)):
        return column
    shape = (n, *(max(k, c) for k, c in zip(row_shape, column.shape[1:], strict=True)))
    out = np.full(shape, np.nan)
    out[tuple(slice(0, c) for c in column.shape)] = column
    return out


def metric_columns(n: int) -> dict[str, np.ndarray]:
    """The metric columns of ``n`` cases before any has run: float metrics NaN, counters
    0, status ERROR (a case that never reports stays an error)."""
    cols: dict[str, np.ndarray] = {name: np.full(n, np.nan) for name in FLOAT_METRICS}
    for name in COUNTER_METRICS:
        cols[name] = np.zeros(n, dtype=np.int64)
    cols["status"] = np.full(n, ERROR, dtype=np.int8)
    return cols


def run_batch(
    study, block_index: int, batch_index: int, store_path: str, *refs, plan=(),
    engine: str = "compiled", after=None,
) -> BatchReport:
    """Run every case of one batch and write its rows into the store.

    Parameters
    ----------
    study : the StudySpec (small, picklable).
    refs : the references of the study's grid, in order (Reference or None).
    plan : the launch's batch sizes, ``((block, batch_size), ...)`` (``Grid.batch_sizes``):
        the worker cuts the block exactly as the store's chunks are.
    engine : ``compiled`` or ``python``: the kernel's engine (plan/engines.py), recorded
        per case in the store's ``engine`` array.
    after : the result of a task this one must follow (its kernel's compile task); unused.
    """
    t_task = time.perf_counter()
    started = time.time()
    _maybe_inject_fault(batch_index)
    grid = _grid_for(study, tuple(plan))
    block = grid.blocks[block_index]
    start, stop = block.batch_range(batch_index)
    n = stop - start
    series = tuple(study.output.series)
    cols = metric_columns(n)
    cols["error"] = np.array([""] * n, dtype=object)
    cols["engine"] = np.full(n, ENGINE_CODES[engine], dtype=np.int8)
    kernel = engine_kernel(engine, study.model, block.formulation, block.integrator)
    progress = _progress_reporter(block.name, batch_index)
    ser_cols: dict[str, np.ndarray] = {}
    ref_index = block.ref_index(start, stop)
    counts: dict[int, int] = {}
    kernel_s = 0.0
    compile_s = 0.0
    for j, i in enumerate(range(start, stop)):
        cp = block.case_params(i)
        ri = int(ref_index[j])
        reference = refs[ri] if 0 <= ri < len(refs) else None
        status, metrics, ser, err = run_one(cp, reference, series, kernel)
        cols["status"][j] = status
        cols["error"][j] = err
        for name, value in metrics.items():
            if name in cols:
                cols[name][j] = value
        for name, values in ser.items():
            ser_cols[name] = _widened(ser_cols.get(name), n, np.shape(values))
            ser_cols[name][(j, *(slice(0, k) for k in np.shape(values)))] = values
        counts[int(status)] = counts.get(int(status), 0) + 1
        kernel_s += float(metrics.get("wall_s", 0.0) or 0.0)
        compile_s += float(metrics.get("compile_s", 0.0) or 0.0)
        progress(j + 1)
    cols.update(ser_cols)
    cols["error"] = cols["error"].astype(str)
    fault = ""
    try:
        ResultStore.at(store_path).write_batch(block.name, start, stop, cols)
    except Exception as exc:
        if not storage_fault(exc):
            raise
        fault = storage_fault_text(store_path, exc)
    return BatchReport(
        storage_fault=fault,
        block=block.name,
        batch=batch_index,
        n=n,
        ok=counts.get(OK, 0),
        status_counts=counts,
        kernel_s=kernel_s,
        compile_s=compile_s,
        task_s=time.perf_counter() - t_task,
        worker=socket.gethostname(),
        started=started,
        engine=engine,
    )
