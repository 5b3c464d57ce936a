"""Pipeline scale: `mbstudy plan` and store creation for 10^4 .. 10^6-case studies.

For each size, a four-bar DRCS study (three swept gains; N cases), measures

- ``mbstudy plan STUDY --json`` in a subprocess: wall time and peak RSS (the child's
  ``ru_maxrss``), i.e. what a user waits for, imports included;
- ``ResultStore.create`` in a fresh subprocess: wall time, peak RSS, number of files and
  of chunks per batch-written array (the template is metadata only: no fill writes).

Prints a table and writes benchmarks/results/pipeline_scale.json.

Run:  python benchmarks/pipeline_scale.py [--sizes 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

STUDY = """
[study]
name = "bench-scale-{n}"
model = "fourbar"
t_end = 1.0
samples = 11
max_cases = 100000000

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-10

[[runs]]
name = "drcs"
formulation = "drcs"
integrator = "rk4"
h = 0.001
omega_n = {omega_n}
xi = {xi}
omega_o = {omega_o}

[output]
store = "{store}"
series = []
"""

CREATE = """
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study
study = load_study(Path(sys.argv[1]))
grid = expand_grid(study)
t1 = time.perf_counter()
ResultStore.create(Path(sys.argv[2]), study, grid)
t2 = time.perf_counter()
b = grid.blocks[0]
print(json.dumps({"expand_s": t1 - t0, "create_s": t2 - t1, "batch_size": b.batch_size,
                  "n_batches": b.n_batches,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def axes_for(n: int) -> tuple[list, list, list]:
    """Three axes whose product is n (a power of ten >= 1000), sizes as equal as can be."""
    k = round(math.log10(n))
    assert 10**k == n and k >= 3, n
    e1 = k // 3
    e2 = (k - e1) // 2
    a, b, c = 10**e1, 10**e2, 10 ** (k - e1 - e2)
    return (
        [round(1.0 + 0.5 * i, 6) for i in range(a)],
        [round(0.2 + 0.01 * i, 6) for i in range(b)],
        [round(10.0 + 1.0 * i, 6) for i in range(c)],
    )


def child_stdout(cmd: list[str]) -> str:
    """Stdout of a child process (each measurement runs in its own process)."""
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def measure(n: int, tmp: Path) -> dict:
    on, xi, oo = axes_for(n)
    store = tmp / f"s{n}.zarr"
    path = tmp / f"s{n}.toml"
    path.write_text(STUDY.format(n=n, omega_n=on, xi=xi, omega_o=oo, store=store))
    exe = Path(sys.executable).parent / "mbstudy"
    plan_cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mbstudy.pipeline.cli.app"]
    wrap = [sys.executable, "-c",
            "import resource, subprocess, sys, time; t = time.perf_counter();"
            " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
            " print(time.perf_counter() - t,"
            " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"]  # fmt: skip
    out = child_stdout([*wrap, *plan_cmd, "plan", str(path), "--json"])
    plan_s, plan_mb = (float(x) for x in out.split())
    made = json.loads(child_stdout([sys.executable, "-c", CREATE, str(path), str(store)]))
    files = sum(len(f) for _, _, f in os.walk(store))
    return {
        "cases": n,
        "plan_s": plan_s,
        "plan_peak_mb": plan_mb,
        "create_s": made["create_s"],
        "create_peak_mb": made["rss_mb"],
        "batch_size": made["batch_size"],
        "n_batches": made["n_batches"],
        "store_files": files,  # metadata + the write-once coordinate chunks
        "metric_chunk_files": _chunk_files(store / "drcs" / "rms_phi"),  # 0: no fill writes
        "case_id_chunk_files": _chunk_files(store / "drcs" / "case_id"),
    }


def _chunk_files(array_dir: Path) -> int:
    return sum(1 for p in array_dir.rglob("*") if p.is_file() and p.name != "zarr.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline_scale.json"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows.append(measure(n, Path(tmp)))
    print(f"{'cases':>9} {'plan s':>7} {'plan MB':>8} {'create s':>9} {'create MB':>10}"
          f" {'batch':>6} {'batches':>8} {'files':>7} {'metric chunks':>13}")  # fmt: skip
    for r in rows:
        print(f"{r['cases']:>9} {r['plan_s']:7.2f} {r['plan_peak_mb']:8.0f} {r['create_s']:9.2f}"
              f" {r['create_peak_mb']:10.0f} {r['batch_size']:>6} {r['n_batches']:>8}"
              f" {r['store_files']:>7} {r['metric_chunk_files']:>13}")  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "load_avg": os.getloadavg()}, indent=1))
    print(f"written: {out}  (load average at the end: {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
