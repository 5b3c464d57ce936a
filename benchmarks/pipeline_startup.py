"""Pipeline start-up: how soon a launch with a warm numba cache starts computing.

Runs ``mbstudy launch`` in a subprocess: once to fill numba's cache (and the generated
kernel modules, solvers/compose/), then ``--repeat`` more times into fresh stores (the
"second launch"). For each, from the moment the process is spawned:

- ``run_study_s``  -> run_study begins (imports, study, grid, store template, cluster start)
- ``warm_s``       -> kernels loaded on every worker (cache hits: load, not compile)
- ``first_start_s`` -> the first batch task begins computing (after the reference task)
- ``first_done_s`` -> the first batch is written
- ``load``         -> the 1-minute load average when the launch was spawned

The launcher overlaps its own start-up with the workers'
(benchmarks/results/pipeline-performance-log.md, "Second launch"): the workers' forkserver starts
before the study is read, the LocalCluster while the assembly is checked and the store template
written, the reference with the kernel warm-up.

The figures come from the store's ``last_launch`` summary (epoch times recorded by the
launcher and the batch task). Writes benchmarks/results/pipeline_startup.json.

Run:  python benchmarks/pipeline_startup.py [--repeat 3] [--workers 2]
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
sys.path.insert(0, str(ROOT))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

STUDY = """
[study]
name = "bench-startup"
model = "fourbar"
t_end = 1.0
samples = 11

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-10
atol = 1e-12

[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.0005
omega_n = {omega_n}
xi = [0.5, 1.0, 2.0, 4.0]

[output]
series = []
"""

FIELDS = ("run_study_s", "warm_s", "first_start_s", "first_done_s", "total_s", "load")


def one_launch(study: Path, store: Path, workers: int) -> dict:
    """Spawn ``mbstudy launch`` and read the start-up figures from its store."""
    import zarr

    exe = Path(sys.executable).parent / "mbstudy"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mbstudy.pipeline.cli.app"]
    cmd += ["launch", str(study), "--store", str(store), "--workers", str(workers), "--quiet"]
    load = os.getloadavg()[0]
    t_spawn = time.time()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    total = time.time() - t_spawn
    s = dict(zarr.open_group(str(store), mode="r").attrs)["last_launch"]
    return {
        "load": load,
        "run_study_s": s["started_at"] - t_spawn,
        "warm_s": s["started_at"] + s["warm_s"] - t_spawn,
        "first_start_s": s["first_batch_started_at"] - t_spawn,
        "first_done_s": s["started_at"] + s["first_batch_s"] - t_spawn,
        "total_s": total,
        "warm_per_worker_s": s["warm_per_worker"],
        "batches": s["batches_run"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline_startup.json"))
    args = ap.parse_args()
    omega_n = [round(1.0 + 0.5 * i, 6) for i in range(50)]
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "startup.toml"
        study.write_text(STUDY.format(omega_n=omega_n))
        first = one_launch(study, Path(tmp) / "first.zarr", args.workers)
        again = [
            one_launch(study, Path(tmp) / f"again{k}.zarr", args.workers)
            for k in range(args.repeat)
        ]
    med = {k: statistics.median(r[k] for r in again) for k in FIELDS}
    print(f"seconds from spawning `mbstudy launch` ({args.workers} workers)")
    print(f"{'launch':>14} " + " ".join(f"{k:>13}" for k in FIELDS))
    print(f"{'first':>14} " + " ".join(f"{first[k]:13.2f}" for k in FIELDS))
    for i, r in enumerate(again):
        print(f"{'again ' + str(i + 1):>14} " + " ".join(f"{r[k]:13.2f}" for k in FIELDS))
    print(f"{'median again':>14} " + " ".join(f"{med[k]:13.2f}" for k in FIELDS))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"first": first, "again": again, "median": med, "load_avg": os.getloadavg()},
            indent=1,
        )
    )
    print(f"written: {out}  (load average at the end: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
