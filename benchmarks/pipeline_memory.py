"""Launcher memory over a long launch: many small batches of cheap four-bar cases.

The benchmark process is the launcher (it calls ``run_study`` on a LocalCluster, as
``mbstudy launch`` does) and samples its own resident set size after every completed
batch. Flat means: the RSS after the first 10 % of the batches and at the end differ by
little, and the fitted slope (kB per 1,000 batches) is near zero -- no per-case or
per-batch Python objects are kept alive by the launcher.

Prints a table of RSS against batches done and writes benchmarks/results/pipeline_memory.json.

Run:  python benchmarks/pipeline_memory.py [--cases 40000] [--batch-size 50] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

STUDY = """
[study]
name = "bench-memory"
model = "fourbar"
t_end = 0.02
samples = 3
batch_size = {batch_size}

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-10

[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.001
omega_n = {omega_n}
xi = {xi}

[output]
series = []
"""


def rss_mb() -> float:
    """Current resident set size of this process (MB), from /proc."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=40_000, help="a multiple of 100")
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trace", action="store_true", help="tracemalloc: show what grew")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline_memory.json"))
    args = ap.parse_args()

    from mbstudy.pipeline.cluster.backends import open_client
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.run.graph import run_study
    from mbstudy.pipeline.store.zarr_store import ResultStore
    from mbstudy.pipeline.study.parse import parse_study

    omega_n = [round(1.0 + 0.25 * i, 6) for i in range(args.cases // 100)]
    xi = [round(0.1 + 0.01 * i, 6) for i in range(100)]
    text = STUDY.format(batch_size=args.batch_size, omega_n=omega_n, xi=xi)
    study = parse_study(text, source="bench")
    grid = expand_grid(study)
    samples: list[tuple[int, float]] = []
    snaps: list = []
    n_total = grid.n_batches

    def on_batch(_report) -> None:
        samples.append((len(samples), rss_mb()))
        if args.trace and len(samples) - 1 in (1, max(2, n_total // 10), n_total):
            import tracemalloc

            if not tracemalloc.is_tracing():
                tracemalloc.start(8)
            snaps.append(tracemalloc.take_snapshot())

    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore.create(Path(tmp) / "mem.zarr", study, grid)
        with open_client(workers=args.workers) as client:
            samples.append((0, rss_mb()))
            s = run_study(study, grid, store, client, on_batch=on_batch)
    done = np.array([b for b, _ in samples], dtype=float)
    rss = np.array([m for _, m in samples])
    n = len(samples) - 1
    tenth = rss[max(1, n // 10)]
    slope = np.polyfit(done[n // 10 :], rss[n // 10 :], 1)[0] * 1000 * 1024  # kB / 1000 batches
    print(f"{grid.n_cases} cases in {grid.n_batches} batches of {args.batch_size},"
          f" {args.workers} workers, wall {s.wall_s:.1f} s")  # fmt: skip
    print(f"{'batches done':>12} {'launcher RSS MB':>16}")
    for k in sorted({0, 1, n // 10, n // 4, n // 2, 3 * n // 4, n}):
        print(f"{int(done[k]):>12} {rss[k]:16.1f}")
    print(f"RSS at 10 %: {tenth:.1f} MB, at the end: {rss[-1]:.1f} MB,"
          f" slope after 10 %: {slope:.0f} kB per 1000 batches")  # fmt: skip
    if len(snaps) >= 3:  # where the launcher process's memory grew after the first 10 %
        print("largest growth between 10 % and the end (tracemalloc, launcher process):")
        for stat in snaps[-1].compare_to(snaps[1], "traceback")[:8]:
            print(f"  {stat.size_diff / 1024:9.1f} kB {stat.count_diff:7d} blocks  "
                  + " <- ".join(f"{Path(f.filename).name}:{f.lineno}"
                                for f in stat.traceback[:4]))  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "cases": grid.n_cases, "batches": grid.n_batches, "workers": args.workers,
        "wall_s": s.wall_s, "rss_mb": rss.tolist(), "rss_10pct_mb": float(tenth),
        "rss_end_mb": float(rss[-1]), "slope_kb_per_1000_batches": float(slope),
        "load_avg": os.getloadavg(),
    }, indent=1))  # fmt: skip
    print(f"written: {out}  (load average at the end: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
