"""The calibrated interpreted cost model and the batch order of a launch.

- per kernel, ``auto`` weighs the interpreted cost measured for that kernel
  (``INTERPRETED_FACTORS``, from benchmarks/interpreted.py) against a compile: on the
  shipped Andrews study every kernel runs interpreted; on the README's four-bar study the
  three none + rk4 cases and the reference run interpreted (a few seconds each), and the
  36 Baumgarte cases, ~70 s interpreted, compile;
- a kernel that was never measured takes the largest factor of its (formulation,
  integrator), and an unknown pair the largest of all (auto errs towards compiling);
- batches are handed out the most expensive first (longest processing time first).

No kernel is compiled or run here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.plan.batches import estimate_case_seconds
from mbstudy.pipeline.plan.engines import (
    COMPILE_SECONDS,
    INTERPRETED_FACTOR,
    INTERPRETED_FACTORS,
    case_seconds,
    choose_engines,
    interpreted_factor,
)
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.study.parse import load_study

ROOT = Path(__file__).resolve().parent.parent


def _decide(name: str, spent: float = 0.0):
    study = load_study(ROOT / "studies" / name)
    grid = expand_grid(study)
    got = choose_engines(study, grid, "auto", cached=lambda t: False, spent=lambda t: spent)
    return study, grid, {"/".join(t[1:]): c for t, c in got.items()}


def test_andrews_compiles_only_its_drcs_bdf_kernel():
    _, _, got = _decide("andrews.toml")
    assert set(got) == {"projection/dopri5", "baumgarte/dopri5", "drcs/dopri5",
                        "baumgarte/bdf", "drcs/bdf", "qr/dopri5"}  # fmt: skip
    # the most expensive kernel: the two drcs + bdf cases, 2 x 2000 assumed steps
    # x (7 + 6)^2 x 2e-8 s x its measured factor: more than a compile, so it compiles
    drcs_bdf = got.pop("drcs/bdf")
    assert drcs_bdf.interpreted_s == pytest.approx(
        2 * 2000 * 13**2 * 2e-8 * INTERPRETED_FACTORS[("andrews", "drcs", "bdf")])
    assert drcs_bdf.engine == "compiled" and drcs_bdf.interpreted_s >= COMPILE_SECONDS
    # every other kernel (the reference's run and check run included) is interpreted
    assert {c.engine for c in got.values()} == {"python"}
    assert max(c.interpreted_s for c in got.values()) < COMPILE_SECONDS


def test_the_readme_study_compiles_only_its_baumgarte_block():
    _, _, got = _decide("fourbar_baumgarte.toml")
    none, ref, bg = got["none/rk4"], got["projection/dopri5"], got["baumgarte/rk4"]
    # none + rk4: h = 0.005, 0.0025, 0.00125 over 5 s = 7000 steps, (9 + 8)^2 x 2e-8 s
    assert none.interpreted_s == pytest.approx(7000 * 17**2 * 2e-8 * 112.0)
    assert none.engine == "python" and none.interpreted_s < 5.0
    assert ref.engine == "python" and ref.cases == 2
    # 12 gain pairs x the same 7000 steps: ~69 s interpreted, more than a compile
    assert bg.cases == 36 and bg.interpreted_s == pytest.approx(12 * 7000 * 17**2 * 2e-8 * 142.0)
    assert bg.engine == "compiled" and bg.interpreted_s > COMPILE_SECONDS
    # the single factor used before (the largest measured) compiled none + rk4 too
    assert none.interpreted_s / 112.0 * INTERPRETED_FACTOR > COMPILE_SECONDS
    # and rent or buy still applies: paid enough before, the cheap kernels compile too
    _, _, got = _decide("fourbar_baumgarte.toml", spent=COMPILE_SECONDS)
    assert {c.engine for c in got.values()} == {"compiled"}


def test_factor_fallbacks():
    assert interpreted_factor("fourbar", "none", "rk4") == 112.0
    # another model's baumgarte + rk4: the largest measured for that pair (Andrews')
    pair = [f for (_, fo, it), f in INTERPRETED_FACTORS.items() if (fo, it) == ("baumgarte", "rk4")]
    assert len(pair) >= 2 and interpreted_factor("top", "baumgarte", "rk4") == max(pair)
    assert interpreted_factor("top", "none", "hermite") == INTERPRETED_FACTOR
    assert INTERPRETED_FACTOR >= max(INTERPRETED_FACTORS.values())


def test_batches_start_most_expensive_first(tmp_path):
    """Andrews interpreted: the batch order is by estimated interpreted cost, largest
    first (drcs + bdf before the single-case blocks, qr before baumgarte + dopri5)."""
    from mbstudy.pipeline.run.graph import LaunchSummary, _batch_cost, _pending_batches
    from mbstudy.pipeline.store.zarr_store import ResultStore

    study, grid, _ = _decide("andrews.toml")
    choices = choose_engines(study, grid, "python", cached=lambda t: False, spent=lambda t: 0.0)
    store = ResultStore.create(tmp_path / "a.zarr", study, grid)
    summary = LaunchSummary(store=str(store.path), cases_total=grid.n_cases)
    got = list(_pending_batches(store, grid, summary, _batch_cost(study, grid, choices)))
    order = [(bi, b) for bi, b, _ in got]
    assert sorted(order) == [(bi, b) for bi, blk in enumerate(grid.blocks)
                             for b in range(blk.n_batches)]  # fmt: skip
    cost = []
    for bi, b in order:
        block = grid.blocks[bi]
        start, stop = block.batch_range(b)
        factor = interpreted_factor(study.model, block.formulation, block.integrator)
        cost.append((stop - start) * estimate_case_seconds(block) * factor)
        assert case_seconds(block, "python") == pytest.approx(estimate_case_seconds(block) * factor)
    assert np.all(np.diff(cost) <= 0), cost
    assert np.allclose([c for _, _, c in got], cost)
    assert grid.blocks[order[0][0]].name == "drcs_bdf"
    names = [grid.blocks[bi].name for bi, _ in order]
    assert names.index("qr") < names.index("baumgarte")
    # without a cost (or all equal): the grid's order
    summary = LaunchSummary(store=str(store.path), cases_total=grid.n_cases)
    assert [t[:2] for t in _pending_batches(store, grid, summary)] == sorted(order)
