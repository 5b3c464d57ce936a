"""Pipeline overhead: a 2,000-case four-bar study on 1 and 2 LocalCluster workers.

Reports, per worker count, the parallel efficiency

    efficiency = sum of kernel wall times / ((launch wall - warm-up) x workers)

(the one-time compile / cache load is the warm-up, reported apart), the per-case
overhead ((launch wall - warm-up) x workers - kernel time) / cases, and the speed-up
from 1 to 2 workers. Writes benchmarks/results/pipeline_overhead.json.

Batch sizes are the automatic ones (pipeline.plan.batches.auto_batch_size). On a shared machine
compare the load average printed at the end: the figures assume the workers own the cores.

Run:  python benchmarks/pipeline_overhead.py [--cases-per-axis 40 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

STUDY = """
[study]
name = "bench-overhead"
model = "fourbar"
t_end = 2.0
samples = 21

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-11
atol = 1e-13

[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.0005
omega_n = {omega_n}
xi = {xi}

[output]
series = []
"""


def one_launch(text: str, workers: int) -> dict:
    from mbstudy.pipeline.cluster.backends import open_client
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.run.graph import run_study
    from mbstudy.pipeline.store.zarr_store import ResultStore
    from mbstudy.pipeline.study.parse import parse_study

    study = parse_study(text, source="bench")
    grid = expand_grid(study)
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore.create(Path(tmp) / "bench.zarr", study, grid)
        t0 = time.perf_counter()
        with open_client(workers=workers) as client:
            t_cluster = time.perf_counter() - t0
            s = run_study(study, grid, store, client)
    busy = s.wall_s - s.warm_s
    return {
        "workers": workers,
        "cases": s.cases_run,
        "batches": s.batches_run,
        "batch_size": grid.blocks[0].batch_size,
        "cluster_start_s": t_cluster,
        "warm_s": s.warm_s,
        "wall_s": s.wall_s,
        "kernel_s": s.kernel_s,
        "efficiency": s.kernel_s / (busy * workers),
        "efficiency_incl_warmup": s.kernel_s / (s.wall_s * workers),
        "overhead_per_case_ms": 1e3 * (busy * workers - s.kernel_s) / s.cases_run,
        "kernel_per_case_ms": 1e3 * s.kernel_s / s.cases_run,
        "first_batch_s": s.first_batch_s,
        "load_avg_1min": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases-per-axis", nargs=2, type=int, default=[40, 50])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "pipeline_overhead.json")
    )
    args = ap.parse_args()
    a, b = args.cases_per_axis
    omega_n = [round(1.0 + 0.5 * i, 6) for i in range(a)]
    xi = [round(0.2 + 0.05 * i, 6) for i in range(b)]
    text = STUDY.format(omega_n=omega_n, xi=xi)
    runs = {1: [], 2: []}
    for _ in range(args.repeat):
        for w in (2, 1):
            runs[w].append(one_launch(text, w))
    med = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in runs.items()}
    speedup = med[1]["wall_s"] - med[1]["warm_s"]
    speedup /= med[2]["wall_s"] - med[2]["warm_s"]
    print(f"{a * b} cases, batch size {med[2]['batch_size']:.0f}, medians of {args.repeat} runs")
    print(
        f"{'workers':>8} {'wall s':>8} {'warm s':>8} {'kernel s':>9} {'eff.':>6}"
        f" {'eff.+warm':>9} {'ovh ms/case':>11} {'kernel ms/case':>14}"
    )
    for w in (1, 2):
        m = med[w]
        print(
            f"{w:>8} {m['wall_s']:8.2f} {m['warm_s']:8.2f} {m['kernel_s']:9.2f}"
            f" {m['efficiency']:6.3f} {m['efficiency_incl_warmup']:9.3f}"
            f" {m['overhead_per_case_ms']:11.3f} {m['kernel_per_case_ms']:14.3f}"
        )
    print(f"speed-up 1 -> 2 workers (excluding warm-up): {speedup:.2f}x")
    print(
        f"load average (1 min) after the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": runs, "median": med, "speedup_1_to_2": speedup}, indent=1))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
