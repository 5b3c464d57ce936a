"""Run the ``[[search]]`` blocks of a study: rounds of proposed cases on a Dask cluster.

Each round (:func:`run_searches`)::

    stored cases --plan.search.propose--> a batch of cases per search (one per
    combination of the list axes) --run_search_cases tasks on the cluster (the grid's
    run_one: same kernels, same metrics and status codes)--> appended to the block's
    group (store/search_block.py) --> next round, until every search is done

Before the first round, the references of the search cases (:func:`search_references`:
one per distinct model parameters, t_end and samples among the combinations) are
computed as the grid's are, each as two tasks on the cluster (the run and its loosened
check run, :func:`~mbstudy.pipeline.run.batch.reference_key_run`) joined by
``combine_reference``, and stored in the search store's ``reference`` group; a stored
one is reused by every later launch, never computed again. Each case runs against the
reference of its combination, so the reference-based metrics (e_r, e_theta, e_final, ...)
are those of a grid case; a failed case's error text is stored as in a grid block.

Proposals depend only on the stored cases (and the recorded seed), so a search killed at
any moment resumes where it was and ends with the same cases and answer; a finished
search block (``done``) is not run again. The round's cases are split into at least as
many tasks as workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mbstudy.pipeline.plan.search import (
    Observation,
    answer,
    case_params,
    propose,
    search_references,
    side_of,
)
from mbstudy.pipeline.store.search_block import (
    SearchBlockStore,
    open_search_store,
    read_search_reference,
    write_search_reference,
)
from mbstudy.solvers.api import OK

__all__ = ["SearchSummary", "launch_searches", "run_search_cases", "run_searches",
           "search_location", "search_observations", "search_reference_futures",
           "search_reference_run"]


@dataclass
class SearchSummary:
    """What a search launch did, per block: cases, rounds, done, the answer."""

    store: str
    blocks: dict[str, dict] = field(default_factory=dict)
    wall_s: float = 0.0
    propose_s: float = 0.0  # launcher time spent proposing and writing
    cases_run: int = 0
    exit_code: int = 0
    references_run: int = 0  # references computed by this launch
    references_reused: int = 0  # references found stored (an earlier launch's)
    references_copied: int = 0  # references read from the grid blocks' (same study)


def run_search_cases(cases: list, series: tuple[str, ...] = (),
                     refs: list | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """Worker task: run ``cases`` (CaseParams) one after another with the grid's
    :func:`~mbstudy.pipeline.run.batch.run_one`, case ``j`` against ``refs[j]`` (its
    combination's Reference; None, or no ``refs``: the reference-based metrics stay NaN),
    and return their columns, ``error`` (the exception text of a failed case) included."""
    from mbstudy.pipeline.run.batch import metric_columns, run_one

    cols = metric_columns(len(cases))
    errors = [""] * len(cases)
    sampled: dict[str, list] = {name: [] for name in series}
    for j, cp in enumerate(cases):
        status, metrics, ser, err = run_one(cp, refs[j] if refs else None, series)
        cols["status"][j] = status
        errors[j] = err or ""
        for name, value in metrics.items():
            if name in cols and value is not None:
                cols[name][j] = value
        for name in series:
            sampled[name].append(ser.get(name))
    cols["error"] = np.array(errors, dtype=object)
    for name, arrs in sampled.items():  # (cases, samples[, width]), NaN for a failed case
        cols[f"series:{name}"] = _stack(arrs, cases[0].samples if cases else 0)
    return cols


def search_reference_run(study, key, which: str):
    """Worker task: one run (``run`` or ``check``) of the reference of ``key``
    (:func:`~mbstudy.pipeline.run.batch.reference_key_run`), or the exception text when
    the model cannot run with these parameters (e.g. a four-bar that cannot be
    assembled): a list axis of model parameters may hold such a value, whose cases
    then fail with that text too; a failed reference is data, not a failed launch."""
    from mbstudy.pipeline.run.batch import exception_text, reference_key_run

    try:
        return reference_key_run(study, key, which)
    except Exception as exc:
        return exception_text(exc)


def _from_grid(study, grid_store, keys: list, wanted: list[int]) -> dict[int, Any]:
    """The references among ``wanted`` (indices into ``keys``) that the grid blocks of
    the same study computed already: read from the grid store's ``reference`` group
    (the same key, so the same numbers); none when unreadable or not done."""
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.store.errors import StoreError
    from mbstudy.pipeline.store.zarr_store import ResultStore

    index = {k: j for j, k in enumerate(expand_grid(study).references)}
    out: dict[int, Any] = {}
    try:
        rs = ResultStore.at(grid_store)
        for i in wanted:
            j = index.get(keys[i])
            got = rs.read_reference(j) if j is not None else None
            if got is not None:
                out[i] = got
    except (StoreError, KeyError, OSError):  # the search computes what it cannot read
        pass
    return out


def search_reference_futures(study, root, client, searches: list,
                             summary: SearchSummary | None = None,
                             grid_store: str | Path | None = None) -> dict[str, list]:  # fmt: skip
    """The references the cases of ``searches`` need, stored in ``root``'s ``reference``
    group (when absent: copied from the grid store ``grid_store`` of a study that has
    grid blocks too, where it holds the same key, else computed now: the run and the
    check run of each as two tasks, joined here and written before any case runs), as
    futures on ``client``'s cluster: per block name, one future per combination (None
    for every combination when the study has no reference). ``summary`` counts the
    references computed, reused and copied from the grid."""
    from mbstudy.pipeline.run.batch import REFERENCE_RUNS
    from mbstudy.solvers.api import ERROR, Reference, combine_reference

    if getattr(study, "reference", None) is None or not searches:
        return {s.name: [None] * len(s.combinations) for s in searches}
    keys, per_block = search_references(study)
    needed = sorted({i for s in searches for i in per_block[s.name]})
    stored = {i: read_search_reference(root, i, keys[i]) for i in needed}
    missing = [i for i in needed if stored[i] is None]
    copied = _from_grid(study, grid_store, keys, missing) if (grid_store and missing) else {}
    for i, ref in copied.items():
        stored[i] = ref
        write_search_reference(root, i, keys[i], ref)
    missing = [i for i in missing if i not in copied]
    tag = study.spec_hash[:8]
    runs = {i: [client.submit(search_reference_run, study, keys[i], which,
                              key=f"search-reference-{which}-{i}-{tag}", pure=False)
                for which in REFERENCE_RUNS]
            for i in missing}  # fmt: skip
    for i in missing:
        run, check = client.gather(runs[i])
        error = next((r for r in (run, check) if isinstance(r, str)), "")
        if error:  # the model cannot run with these parameters: neither can its cases
            t = keys[i].t_end * np.arange(keys[i].samples) / max(1, keys[i].samples - 1)
            nan = np.full((keys[i].samples, 1), np.nan)
            stored[i] = Reference(t=t, q=nan, v=nan.copy(), status=ERROR,
                                  error_estimate=float("nan"))  # fmt: skip
        else:
            stored[i] = combine_reference(run, check)
        write_search_reference(root, i, keys[i], stored[i], error)
    if summary is not None:
        summary.references_run += len(missing)
        summary.references_reused += len(needed) - len(missing) - len(copied)
        summary.references_copied += len(copied)
    futures = {i: client.scatter(stored[i], broadcast=True) for i in needed}
    return {s.name: [futures[i] for i in per_block[s.name]] for s in searches}


def _stack(arrs: list, samples: int) -> np.ndarray:
    """Per-case series (None for a case that produced none) as one NaN-padded array."""
    have = [np.asarray(a, dtype=float) for a in arrs if a is not None]
    tail = tuple(max(a.shape[k] for a in have) for k in range(1, have[0].ndim)) if have else ()
    out = np.full((len(arrs), samples, *tail), np.nan)
    for j, a in enumerate(arrs):
        if a is not None:
            a = np.asarray(a, dtype=float)
            out[(j, slice(0, min(samples, a.shape[0])), *(slice(0, w) for w in a.shape[1:]))] \
                = a[:samples]
    return out


def _axis_dtypes(search) -> dict[str, Any]:
    out: dict[str, Any] = {a.name: "float64" for a in search.continuous}
    for name, values in search.lists:
        out[name] = np.asarray(values).dtype.str if not isinstance(values[0], str) else "str"
    return out


def search_observations(search, block: SearchBlockStore) -> list[list[Observation]]:
    """The stored cases of each combination as :class:`Observation` lists."""
    rows = block.rows()
    per: list[list[Observation]] = [[] for _ in search.combinations]
    values = rows.metrics.get(search.metric) if search.metric != "status" else None
    for i in range(rows.n):
        c = int(rows.combo[i])
        coords = {a.name: float(rows.coords[a.name][i]) for a in search.continuous}
        if search.goal == "boundary":
            v = float(values[i]) if values is not None else float("nan")
            val = 1.0 if side_of(search, int(rows.status[i]), v) else 0.0
        else:
            val = float(values[i]) if int(rows.status[i]) == OK else float("nan")
        per[c].append(Observation(coords, val))
    return per


def current_answer(search, block: SearchBlockStore) -> list[dict]:
    """The answer from the stored cases: rows of every combination."""
    rows: list[dict] = []
    for combo, obs in zip(search.combinations, search_observations(search, block), strict=True):
        rows.extend(answer(search, obs, dict(combo)))
    return rows


def _split(items: list, parts: int) -> list[list]:
    parts = max(1, min(parts, len(items)))
    return [items[k::parts] for k in range(parts)]


def run_searches(
    study,
    store: str | Path,
    client,
    on_round: Callable[[str, int, int, list[dict]], None] | None = None,
    max_rounds: int | None = None,
    on_references: Callable[[SearchSummary], None] | None = None,
    grid_store: str | Path | None = None,
) -> SearchSummary:
    """Run every search block of ``study`` into the search store at ``store`` on
    ``client``'s cluster; resume what is stored. ``on_round(block, round, cases, answer)``
    after each round; ``on_references(summary)`` once the references are ready
    (:func:`search_reference_futures`; ``grid_store``: the grid store of a study with
    grid blocks too, whose references the search reuses); ``max_rounds`` stops after
    that many rounds in this call (tests)."""
    t0 = time.perf_counter()
    summary = SearchSummary(store=str(store))
    root = open_search_store(store, study.text, study.spec_hash)
    workers = max(1, len(client.scheduler_info().get("workers", {})) or 1)
    rounds_here = 0
    series = tuple(study.output.series)
    blocks = {search.name: SearchBlockStore.open_or_create(
        root, search, _axis_dtypes(search), _series_widths(study, search, series),
        search.base.t_end) for search in study.searches}  # fmt: skip
    pending = [s for s in study.searches if not blocks[s.name].attrs.get("done")]
    refs = search_reference_futures(study, root, client, pending, summary, grid_store)
    if on_references is not None and pending:
        on_references(summary)
    for search in study.searches:
        block = blocks[search.name]
        if block.attrs.get("done"):
            summary.blocks[search.name] = _block_summary(block, skipped=True)
            continue
        combos = search.combinations
        while True:
            tp = time.perf_counter()
            per = search_observations(search, block)
            coords_list: list[dict[str, Any]] = []
            combo_idx: list[int] = []
            for c, (combo, obs) in enumerate(zip(combos, per, strict=True)):
                for pt in propose(search, obs, search.budget - len(obs)):
                    coords_list.append({**pt, **dict(combo)})
                    combo_idx.append(c)
            rnd = int(block.attrs["rounds"])
            if not coords_list:
                block.write_answer(current_answer(search, block), done=True)
                summary.propose_s += time.perf_counter() - tp
                break
            if max_rounds is not None and rounds_here >= max_rounds:
                summary.propose_s += time.perf_counter() - tp
                summary.exit_code = 130
                break
            cases = [case_params(search, study.model, study.model_params, c) for c in coords_list]
            order = list(range(len(cases)))
            parts = _split(order, 2 * workers)
            summary.propose_s += time.perf_counter() - tp
            block_refs = refs[search.name]
            futures = [client.submit(run_search_cases, [cases[i] for i in part], series,
                                     [block_refs[combo_idx[i]] for i in part], pure=False)
                       for part in parts]  # fmt: skip
            results = client.gather(futures)
            tp = time.perf_counter()
            n = len(cases)
            cols: dict[str, np.ndarray] = {}
            for part, res in zip(parts, results, strict=True):
                for name, arr in res.items():
                    if name.startswith("series:"):
                        continue
                    if name not in cols:  # object: texts of any length (error)
                        cols[name] = np.empty(n, dtype=object if arr.dtype.kind == "O"
                                              else arr.dtype)  # fmt: skip
                    cols[name][part] = arr
            coords = {name: np.array([c[name] for c in coords_list])
                      for name in search.axis_names}  # fmt: skip
            status = cols.pop("status")
            sampled = {name.removeprefix("series:"): _merge(parts, results, name, n)
                       for name in results[0] if name.startswith("series:")}  # fmt: skip
            block.append(rnd, coords, np.array(combo_idx, dtype=np.int32), status, cols,
                         sampled)  # fmt: skip
            est = current_answer(search, block)
            block.write_answer(est, done=False)
            summary.propose_s += time.perf_counter() - tp
            summary.cases_run += n
            rounds_here += 1
            if on_round is not None:
                on_round(search.name, rnd, n, est)
        summary.blocks[search.name] = _block_summary(block)
        if summary.exit_code:
            break
    summary.wall_s = time.perf_counter() - t0
    return summary


def _merge(parts: list[list[int]], results: list[dict], key: str, n: int) -> np.ndarray:
    """One round's series ``key`` from its tasks (each NaN-padded to its own widest case)."""
    tail = tuple(max(r[key].shape[k] for r in results) for k in range(2, results[0][key].ndim))
    out = np.full((n, results[0][key].shape[1], *tail), np.nan)
    for part, r in zip(parts, results, strict=True):
        a = r[key]
        out[(part, slice(None), *(slice(0, w) for w in a.shape[2:]))] = a
    return out


