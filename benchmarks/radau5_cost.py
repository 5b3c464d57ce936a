"""Where radau5's time goes, beside scipy's Radau on the same equations.

For the four-bar (t_end = 1 s) and Andrews' squeezer (t_end = 0.03 s) on the Baumgarte
equations of ``benchmarks.work_precision`` (same omega_n, xi), at each rtol = atol:

- mbstudy radau5: steps, rejected steps, residuals, Newton iterations, Jacobians, and
  the kernel's CPU time (``time.process_time`` around ``run_case``, the kernel compiled
  by a warm-up call first), per run and per step;
- scipy ``solve_ivp(method="Radau")`` on the Python right-hand side of
  ``work_precision.python_rhs``: steps, nfev, njev, nlu and CPU time.

CPU time rather than wall time: the machine this was written on is shared, and CPU time
of a single-threaded process is far less sensitive to the load. The per-row ratio is at
equal *tolerance* (errors printed beside it: max |q - q_ref| at t_end against the
studies' reference); the closing lines give the ratio at equal *error*, interpolated along
both curves as ``work_precision.speedup_at_equal_error`` does.

Run (from the repository root)::

    python -m benchmarks.radau5_cost [--repeat 3] [--json out.json]
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
    python_rhs,
    reference,
    speedup_at_equal_error,
)

TOLS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)


def cpu(fn, repeat):
    """(result of the last call, median CPU seconds over ``repeat`` calls)."""
    times = []
    for _ in range(repeat):
        c0 = time.process_time()
        out = fn()
        times.append(time.process_time() - c0)
    return out, statistics.median(times)


def radau5_row(model, prob, tol, q_ref, repeat) -> dict:
    """Counts and CPU time of mbstudy radau5 + baumgarte at rtol = atol = tol."""
    from mbstudy.solvers.integrators.radau5 import R5_C_LU
    from mbstudy.solvers.runner import run_case

    def go():
        return run_case(model, "baumgarte", "radau5", t_end=prob["t_end"], samples=2,
                        formulation_params={"omega_n": prob["omega_n"], "xi": prob["xi"]},
                        integrator_params={"rtol": tol, "atol": tol})  # fmt: skip

    go()  # compile / load the kernel out of the timing
    res, sec = cpu(go, repeat)
    c = res.counters
    steps = int(c[0]) + int(c[1])
    return {"status": int(res.status), "error": float(np.max(np.abs(res.q[-1] - q_ref))),
            "steps": int(c[0]), "rejected": int(c[1]), "rhs": int(c[2]),
            "newton": int(c[3]), "jac": int(c[5]), "lu": int(c[R5_C_LU]), "cpu_s": sec,
            "cpu_us_per_step": 1e6 * sec / max(steps, 1)}  # fmt: skip


def scipy_row(model, prob, tol, q_ref, repeat) -> dict:
    """Counts and CPU time of scipy's Radau at rtol = atol = tol."""
    from scipy.integrate import solve_ivp

    f, y0, n = python_rhs(model, prob)
    f(0.0, y0)
    sol, sec = cpu(lambda: solve_ivp(f, (0.0, prob["t_end"]), y0, method="Radau",
                                     rtol=tol, atol=tol), repeat)  # fmt: skip
    steps = int(sol.t.size - 1)
    return {"status": int(sol.status), "error": float(np.max(np.abs(sol.y[:n, -1] - q_ref))),
            "steps": steps, "rhs": int(sol.nfev), "jac": int(sol.njev), "lu": int(sol.nlu),
            "cpu_s": sec, "cpu_us_per_step": 1e6 * sec / max(steps, 1)}  # fmt: skip


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-scipy", action="store_true")
    args = ap.parse_args(argv)
    out = {}
    for model, prob in PROBLEMS.items():
        q_ref = reference(model, prob["t_end"])
        rows = []
        for tol in TOLS:
            row = {"tol": tol, "radau5": radau5_row(model, prob, tol, q_ref, args.repeat)}
            if not args.no_scipy:
                row["scipy"] = scipy_row(model, prob, tol, q_ref, args.repeat)
                row["cpu_ratio"] = row["scipy"]["cpu_s"] / row["radau5"]["cpu_s"]
            rows.append(row)
            r = row["radau5"]
            line = (f"{model:8s} tol {tol:.0e}  radau5 err {r['error']:.1e} steps {r['steps']}"
                    f"+{r['rejected']} rhs {r['rhs']} newt {r['newton']} jac {r['jac']} "
                    f"lu {r['lu']} "
                    f"cpu {r['cpu_s'] * 1e3:.2f} ms ({r['cpu_us_per_step']:.1f} us/step)")
            if "scipy" in row:
                s = row["scipy"]
                line += (f" | scipy err {s['error']:.1e} steps {s['steps']} rhs {s['rhs']} "
                         f"jac {s['jac']} lu {s['lu']} cpu {s['cpu_s'] * 1e3:.1f} ms "
                         f"({s['cpu_us_per_step']:.0f} us/step) | x{row['cpu_ratio']:.1f}")
            print(line, flush=True)
        out[model] = {"rows": rows}
        if not args.no_scipy:
            ours = [{"error": r["radau5"]["error"], "seconds": r["radau5"]["cpu_s"]}
                    for r in rows if r["radau5"]["status"] == 0]  # fmt: skip
            theirs = [{"error": r["scipy"]["error"], "seconds": r["scipy"]["cpu_s"]}
                      for r in rows if r["scipy"]["status"] == 0]  # fmt: skip
            sp = speedup_at_equal_error(ours, theirs)
            out[model]["speedups"] = sp
            print(f"{model}: scipy Radau CPU / radau5 CPU at equal error: " + ", ".join(
                f"{x['error']:.0e}: x{x['speedup']:.1f}" for x in sp), flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
