"""Warm launches side by side: two (or more) installs of mbstudy, interleaved, on hot caches.

"Warm launches stay where they are (~3 s)": the time of ``mbstudy launch STUDY``
into a new store once every kernel of the study is compiled (after ``mbstudy warm``). Each
``--python`` is an interpreter with an install of mbstudy (e.g. the virtual environment of
a checkout of the previous revision, and this one's): every repeat launches each study once
with each interpreter, one after the other, so that a machine whose load drifts (other
sessions) stretches both alike; reported are each one's median, range and the 1-minute
load average at each launch. Every launch is ``PYTHON -m mbstudy.pipeline.cli.app launch
STUDY --store TMP --workers W --quiet`` in a subprocess (working directory: a temporary
one, so that no checkout's ``mbstudy`` folder shadows an install), timed from spawn to
exit, with the kernel and numba caches under ``--caches`` (kept, so that a second run of
the benchmark finds them hot; ``mbstudy warm`` is run first with the first interpreter, and
the installs must compose the same kernels).

    python -m benchmarks.warm_ab --python OLD/.venv/bin/python --python .venv/bin/python
                                 [--repeat 5] [--workers 2] [--study studies/andrews.toml]
                                 [--caches DIR] [--json FILE]
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
STUDIES = ("studies/andrews.toml", "studies/fourbar_baumgarte.toml")


def _env(caches: Path) -> dict[str, str]:
    return dict(os.environ, NUMBA_CACHE_DIR=str(caches / "numba"),
                MBSTUDY_KERNEL_DIR=str(caches / "kernels"))  # fmt: skip


def warm(python: str, study: Path, caches: Path) -> None:
    """``mbstudy warm STUDY`` (compiles what the caches lack)."""
    with tempfile.TemporaryDirectory(prefix="mbstudy-warm-ab-") as tmp:
        proc = subprocess.run([python, "-m", "mbstudy.pipeline.cli.app", "warm", str(study)],
                              env=_env(caches), capture_output=True, text=True, cwd=tmp)
    if proc.returncode != 0:
        raise RuntimeError(f"warm of {study} failed: {proc.stderr[-2000:]}")


def launch(python: str, study: Path, caches: Path, workers: int) -> dict:
    """One warm launch into a new store; wall seconds, load average, kernels compiled."""
    with tempfile.TemporaryDirectory(prefix="mbstudy-warm-ab-") as tmp:
        store = Path(tmp) / "s.zarr"
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([python, "-m", "mbstudy.pipeline.cli.app", "launch", str(study),
                               "--store", str(store), "--workers", str(workers), "--quiet"],
                              env=_env(caches), capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"launch of {study} failed: {proc.stderr[-2000:]}")
        attrs = json.loads((store / "zarr.json").read_text())["attributes"]
    kernels = attrs.get("last_launch", {}).get("kernels", {})
    return {"wall_s": wall, "load": load,
            "compiled": sorted(k for k, v in kernels.items() if v.get("compiled"))}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", action="append",
                    help="an interpreter with mbstudy installed (default: this one)")
    ap.add_argument("--study", action="append", help="study files (default: andrews, README)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--caches", default=None,
                    help="kernel and numba caches (default: a new temporary directory)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "warm_ab.json"))
    args = ap.parse_args(argv)
    # absolute: the launches run in a temporary directory
    pythons = [str(Path(x).absolute()) if "/" in x else x for x in args.python or [sys.executable]]
    studies = [Path(s).resolve() for s in (args.study or [str(ROOT / s) for s in STUDIES])]
    caches = Path(args.caches or tempfile.mkdtemp(prefix="mbstudy-warm-ab-caches-"))
    for study in studies:
        warm(pythons[0], study, caches)
    runs: dict[tuple[str, str], list[dict]] = {(s.name, p): [] for s in studies for p in pythons}
    for i in range(args.repeat):
        for study in studies:
            for python in pythons:
                r = launch(python, study, caches, args.workers)
                runs[(study.name, python)].append(r)
                note = f" COMPILED {r['compiled']}" if r["compiled"] else ""
                print(f"[{i + 1}/{args.repeat}] {study.name} {python}: {r['wall_s']:.2f} s"
                      f" (load {r['load']:.2f}){note}", flush=True)  # fmt: skip
    rows = []
    for (name, python), rs in runs.items():
        walls = [r["wall_s"] for r in rs]
        rows.append({"study": name, "python": python, "runs": rs,
                     "median_s": statistics.median(walls), "min_s": min(walls),
                     "max_s": max(walls),
                     "load": [min(r["load"] for r in rs), max(r["load"] for r in rs)]})
        print(f"{name} {python}: median {statistics.median(walls):.2f} s"
              f" ({min(walls):.2f}-{max(walls):.2f}, {len(walls)} runs, load"
              f" {rows[-1]['load'][0]:.1f}-{rows[-1]['load'][1]:.1f})")  # fmt: skip
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
