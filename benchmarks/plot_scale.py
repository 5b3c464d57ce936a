"""Plot scale: `mbstudy plot --kind heatmap` on a 20,000-case store.

The store is the synthetic one of tests/plot_store_testkit.py (four-bar Baumgarte grid h 2 x
omega_n 100 x xi 2 x model.L3 5 x model.m3 10, written with the real store writer,
metrics a made-up smooth surface with a band of failed cases; no kernel runs). It
measures

- ``mbstudy plot STORE --kind heatmap --x omega_n --y model.L3`` in a subprocess, REPEAT
  times: wall time and the child's CPU time (user + system), median of the runs; the
  figure is one PNG and one SVG of 40 small multiples;
- in-process, once: CPU seconds of each phase (imports, reading the cases, building the
  figure, writing the PNG, writing the SVG) and the size of the files;
- with ``--profile``: the top entries of cProfile (cumulative) of one in-process run.

CPU time is the figure to compare on a shared machine (wall time includes waiting for
the CPU). Prints a table and writes benchmarks/results/plot_scale.json.

Run:  python -m benchmarks.plot_scale [--repeat 3] [--profile]
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
sys.path.insert(0, str(ROOT))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

ARGS = ["--kind", "heatmap", "--x", "omega_n", "--y", "model.L3"]


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_runs(store: Path, out: Path, repeat: int) -> dict:
    """Wall and CPU seconds of ``mbstudy plot`` in a fresh process, ``repeat`` times."""
    cmd = [sys.executable, "-m", "mbstudy.pipeline.cli.app", "plot", str(store), *ARGS,
           "--out", str(out)]  # fmt: skip
    walls, cpus = [], []
    for _ in range(repeat):
        c0, t0 = _child_cpu(), time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t0)
        cpus.append(_child_cpu() - c0)
        if res.returncode != 0:
            raise SystemExit(f"mbstudy plot failed: {res.stderr.strip()}")
    files = sorted(p.name for p in out.iterdir())
    return {"wall_s": walls, "cpu_s": cpus, "wall_median_s": statistics.median(walls),
            "cpu_median_s": statistics.median(cpus), "files": files}  # fmt: skip


def phases(store: Path, out: Path) -> dict:
    """CPU seconds of each phase of one in-process run, and the written files' sizes."""
    t = time.process_time()
    from mbstudy.pipeline.analysis import plots

    cpu = {"import_s": time.process_time() - t}
    t = time.process_time()
    rs = plots.open_store(store)
    df = plots.cases(rs)
    cpu["read_cases_s"] = time.process_time() - t
    t = time.process_time()
    from mbstudy.pipeline.analysis.plot_compare import heatmap_figures

    figs = heatmap_figures(rs, df, "rms_phi", "omega_n", "model.L3")
    cpu["build_s"] = time.process_time() - t
    for fmt in ("png", "svg"):
        t = time.process_time()
        for f in figs:
            f.fig.savefig(out / f"{f.name}.{fmt}", **plots.save_options(f, fmt, 100))
        cpu[f"save_{fmt}_s"] = time.process_time() - t
    sizes = {p.name: p.stat().st_size for p in out.iterdir()}
    return {"cpu": cpu, "bytes": sizes, "figures": len(figs)}


def profile(store: Path, out: Path, top: int = 12) -> list[str]:
    """The ``top`` cumulative entries of cProfile over build + save (PNG and SVG)."""
    import cProfile
    import io
    import pstats

    from mbstudy.pipeline.analysis import plots

    prof = cProfile.Profile()
    prof.enable()
    plots.make_plots(store, "heatmap", out, x="omega_n", y="model.L3")
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top + 8)
    return [ln for ln in buf.getvalue().splitlines() if "(" in ln][-top:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="print cProfile's top entries")
    args = ap.parse_args()
    from tests.plot_store_testkit import synthetic_store

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = synthetic_store(tmp / "big.zarr")
        (tmp / "cli").mkdir()
        (tmp / "phases").mkdir()
        (tmp / "prof").mkdir()
        result = {"cases": 20000, "command": "mbstudy plot STORE " + " ".join(ARGS),
                  "cli": cli_runs(store, tmp / "cli", args.repeat),
                  "phases": phases(store, tmp / "phases")}  # fmt: skip
        if args.profile:
            result["profile"] = profile(store, tmp / "prof")
    cli, ph = result["cli"], result["phases"]
    print(f"{result['command']}  (20,000 cases, {len(cli['files'])} files: "
          f"{', '.join(cli['files'])})")  # fmt: skip
    print(f"  subprocess, median of {args.repeat}: wall {cli['wall_median_s']:.2f} s, "
          f"CPU {cli['cpu_median_s']:.2f} s (runs: CPU "
          f"{', '.join(f'{c:.2f}' for c in cli['cpu_s'])} s)")  # fmt: skip
    print("  in-process CPU by phase: " + ", ".join(f"{k[:-2]} {v:.2f} s"
                                                     for k, v in ph["cpu"].items()))  # fmt: skip
    print("  sizes: " + ", ".join(f"{k.rsplit('.', 1)[1]} {v / 1e3:.0f} kB"
                                   for k, v in sorted(ph["bytes"].items())))  # fmt: skip
    for line in result.get("profile", []):
        print("  " + line)
    dest = ROOT / "benchmarks" / "results"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "plot_scale.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
