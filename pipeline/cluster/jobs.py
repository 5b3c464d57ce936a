"""Batch jobs of a launch on SLURM: their name, listing them, cancelling orphans.

Every worker job a launch submits carries a name derived from the store's absolute path
(:func:`job_name`), so ``mbstudy status STORE`` finds the jobs of that store's run with
``squeue --name`` and a relaunch can cancel jobs left behind by a launcher that was
killed (the store lock guarantees no live launch owns them). The short name also fits
PBS's 15-character job-name limit.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

_FIELDS = ("id", "state", "name", "elapsed", "time_limit", "partition", "reason")
_FORMAT = "%i|%T|%j|%M|%l|%P|%R"  # squeue -o: matches _FIELDS


@dataclass(frozen=True)
class Job:
    """One batch job as ``squeue`` reports it (state e.g. PENDING, RUNNING, COMPLETING)."""

    id: str
    state: str
    name: str
    elapsed: str
    time_limit: str
    partition: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def job_name(store: str | Path) -> str:
    """The batch-job name of every worker job of a launch on ``store``: ``mbs-`` and ten hex
    digits of the SHA-1 of the store's absolute path (of its URL for an object store)."""
    text = str(store)
    key = text if "://" in text else str(Path(text).resolve())
    digest = hashlib.sha1(key.encode()).hexdigest()
    return f"mbs-{digest[:10]}"


def slurm_available() -> bool:
    """True when the SLURM client commands are on PATH."""
    return shutil.which("squeue") is not None


def list_slurm_jobs(name: str | None = None, timeout: float = 15.0) -> list[Job] | None:
    """Jobs in the SLURM queue (only those named ``name`` if given); None if ``squeue`` is
    missing or fails (no controller reachable)."""
    if not slurm_available():
        return None
    cmd = ["squeue", "-h", "-o", _FORMAT]
    if name:
        cmd += ["--name", name]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    jobs = []
    for line in res.stdout.splitlines():
        parts = line.split("|", len(_FIELDS) - 1)
        if len(parts) == len(_FIELDS):
            jobs.append(Job(*(p.strip() for p in parts)))
    return jobs


def count_states(jobs: list[Job]) -> dict[str, int]:
    """Number of jobs per state, lower-case (``{"running": 2, "pending": 1}``)."""
    out: dict[str, int] = {}
    for job in jobs:
        key = job.state.lower()
        out[key] = out.get(key, 0) + 1
    return out


def cancel_slurm_jobs(name: str, timeout: float = 20.0) -> list[str]:
    """``scancel`` every job named ``name``; return their ids (empty if none or no SLURM)."""
    jobs = list_slurm_jobs(name, timeout) or []
    ids = [j.id for j in jobs]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=timeout, check=False)
    return ids
