"""The batch plan: a cost model of one case and the automatic batch size of a block.

A batch is one Dask task, one chunk of every array along ``case`` in the store and one
store write. When the study file says ``batch_size = "auto"`` (the default) the planner
picks each block's batch size from an estimate of the kernel time of its cases
(:func:`estimate_case_seconds`, :func:`auto_batch_size`). This is a heuristic that may be
retuned between releases, so it is not part of the study hash: the batch sizes a store was
made with are recorded in the store and a resumed store keeps them
(:meth:`mbstudy.pipeline.plan.grid.Grid.with_batch_sizes`).

This module knows blocks only through their attributes (it does not import
:mod:`mbstudy.pipeline.plan.grid`, which calls it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from mbstudy.pipeline.plan.purepy import model_sizes
from mbstudy.pipeline.study.spec import Pairs
from mbstudy.solvers import api as solvers

if TYPE_CHECKING:
    from mbstudy.pipeline.plan.grid import BlockGrid
    from mbstudy.solvers.api import Entry

__all__ = [
    "ADAPTIVE_STEPS",
    "BATCH_SECONDS",
    "MAX_BATCH",
    "MIN_BATCHES",
    "MIN_BATCH_SECONDS",
    "auto_batch_size",
    "estimate_case_seconds",
    "model_sizes_of",
]

ADAPTIVE_STEPS = 2000  # assumed steps of an adaptive integrator (cost model only)
STEP_SECONDS = 2e-8  # per-step cost factor: (n + m)^2 * STEP_SECONDS (measured kernels)
BATCH_SECONDS = 2.0  # work per batch the auto batch size aims at (long blocks)
MIN_BATCH_SECONDS = 0.5  # and never less than this per batch (small blocks)
MIN_BATCHES = 32  # batches per block wanted for load balance (mid-size blocks)
MAX_BATCH = 4096
COST_SAMPLES = 256  # cases sampled (evenly spaced) to estimate a block's mean case cost
FALLBACK_SIZES = (10, 10)  # (n, m) when a model cannot tell its sizes


def model_sizes_of(model: str | Entry, model_params: Pairs,
                   memo: dict | None = None) -> tuple[int, int]:
    """``(n, m)`` of one model parameter set (``model``: a name or a resolved entry), from
    the model's ``sizes`` run as plain Python (``FALLBACK_SIZES`` when the model cannot
    tell); ``memo`` caches per parameter set."""
    if memo is not None and model_params in memo:
        return memo[model_params]
    try:
        out = model_sizes(model, dict(model_params))
    except Exception:  # a model that cannot tell: the cost model only needs a guess
        out = FALLBACK_SIZES
    if memo is not None:
        memo[model_params] = out
    return out


def estimate_case_seconds(block: BlockGrid, entry: Entry | None = None) -> float:
    """Estimated mean kernel time of one case of ``block`` (s).

    steps x (n + m)^2 x 2e-8 s, with steps = t_end / h for integrators that step a
    fixed h and ``ADAPTIVE_STEPS`` for adaptive ones; averaged over up to
    ``COST_SAMPLES`` evenly spaced cases (h and the model's sizes may be swept).
    ``entry``: the model's registry entry when the caller resolved it (a launch).
    """
    integ = solvers.integrator(block.integrator).spec
    count = min(block.n_cases, COST_SAMPLES)
    picks = np.unique(np.linspace(0, block.n_cases - 1, count).round().astype(np.int64))
    memo: dict = {}
    total = 0.0
    for i in picks:
        case = _case_shallow(block, int(i))
        ip = case[2]
        h = ip.get("h")
        if h is not None and (integ.fixed_step or not integ.adaptive) and h > 0:
            steps = block.t_end / float(h)
        else:
            steps = float(ADAPTIVE_STEPS)
        n, m = model_sizes_of(entry or block.model, tuple(case[0].items()), memo)
        total += steps * (n + m) ** 2 * STEP_SECONDS
    return total / len(picks)


def _case_shallow(block: BlockGrid, i: int) -> tuple[dict, dict, dict]:
    """(model, formulation, integrator) params of case ``i`` without ids (cheap)."""
    groups = {
        "model": dict(block.model_params),
        "formulation": dict(block.formulation_params),
        "integrator": dict(block.integrator_params),
    }
    targets = dict(block.targets)
    for d, dim in enumerate(block.dims):
        j = (i // block.strides[d]) % block.shape[d]
        for name, col in zip(dim.names, dim.values, strict=True):
            for group in targets[name]:
                groups[group][name.removeprefix("model.")] = col[j]
    return groups["model"], groups["formulation"], groups["integrator"]


def auto_batch_size(block: BlockGrid, entry: Entry | None = None) -> int:
    """Cases per batch from the cost model :func:`estimate_case_seconds`.

    A batch is one Dask task, one chunk of every metric array and one store write, so it
    must carry enough kernel work that the fixed costs per task (Dask about 1 ms, the
    batch's chunk writes some 10-40 ms, measured) stay a few percent, yet a
    block must split into enough batches to keep every worker busy to the end::

        target  = BATCH_SECONDS / cost        (aim: ~2 s of work per task)
        balance = ceil(n_cases / MIN_BATCHES) (>= MIN_BATCHES tasks per block)
        floor   = MIN_BATCH_SECONDS / cost    (but never under ~0.5 s per task)
        batch   = max(floor, min(target, balance)), clamped to [1, MAX_BATCH] and n_cases

    So a long block gets batches of ~2 s, a mid-size block ``MIN_BATCHES`` batches
    (balanced on 2, 4, 8, 16 or 32 workers), and a small one batches of ~0.5 s. Only
    the block's cases matter, not its current ``batch_size``. ``entry``: the model's
    resolved registry entry, passed on by the caller.
    """
    cost = estimate_case_seconds(block, entry)
    if cost <= 0:
        return int(max(1, min(MAX_BATCH, block.n_cases)))
    target = BATCH_SECONDS / cost
    balance = math.ceil(block.n_cases / MIN_BATCHES)
    floor = MIN_BATCH_SECONDS / cost
    bs = round(max(floor, min(target, balance)))
    return int(max(1, min(bs, MAX_BATCH, block.n_cases)))


