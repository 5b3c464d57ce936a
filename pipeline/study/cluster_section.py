"""The ``[cluster]`` section of a study file: a dask-jobqueue (SLURM or PBS) cluster.

Validates kind, queue, account, cores, memory, walltime, jobs, processes, job_extra and
worker_lifetime into a :class:`~mbstudy.pipeline.study.spec.ClusterSpec`; sizes, wall
times and lifetimes are checked against the spellings dask-jobqueue accepts.

Every string of this section ends up in a batch job script (``#SBATCH -p QUEUE``,
``#PBS -A ACCOUNT``, one ``job_extra`` item per directive line), so none may carry a line
break or any other control character: ``queue = "short\ntouch pwned"`` would put a shell
command on a line of its own, and sbatch stops reading directives at the first line that is
not one. Queue and account names must match :data:`SAFE_NAME` (the characters SLURM
partitions/accounts and PBS queues ``queue@server`` use); a ``job_extra`` item must be one
option (it starts with ``-``) of printable characters. Patterns are matched whole
(``fullmatch``: ``$`` alone would accept a trailing newline).
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
    _table,
    _unknown_keys,
)
from mbstudy.pipeline.study.spec import CLUSTER_KEYS, CLUSTER_KINDS, ClusterSpec

SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@:-]{0,127}")
_DIRECTIVE = re.compile(r"--?[A-Za-z][\x20-\x7e]{0,255}")  # one option, printable ASCII
_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|PB|KIB|MIB|GIB|TIB|PIB)$", re.IGNORECASE)
_WALLTIME = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")
_LIFETIME = re.compile(
    r"^\d+(\.\d+)?\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$",
    re.IGNORECASE,
)


def _cluster_section(ck: _Checker, section: Any) -> ClusterSpec:
    section = _table(ck, "cluster", section, "[cluster]")
    _unknown_keys(ck, "cluster", section, CLUSTER_KEYS)
    if "kind" not in section:
        ck.fail("cluster.kind", 'required key is missing ("slurm" or "pbs")')
    kind = section["kind"]
    if kind not in CLUSTER_KINDS or not isinstance(kind, str):
        hint = _hint(kind, CLUSTER_KINDS) if isinstance(kind, str) else ""
        ck.fail("cluster.kind", f'expected "slurm" or "pbs"{hint}, found {_show(kind)}')
    out: dict[str, Any] = {"kind": kind}
    for key in ("queue", "account"):
        if key in section:
            out[key] = ck.attempt(_safe_name, ck, f"cluster.{key}", section[key])
    for key in ("cores", "jobs", "processes"):
        if key in section:
            out[key] = ck.attempt(_integer, ck, f"cluster.{key}", section[key], 1)
    if "memory" in section:
        mem = section["memory"]
        if not isinstance(mem, str) or _control(mem) or not _MEMORY.fullmatch(mem.strip()):
            ck.report(
                "cluster.memory", f'expected a size like "4GB" or "512MiB", found {_show(mem)}'
            )
        elif _bytes(mem) < MIN_MEMORY:
            ck.report("cluster.memory", f"expected at least {MIN_MEMORY >> 20}MiB per job (a"
                      f" Dask worker alone needs ~200 MB), found {_show(mem)}")
        else:
            out["memory"] = mem.strip()
    if "walltime" in section:
        wt = section["walltime"]
        if not isinstance(wt, str) or not _WALLTIME.fullmatch(wt):
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
            for i, item in enumerate(extra):
                if not _DIRECTIVE.fullmatch(item):
                    ck.report(
                        f"cluster.job_extra[{i}]",
                        "expected one batch-system option per item (starting with '-',"
                        f" printable characters, no line break), found {_show(item)}",
                    )
                    out["job_extra"] = _BAD
            out.setdefault("job_extra", tuple(extra))
    if "worker_lifetime" in section:
        lt = section["worker_lifetime"]
        if not isinstance(lt, str) or _control(lt) or not _LIFETIME.fullmatch(lt.strip()):
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



MIN_MEMORY = 256 << 20  # bytes of [cluster] memory per job


def _bytes(text: str) -> float:
    """Bytes of a size the ``_MEMORY`` pattern accepted (``"4GB"``, ``"512MiB"``)."""
    from dask.utils import parse_bytes

    return float(parse_bytes(text.strip().replace(" ", "")))


def _safe_name(ck: _Checker, key: str, value: Any) -> str:
    """A queue or account name that cannot break out of its job-script line."""
    if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
        ck.fail(key, "expected a name of letters, digits and _ . + @ : - (at most 128, no"
                f" spaces or line breaks), found {_show(value)}")
    return value


def _control(value: str) -> bool:
    """True if ``value`` holds a control or line-separator character (C0, DEL, C1, U+2028,
    U+2029), which no job-script field may carry, not even as surrounding space."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" for c in value)
