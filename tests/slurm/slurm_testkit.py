"""Helpers of the SLURM/PBS tests: study files with a ``[cluster]`` table, the launcher as
a subprocess, and a sampler that records the worker jobs ``squeue`` shows."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from tests.conftest import mbstudy_command

CLUSTER_TABLE = """
[cluster]
kind = "{kind}"
queue = "{queue}"
cores = 1
memory = "1GB"
walltime = "{walltime}"
jobs = {jobs}
{extra}
"""


def study_file(
    tmp: Path,
    text: str,
    kind: str = "slurm",
    queue: str = "mbtest",
    walltime: str = "00:05:00",
    jobs: int = 2,
    extra: str = "",
    name: str = "study.toml",
) -> Path:
    """``text`` plus a ``[cluster]`` table (not part of the study hash), written to tmp."""
    path = tmp / name
    path.write_text(text + CLUSTER_TABLE.format(kind=kind, queue=queue, walltime=walltime,
                                                jobs=jobs, extra=extra))  # fmt: skip
    return path


def launcher_env(tmp: Path, kind: str = "slurm") -> dict[str, str]:
    """The launcher's environment: job logs under tmp/joblogs; a lost worker's job is
    replaced 2 s after it left (Dask's default waits 15 s)."""
    env = dict(os.environ)
    env[f"DASK_JOBQUEUE__{kind.upper()}__LOG_DIRECTORY"] = str(tmp / "joblogs")
    env["DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT"] = "2s"
    return env


def launch_command(study: Path, store: Path, *extra: str, kind: str = "slurm") -> list[str]:
    return [*mbstudy_command(), "launch", str(study), "--store", str(store), "--cluster",
            kind, "--quiet", *extra]  # fmt: skip


def job_logs(tmp: Path) -> str:
    """Everything the worker jobs wrote (stdout and stderr of every job)."""
    d = tmp / "joblogs"
    return (
        "\n".join(f.read_text(errors="replace") for f in sorted(d.glob("*"))) if d.exists() else ""
    )


def seconds(text: str) -> int:
    """SLURM's [D-][HH:]MM:SS time in seconds."""
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts
    return ((int(days) if days else 0) * 24 + h) * 3600 + m * 60 + s


class JobSampler:
    """Poll ``squeue`` for the jobs named ``name`` while a test runs: for every job id seen,
    its states, partition, time limit, CPUs, memory and the largest elapsed seconds."""

    FORMAT = "%i|%T|%P|%l|%C|%m|%M"

    def __init__(self, name: str, interval: float = 0.5) -> None:
        self.name, self.interval = name, interval
        self.rows: dict[str, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            res = subprocess.run(["squeue", "-h", "--name", self.name, "-o", self.FORMAT],
                                 capture_output=True, text=True, timeout=30)  # fmt: skip
            for line in res.stdout.splitlines():
                jid, state, part, limit, cpus, mem, elapsed = line.split("|")
                row = self.rows.setdefault(jid, {"states": set(), "elapsed_s": 0})
                row.update(partition=part, time_limit=limit, cpus=cpus, memory=mem)
                row["states"].add(state)
                if elapsed and elapsed[0].isdigit():
                    row["elapsed_s"] = max(row["elapsed_s"], seconds(elapsed))
            self._stop.wait(self.interval)

    def __enter__(self) -> JobSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def local_store(tmp: Path, text: str) -> Path:
    """The study ``text`` run on a LocalCluster of 2 workers: the store to compare with."""
    study = tmp / "local.toml"
    study.write_text(text)
    store = tmp / "local.zarr"
    subprocess.run([*mbstudy_command(), "launch", str(study), "--store", str(store),
                    "--workers", "2", "--quiet"], check=True, timeout=900, capture_output=True,
                   cwd=tmp)  # fmt: skip
    return store
