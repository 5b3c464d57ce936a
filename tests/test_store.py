"""The store template and batch writes, on the fake registry (no kernels, no cluster):
chunk layout, metadata-only template, concurrent batch writes, the done mask per batch."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import COORD_CHUNK, ResultStore, coord_chunk
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS

from tests.conftest import load_fakes


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    load_fakes().install(monkeypatch)


def toy_study(batch_size: int, n_omega: int = 7, n_xi: int = 3):
    omega = ", ".join(f"{1.0 + k}" for k in range(n_omega))
    xi = ", ".join(f"{0.5 + 0.25 * k}" for k in range(n_xi))
    text = f"""
[study]
name = "store-test"
model = "toy"
t_end = 1.0
samples = 11
batch_size = {batch_size}

[[runs]]
name = "a"
formulation = "stab"
integrator = "rk"
h = 0.01
omega_n = [{omega}]
xi = [{xi}]

[output]
series = ["phi_norm"]
"""
    spec = parse_study(text)
    return spec, expand_grid(spec)


def batch_columns(rng, n: int, samples: int) -> dict[str, np.ndarray]:
    cols = {name: rng.standard_normal(n) for name in FLOAT_METRICS}
    cols.update({name: rng.integers(0, 1000, n) for name in COUNTER_METRICS})
    cols["status"] = rng.integers(0, 3, n).astype(np.int8)
    cols["error"] = np.array([f"e{k}" for k in rng.integers(0, 9, n)]).astype(str)
    cols["phi_norm"] = rng.standard_normal((n, samples))
    return cols


@pytest.mark.parametrize("bs,n", [(1, 1), (4, 21), (7, 21), (100, 21), (3, 10**7), (5000, 10**6)])
def test_coord_chunk_is_whole_batches_and_bounded(bs, n):
    c = coord_chunk(bs, n)
    assert 1 <= c <= n
    assert c % bs == 0 or c == n  # every chunk boundary is a batch boundary
    assert c <= max(COORD_CHUNK, bs)


def test_template_is_metadata_only_and_chunked_by_batch(tmp_path):
    spec, grid = toy_study(batch_size=4)
    (block,) = grid.blocks
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    g = zarr.open_group(str(rs.path / "a"), mode="r")
    for name in (*FLOAT_METRICS, *COUNTER_METRICS, "status", "done", "error", "phi_norm"):
        assert g[name].chunks[0] == block.batch_size, name
        assert g[name].nchunks_initialized == 0, name  # no fill writes
    for name in ("case_id", "ref_index", "omega_n", "xi"):
        assert g[name].chunks[0] % block.batch_size == 0 or g[name].chunks[0] == block.n_cases
    np.testing.assert_array_equal(g["case_id"][:], block.case_ids())
    np.testing.assert_array_equal(g["omega_n"][:], block.axis_values("omega_n"))
    assert not rs.done_batches("a").any()


def test_batch_writes_land_in_their_rows_and_done_marks_batches(tmp_path):
    spec, grid = toy_study(batch_size=4)  # 21 cases: 5 batches of 4 and one of 1
    (block,) = grid.blocks
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    rng = np.random.default_rng(5)
    written = {}
    for b in (5, 0, 3):  # out of order, including the short last batch
        start, stop = block.batch_range(b)
        written[b] = batch_columns(rng, stop - start, block.samples)
        rs.write_batch("a", start, stop, written[b])
    expect_done = np.zeros(block.n_batches, dtype=bool)
    expect_done[[0, 3, 5]] = True
    np.testing.assert_array_equal(rs.done_batches("a"), expect_done)
    for b, cols in written.items():
        start, stop = block.batch_range(b)
        for name, values in cols.items():
            np.testing.assert_array_equal(rs.read("a", name)[start:stop], values, err_msg=name)
    untouched = block.batch_range(1)
    assert np.isnan(rs.read("a", "rms_phi")[slice(*untouched)]).all()
    assert (rs.read("a", "status")[slice(*untouched)] == -1).all()


def test_writes_after_overwrite_use_the_new_store(tmp_path):
    """Array handles are cached per process; a store replaced at the same path (here with
    another chunk length) must not be written through the old handles."""
    path = tmp_path / "s.zarr"
    spec, grid = toy_study(batch_size=4)
    rs = ResultStore.create(path, spec, grid)
    rng = np.random.default_rng(1)
    rs.write_batch("a", 0, 4, batch_columns(rng, 4, 11))
    import shutil

    shutil.rmtree(path)
    spec2, grid2 = toy_study(batch_size=3)
    rs2 = ResultStore.create(path, spec2, grid2)
    cols = batch_columns(rng, 3, 11)
    rs2.write_batch("a", 3, 6, cols)
    np.testing.assert_array_equal(rs2.read("a", "rms_phi")[3:6], cols["rms_phi"])
    assert np.isnan(rs2.read("a", "rms_phi")[:3]).all()
    np.testing.assert_array_equal(rs2.done_batches("a"), np.arange(7) == 1)


def test_pending_batches_skips_done_ones_and_counts_them(tmp_path):
    """What a (resumed) launch submits: every batch not done, in order; done ones are
    counted as skipped with their true sizes (the last batch is short)."""
    from mbstudy.pipeline.run.graph import LaunchSummary, _pending_batches, submit_window

    spec, grid = toy_study(batch_size=4)  # 21 cases: 6 batches, the last of 1
    (block,) = grid.blocks
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    rng = np.random.default_rng(2)
    for b in (1, 5):
        start, stop = block.batch_range(b)
        rs.write_batch("a", start, stop, batch_columns(rng, stop - start, block.samples))
    summary = LaunchSummary(store=str(rs.path), cases_total=grid.n_cases)
    todo = list(_pending_batches(rs, grid, summary))
    assert todo == [(0, 0, 0.0), (0, 2, 0.0), (0, 3, 0.0), (0, 4, 0.0)]
    assert summary.batches_skipped == 2
    assert summary.cases_skipped == 4 + 1 == summary.per_block["a"]["skipped"]
    assert submit_window(1) >= 4 and submit_window(64) >= 64 * 2


def test_a_store_older_than_a_metric_takes_batches_and_reads_it_as_nan(tmp_path):
    # a store created before a counter existed (here: jac_evals) has no array for it;
    # resuming writes the other metrics, the reader gives NaN for the missing one
    from mbstudy.pipeline.store.reader import case_table

    spec, grid = toy_study(batch_size=4)
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    g = zarr.open_group(str(rs.path / "a"), mode="r+")
    del g["jac_evals"]
    g.attrs["batch_arrays"] = [n for n in g.attrs["batch_arrays"] if n != "jac_evals"]
    cols = batch_columns(np.random.default_rng(3), 4, 11)
    rs.write_batch("a", 0, 4, cols)
    df = case_table(rs, "a")
    np.testing.assert_array_equal(df["steps"].to_numpy()[:4], cols["steps"])
    assert np.isnan(df["jac_evals"].to_numpy()).all()
