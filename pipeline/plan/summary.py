"""What ``mbstudy plan`` shows: the blocks, axes, case counts, batches, estimated kernel
time and store size of a study, as JSON-serializable data (:func:`plan_summary`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from mbstudy.pipeline.plan.batches import estimate_case_seconds, model_sizes_of
from mbstudy.pipeline.plan.grid import Grid, _as_array
from mbstudy.pipeline.study.spec import StudySpec

__all__ = ["plan_summary", "series_width"]

N_METRICS = 30  # float64 metric arrays per case (store size estimate)
# A reference is a group of 3 arrays: 4 metadata files and 3 chunk files, each taking at
# least one file-system block on disk (a 2,000-reference study writes 14,000 files).
REF_FILES = 7
FS_BLOCK = 4096


def series_width(series: str, n: int, m: int = 1) -> int:
    """Values per output time of a sampled series (``q`` and ``v`` have ``n``, ``lam`` m)."""
    if series == "lam":
        return m
    return n if series in ("q", "v") else 1


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def plan_summary(study: StudySpec, grid: Grid) -> dict[str, Any]:
    """What ``mbstudy plan`` shows, as JSON-serializable data.

    Returns
    -------
    dict
        ``study``, ``model``, ``spec_hash``, ``t_end``, ``samples``, ``store``, ``series``,
        ``reference`` (integrator, formulation, params), ``blocks`` (name, formulation,
        integrator, t_end, samples, axes with values, zip, fixed params, shape, n_cases,
        batch_size, n_batches, est_case_s, est_bytes), ``n_cases``, ``n_batches``,
        ``n_references``, ``est_cpu_s`` (kernel time by the cost model, compile
        excluded), ``est_store_bytes`` (metrics: ~30 float64 per case, coordinates,
        status, done, ids, sampled series of samples x width float64, the references with
        a file-system block per file of theirs)
        ``searches`` (the ``[[search]]`` blocks: :func:`search_summary`)
        and ``rejected`` (always empty: invalid combinations raise
        :class:`~mbstudy.pipeline.study.StudyError` when the study is loaded; see
        :func:`mbstudy.pipeline.study.check_study` for every error at once).
    """
    runs = {r.name: r for r in study.runs}
    blocks = []
    total_bytes = 0
    total_cpu = 0.0
    memo: dict = {}
    n_ref_width = 1
    for block in grid.blocks:
        run = runs[block.name]
        n, m = model_sizes_of(study.model_entry, block.model_params, memo)
        n_ref_width = max(n_ref_width, n)
        coord_bytes = sum(
            _as_array(block.dims[block._locate(a)[0]].column(a)).itemsize for a in block.axis_names
        )
        series_bytes = sum(series_width(s, n, m) for s in study.output.series) * block.samples * 8
        per_case = N_METRICS * 8 + coord_bytes + 1 + 1 + 8 + series_bytes
        est_bytes = per_case * block.n_cases
        cost = estimate_case_seconds(block, study.model_entry)
        total_bytes += est_bytes
        total_cpu += cost * block.n_cases
        blocks.append(
            {
                "name": block.name,
                "formulation": block.formulation,
                "integrator": block.integrator,
                "t_end": block.t_end,
                "samples": block.samples,
                "axes": {name: list(values) for name, values in run.axes},
                "zip": [list(g) for g in run.zip],
                "dims": [list(d.names) for d in block.dims],
                "fixed": dict(run.fixed),
                "shape": list(block.shape),
                "n_cases": block.n_cases,
                "batch_size": block.batch_size,
                "n_batches": block.n_batches,
                "est_case_s": cost,
                "est_bytes": est_bytes,
            }
        )
    ref_bytes = sum(k.samples * (2 * n_ref_width + 1) * 8 + REF_FILES * FS_BLOCK
                    for k in grid.references)  # fmt: skip
    total_bytes += ref_bytes
    ref = study.reference
    out = {
        "study": study.name,
        "description": study.description,
        "model": study.model,
        "spec_hash": study.spec_hash,
        "t_end": study.t_end,
        "samples": study.samples,
        "store": study.output.store,
        "series": list(study.output.series),
        "reference": {
            "integrator": ref.integrator,
            "formulation": ref.formulation,
            "params": dict(ref.params),
        },
        "blocks": blocks,
        "n_cases": grid.n_cases,
        "n_batches": grid.n_batches,
        "n_references": len(grid.references),
        "est_cpu_s": total_cpu,
        "est_store_bytes": int(total_bytes),
        "rejected": [],
        "searches": [search_summary(s) for s in study.searches],
        # the references the search cases are measured against (pipeline/run/search.py)
        "n_search_references": _n_search_references(study),
    }
    return _jsonable(out)


def _n_search_references(study) -> int:
    """How many references the search blocks' cases need (one per distinct model
    parameters, t_end and samples: :func:`~mbstudy.pipeline.plan.search.search_references`)."""
    if not study.searches:
        return 0
    from mbstudy.pipeline.plan.search import search_references

    return len(search_references(study)[0])


def search_summary(search) -> dict[str, Any]:
    """One ``[[search]]`` block as ``mbstudy plan`` shows it: methods, goal, the continuous
    axes' bounds and scale, the list axes, the fixed values, the budget per search and the
    store rows (``max_cases``: budget x combinations of the list axes)."""
    run = search.base
    continuous = {a.name: {"lo": a.lo, "hi": a.hi, "scale": a.scale} for a in search.continuous}
    return {
        "name": search.name, "formulation": run.formulation, "integrator": run.integrator,
        "goal": search.goal, "metric": search.metric, "at": search.at,
        "continuous": continuous, "lists": {name: list(v) for name, v in search.lists},
        "fixed": dict(run.fixed), "budget": search.budget,
        "searches": len(search.combinations), "max_cases": search.capacity,
    }  # fmt: skip

