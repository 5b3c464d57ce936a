"""Where a warm launch's seconds go: a timeline of ``mbstudy launch`` on hot caches.

Each launch runs the command line in a subprocess (``PYTHON -c DRIVER``: the launcher's
phases wrapped with time stamps, nothing else changed) into a new store, with the kernel
and numba caches under ``--caches`` (``mbstudy warm`` fills them first). Per launch, in
seconds from the spawn of the process:

- ``keys_start``   the launcher begins composing the kernel keys
- ``preload_list`` it hands the forkserver the list of cached kernels to load
- ``cluster_up``   the LocalCluster's start returned (its workers registered)
- ``tmpl_start`` / ``tmpl_end``  the store template write
- ``run_study``    run_study began (the launcher got the client)
- ``kernels``      every kernel ready: compile tasks done and every worker has loaded every
                   kernel (the warm-up plugin; ``LaunchSummary.warm_s``)
- ``first_batch``  the first batch task began computing
- ``total``        the process exited
- ``load_w``       max over the workers of ``LaunchSummary.warm_per_worker``: the seconds
                   of the first load of each kernel in the worker's process. A worker
                   forked from the forkserver inherits the kernels the server loaded, with
                   the server's load times: there it is the server's (serial) preload;
                   with ``--spawn`` the worker's own loads.

Each ``--python`` is an interpreter with an install of mbstudy (e.g. a checkout of the base
revision and this one); the repeats interleave them launch by launch, so that a machine
whose load drifts stretches them alike. Printed: every launch, then the medians.

    python -m benchmarks.warm_launch [--python OLD/.venv/bin/python --python ...]
        [--study studies/andrews.toml] [--workers 2] [--repeat 3] [--caches DIR] [--spawn]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DRIVER = r"""
import json, sys, time
t_spawn, out, argv = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
marks = {}
def stamp(name):
    marks.setdefault(name, time.time() - t_spawn)
import mbstudy.pipeline.run.launch as L
import mbstudy.pipeline.cluster.local as C
import mbstudy.pipeline.run.graph as G
def wrap(mod, name, before=None, after=None):
    fn = getattr(mod, name)
    def wrapped(*a, **k):
        if before:
            stamp(before)
        try:
            return fn(*a, **k)
        finally:
            if after:
                stamp(after)
    setattr(mod, name, wrapped)
wrap(L, "kernel_keys", "keys_start", "keys_end")
wrap(C.WorkerForkServer, "preload", "preload_list", None)
wrap(L, "_create", "tmpl_start", "tmpl_end")
wrap(C, "local_cluster", None, "cluster_up")
wrap(G, "run_study", "run_study", None)
from mbstudy.pipeline.cli.app import main
sys.argv = ["mbstudy", *argv]
try:
    main()
except SystemExit:
    pass
finally:
    with open(out, "w") as fh:
        json.dump(marks, fh)
"""

COLUMNS = ("keys_start", "preload_list", "tmpl_start", "tmpl_end", "cluster_up", "run_study",
           "kernels", "first_batch", "total", "load_w")  # fmt: skip


SPAWN = {"MBSTUDY_FORKSERVER": "0"}  # --spawn: no forkserver, no kernels preloaded in it


def _env(caches: Path, extra: dict | None = None) -> dict[str, str]:
    return dict(os.environ, NUMBA_CACHE_DIR=str(caches / "numba"),
                MBSTUDY_KERNEL_DIR=str(caches / "kernels"), **(extra or {}))  # fmt: skip


def warm(python: str, study: Path, caches: Path) -> None:
    """``mbstudy warm STUDY``: compile what the caches lack (not timed)."""
    with tempfile.TemporaryDirectory(prefix="mbstudy-warm-launch-") as tmp:
        subprocess.run([python, "-m", "mbstudy.pipeline.cli.app", "warm", str(study)],
                       env=_env(caches), check=True, capture_output=True, cwd=tmp)  # fmt: skip


def one_launch(python: str, study: Path, caches: Path, workers: int,
               extra: dict | None = None) -> dict:  # fmt: skip
    """One warm launch into a new store: its timeline (seconds from the spawn)."""
    import zarr

    with tempfile.TemporaryDirectory(prefix="mbstudy-warm-launch-") as tmp:
        store, marks = Path(tmp) / "s.zarr", Path(tmp) / "marks.json"
        load = os.getloadavg()[0]
        t_spawn = time.time()
        proc = subprocess.run(
            [python, "-c", DRIVER, repr(t_spawn), str(marks), "launch", str(study),
             "--store", str(store), "--workers", str(workers), "--quiet"],
            env=_env(caches, extra), capture_output=True, text=True, cwd=tmp,
        )  # fmt: skip
        total = time.time() - t_spawn
        if proc.returncode != 0 or not marks.exists():
            raise RuntimeError(f"launch failed ({proc.returncode}): {proc.stderr[-2000:]}")
        row = json.loads(marks.read_text())
        s = dict(zarr.open_group(str(store), mode="r").attrs)["last_launch"]
    compiled = [k for k, v in (s.get("kernels") or {}).items() if v.get("compiled")]
    row.update(
        total=total, load=load, compiled=compiled,
        kernels=s["started_at"] + s["warm_s"] - t_spawn,
        first_batch=s["first_batch_started_at"] - t_spawn,
        load_w=max((s.get("warm_per_worker") or {0: 0.0}).values()),
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", default=None,
                    help="an interpreter with mbstudy installed (repeatable)")  # fmt: skip
    ap.add_argument("--study", default=str(ROOT / "studies" / "andrews.toml"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--caches", default=str(Path(tempfile.gettempdir()) / "mbstudy-warm-launch"))
    ap.add_argument("--spawn", action="store_true",
                    help="spawn every worker (MBSTUDY_FORKSERVER=0): workers that start"
                         " without the kernels, as jobqueue or --scheduler workers do")
    ap.add_argument("--json", default=None, help="write every launch's timeline here")
    args = ap.parse_args()
    pythons = [os.path.abspath(p) for p in args.python or [sys.executable]]
    study, caches = Path(args.study).resolve(), Path(args.caches)
    for py in pythons:
        warm(py, study, caches)
    rows: dict[str, list[dict]] = {py: [] for py in pythons}
    head = f"{'install':>8} {'#':>2} " + " ".join(f"{c:>11}" for c in COLUMNS) + "   load"
    mode = "spawned workers" if args.spawn else "forkserver workers"
    print(f"{study.name}, {args.workers} {mode}; seconds from spawning the launch")
    print(head)
    for k in range(args.repeat):
        for i, py in enumerate(pythons):
            r = one_launch(py, study, caches, args.workers, SPAWN if args.spawn else None)
            rows[py].append(r)
            cells = " ".join(f"{r.get(c, float('nan')):11.2f}" for c in COLUMNS)
            note = f"  compiled {r['compiled']}" if r["compiled"] else ""
            print(f"{i:>8} {k + 1:>2} {cells} {r['load']:6.1f}{note}", flush=True)
    print("medians")
    for i, py in enumerate(pythons):
        med = {c: statistics.median(r.get(c, float("nan")) for r in rows[py]) for c in COLUMNS}
        print(f"{i:>8} {'':>2} " + " ".join(f"{med[c]:11.2f}" for c in COLUMNS) + f"   {py}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
