"""Real Dask processes for the tests that start a scheduler and workers by hand
(tests/test_cluster.py, tests/test_threaded_workers.py): the ``dask`` command line of this
interpreter, and stopping the process groups they run in."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def dask_cli() -> list[str]:
    """The ``dask`` command beside this interpreter (or ``python -m distributed.cli.dask``)."""
    exe = Path(sys.executable).parent / "dask"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "distributed.cli.dask"]


def stop_groups(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every process's group (each started with ``start_new_session``), then wait
    20 s for each and SIGKILL what is left."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
