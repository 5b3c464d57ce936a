"""Cold and warm launches side by side: the time to the first result with empty caches.

For each study (``studies/andrews.toml`` and the README's ``studies/fourbar_baumgarte.toml``)
and each repeat: a **cold** launch with a fresh, empty kernel directory and
``NUMBA_CACHE_DIR`` (temporary directories, removed afterwards), then a **second** launch
into a fresh store with the caches the cold launch left (what a user who relaunches meets:
under ``auto`` the rent-or-buy rule may compile there what the cold launch interpreted),
then a **warm** launch after ``mbstudy warm STUDY`` (untimed) has compiled every kernel
the study needs, i.e. with hot caches. Every launch is
``mbstudy launch STUDY --store TMP --workers W --quiet`` in a subprocess, timed from spawn
to exit. Per-kernel compile and cache-load seconds come from the store's ``last_launch``
summary (``kernels``: seconds and whether the worker compiled it or loaded it).

Each study runs once per ``--engine`` (default: ``auto`` and ``compiled`` side by side,
tiered execution, mbstudy.pipeline.plan.engines): with ``auto`` a kernel that is not
cached runs interpreted when its cases cost less than its compile, so a cold ``auto``
launch compiles only the kernels worth compiling and leaves the others uncompiled.

Reported: medians over the repeats of the cold and warm wall times, each run's 1-minute
load average at its start, and the CPU seconds of the launcher's children (workers and
their compiles: ``resource.getrusage(RUSAGE_CHILDREN)``), which the machine's load does
not stretch. JSON goes to ``--json`` (default benchmarks/results/coldstart.json).

    python -m benchmarks.coldstart [--repeat 3] [--workers 2] [--study studies/andrews.toml]
                                   [--engine auto --engine compiled] [--cold-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ("studies/andrews.toml", "studies/fourbar_baumgarte.toml")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def launch_once(study: str, caches: Path, store: Path, workers: int,
                engine: str = "compiled") -> dict:  # fmt: skip
    """One ``mbstudy launch`` with the kernel and numba caches under ``caches``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(caches / "numba"),
               MBSTUDY_KERNEL_DIR=str(caches / "kernels"))  # fmt: skip
    load = os.getloadavg()[0]
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "mbstudy.pipeline.cli.app", "launch", str(ROOT / study),
           "--store", str(store), "--workers", str(workers), "--quiet", "--engine", engine]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"launch of {study} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    attrs = json.loads((store / "zarr.json").read_text())["attributes"]
    summary = attrs.get("last_launch", {})
    return {"wall_s": wall, "load": load, "children_cpu_s": _children_cpu() - cpu0,
            "kernels": summary.get("kernels", {}), "warm_s": summary.get("warm_s"),
            "first_batch_s": summary.get("first_batch_s"),
            "engines": summary.get("engines", {}),
            "cases_python": summary.get("cases_python", 0)}  # fmt: skip


def warm_caches(study: str, caches: Path) -> None:
    """``mbstudy warm STUDY`` with the caches under ``caches`` (compiles what is missing)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(caches / "numba"),
               MBSTUDY_KERNEL_DIR=str(caches / "kernels"))  # fmt: skip
    cmd = [sys.executable, "-m", "mbstudy.pipeline.cli.app", "warm", str(ROOT / study)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"warm of {study} failed ({proc.returncode}): {proc.stderr[-2000:]}")


def _line(name: str, r: dict) -> str:
    return (f"{name} {r['wall_s']:.1f} s (load {r['load']:.1f},"
            f" children cpu {r['children_cpu_s']:.0f} s)")


def measure(study: str, repeat: int, workers: int, engine: str = "compiled",
            cold_only: bool = False) -> dict:  # fmt: skip
    """``repeat`` times: a cold launch, a second launch on the caches it left, and a warm
    launch after ``mbstudy warm`` (``cold_only``: the cold launch alone)."""
    cold, second, warm = [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="mbstudy-coldstart-") as tmp:
            tmp = Path(tmp)
            cold.append(launch_once(study, tmp / "caches", tmp / "cold.zarr", workers, engine))
            if cold_only:
                print(f"{study} --engine {engine}: " + _line("cold", cold[-1]), flush=True)
                _kernel_lines(cold[-1])
                continue
            second.append(launch_once(study, tmp / "caches", tmp / "second.zarr", workers,
                                      engine))  # fmt: skip
            warm_caches(study, tmp / "caches")
            warm.append(launch_once(study, tmp / "caches", tmp / "warm.zarr", workers, engine))
        print(f"{study} --engine {engine}: " + ", ".join(
            _line(n, r[-1]) for n, r in (("cold", cold), ("second", second), ("warm", warm))),
            flush=True)  # fmt: skip
        _kernel_lines(cold[-1])
    nan = float("nan")
    return {"study": study, "engine": engine, "workers": workers, "cold": cold,
            "second": second, "warm": warm,
            "cold_median_s": statistics.median(r["wall_s"] for r in cold),
            "second_median_s": statistics.median(r["wall_s"] for r in second) if second else nan,
            "warm_median_s": statistics.median(r["wall_s"] for r in warm) if warm else nan,
            }  # fmt: skip


def _kernel_lines(r: dict) -> None:
    for k, v in r["kernels"].items():
        print(f"    {k}: {'compiled' if v['compiled'] else 'from cache'} {v['s']:.1f} s")
    for k, v in r["engines"].items():
        if v["engine"] == "python":
            print(f"    {k}: interpreted ({v['reason']})")
    print(f"    first batch done at {r['first_batch_s']:.1f} s; load at end"
          f" {os.getloadavg()[0]:.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--study", action="append", help="study files (default: andrews, README)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "coldstart.json"))
    ap.add_argument("--engine", action="append", choices=("auto", "compiled", "python"),
                    help="engine policies to compare (default: auto and compiled)")
    ap.add_argument("--cold-only", action="store_true",
                    help="only the cold launch (no second launch, no warm launch)")
    args = ap.parse_args(argv)
    rows = [measure(s, args.repeat, args.workers, e, args.cold_only)
            for s in args.study or STUDIES
            for e in args.engine or ("auto", "compiled")]  # fmt: skip
    for r in rows:
        print(f"{r['study']} --engine {r['engine']}: cold median {r['cold_median_s']:.1f} s,"
              f" second {r['second_median_s']:.1f} s, warm {r['warm_median_s']:.1f} s"
              f" over {args.repeat} (workers {r['workers']})")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
