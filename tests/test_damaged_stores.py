"""A damaged store is never served as data, on the fake registry (no kernels, no cluster):
every reader (``aggregate``, ``open_results``, ``status``, the case table of ``plot`` and
``report``) refuses a missing chunk of a finished batch, a lost array, a chunk that is a
directory, a FIFO or a link to ``/dev/zero`` with one line naming the array and batch;
``verify`` reports each, the repair a launch makes fixes each (label arrays, lost groups,
an unreadable root, the consolidated metadata included), and the repaired batches written
again give back the undisturbed values."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
import zarr
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.reader import case_table, open_results
from mbstudy.pipeline.store.verify import repair_store, verify_store
from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError
from typer.testing import CliRunner

from tests.conftest import load_fakes
from tests.integrity_testkit import toy, write_batches


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    load_fakes().install(monkeypatch)


SERIES = '"phi_norm", "q", "lam"'  # q and lam: the label arrays coord and constraint


def finished(where):
    spec, grid = toy(series=SERIES)
    rs = ResultStore.create(where, spec, grid)
    write_batches(rs, grid)
    return spec, grid, rs


def chunk_path(rs, name: str, index: int, group: str = "a"):
    arr = zarr.open_group(str(rs.path / group), mode="r")[name]
    return rs.path / group / name / arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


def values(rs) -> dict[str, np.ndarray]:
    g = zarr.open_group(str(rs.path / "a"), mode="r", use_consolidated=False)
    return {name: np.asarray(arr[:]) for name, arr in g.arrays()}


def one_line_refusal(args, *needles):
    """``mbstudy ARGS`` exits 2 with one line holding every needle."""
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def repaired_equals_undisturbed(rs, spec, grid, before):
    """verify finds the damage, the repair makes it pending, writing the pending batches
    again (the same inputs give the same bytes) restores every value array."""
    report = verify_store(rs)
    assert not report.ok
    repair_store(rs, spec, grid, report)
    for b in np.flatnonzero(~rs.done_batches("a")):
        write_batches(rs, grid, only=int(b))
    assert verify_store(rs).ok, verify_store(rs).as_dict()
    assert sorted(values(rs)) == sorted(before)
    assert_values_equal(rs, before)


def assert_values_equal(rs, before) -> None:
    """Every value array of ``before`` equals the store's now, bit for bit."""
    after = values(rs)
    for name, old in before.items():
        np.testing.assert_array_equal(after[name], old, err_msg=name)


# a missing chunk of a finished batch: rhs_evals used to read as 0, rms_phi as NaN
@pytest.mark.parametrize("name", ["rhs_evals", "rms_phi", "status", "phi_norm"])
def test_a_missing_chunk_of_a_finished_batch_is_refused_by_every_reader(tmp_path, name):
    spec, grid, rs = finished(tmp_path / "s.zarr")
    before = values(rs)
    chunk_path(rs, name, 1).unlink()
    readers = [lambda: open_results(rs.path, "a"), lambda: rs.read("a", name)]
    if name != "phi_norm":  # a series: not in the case table (aggregate, plot, report)
        readers.append(lambda: case_table(rs, "a"))
        one_line_refusal(["aggregate", str(rs.path)], f"a/{name}, batch 1", "mbstudy verify")
    for read in readers:
        with pytest.raises(StoreError, match=rf"a/{name}, batch 1: the chunk is missing"):
            read()
    one_line_refusal(["status", str(rs.path)], f"a/{name}, batch 1")
    repaired_equals_undisturbed(rs, spec, grid, before)


def test_a_missing_chunk_of_a_pending_batch_is_no_damage(tmp_path):
    spec, grid = toy(series=SERIES)
    rs = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    write_batches(rs, grid, only=0)
    df = case_table(rs, "a")
    assert df["done"].tolist() == [True] * 3 + [False] * 5
    assert verify_store(rs).ok


@pytest.mark.parametrize("name", ["rms_phi", "rhs_evals", "error", "q"])
def test_a_lost_array_is_refused_not_a_column_of_nan(tmp_path, name):
    _, _, rs = finished(tmp_path / "s.zarr")
    (rs.path / "a" / name / "zarr.json").unlink()
    with pytest.raises(StoreError, match=rf"array a/{name} is missing"):
        open_results(rs.path, "a")
    one_line_refusal(["status", str(rs.path)], f"a/{name} is missing", "mbstudy verify")
    if name in ("rms_phi", "rhs_evals"):  # columns of the case table
        one_line_refusal(["aggregate", str(rs.path)], f"a/{name} is missing")