def _series_widths(study, search, series: tuple[str, ...]) -> dict[str, int]:
    """Width of each sampled series of ``search``'s cases: 0 for a scalar series, the
    largest n (q, v) or m (lam) over its combinations at both ends of its axes."""
    if not series:
        return {}
    from mbstudy.pipeline.store.zarr_store import model_sizes
    from mbstudy.solvers.api import VECTOR_SERIES

    sizes = []
    for combo in search.combinations:
        for u in (0.0, 1.0):
            coords = {a.name: a.from_unit(u) for a in search.continuous} | dict(combo)
            cp = case_params(search, study.model, study.model_params, coords)
            sizes.append(model_sizes(study.model_entry, dict(cp.model_params)))
    n, m = max(s[0] for s in sizes), max(s[1] for s in sizes)
    return {name: ((m if name == "lam" else n) if name in VECTOR_SERIES else 0)
            for name in series}  # fmt: skip


def _block_summary(block: SearchBlockStore, skipped: bool = False) -> dict:
    a = block.attrs
    return {"cases": int(a["n"]), "rounds": int(a["rounds"]), "done": bool(a["done"]),
            "skipped": skipped, "answer": a.get("estimate", [])}  # fmt: skip


def search_location(spec, store, retry_failed: bool = False) -> Path:
    """Where the study's search blocks are stored: the store's folder (a study of search
    blocks only) or its ``search`` group beside the grid blocks
    (:data:`~mbstudy.pipeline.store.search_block.SEARCH_GROUP`). ``store``: the launch's
    store option (None: the study's ``[output] store``). LaunchError, before anything is
    written, for an option or a store a search cannot take."""
    from mbstudy.pipeline.run.errors import LaunchError
    from mbstudy.pipeline.store.search_block import SEARCH_GROUP
    from mbstudy.pipeline.store.urls import store_location

    if retry_failed and not spec.runs:
        raise LaunchError("--retry-failed applies to grid blocks; a search reruns nothing")
    path = store if store is not None else store_location(spec.output.store)
    if not isinstance(path, str | Path) or str(path).startswith("s3:"):
        raise LaunchError(f"{path}: search blocks are stored in a local folder only")
    return Path(path) / SEARCH_GROUP if spec.runs else Path(path)


