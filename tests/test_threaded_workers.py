"""Multi-threaded workers compile on cold caches (solvers/loader.py, GENERATION_LOCK).

A dask worker with ``--nthreads 2`` (or a jobqueue job with more cores than processes)
runs two compile tasks at once in two threads of one process. CPython 3.11's conversion of
a parsed syntax tree into ``ast`` objects is not thread-safe (its recursion depth counter
is shared by the threads), so kernel generation in one thread next to generation or a
numba compile in the other ended in ``SystemError: AST constructor recursion depth
mismatch`` and a launcher traceback (measured before the lock: 4 of 4 such cold launches
failed so). Here an existing scheduler and one two-thread worker run a tiny
study with two different kernels, each time on empty kernel and numba caches, three times:
every launch must end with exit 0 and its summary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.process_testkit import dask_cli, stop_groups

pytestmark = pytest.mark.cluster

# two kernels (the reference is one of them), the cheapest to compile: rk4 on the 1-dof
# oscillator, unconstrained and with Baumgarte's (empty) stabilization
STUDY = """
[study]
name = "threads"
model = "oscillator"
t_end = 0.1
samples = 3

[reference]
integrator = "rk4"
formulation = "none"
h = 0.01

[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = [0.01]

[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = [0.01]
"""


def _launch_on_two_threads(run: Path) -> subprocess.CompletedProcess:
    """A scheduler, one worker with two threads, and a launch, all with empty caches."""
    env = dict(os.environ, MBSTUDY_KERNEL_DIR=str(run / "kernels"),
               NUMBA_CACHE_DIR=str(run / "numba"))  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    sched_file = run / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "start_new_session": True, "env": env}  # fmt: skip
    procs = [subprocess.Popen([*dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)], **quiet)]
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not sched_file.exists():
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen(
            [*dask_cli(), "worker", "--scheduler-file", str(sched_file), "--nthreads", "2",
             "--host", "127.0.0.1", "--no-dashboard"], **quiet))  # fmt: skip
        study = run / "threads.toml"
        study.write_text(STUDY)
        return subprocess.run(
            [sys.executable, "-m", "mbstudy", "launch", str(study), "--store",
             str(run / "s.zarr"), "--scheduler", address, "--engine", "compiled"],
            env=env, capture_output=True, text=True, timeout=1800, cwd=run)  # fmt: skip
    finally:
        stop_groups(procs)


def test_a_two_thread_worker_launches_on_cold_caches_every_time(tmp_path):
    for k in range(3):
        run = tmp_path / f"run{k}"
        run.mkdir()
        res = _launch_on_two_threads(run)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-3000:]
        assert "Traceback" not in out and "recursion depth mismatch" not in out
        assert "ran 2 cases" in out and "failed: none" in out, out[-2000:]
        assert "kernels: compiled 2" in out, out[-2000:]  # both compiled cold, in one worker
