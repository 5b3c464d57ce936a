"""Stores you can trust, on the fake registry (no kernels, no cluster): a CRC-32C
codec on every array, ``verify`` finds every missing and corrupt chunk per batch, repair
makes exactly the damaged batches pending, the completeness marker is written last, every
finished batch has every chunk, and narrower series rows are NaN-padded."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from mbstudy.pipeline.store import zarr_store
from mbstudy.pipeline.store.verify import repair_store, verify_store
from mbstudy.pipeline.store.zarr_store import (
    SETUP_FORMAT,
    STORE_FORMAT,
    ResultStore,
    StoreError,
)

from tests.conftest import load_fakes
from tests.integrity_testkit import columns, finished_store, toy, write_batches


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    load_fakes().install(monkeypatch)


def chunk_file(rs, name: str, batch: int, block: str = "a"):
    arr = zarr.open_group(str(rs.path / block), mode="r")[name]
    key = arr.metadata.encode_chunk_key((batch,) + (0,) * (arr.ndim - 1))
    return rs.path / block / name / key


def test_every_array_carries_a_crc32c_codec(tmp_path):
    _, _, rs = finished_store(tmp_path / "s.zarr")
    metas = sorted(rs.path.rglob("zarr.json"))
    arrays = [json.loads(p.read_text()) for p in metas]
    arrays = [m for m in arrays if m["node_type"] == "array"]
    assert len(arrays) > 20
    for meta in arrays:
        assert meta["codecs"][-1]["name"] == "crc32c", meta


def test_an_intact_store_verifies_and_every_finished_batch_has_every_chunk(tmp_path):
    _, grid, rs = finished_store(tmp_path / "s.zarr")
    report = verify_store(rs)
    assert report.ok, report.as_dict()
    (block,) = grid.blocks
    g = zarr.open_group(str(rs.path / "a"), mode="r")
    for name in g.attrs["batch_arrays"]:
        # all-zero counters and all-"" errors are written too (write_empty_chunks)
        assert g[name].nchunks_initialized == block.n_batches, name


@pytest.mark.parametrize(
    ("damage", "array", "batch", "kind"),
    [
        ("delete", "rms_phi", 1, "missing"),
        ("delete", "status", 0, "missing"),
        ("delete", "q", 2, "missing"),
        ("flip", "status", 1, "corrupt"),
        ("flip", "done", 2, "corrupt"),
        ("flip", "error", 0, "corrupt"),
        ("garbage", "rms_phi", 1, "corrupt"),
        ("garbage", "steps", 2, "corrupt"),
        ("truncate", "phi_norm", 0, "corrupt"),
    ],
)
def test_verify_names_the_damaged_batch_and_a_resume_repairs_exactly_it(
    tmp_path, damage, array, batch, kind
):
    spec, grid, rs = finished_store(tmp_path / "s.zarr")
    before = {n: rs.read("a", n) for n in ("rms_phi", "status", "q", "steps")}
    path = chunk_file(rs, array, batch)
    data = bytearray(path.read_bytes())
    if damage == "delete":
        path.unlink()
    elif damage == "flip":
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
    elif damage == "garbage":
        path.write_bytes(np.random.default_rng(1).bytes(len(data)))
    else:
        path.write_bytes(bytes(data[: len(data) // 2]))
    report = verify_store(rs)
    assert not report.ok
    # a resume's check (one listing, raw checksums, no decoding) finds exactly the same
    assert verify_store(rs, full=False).as_dict() == report.as_dict()
    (dmg,) = report.blocks
    assert dmg.bad_batches == [batch]
    assert array in getattr(dmg, kind)[batch]
    if kind == "corrupt":
        with pytest.raises(StoreError, match="corrupt chunk"):
            rs.read("a", array)  # raises, never garbage
    reopened = repair_store(rs, spec, grid, report)
    assert reopened == {"a": 1}
    done = rs.done_batches("a")
    assert list(np.flatnonzero(~done)) == [batch]
    assert rs.root_attrs()["complete"] is False
    # the batch runs again (same inputs -> same bytes): the store equals the undisturbed one
    write_batches(rs, grid, only=batch)
    assert verify_store(rs).ok
    for name, old in before.items():
        np.testing.assert_array_equal(rs.read("a", name), old)


@pytest.mark.parametrize("array", ["rms_phi", "done", "case_id", "omega_n", "t"])
def test_a_lost_array_metadata_is_rebuilt_and_its_batches_run_again(tmp_path, array):
    spec, grid, rs = finished_store(tmp_path / "s.zarr")
    (rs.path / "a" / array / "zarr.json").unlink()
    report = verify_store(rs)
    assert not report.ok
    assert any(w.startswith(f"{array}:") for w in report.blocks[0].template)
    reopened = repair_store(rs, spec, grid, report)
    (block,) = grid.blocks
    template = array in ("case_id", "omega_n", "t")
    assert reopened.get("a", 0) == (0 if template else block.n_batches)
    report = verify_store(rs)
    assert not report.blocks[0].template
    if template:  # coordinates rebuilt from the grid; no result lost
        assert report.ok
        np.testing.assert_array_equal(rs.read("a", "case_id"), block.case_ids())
        np.testing.assert_array_equal(rs.read("a", "omega_n"), block.axis_values("omega_n"))


def test_a_corrupt_reference_is_computed_again(tmp_path):
    from mbstudy.solvers.metrics import Reference

    spec, grid, rs = finished_store(tmp_path / "s.zarr")
    t = np.linspace(0, 1, 5)
    rs.write_reference(0, Reference(t=t, q=np.ones((5, 6)), v=np.zeros((5, 6)), status=0,
                                    error_estimate=0.0))
    assert verify_store(rs).ok
    p = rs.path / "reference" / "r0" / "q" / "c" / "0" / "0"
    data = bytearray(p.read_bytes())
    data[-1] ^= 1
    p.write_bytes(bytes(data))
    report = verify_store(rs)
    assert report.references == {0: ["q: chunk corrupt"]}
    repair_store(rs, spec, grid, report)
    assert rs.read_reference(0) is None  # pending: the next launch computes it


def test_the_marker_is_written_last_and_an_interrupted_setup_is_recognised(
    tmp_path, monkeypatch
):
    spec, grid = toy()
    path = tmp_path / "s.zarr"
    seen = []
    real = ResultStore._create_block

    def interrupted(self, root, *args, **kwargs):
        seen.append(dict(root.attrs)["format"])
        raise KeyboardInterrupt  # Ctrl-C (or ENOSPC) in the middle of the template

    monkeypatch.setattr(ResultStore, "_create_block", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ResultStore.create(path, spec, grid)
    assert seen == [SETUP_FORMAT]
    assert ResultStore.exists(path) and ResultStore.setup_incomplete(path)
    with pytest.raises(StoreError, match="setup did not finish"):
        ResultStore.open(path)
    monkeypatch.setattr(ResultStore, "_create_block", real)
    rs = ResultStore.create(path, spec, grid)  # the launch writes it again
    assert not ResultStore.setup_incomplete(path)
    attrs = ResultStore.open(path).root_attrs()
    assert attrs["format"] == STORE_FORMAT and attrs["spec_hash"] == spec.spec_hash
    assert verify_store(rs).ok


def test_a_failed_batch_record_writes_every_chunk(tmp_path):
    from mbstudy.pipeline.run.graph import record_failed_batch

    spec, grid = toy()
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    record_failed_batch(rs, grid, 0, 1, RuntimeError("boom"))
    g = zarr.open_group(str(rs.path / "a"), mode="r")
    for name in g.attrs["batch_arrays"]:
        assert g[name].nchunks_initialized == 1, name
    assert np.isnan(rs.read("a", "q")[3:6]).all()
    assert verify_store(rs).ok


def test_series_are_sized_to_the_widest_case_and_narrower_rows_padded_with_nan(tmp_path):
    from mbstudy.pipeline.run.batch import _widened

    spec, grid = toy(links="[1, 3, 2]", batch_size=5)
    (block,) = grid.blocks
    assert len({int(i) for i in block.ref_index()}) == 3
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    g = zarr.open_group(str(rs.path / "a"), mode="r")
    assert g["q"].shape == (block.n_cases, 5, 9)  # toy: n = 3 * n_links, widest 3 links
    assert "NaN" in g.attrs["series_padding"]
    col = _widened(None, 2, (5, 3))
    col[0] = 1.0
    col = _widened(col, 2, (5, 6))
    col[1] = 2.0
    assert col.shape == (2, 5, 6)
    assert np.isnan(col[0, :, 3:]).all() and (col[0, :, :3] == 1).all()
    cols = columns(np.random.default_rng(0), 5, 5, 9)
    cols["q"] = col.repeat(3, axis=0)[:5]
    rs.write_batch("a", 0, 5, cols)
    q = rs.read("a", "q")
    assert np.isnan(q[0, :, 6:]).all() and (q[0, :, :3] == 1).all()


def test_write_empty_chunks_is_not_left_to_zarrs_default(tmp_path):
    assert zarr_store.WRITE_EVERY_CHUNK == {"write_empty_chunks": True}
    assert zarr.config.get("array.write_empty_chunks") is False  # why the store sets it


@pytest.mark.parametrize("array", ["case_id", "omega_n", "t"])
def test_the_checksum_scan_finds_template_damage_like_a_full_read(tmp_path, array):
    _, _, rs = finished_store(tmp_path / "s.zarr")
    path = chunk_file(rs, array, 0)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    full = verify_store(rs)
    assert full.blocks[0].template == [f"{array}: chunk 0 corrupt"]
    assert verify_store(rs, full=False).as_dict() == full.as_dict()


def test_a_lost_root_zarr_json_is_rebuilt_when_every_block_holds_the_studys_cases(tmp_path):
    from mbstudy.pipeline.store.recover import lost_root, recover_root

    spec, grid, rs = finished_store(tmp_path / "s.zarr")
    before = {n: rs.read("a", n) for n in ("rms_phi", "status", "q")}
    (rs.path / "zarr.json").unlink()
    with pytest.raises(StoreError, match=r"root zarr\.json is missing.*rebuilds it"):
        ResultStore.open(rs.path)
    assert lost_root(rs.path)
    other, other_grid = toy(batch_size=3, links="3")  # other cases (model.n_links differs)
    with pytest.raises(StoreError, match="block 'a' holds other cases"):
        recover_root(rs.path, other, other_grid)
    assert not (rs.path / "zarr.json").exists()  # nothing written for another study
    recover_root(rs.path, spec, grid)
    again = ResultStore.open(rs.path)
    assert again.spec_hash() == spec.spec_hash
    assert again.root_attrs()["study_text"] == spec.text
    assert verify_store(again).ok
    assert again.done_batches("a").all()
    for name, old in before.items():
        np.testing.assert_array_equal(again.read("a", name), old)