@pytest.mark.parametrize("kind", ["directory", "fifo", "dev-zero", "dangling"])
def test_a_chunk_that_is_not_a_file_is_refused_at_once_and_repaired(tmp_path, kind):
    spec, grid, rs = finished(tmp_path / "s.zarr")
    before = values(rs)
    path = chunk_path(rs, "rms_phi", 2)
    path.unlink()
    if kind == "directory":
        path.mkdir()
        (path / "x").write_bytes(b"x")
    elif kind == "fifo":
        os.mkfifo(path)  # zarr would block reading it forever
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")  # zarr would read it until memory runs out
    else:
        path.symlink_to(tmp_path / "nowhere")
    one_line_refusal(["aggregate", str(rs.path)], "a/rms_phi, batch 2",
                     "not a regular file")  # fmt: skip
    with pytest.raises(StoreError, match="not a regular file"):
        open_results(rs.path, "a")
    for full in (True, False):
        report = verify_store(rs, full=full)
        kinds = report.blocks[0].corrupt if kind != "dangling" else {
            **report.blocks[0].corrupt, **report.blocks[0].missing}
        assert kinds == {2: ["rms_phi"]}, report.as_dict()
    res = CliRunner().invoke(app, ["verify", str(rs.path)])
    assert res.exit_code == 1 and "batch 2: corrupt rms_phi" in res.output, res.output
    repaired_equals_undisturbed(rs, spec, grid, before)


