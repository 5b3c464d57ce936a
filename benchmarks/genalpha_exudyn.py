"""genalpha against Exudyn's generalized-α on the four-bar, CPU time and work per step.

For each number of steps N over t_end = 1 s (the step list of benchmarks/work_precision.py)
both integrators run the same mechanism (index-3 constraints, fixed h = 1/N): mbstudy's
``genalpha`` (``--rho`` spectral radii, default 0.8 and Exudyn's 0.9) through
``solvers.runner.run_case``, and Exudyn's ``SolveDynamic`` (its default implicit
generalized-α, modified Newton, spectral radius 0.9) on the model of
:func:`benchmarks.work_precision.exudyn_fourbar_system`. Per point:

- ``error``: max |q(t_end) - q_ref| (the studies' reference, as work_precision.py);
- ``cpu_s``: median over ``--repeat`` runs of the process CPU time (``time.process_time``)
  of the whole call (mbstudy: ``run_case``, its Python set-up included; Exudyn:
  ``SolveDynamic``). CPU time, not wall time: the machine is shared, and a process'
  CPU time moves much less with the load than its wall time;
- work: Newton iterations per step, iteration-matrix (Jacobian) evaluations, residuals.
  Exudyn's come from its solver object (``it.newtonStepsCount``, ``it.newtonJacobiCount``).

The speed-up at equal error interpolates log(cpu) linearly in log(error) along each
curve (:func:`benchmarks.work_precision.speedup_at_equal_error`).

Run (from the repository root, needs ``pip install '.[bench]'``)::

    python -m benchmarks.genalpha_exudyn [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

from benchmarks.work_precision import (  # noqa: E402
    PROBLEMS,
    exudyn_fourbar_system,
    exudyn_settings,
    reference,
    speedup_at_equal_error,
)

STEPS = (100, 200, 400, 800, 1600, 3200, 6400, 12800)
"""Steps over t_end = 1 s: work_precision.py's Exudyn list."""


def mbstudy_points(steps, rho, q_ref, repeat, extra=None) -> list[dict]:
    """genalpha on fourbar/index3 at h = t_end / N for each N: error, CPU s, work."""
    from mbstudy.solvers.runner import run_case
    from mbstudy.solvers.status import C_JAC, C_NEWTON, C_REJECTED, C_RHS, C_STEPS

    t_end = PROBLEMS["fourbar"]["t_end"]
    out = []
    for n_steps in steps:
        ip = {"h": t_end / n_steps, "rho_inf": rho, **(extra or {})}
        cpus = []
        for _ in range(repeat):
            c0 = time.process_time()
            res = run_case("fourbar", "index3", "genalpha", t_end=t_end, samples=2,
                           integrator_params=ip)  # fmt: skip
            cpus.append(time.process_time() - c0)
        if res.status != 0:
            out.append({"steps": n_steps, "status": int(res.status)})
            continue
        c = res.counters
        out.append({
            "steps": n_steps, "error": float(np.max(np.abs(res.q[-1] - q_ref))),
            "cpu_s": statistics.median(cpus), "newton_per_step": c[C_NEWTON] / c[C_STEPS],
            "jac": int(c[C_JAC]), "rhs": int(c[C_RHS]), "rejected": int(c[C_REJECTED]),
        })  # fmt: skip
    return out


def exudyn_points(steps, q_ref, repeat) -> list[dict] | str:
    """Exudyn's default dynamic solver on the four-bar: error, CPU s, Newton statistics."""
    try:
        import exudyn as exu
    except ImportError:
        return "exudyn not installed (pip install '.[bench]')"
    out = []
    for n_steps in steps:
        cpus = []
        for _ in range(repeat):
            mbs, q_of = exudyn_fourbar_system(exu)
            s = exudyn_settings(exu, PROBLEMS["fourbar"]["t_end"], n_steps)
            c0 = time.process_time()
            mbs.SolveDynamic(s, storeSolver=True)
            cpus.append(time.process_time() - c0)
        it = mbs.sys["dynamicSolver"].it
        out.append({
            "steps": n_steps, "error": float(np.max(np.abs(q_of() - q_ref))),
            "cpu_s": statistics.median(cpus),
            "newton_per_step": it.newtonStepsCount / max(it.currentStepIndex, 1),
            "jac": int(it.newtonJacobiCount),
        })  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per point (5)")
    ap.add_argument("--rho", type=float, nargs="+", default=[0.8, 0.9])
    ap.add_argument("--steps", type=int, nargs="+", default=list(STEPS))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    q_ref = reference("fourbar", PROBLEMS["fourbar"]["t_end"])
    mbstudy_points([100], 0.8, q_ref, 1)  # load (or compile) the kernel outside the clock
    load0 = os.getloadavg()
    curves = {f"genalpha rho {r}": mbstudy_points(args.steps, r, q_ref, args.repeat)
              for r in args.rho}  # fmt: skip
    curves["exudyn"] = exudyn_points(args.steps, q_ref, args.repeat)
    for name, pts in curves.items():
        print(f"== {name}")
        if isinstance(pts, str):
            print("  " + pts)
            continue
        for p in pts:
            if "error" not in p:
                print(f"  N {p['steps']:6d}  status {p['status']}")
                continue
            print(f"  N {p['steps']:6d}  err {p['error']:.2e}  cpu {p['cpu_s'] * 1e3:8.3f} ms"
                  f"  us/step {p['cpu_s'] / p['steps'] * 1e6:6.2f}"
                  f"  newton/step {p['newton_per_step']:.2f}  jac {p['jac']}")
    speedups = {}
    if isinstance(curves["exudyn"], list):
        ex = [{"error": p["error"], "seconds": p["cpu_s"]} for p in curves["exudyn"]]
        for name, pts in curves.items():
            if name == "exudyn":
                continue
            mine = [{"error": p["error"], "seconds": p["cpu_s"]} for p in pts if "error" in p]
            speedups[name] = speedup_at_equal_error(mine, ex)
            rows = ", ".join(f"{r['error']:.0e}: x{r['speedup']:.1f}" for r in speedups[name])
            print(f"speed-up {name} vs exudyn (CPU, equal error): {rows}")
    load1 = os.getloadavg()
    print(f"# load average before {load0}, after {load1}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"loadavg": [load0, load1], "curves": curves,
                                         "speedups": speedups}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
