"""The ``[cluster]`` section of a study file: a dask-jobqueue (SLURM or PBS) cluster.

Validates kind, queue, account, cores, memory, walltime, jobs, processes, job_extra and
worker_lifetime into a :class:`~mbstudy.pipeline.study.spec.ClusterSpec`; sizes, wall
times and lifetimes are checked against the spellings dask-jobqueue accepts.
"""

from __future__ import annotations

import re
from typing import Any

from mbstudy.pipeline.study.checks import (
    _BAD,
    _Checker,
    _hint,
    _integer,
    _show,
    _string,
    _table,
    _valid,
)
from mbstudy.pipeline.study.spec import CLUSTER_KEYS, CLUSTER_KINDS, ClusterSpec

_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|PB|KIB|MIB|GIB|TIB|PIB)$", re.IGNORECASE)
_WALLTIME = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")
_LIFETIME = re.compile(
    r"^\d+(\.\d+)?\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$",
    re.IGNORECASE,
)


def _cluster_section(ck: _Checker, section: Any) -> ClusterSpec:
    section = _table(ck, "cluster", section, "[cluster]")
    for key in section:
        if key not in CLUSTER_KEYS:
            ck.report(
                f"cluster.{key}",
                f"unknown key {key!r}{_hint(key, CLUSTER_KEYS)}{_valid(CLUSTER_KEYS)}",
            )
    if "kind" not in section:
        ck.fail("cluster.kind", 'required key is missing ("slurm" or "pbs")')
    kind = section["kind"]
    if kind not in CLUSTER_KINDS or not isinstance(kind, str):
        hint = _hint(kind, CLUSTER_KINDS) if isinstance(kind, str) else ""
        ck.fail("cluster.kind", f'expected "slurm" or "pbs"{hint}, found {_show(kind)}')
    out: dict[str, Any] = {"kind": kind}
    for key in ("queue", "account"):
        if key in section:
            out[key] = ck.attempt(_string, ck, f"cluster.{key}", section[key])
    for key in ("cores", "jobs", "processes"):
        if key in section:
            out[key] = ck.attempt(_integer, ck, f"cluster.{key}", section[key], 1)
    if "memory" in section:
        mem = section["memory"]
        if not isinstance(mem, str) or not _MEMORY.match(mem.strip()):
            ck.report(
                "cluster.memory", f'expected a size like "4GB" or "512MiB", found {_show(mem)}'
            )
        else:
            out["memory"] = mem.strip()
    if "walltime" in section:
        wt = section["walltime"]
        if not isinstance(wt, str) or not _WALLTIME.match(wt):
            ck.report(
                "cluster.walltime", f'expected "HH:MM:SS" (e.g. "01:30:00"), found {_show(wt)}'
            )
        else:
            out["walltime"] = wt
    if "job_extra" in section:
        extra = section["job_extra"]
        if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
            ck.report("cluster.job_extra", f"expected a list of strings, found {_show(extra)}")
        else:
            out["job_extra"] = tuple(extra)
    if "worker_lifetime" in section:
        lt = section["worker_lifetime"]
        if not isinstance(lt, str) or not _LIFETIME.match(lt.strip()):
            ck.report(
                "cluster.worker_lifetime",
                f'expected a duration like "55m", "2h" or "3600s", found {_show(lt)}',
            )
        else:
            out["worker_lifetime"] = lt.strip()
    cores, procs = out.get("cores"), out.get("processes")
    if isinstance(cores, int) and isinstance(procs, int) and procs > cores:
        ck.report(
            "cluster.processes",
            f"expected at most cores = {cores} worker processes per job, found {procs}",
        )
    out = {k: v for k, v in out.items() if v is not _BAD}
    return ClusterSpec(**out)

