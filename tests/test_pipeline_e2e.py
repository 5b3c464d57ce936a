"""End to end on real components: a LocalCluster with worker processes, real Zarr stores in
temporary directories, the real entry point in a subprocess, a launcher killed with
SIGKILL and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from typer.testing import CliRunner

from mbstudy import pipeline
from tests.conftest import STUDIES, mbstudy_command
from tests.e2e_testkit import RESUME_STUDY, assert_same_arrays, done_cases, store_arrays

pytestmark = pytest.mark.cluster
@pytest.fixture(scope="module")
def smoke_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("smoke") / "smoke.zarr"
    res = CliRunner().invoke(
        app, ["launch", str(STUDIES / "smoke.toml"), "--store", str(path), "--workers", "2",
              "--quiet"],
    )
    assert res.exit_code == 0, res.output
    return path


def test_launch_writes_a_complete_store(smoke_store):
    rs = ResultStore.open(smoke_store)
    attrs = rs.root_attrs()
    assert attrs["complete"] is True
    assert attrs["study_name"] == "smoke"
    assert "numba" in attrs["versions"] and attrs["study_text"].startswith("#")
    for block in rs.blocks():
        assert rs.read(block, "done").all()
        assert (rs.read(block, "status") == 0).all()
    assert rs.read_reference(0).status == 0


def test_store_opens_with_xarray_unstacked(smoke_store):
    ds = pipeline.open_results(smoke_store, "baumgarte")
    assert set(ds.rms_phi.dims) == {"h", "omega_n"}
    assert ds.phi_norm.dims == ("h", "omega_n", "t")
    one = ds.sel(h=0.0025, omega_n=5.0)
    assert np.isfinite(float(one.rms_phi)) and float(one.rms_phi) > 0


def test_launched_values_equal_mbstudy_run(smoke_store):
    """The same case through `mbstudy run --json` (in-process, no Dask) gives equal values."""
    ds = pipeline.open_results(smoke_store, "baumgarte").sel(h=0.005, omega_n=20.0)
    res = CliRunner().invoke(app, [
        "run", "--model", "fourbar", "--formulation", "baumgarte", "--integrator", "rk4",
        "--t-end", "1.0", "--samples", "101", "--set", "h=0.005", "--set", "omega_n=20.0",
        "--set", "xi=1.0", "--json",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["status"] == "ok"
    for name in ("rms_phi", "rms_dphi", "max_phi", "de_max", "e_r", "e_theta", "rhs_evals"):
        assert out["metrics"][name] == pytest.approx(float(ds[name]), rel=1e-12, abs=0), name
    assert len(out["final"]["q"]) == 9


def test_relaunch_of_a_finished_store_resumes_and_changes_nothing(smoke_store, tmp_path):
    before = store_arrays(smoke_store)
    res = CliRunner().invoke(app, ["launch", str(STUDIES / "smoke.toml"), "--store",
                                   str(smoke_store), "--workers", "1", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "resuming" in res.output
    after = store_arrays(smoke_store)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_resume_keeps_the_batch_plan_the_store_was_made_with(smoke_store, tmp_path):
    """The automatic batch size is a heuristic outside the study hash: a store made with
    other batch sizes (say by an older cost model) resumes with its own, through the public
    ``launch()``, and ends with the same values as a store made in one go."""
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.study import load_study

    spec = load_study(STUDIES / "smoke.toml")
    grid = expand_grid(spec)
    ones = {b.name: 1 for b in grid.blocks}
    assert grid.batch_sizes != ones  # the cost model puts several cases in a batch
    path = tmp_path / "made-before.zarr"
    ResultStore.create(path, spec, grid.with_batch_sizes(ones))
    summary = pipeline.launch(STUDIES / "smoke.toml", store=path, workers=1, resume=True,
                              quiet=True)  # fmt: skip
    assert summary.exit_code == 0 and not summary.interrupted
    assert summary.batches_run == grid.n_cases  # one case per batch, as recorded
    assert summary.cases_run == grid.n_cases
    assert sum(summary.status_names.values()) == grid.n_cases
    assert summary.store == str(path)
    assert ResultStore.open(path).batch_sizes() == ones
    assert ResultStore.open(path).root_attrs()["complete"] is True
    assert_same_arrays(path, smoke_store)


def test_status_and_aggregate_on_the_store(smoke_store):
    runner = CliRunner()
    res = runner.invoke(app, ["status", str(smoke_store), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["blocks"]["baumgarte"]["done"] == 4 and info["complete"] is True
    res = runner.invoke(app, ["aggregate", str(smoke_store), "--baseline", "baumgarte",
                              "--metric", "rms_phi", "--format", "json"])
    assert res.exit_code == 0, res.output
    tables = json.loads(res.output)
    (summary,) = tables.values()
    ratio = summary[0]["rms_phi_ratio"]
    # unstabilized over Baumgarte at matched h: larger drift
    assert summary[0]["group"] == "none" and ratio > 1
    for fmt in ("table", "csv", "markdown"):
        res = runner.invoke(app, ["aggregate", str(smoke_store), "--by", "h", "--format", fmt])
        assert res.exit_code == 0, res.output
        assert "0.0025" in res.output


def test_store_of_another_study_is_refused(smoke_store, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text((STUDIES / "smoke.toml").read_text().replace("[5.0, 20.0]", "[5.0, 21.0]"))
    before = store_arrays(smoke_store)
    res = CliRunner().invoke(app, ["launch", str(other), "--store", str(smoke_store)])
    assert res.exit_code == 2
    assert "another study" in res.output
    after = store_arrays(smoke_store)
    assert sorted(before) == sorted(after)


def test_launcher_killed_then_resumed_equals_uninterrupted_run(tmp_path):
    study = tmp_path / "resume.toml"
    study.write_text(RESUME_STUDY)
    full = tmp_path / "full.zarr"
    killed = tmp_path / "killed.zarr"
    env = dict(os.environ)
    cmd = [*mbstudy_command(), "launch", str(study), "--workers", "2", "--quiet"]
    subprocess.run([*cmd, "--store", str(full)], check=True, env=env, timeout=600,
                   capture_output=True)
    proc = subprocess.Popen([*cmd, "--store", str(killed)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and done_cases(killed) < 2 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the launcher and its LocalCluster, mid-study
    proc.wait(timeout=30)
    n_done = done_cases(killed)
    assert 0 < n_done < 12, f"kill did not land mid-study ({n_done} done)"
    assert ResultStore.open(killed).root_attrs()["complete"] is False
    n_done = done_cases(killed)  # rows done before the relaunch (batch size 1: batches)
    out = subprocess.run([*cmd, "--store", str(killed), "--resume"], env=env, timeout=600,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "resuming" in text
    # only the unfinished batches were recomputed, and the launcher says how many
    assert f"ran {12 - n_done} cases in {12 - n_done} batches ({n_done} batches already done)" \
        in " ".join(text.split()), text
    assert_same_arrays(full, killed)
    assert ResultStore.open(killed).root_attrs()["complete"] is True
