"""The check a resumed launch makes before it runs, side by side: a full read of every
chunk (``verify_store(full=True)``: an existence check and a decode per chunk, what
``mbstudy verify`` does and what ``launch`` did before) against the checksum scan
(``full=False``: one listing per array, every chunk's bytes fetched concurrently, its
CRC-32C checked without decoding; pipeline/store/chunkscan.py).

The store: a four-bar study of 20,000 cases (``omega_n`` x ``xi``, 200 x 100, automatic
batches, ``phi_norm`` and ``q`` series), its template written and every batch filled with
synthetic values through ``ResultStore.write_batch`` (no kernel runs: the check reads
bytes, it does not care what they mean). With ``--s3`` the same store is also written to
moto's S3 server (tests/s3_testkit.py) and checked there.

Reported per location: CPU seconds of this process (``time.process_time``, which the
machine's load does not stretch) and wall seconds, medians over ``--repeat``, and the
ratio full / scan; both checks must agree (an intact store: no damage). JSON goes to
``--json`` (default benchmarks/results/resume_check.json).

    python -m benchmarks.resume_check [--repeat 3] [--s3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STUDY = """
[study]
name = "resume-check"
model = "fourbar"
t_end = 1.0
samples = 11
max_cases = 100000

[reference]
integrator = "dopri5"
formulation = "projection"

[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.001
omega_n = { start = 1.0, stop = 100.0, num = 200 }
xi = { start = 0.5, stop = 1.5, num = 100 }

[output]
series = ["phi_norm", "q"]
"""


def build(where) -> tuple[object, int, int]:
    """Write the template and fill every batch; (store, cases, batches)."""
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.store.zarr_store import ResultStore
    from mbstudy.pipeline.study.parse import parse_study
    from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS

    spec = parse_study(STUDY)
    grid = expand_grid(spec)
    rs = ResultStore.create(where, spec, grid)
    rng = np.random.default_rng(0)
    (block,) = grid.blocks
    n_q = rs.group(block.name)["q"].shape[2]
    for b in range(block.n_batches):
        s, e = block.batch_range(b)
        n = e - s
        cols = {m: rng.standard_normal(n) for m in FLOAT_METRICS}
        cols.update({m: rng.integers(0, 100, n) for m in COUNTER_METRICS})
        cols.update(status=np.zeros(n, np.int8), error=np.array([""] * n).astype(str),
                    phi_norm=rng.standard_normal((n, block.samples)),
                    q=rng.standard_normal((n, block.samples, n_q)))  # fmt: skip
        rs.write_batch(block.name, s, e, cols)
    return rs, block.n_cases, block.n_batches


def measure(rs, repeat: int) -> dict:
    from mbstudy.pipeline.store.verify import verify_store

    out = {}
    for full in (True, False):
        cpu, wall = [], []
        for _ in range(repeat):
            c0, w0 = time.process_time(), time.perf_counter()
            report = verify_store(rs, full=full)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            assert report.ok, report.as_dict()
        out["full" if full else "scan"] = {"cpu_s": statistics.median(cpu),
                                           "wall_s": statistics.median(wall)}  # fmt: skip
    out["ratio_cpu"] = out["full"]["cpu_s"] / out["scan"]["cpu_s"]
    out["ratio_wall"] = out["full"]["wall_s"] / out["scan"]["wall_s"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--s3", action="store_true", help="also on moto's S3 server")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/resume_check.json")
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        rs, cases, batches = build(Path(tmp) / "s.zarr")
        results["local"] = {"cases": cases, "batches": batches, **measure(rs, args.repeat)}
    if args.s3:
        sys.path.insert(0, str(ROOT))
        from tests.s3_testkit import s3_server

        with s3_server("bench") as _:
            rs, cases, batches = build("s3://bench/s.zarr")
            results["s3 (moto)"] = {"cases": cases, "batches": batches,
                                    **measure(rs, args.repeat)}  # fmt: skip
    for where, r in results.items():
        print(f"{where}: {r['cases']} cases, {r['batches']} batches; full read"
              f" {r['full']['cpu_s']:.2f} s CPU / {r['full']['wall_s']:.2f} s wall, checksum"
              f" scan {r['scan']['cpu_s']:.2f} s CPU / {r['scan']['wall_s']:.2f} s wall:"
              f" x{r['ratio_cpu']:.1f} CPU, x{r['ratio_wall']:.1f} wall")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
