"""Ctrl-C of a launch on an existing scheduler (``--scheduler``): the cluster is not the
launch's to close, and cancelling a future does not stop a task a worker is computing.
The launch returns only once no task of it runs, so nothing of it writes the store after
its lock is released (pipeline/run/graph.py ``_wait_stopped``)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from mbstudy.pipeline.run.launch import EXIT_INTERRUPTED, launch

from tests.conftest import fourbar_study_head
from tests.e2e_testkit import store_arrays

pytestmark = pytest.mark.cluster

# four cases of one batch each, a few seconds each (2e6 RK4 steps): Ctrl-C is pressed
# while the worker computes one
SLOW = fourbar_study_head("slow", 20.0, 21, extra="batch_size = 1\n") + """
[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.00001
omega_n = [2.0, 4.0, 6.0, 8.0]
xi = 1.0
"""


def _executing(dask_worker) -> int:
    """On a worker: the tasks running on its threads, cancelled ones included."""
    return dask_worker.state.executing_count


def _batches_running(dask_worker) -> int:
    return sum(1 for ts in dask_worker.state.executing if str(ts.key).startswith("batch-"))


def test_ctrl_c_returns_once_no_task_of_the_launch_runs(tmp_path):
    from distributed import Client, LocalCluster

    study = tmp_path / "slow.toml"
    study.write_text(SLOW)
    store = tmp_path / "s.zarr"

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip

        def press_ctrl_c() -> None:  # once a batch computes on the worker
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                if sum(client.run(_batches_running).values()):
                    os.kill(os.getpid(), signal.SIGINT)
                    return
                time.sleep(0.05)

        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        presser = threading.Thread(target=press_ctrl_c, daemon=True)
        presser.start()
        try:
            summary = launch(study, store=store, scheduler=cluster.scheduler_address,
                             quiet=True, engine="compiled", echo=lambda _: None)  # fmt: skip
        finally:
            presser.join(timeout=10)
            signal.signal(signal.SIGINT, previous)
        assert summary.exit_code == EXIT_INTERRUPTED
        assert summary.still_running == 0
        # the independent check: the worker itself reports nothing running
        assert sum(client.run(_executing).values()) == 0
        after = store_arrays(store)
    # nothing was written after the launch returned: the store as it was then is the
    # store now (the cluster is closed, no task of it is left)
    now = store_arrays(store)
    assert sorted(now) == sorted(after)
    for name, value in after.items():
        np.testing.assert_array_equal(now[name], value, err_msg=name)
    assert int(now["baumgarte/done"].sum()) < 4
