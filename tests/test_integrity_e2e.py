"""Stores you can trust, end to end on a real LocalCluster: a store with deleted,
bit-flipped and garbage chunks is reported by ``verify`` batch by batch, refused with one
line by ``status``, and a launch on it runs exactly the damaged batches again and ends
equal to the undisturbed store; an unfinished template is written again; a swept model
parameter that changes the number of coordinates stores NaN-padded series, no ``error``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.status import ERROR
from typer.testing import CliRunner

from tests.e2e_testkit import arrays_but_timings as arrays
from tests.e2e_testkit import six_case_study

pytestmark = pytest.mark.cluster

STUDY = six_case_study("integrity-e2e")


def launch(study: Path, store: Path, *extra: str):
    return CliRunner().invoke(app, ["launch", str(study), "--store", str(store), "--workers",
                                    "1", "--quiet", *extra])


def chunk(store: Path, block: str, name: str, index: int) -> Path:
    arr = zarr.open_group(str(store / block), mode="r")[name]
    return store / block / name / arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("integrity")
    study = tmp / "study.toml"
    study.write_text(STUDY)
    store = tmp / "full.zarr"
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    return study, store


def test_damaged_chunks_are_found_and_exactly_their_batches_run_again(undisturbed, tmp_path):
    study, full = undisturbed
    store = tmp_path / "damaged.zarr"
    shutil.copytree(full, store)
    chunk(store, "baumgarte", "rms_phi", 1).unlink()
    p = chunk(store, "baumgarte", "status", 2)
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit
    p.write_bytes(bytes(data))
    p = chunk(store, "baumgarte", "q", 4)
    p.write_bytes(np.random.default_rng(3).bytes(p.stat().st_size))  # garbage bytes
    runner = CliRunner()
    res = runner.invoke(app, ["verify", str(store), "--json"])
    assert res.exit_code == 1, res.output
    info = json.loads(res.output)["blocks"]["baumgarte"]
    assert info["missing"] == {"1": ["rms_phi"]}
    assert info["corrupt"] == {"2": ["status"], "4": ["q"]}
    res = runner.invoke(app, ["status", str(store)])  # never "all done" on a damaged store
    # the first damage it meets, named by array and batch (rms_phi comes before status)
    assert res.exit_code == 2 and "baumgarte/rms_phi, batch 1" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "running again: baumgarte: 3 batches" in out, out
    assert "ran 3 cases in 3 batches (3 batches already done)" in out, out
    assert runner.invoke(app, ["verify", str(store)]).exit_code == 0
    a, b = arrays(full), arrays(store)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_an_unfinished_template_is_written_again(undisturbed, tmp_path, monkeypatch):
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.study.parse import load_study

    study, full = undisturbed
    store = tmp_path / "setup.zarr"
    spec = load_study(study)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(ResultStore, "_create_block", killed)
        with pytest.raises(KeyboardInterrupt):
            ResultStore.create(store, spec, expand_grid(spec))
    assert ResultStore.setup_incomplete(store)
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    assert "template was not finished" in res.output
    a, b = arrays(full), arrays(store)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_lost_root_zarr_json_is_rebuilt_by_the_next_launch(undisturbed, tmp_path):
    study, full = undisturbed
    store = tmp_path / "rootless.zarr"
    shutil.copytree(full, store)
    (store / "zarr.json").unlink()
    res = CliRunner().invoke(app, ["status", str(store)])
    assert res.exit_code == 2 and "root zarr.json is missing" in res.output, res.output
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "the root zarr.json was missing; rebuilt from the study" in out, out
    assert "ran 0 cases" in out, out
    assert ResultStore.open(store).root_attrs()["complete"] is True
    a, b = arrays(full), arrays(store)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


VARIABLE = """
[study]
name = "variable-sizes"
model = "nfourbar"
t_end = 0.2
samples = 5