def launch_searches(spec, path: Path, *, workers: int | None = None,
                    scheduler: str | None = None, cluster: str | None = None,
                    jobs: int | None = None, resume: bool = False, overwrite: bool = False,
                    quiet: bool = False, echo: Callable[[str], None] = print,
                    t_start: float = 0.0):  # fmt: skip
    """``mbstudy launch`` of a study of search blocks: under the store's lock, on a
    LocalCluster, an existing scheduler or SLURM/PBS (the grid's :func:`open_client`), a
    store of this study resumed, a finished block not rerun; returns a ``LaunchSummary``
    (exit code 130 on Ctrl-C, the store resumable)."""
    from mbstudy.pipeline.cluster.backends import open_client
    from mbstudy.pipeline.run.graph import LaunchSummary
    from mbstudy.pipeline.store.errors import StoreError
    from mbstudy.pipeline.store.location import location

    if resume and not path.exists():
        raise StoreError(f"{path}: --resume: no store to resume")
    loc = location(path)
    lock = loc.lock()
    lock.acquire()
    try:
        if overwrite and path.exists():
            loc.remove()
        kind = cluster or (spec.cluster.kind if spec.cluster else None)

        def on_round(block: str, rnd: int, n: int, est: list) -> None:
            if not quiet:
                echo(f"{block}: round {rnd + 1}: {n} cases; {len(est)} answer point(s)")

        def on_references(got: SearchSummary) -> None:
            if not quiet:
                grid = (f", {got.references_copied} from the grid blocks' references"
                        if got.references_copied else "")  # fmt: skip
                echo(f"search references: {got.references_run} computed,"
                     f" {got.references_reused} stored (reused){grid}")

        summary = LaunchSummary(store=str(path),
                                cases_total=sum(s.capacity for s in spec.searches))
        try:
            with open_client(workers, scheduler, kind, spec.cluster, jobs,
                             job_name=None) as client:  # fmt: skip
                got = run_searches(spec, path, client, on_round=on_round,
                                   on_references=on_references,
                                   grid_store=path.parent if spec.runs else None)  # fmt: skip
        except KeyboardInterrupt:
            echo(f"interrupted; {path} is resumable: launch again to continue")
            summary.interrupted, summary.exit_code = True, 130
            return summary
        summary.cases_run = got.cases_run
        summary.wall_s = time.perf_counter() - t_start
        summary.per_block = got.blocks
        for name, b in got.blocks.items():
            state = "done" if b["done"] else "not done"
            skip = " (finished before; not rerun)" if b["skipped"] else ""
            echo(f"{name}: {b['cases']} cases in {b['rounds']} rounds, {state}{skip};"
                 f" {len(b['answer'])} answer point(s)")  # fmt: skip
        return summary
    finally:
        lock.release()