def test_a_lost_done_chunk_is_a_pending_batch_and_never_complete(tmp_path):
    _, grid, rs = finished(tmp_path / "s.zarr")
    rs.mark_complete(True)
    before = values(rs)
    chunk_path(rs, "done", 1).unlink()
    res = CliRunner().invoke(app, ["status", str(rs.path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["complete"] is False
    assert out["blocks"]["a"]["pending"] == 3
    res = CliRunner().invoke(app, ["status", str(rs.path)])
    assert "complete: False" in res.output and "3 pending" in res.output, res.output
    # the batch is pending: its other chunks are no damage, the next launch reruns it
    assert verify_store(rs).ok
    write_batches(rs, grid, only=1)
    assert_values_equal(rs, before)


@pytest.mark.parametrize("name", ["status", "done", "constraint", "coord"])
def test_a_rebuilt_array_or_block_keeps_its_label_arrays(tmp_path, name):
    spec, grid, rs = finished(tmp_path / "s.zarr")
    before = values(rs)
    (rs.path / "a" / name / "zarr.json").unlink()
    report = verify_store(rs)
    assert any(w.startswith(f"{name}:") for w in report.blocks[0].template), report.as_dict()
    repaired_equals_undisturbed(rs, spec, grid, before)
    ds = open_results(rs.path, "a")
    assert list(ds["constraint"].values) == [f"c{i}" for i in range(ds.sizes["constraint"])]
    assert ds.lam.sel(constraint="c0").shape[-1] == 5
    assert ds.q.sel(coord="q1").ndim == 3


def test_a_deleted_block_group_is_one_line_and_rebuilt(tmp_path):
    spec, grid, rs = finished(tmp_path / "s.zarr")
    before = values(rs)
    shutil.rmtree(rs.path / "a")
    for args in (["status", str(rs.path)], ["aggregate", str(rs.path)]):
        one_line_refusal(args, "group a is missing", "mbstudy verify")
    res = CliRunner().invoke(app, ["verify", str(rs.path)])
    assert res.exit_code == 1 and "group metadata lost" in res.output, res.output
    repaired_equals_undisturbed(rs, spec, grid, before)


@pytest.mark.parametrize("name", ["t", "q"])
def test_a_damaged_reference_chunk_is_rebuilt_pending(tmp_path, name):
    """Found by tests/test_store_stateful.py: a truncated chunk of a reference's ``t``
    (written with the template, not by the reference task) was removed and never
    written again, so verify kept reporting it after every launch."""
    from mbstudy.solvers.metrics import Reference

    spec, grid, rs = finished(tmp_path / "s.zarr")
    t = np.linspace(0, 1, 5)
    rs.write_reference(0, Reference(t=t, q=np.ones((5, 6)), v=np.zeros((5, 6)), status=0,
                                    error_estimate=0.0))
    before = np.asarray(zarr.open_group(str(rs.path / "reference" / "r0"))["t"][:])
    p = chunk_path(rs, name, 0, group="reference/r0")
    p.write_bytes(p.read_bytes()[:5])
    report = verify_store(rs)
    assert report.references == {0: [f"{name}: chunk corrupt"]}, report.as_dict()
    repair_store(rs, spec, grid, report)
    assert rs.read_reference(0) is None  # pending: the next launch computes it
    # what the reference task writes (q, v, its attributes) is all a verify needs now
    rs.write_reference(0, Reference(t=t, q=np.ones((5, 6)), v=np.zeros((5, 6)), status=0,
                                    error_estimate=0.0))
    assert verify_store(rs).ok, verify_store(rs).as_dict()
    np.testing.assert_array_equal(
        zarr.open_group(str(rs.path / "reference" / "r0"))["t"][:], before)


@pytest.mark.parametrize("what", ["group", "one"])
def test_a_deleted_reference_is_reported_and_rebuilt_pending(tmp_path, what):
    from mbstudy.solvers.metrics import Reference

    spec, grid, rs = finished(tmp_path / "s.zarr")
    t = np.linspace(0, 1, 5)
    rs.write_reference(0, Reference(t=t, q=np.ones((5, 6)), v=np.zeros((5, 6)), status=0,
                                    error_estimate=0.0))
    rs.mark_complete(True)
    assert verify_store(rs).ok
    shutil.rmtree(rs.path / "reference" / ("r0" if what == "one" else ""))
    report = verify_store(rs)
    assert report.references, report.as_dict()
    repair_store(rs, spec, grid, report)
    assert rs.read_reference(0) is None  # pending: the next launch computes it
    assert rs.root_attrs()["complete"] is False
    assert verify_store(rs).ok


@pytest.mark.parametrize("damage", ["not-json", "empty", "deleted"])
def test_an_unreadable_root_is_one_line_and_rebuilt_from_the_study(tmp_path, damage):
    from mbstudy.pipeline.store.recover import lost_root, recover_root

    spec, grid, rs = finished(tmp_path / "s.zarr")
    before = values(rs)
    root = rs.path / "zarr.json"
    if damage == "deleted":
        root.unlink()
    else:
        root.write_text("{ not json" if damage == "not-json" else "")
    for cmd in ("status", "aggregate", "verify"):
        one_line_refusal([cmd, str(rs.path)], "root zarr.json", "mbstudy launch")
    assert lost_root(rs.path)
    recover_root(rs.path, spec, grid)
    again = ResultStore.open(rs.path)
    assert again.spec_hash() == spec.spec_hash
    assert verify_store(again).ok, verify_store(again).as_dict()
    after = values(again)
    for name, old in before.items():
        np.testing.assert_array_equal(after[name], old, err_msg=name)


@pytest.mark.parametrize("damage", ["drop-array", "stale-shape", "drop-all"])
def test_verify_checks_the_consolidated_metadata_and_the_repair_rewrites_it(tmp_path,
                                                                             damage):
    import xarray as xr

    spec, grid, rs = finished(tmp_path / "s.zarr")
    rs.mark_complete(True)
    root = rs.path / "zarr.json"
    doc = json.loads(root.read_text())
    listed = doc["consolidated_metadata"]["metadata"]
    if damage == "drop-array":
        del listed["a/rms_phi"]
    elif damage == "stale-shape":
        listed["a/rms_phi"]["shape"] = [4]
    else:
        del doc["consolidated_metadata"]
    root.write_text(json.dumps(doc))
    report = verify_store(rs)
    assert not report.ok and report.consolidated, report.as_dict()
    res = CliRunner().invoke(app, ["verify", str(rs.path)])
    assert res.exit_code == 1 and "consolidated metadata" in res.output, res.output
    repair_store(rs, spec, grid, report)
    assert verify_store(rs).ok
    # what plain xarray relies on: the consolidated copy, now matching every node
    ds = xr.open_zarr(rs.path, group="a")
    np.testing.assert_array_equal(ds["rms_phi"].values, rs.read("a", "rms_phi"))


@pytest.mark.parametrize("doc", ["zarr.json", "a/zarr.json", "a/rms_phi/zarr.json",
                                 "reference/r0/zarr.json"])
def test_a_fifo_in_place_of_a_zarr_json_is_one_line_never_a_hang(tmp_path, doc):
    """Found by tests/test_store_stateful.py: a FIFO where the root zarr.json was made
    every command block forever (zarr reads it)."""
    _, _, rs = finished(tmp_path / "s.zarr")
    path = rs.path / doc
    path.unlink()
    os.mkfifo(path)
    for cmd in ("status", "aggregate", "verify"):
        one_line_refusal([cmd, str(rs.path)], doc, "not a regular file")
