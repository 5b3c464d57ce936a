"""Cluster runs: an existing cluster (a real `dask scheduler` and two `dask worker`
processes on 127.0.0.1), and the dask-jobqueue job scripts for SLURM and PBS."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import STUDIES
from tests.e2e_testkit import assert_same_arrays
from tests.process_testkit import dask_cli, stop_groups

pytestmark = pytest.mark.cluster


@pytest.fixture
def existing_cluster(tmp_path):
    """A real scheduler and two single-threaded workers, started and stopped by the test."""
    sched_file = tmp_path / "scheduler.json"
    # the scheduler unpickles the graph and the workers run it: both must import mbstudy
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(STUDIES.parent), env.get("PYTHONPATH", "")])
    procs = [subprocess.Popen([*dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env)]
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not sched_file.exists():
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen(
                [*dask_cli(), "worker", "--scheduler-file", str(sched_file), "--nthreads", "1",
                 "--host", "127.0.0.1", "--no-dashboard"],
                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env))  # fmt: skip
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=120)
        yield address
    finally:
        stop_groups(procs)


def test_launch_on_an_existing_scheduler_equals_local_run(existing_cluster, tmp_path):
    remote = tmp_path / "remote.zarr"
    local = tmp_path / "local.zarr"
    runner = CliRunner()
    res = runner.invoke(app, ["launch", str(STUDIES / "smoke.toml"), "--store", str(remote),
                              "--scheduler", existing_cluster, "--quiet"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["launch", str(STUDIES / "smoke.toml"), "--store", str(local),
                              "--workers", "2", "--quiet"])
    assert res.exit_code == 0, res.output
    assert_same_arrays(local, remote)


@pytest.mark.parametrize(("kind", "directive"), [("slurm", "#SBATCH"), ("pbs", "#PBS")])
def test_plan_shows_the_job_script(tmp_path, kind, directive):
    study = tmp_path / "c.toml"
    study.write_text((STUDIES / "smoke.toml").read_text() + (
        f'\n[cluster]\nkind = "{kind}"\nqueue = "short"\ncores = 2\nmemory = "4GB"\n'
        'walltime = "00:30:00"\njobs = 2\n'))
    res = CliRunner().invoke(app, ["plan", str(study), "--cluster", kind])
    assert res.exit_code == 0, res.output
    assert directive in res.output
    assert "short" in res.output and "00:30:00" in res.output
    assert "distributed.cli.dask_worker" in res.output or "dask worker" in res.output \
        or "dask-worker" in res.output
