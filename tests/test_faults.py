"""Faults, with real processes really killed: a worker SIGKILLed mid-study, Ctrl-C during a
launch, two launches on one store, failing solver cases, a task that keeps raising."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.status import ERROR, OK
from typer.testing import CliRunner

from tests.conftest import ctrl_c, fourbar_study_head, mbstudy_command, terminal_job
from tests.e2e_testkit import (
    RESUME_STUDY,
    arrays_but_timings,
    assert_same_arrays,
    done_cases,
    six_case_study,
)

pytestmark = pytest.mark.cluster

FAILING_STUDY = fourbar_study_head("failures", 1.0, 11) + """
[[runs]]
name = "budget"
formulation = "none"
integrator = "rk4"
h = 0.001
max_steps = [10, 100000]

[[runs]]
name = "floor"
formulation = "none"
integrator = "dopri5"
h_min = [0.5, 1e-14]

[[runs]]
name = "diverging"
formulation = "baumgarte"
integrator = "rk4"
h = [0.1, 0.01]
omega_n = [1000.0, 5.0]
xi = 1.0
zip = [["h", "omega_n"]]
"""


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("undisturbed")
    study = tmp / "resume.toml"
    study.write_text(RESUME_STUDY)
    store = tmp / "full.zarr"
    subprocess.run([*mbstudy_command(), "launch", str(study), "--store", str(store),
                    "--workers", "2", "--quiet"], check=True, timeout=600, capture_output=True)
    return study, store


def test_worker_killed_mid_study_loses_and_duplicates_nothing(undisturbed, tmp_path):
    from distributed import Client, LocalCluster
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.run.graph import run_study
    from mbstudy.pipeline.study.parse import load_study

    study_path, full = undisturbed
    spec = load_study(study_path)
    grid = expand_grid(spec)
    store = ResultStore.create(tmp_path / "killed.zarr", spec, grid)
    killed = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = list(client.run(os.getpid).values())

        def killer():
            deadline = time.time() + 300
            while time.time() < deadline and done_cases(store.path) < 2:
                time.sleep(0.02)
            os.kill(pids[0], signal.SIGKILL)
            killed.append(done_cases(store.path))

        th = threading.Thread(target=killer, daemon=True)
        th.start()
        summary = run_study(spec, grid, store, client)
        th.join(timeout=60)
    assert killed and killed[0] < grid.n_cases, "the worker was not killed mid-study"
    assert summary.batches_run == grid.n_batches  # every batch reported exactly once
    assert summary.ok == grid.n_cases
    assert ResultStore.open(store.path).root_attrs()["complete"] is True
    assert_same_arrays(full, store.path)


def test_ctrl_c_stops_cleanly_with_a_resumable_store(undisturbed, tmp_path):
    study_path, full = undisturbed
    store = tmp_path / "intr.zarr"
    proc = terminal_job([*mbstudy_command(), "launch", str(study_path), "--store",
                         str(store), "--workers", "2", "--quiet"],
                        stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.time() + 300
    while time.time() < deadline and done_cases(store) < 1 and proc.poll() is None:
        time.sleep(0.05)
    ctrl_c(proc)  # what a terminal's Ctrl-C does: SIGINT to the whole group
    out, _ = proc.communicate(timeout=60)  # a hang guard, not a timing claim
    assert proc.returncode == 130, out
    assert "interrupted" in out and "resumable" in out
    assert not Path(str(store) + ".lock").exists()
    res = subprocess.run([*mbstudy_command(), "launch", str(study_path), "--store", str(store),
                          "--resume", "--workers", "2", "--quiet"], capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert_same_arrays(full, store)


def test_second_launch_on_a_locked_store_is_refused(tmp_path):
    # ten times the steps of the resume study (about 5 s on one worker): the first launch
    # still holds the lock when the second one, started in this process, checks it (with
    # the resume study's cases it could end first, and the second then found a complete
    # store, exit 0)
    study_path = tmp_path / "slow.toml"
    study_path.write_text(RESUME_STUDY.replace("h = 0.0001", "h = 0.00001"))
    store = tmp_path / "locked.zarr"
    proc = subprocess.Popen([*mbstudy_command(), "launch", str(study_path), "--store",
                             str(store), "--workers", "1", "--quiet"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        lock = Path(str(store) + ".lock")
        deadline = time.time() + 120
        while time.time() < deadline and not (lock.exists() and ResultStore.exists(store)):
            time.sleep(0.05)
        assert lock.exists()
        res = CliRunner().invoke(app, ["launch", str(study_path), "--store", str(store)])
        assert res.exit_code == 2
        assert "locked by another launch" in res.output
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_failing_cases_are_data_and_status_lists_them(tmp_path):
    study = tmp_path / "fail.toml"
    study.write_text(FAILING_STUDY)
    store = tmp_path / "fail.zarr"
    runner = CliRunner()
    res = runner.invoke(app, ["launch", str(study), "--store", str(store), "--workers", "2",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    rs = ResultStore.open(store)
    assert list(rs.read("budget", "status")) == [6, OK]        # step_budget, ok
    assert list(rs.read("floor", "status")) == [5, OK]         # step_floor, ok
    div = rs.read("diverging", "status")
    assert div[0] in (1, 2) and div[1] == OK                   # nan or diverged, ok
    res = runner.invoke(app, ["status", str(store)])
    assert "step_budget" in res.output and "step_floor" in res.output


def test_a_task_that_keeps_raising_is_retried_then_recorded(tmp_path, monkeypatch):
    study = tmp_path / "raise.toml"
    study.write_text(RESUME_STUDY.replace("h = 0.0001", "h = 0.001"))
    log = tmp_path / "attempts.log"
    monkeypatch.setenv("MBSTUDY_FAULT_BATCH", "3")
    monkeypatch.setenv("MBSTUDY_FAULT_LOG", str(log))
    store = tmp_path / "raise.zarr"
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store), "--workers",
                                   "2", "--quiet"])
    assert res.exit_code == 1, res.output  # a case ended with status error: not a success
    assert "1 cases ended with status 'error'" in " ".join(res.output.split())
    attempts = log.read_text().splitlines()
    assert len(attempts) == 3  # the first try and 2 retries
    rs = ResultStore.open(store)
    status = rs.read("baumgarte", "status")
    errors = rs.read("baumgarte", "error")
    assert status[3] == ERROR and "injected fault in batch 3" in errors[3]
    assert (status[[i for i in range(12) if i != 3]] == OK).all()
    assert rs.read("baumgarte", "done").all()
    before = {name: rs.read("baumgarte", name) for name in ("rms_phi", "steps")}
    # the fault is gone: --retry-failed reruns exactly the failed batch, nothing else
    monkeypatch.delenv("MBSTUDY_FAULT_BATCH")
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store), "--workers",
                                   "1", "--quiet", "--retry-failed"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "rerunning 1 batches" in res.output
    assert "ran 1 cases in 1 batches (11 batches already done)" in " ".join(res.output.split())
    status = rs.read("baumgarte", "status")
    assert (status == OK).all() and rs.read("baumgarte", "error")[3] == ""
    for name, old in before.items():
        new = rs.read("baumgarte", name)
        keep = [i for i in range(12) if i != 3]
        np.testing.assert_array_equal(new[keep], old[keep])
        assert np.isfinite(new[3])
    assert rs.root_attrs()["complete"] is True
    # retrying a store with no failures reruns nothing
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store), "--workers",
                                   "1", "--quiet", "--retry-failed"])  # fmt: skip
    assert res.exit_code == 0 and "rerunning 0 batches" in res.output, res.output


# ---------------------------------------------------------------- file-system faults
# A real small file system (tmpfs) mounted for the test: full mid-run, read-only on resume.
# Mounting needs CAP_SYS_ADMIN (root in a container); elsewhere these tests are skipped.

@contextmanager
def small_fs(where: Path, size: str):
    """A tmpfs of ``size`` mounted at ``where`` for the body (skips if mount is refused)."""
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip()[:80]})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)


def six_cases(tmp_path) -> tuple[Path, Path]:
    """The six-case study of the integrity tests and its undisturbed store."""
    study = tmp_path / "six.toml"
    study.write_text(six_case_study("faults-fs"))
    full = tmp_path / "full.zarr"
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(full), "--workers",
                                   "1", "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return study, full


def assert_one_fault_line(res) -> None:
    """Exit 1 (not 2: no bad input), no traceback, one error line saying resumable."""
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("mbstudy: error:")]
    assert len(errors) == 1 and "resumable" in errors[0], res.output


def test_a_file_system_full_mid_run_is_one_line_and_resumes_to_the_undisturbed_store(
        tmp_path):  # fmt: skip
    study, full = six_cases(tmp_path)
    files = sum(1 for p in full.rglob("*") if p.is_file())
    with small_fs(tmp_path / "fs", "700k") as fs:
        assert files * 4096 > 700 * 1024  # a page per file: the store cannot fit
        store = fs / "s.zarr"
        res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store),
                                       "--workers", "1", "--quiet"])  # fmt: skip
        assert_one_fault_line(res)
        assert "No space left on device" in res.output
        done = int(ResultStore.open(store).read("baumgarte", "done").sum())
        assert done < 6
        remount(fs, "size=8m")  # space freed: the same store resumes
        res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store),
                                       "--workers", "1", "--quiet"])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert CliRunner().invoke(app, ["verify", str(store)]).exit_code == 0
        a, b = arrays_but_timings(full), arrays_but_timings(store)
        assert sorted(a) == sorted(b)
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_read_only_store_on_resume_is_one_line_and_exit_1(tmp_path):
    study, full = six_cases(tmp_path)
    with small_fs(tmp_path / "fs", "8m") as fs:
        store = fs / "s.zarr"
        shutil.copytree(full, store)
        chunk = store / "baumgarte" / "done" / "c" / "2"
        chunk.unlink()  # a batch to run again
        remount(fs, "ro")
        res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store),
                                       "--workers", "1", "--quiet"])  # fmt: skip
        assert_one_fault_line(res)
        assert "Read-only file system" in res.output
        remount(fs, "rw")
        res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store),
                                       "--workers", "1", "--quiet"])  # fmt: skip
        assert res.exit_code == 0, res.output
        a, b = arrays_but_timings(full), arrays_but_timings(store)
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_directory_where_a_chunk_is_written_stops_the_launch_in_one_line(tmp_path):
    """A write that meets a directory in place of its chunk (EISDIR) ends the launch with
    one line and exit 1, and is never recorded as a case 'error'."""
    import errno

    from mbstudy.pipeline.run.launch import store_faults
    from mbstudy.pipeline.store.errors import StoreFault, storage_fault

    _, full = six_cases(tmp_path)
    rs = ResultStore.open(full)
    target = full / "baumgarte" / "rms_phi" / "c" / "0"
    target.unlink()
    target.mkdir()
    cols = {"rms_phi": np.zeros(1)}
    with pytest.raises(OSError) as info:
        rs.write_batch("baumgarte", 0, 1, cols)
    assert storage_fault(info.value) and info.value.errno == errno.EISDIR
    with pytest.raises(StoreFault, match="resumable"), store_faults(full):
        rs.write_batch("baumgarte", 0, 1, cols)
    from distributed.comm.core import CommClosedError

    assert not storage_fault(CommClosedError("a worker went away"))  # not the store's


def test_losing_the_object_store_mid_launch_is_one_line_and_exit_1(tmp_path, monkeypatch):
    """The S3 server stops while batches run: the workers' writes and the launcher's
    fail; the launch ends with one line and exit 1 (exit 2 is for bad input), and no
    case is recorded as an 'error' for it."""
    from tests.s3_testkit import s3_server_and_handle, s3fs_for

    study = tmp_path / "six.toml"
    study.write_text(six_case_study("s3-loss"))
    monkeypatch.setenv("MBSTUDY_FAULT_BATCH_SLEEP", "1.5")  # a launch that lasts a while
    with s3_server_and_handle("mbstudy-loss") as (endpoint, server):
        fs = s3fs_for(endpoint)
        stopped = []

        def stop_after_the_first_batches() -> None:
            deadline = time.time() + 300  # a hang guard, not a timing claim
            while time.time() < deadline:
                try:
                    if any("/done/c/1" in k for k in fs.find("mbstudy-loss")):
                        break
                except Exception:
                    pass
                time.sleep(0.1)
            server.stop()
            stopped.append(True)

        th = threading.Thread(target=stop_after_the_first_batches, daemon=True)
        th.start()
        res = CliRunner().invoke(app, ["launch", str(study), "--store",
                                       "s3://mbstudy-loss/s.zarr", "--workers", "1",
                                       "--quiet"])  # fmt: skip
        th.join(timeout=60)
    assert stopped, "the server was not stopped mid-launch"
    assert_one_fault_line(res)
    assert "status 'error'" not in res.output, res.output