[reference]
integrator = "dopri5"
formulation = "qr"
rtol = 1e-8
atol = 1e-10

[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = 0.005
model.n = [1, 2, 3]

[output]
series = ["phi_norm", "q", "v", "lam"]
"""


def test_a_swept_size_stores_nan_padded_series_and_no_error(tmp_path):
    from mbstudy.pipeline.store.zarr_store import model_sizes

    study = tmp_path / "variable.toml"
    study.write_text(VARIABLE)
    store = tmp_path / "variable.zarr"
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    rs = ResultStore.open(store)
    assert not (rs.read("none", "status") == ERROR).any(), rs.read("none", "error")
    ns = rs.read("none", "model.n")
    q, lam = rs.read("none", "q"), rs.read("none", "lam")
    sizes = [model_sizes("nfourbar", {"n": int(k)}) for k in ns]
    assert q.shape[2] == max(n for n, _ in sizes) and lam.shape[2] == max(m for _, m in sizes)
    for row, (n, m) in enumerate(sizes):
        assert np.isfinite(q[row, :, :n]).all() and np.isnan(q[row, :, n:]).all()
        assert np.isfinite(lam[row, :, :m]).all() and np.isnan(lam[row, :, m:]).all()


def test_a_corrupt_reference_is_computed_again_when_every_batch_is_done(undisturbed,
                                                                        tmp_path):
    study, full = undisturbed
    store = tmp_path / "reference.zarr"
    shutil.copytree(full, store)
    p = store / "reference" / "r0" / "q" / "c" / "0" / "0"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))
    runner = CliRunner()
    assert runner.invoke(app, ["verify", str(store)]).exit_code == 1
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "running again: 1 references" in out and "ran 0 cases" in out, out
    res = runner.invoke(app, ["verify", str(store)])
    assert res.exit_code == 0, res.output  # repaired, not only reported
    assert ResultStore.open(store).root_attrs()["complete"] is True
    a, b = arrays(full), arrays(store)
    assert sorted(a) == sorted(b)
    for name in a:  # the reference computed again: the same bytes
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("damage", ["status-metadata", "root-not-json", "consolidated",
                                    "fifo-chunk", "fifo-root"])
def test_a_launch_repairs_what_verify_reports(undisturbed, tmp_path, damage):
    import os

    study, full = undisturbed
    store = tmp_path / "damaged.zarr"
    shutil.copytree(full, store)
    if damage == "status-metadata":  # the block is rebuilt: its coord labels with it
        (store / "baumgarte" / "status" / "zarr.json").unlink()
    elif damage == "root-not-json":
        (store / "zarr.json").write_text("{ not json")
    elif damage == "consolidated":
        doc = json.loads((store / "zarr.json").read_text())
        del doc["consolidated_metadata"]["metadata"]["baumgarte/q"]
        (store / "zarr.json").write_text(json.dumps(doc))
    elif damage == "fifo-chunk":
        p = chunk(store, "baumgarte", "rms_phi", 3)
        p.unlink()
        os.mkfifo(p)
    else:  # zarr would block reading it: removed, then rebuilt as a lost root
        (store / "zarr.json").unlink()
        os.mkfifo(store / "zarr.json")
    runner = CliRunner()
    res = runner.invoke(app, ["verify", str(store)])
    # damage found (1), or the root unreadable (2: one line pointing to launch)
    assert res.exit_code in (1, 2) and isinstance(res.exception, SystemExit), res.output
    res = launch(study, store)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["verify", str(store)])
    assert res.exit_code == 0, res.output
    a, b = arrays(full), arrays(store)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    import xarray as xr

    assert "baumgarte/coord" in b  # the label array is back (compared above)
    ds = xr.open_zarr(store, group="baumgarte")  # the consolidated copy, rewritten
    np.testing.assert_array_equal(ds["q"].values, b["baumgarte/q"])
    np.testing.assert_array_equal(ds["coord"].values, a["baumgarte/coord"])
