"""Work-precision comparison: error at t_end against the reference vs wall time.

Four-bar (t_end = 1 s) and Andrews' squeezer (t_end = 0.03 s), all on the same
equations: the index-1 form (0.1) with Baumgarte stabilization u = -omega_n^2 phi -
2 xi omega_n phi_dot (the four-bar: omega_n = 20, xi = 1; Andrews: the study's
omega_n = 1000, xi = 1), first-order state [q, v].

- mbstudy: the compiled kernels, dop853 + baumgarte and dopri5 + baumgarte over
  rtol = atol, and rk4 + baumgarte over h; time = ``CaseResult.wall_s`` (kernel only,
  compile excluded), median of ``--repeat`` runs.
- scipy: ``scipy.integrate.solve_ivp`` with DOP853 and Radau (finite-difference Jacobian)
  over rtol (atol = rtol), with a Python right-hand side that calls the model's
  compiled functions (M, Q, phi, phi_q, gamma) and ``np.linalg.solve`` on the augmented
  matrix: the integrator and the per-call overhead are Python, the model evaluation is
  not (a favourable setting for scipy).
- Exudyn (four-bar only, optional: ``pip install '.[bench]'``): the same mechanism as
  three RigidBody2D bodies with four RevoluteJoint2D and gravity, its default dynamic
  solver (implicit generalized-alpha, spectral radius 0.9, index-3 constraints) over the
  number of steps; time = the ``SolveDynamic`` call. Skipped, with a note, when exudyn is
  not installed.

Error = max |q(t_end) - q_ref(t_end)| over the coordinates (m and rad), the reference
being the studies' own: dopri5 + projection at rtol 1e-12, atol 1e-14.

Speed-ups "at equal error" interpolate log(time) linearly in log(error) along each
method's curve and compare at the error levels both curves reach.

Run (from the repository root)::

    NUMBA_CACHE_DIR=/tmp/nbcache python -m benchmarks.work_precision [--quick]

Writes benchmarks/results/work_precision.json and docs/figures/work_precision.png.
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

PROBLEMS = {
    "fourbar": {"t_end": 1.0, "omega_n": 20.0, "xi": 1.0},
    "andrews": {"t_end": 0.03, "omega_n": 1000.0, "xi": 1.0},
}


def reference(model: str, t_end: float) -> np.ndarray:
    """q(t_end) of the studies' reference (dopri5 + projection, rtol 1e-12, atol 1e-14)."""
    from mbstudy.solvers.runner import run_case

    res = run_case(model, "projection", "dopri5", t_end=t_end, samples=2,
                   integrator_params={"rtol": 1e-12, "atol": 1e-14})  # fmt: skip
    assert res.status == 0, res.status
    return res.q[-1].copy()


FIXED_STEP = ("rk4", "genalpha", "hht", "newmark")
"""Integrators swept over the step h (the others over rtol = atol)."""


def mbstudy_curve(model, integrator, values, prob, q_ref, repeat,
                  formulation="baumgarte", extra=None) -> list[dict]:  # fmt: skip
    """(error, seconds) of an mbstudy kernel for each tolerance or step; ``formulation``
    baumgarte (the shared equations) or index3 (genalpha, hht)."""
    from mbstudy.solvers.runner import run_case

    out = []
    fp = {"omega_n": prob["omega_n"], "xi": prob["xi"]} if formulation == "baumgarte" else {}
    for val in values:
        ip = {"h": val} if integrator in FIXED_STEP else {"rtol": val, "atol": val}
        ip.update(extra or {})
        walls = []
        for _ in range(repeat):
            res = run_case(model, formulation, integrator, t_end=prob["t_end"], samples=2,
                           formulation_params=fp, integrator_params=ip)  # fmt: skip
            walls.append(res.wall_s)
        if res.status != 0:
            continue
        err = float(np.max(np.abs(res.q[-1] - q_ref)))
        out.append({"param": val, "error": err, "seconds": statistics.median(walls),
                    "rhs": int(res.counters[2]), "jac": int(res.counters[5])})  # fmt: skip
    return out


IMPLICIT = ("mbstudy radau5", "mbstudy genalpha", "mbstudy hht", "mbstudy bdf")
"""The implicit curves compared with scipy's Radau / BDF and Exudyn at equal error."""


def implicit_curves(model, prob, q_ref, repeat, tols, hs) -> dict:
    """mbstudy's implicit integrators: radau5 on the Baumgarte equations (those of the
    scipy curves), genalpha (rho_inf 0.8) and hht (alpha -0.1) on index3 over h, and bdf
    on the Baumgarte equations where the registry has it (a note otherwise)."""
    from mbstudy.solvers import registry

    curves = {
        "mbstudy radau5": mbstudy_curve(model, "radau5", tols, prob, q_ref, repeat),
        "mbstudy genalpha": mbstudy_curve(model, "genalpha", hs, prob, q_ref, repeat,
                                          formulation="index3"),
        "mbstudy hht": mbstudy_curve(model, "hht", hs, prob, q_ref, repeat,
                                     formulation="index3"),
    }
    if "bdf" in registry.entries("integrator"):
        curves["mbstudy bdf"] = mbstudy_curve(model, "bdf", tols, prob, q_ref, repeat)
    else:
        curves["mbstudy bdf"] = "bdf not in this checkout's registry (branch bdf)"
    return curves


def scipy_curve(model, method, tols, prob, q_ref, repeat) -> list[dict]:
    """(error, seconds) of solve_ivp(method) on the Python right-hand side of
    tests/references_testkit.py (``python_rhs``) for each rtol = atol."""
    from scipy.integrate import solve_ivp

    from tests.references_testkit import python_rhs

    f, y0, n = python_rhs(model, prob)
    f(0.0, y0)  # first-call costs out of the timing
    out = []
    for tol in tols:
        walls = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            sol = solve_ivp(f, (0.0, prob["t_end"]), y0, method=method, rtol=tol, atol=tol)
            walls.append(time.perf_counter() - t0)
        if not sol.success:
            continue
        err = float(np.max(np.abs(sol.y[:n, -1] - q_ref)))
        out.append({"param": tol, "error": err, "seconds": statistics.median(walls),
                    "rhs": int(sol.nfev), "jac": int(getattr(sol, "njev", 0))})  # fmt: skip
    return out


def exudyn_fourbar_curve(steps_list, prob, q_ref, repeat) -> list[dict] | str:
    """(error, seconds) of Exudyn's default solver on the four-bar; a note if unavailable."""
    try:
        import exudyn as exu
    except ImportError:
        return "exudyn not installed (pip install '.[bench]')"
    from tests.references_testkit import exudyn_fourbar_system, exudyn_settings

    out = []
    for steps in steps_list:
        walls = []
        for _ in range(repeat):
            mbs, q_of = exudyn_fourbar_system(exu)
            s = exudyn_settings(exu, prob["t_end"], steps)
            t0 = time.perf_counter()
            mbs.SolveDynamic(s)
            walls.append(time.perf_counter() - t0)
        err = float(np.max(np.abs(q_of() - q_ref)))
        out.append({"param": int(steps), "error": err, "seconds": statistics.median(walls)})
    return out


def speedup_at_equal_error(fast: list[dict], slow: list[dict]) -> list[dict]:
    """time(slow) / time(fast) at error levels (decades) both curves reach, interpolated
    linearly in log-log along each curve (sorted by error)."""

    def interp(curve, e):
        pts = sorted((np.log10(c["error"]), np.log10(c["seconds"])) for c in curve)
        xs = [a for a, _ in pts]
        if not (xs[0] <= np.log10(e) <= xs[-1]) or len(pts) < 2:
            return None
        return 10 ** float(np.interp(np.log10(e), xs, [b for _, b in pts]))

    if not fast or not slow:
        return []
    lo = max(min(c["error"] for c in fast), min(c["error"] for c in slow))
    hi = min(max(c["error"] for c in fast), max(c["error"] for c in slow))
    out = []
    for k in range(int(np.ceil(np.log10(lo))), int(np.floor(np.log10(hi))) + 1):
        e = 10.0**k
        tf, ts = interp(fast, e), interp(slow, e)
        if tf and ts:
            out.append({"error": e, "fast_s": tf, "slow_s": ts, "speedup": ts / tf})
    return out


def plot(results: dict, path: Path) -> None:
    """Error vs wall time, one panel per model (log-log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    style = {
        "mbstudy dop853": "*-", "mbstudy dopri5": "o-", "mbstudy rk4": "s-",
        "scipy DOP853": "^--", "scipy Radau": "v--", "scipy BDF": "<--",
        "exudyn gen-alpha": "d:", "mbstudy radau5": "P-", "mbstudy genalpha": "D-",
        "mbstudy hht": "X-", "mbstudy bdf": ">-",
    }  # fmt: skip
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5))
    for ax, (model, res) in zip(np.atleast_1d(axes), results.items(), strict=True):
        for name, curve in res["curves"].items():
            if isinstance(curve, list) and curve:
                ax.loglog([c["seconds"] for c in curve], [c["error"] for c in curve],
                          style.get(name, "o-"), label=name)  # fmt: skip
        ax.set_xlabel("wall time per run (s)")
        ax.set_ylabel("max |q(t_end) - q_ref(t_end)|")
        ax.set_title(f"{model}, t_end = {res['t_end']} s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer points, 1 repeat")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per point (3)")
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks/results/work_precision.json")
    ap.add_argument("--plot", type=Path, default=REPO / "docs/figures/work_precision.png")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    if args.quick:
        tols = [1e-3, 1e-5, 1e-7, 1e-9]
        radau = [1e-4, 1e-6, 1e-8]
        implicit_tols = [1e-4, 1e-6, 1e-8, 1e-10]
        per_h = {"fourbar": (50, 200, 800), "andrews": (300, 1200, 4800)}
        per_h_ga = {"fourbar": (100, 400, 1600, 6400), "andrews": (600, 2400, 9600)}
        steps = (100, 400, 1600, 6400)
    else:
        tols = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
        radau = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9]
        implicit_tols = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
        per_h = {"fourbar": (50, 100, 200, 400, 800, 1600, 3200),
                 "andrews": (300, 600, 1200, 2400, 4800)}  # fmt: skip
        per_h_ga = {"fourbar": (100, 200, 400, 800, 1600, 3200),
                    "andrews": (600, 1200, 2400, 4800, 9600, 19200)}  # fmt: skip
        steps = (100, 200, 400, 800, 1600, 3200, 6400, 12800)
    results = {}
    for model, prob in PROBLEMS.items():
        t_end = prob["t_end"]
        q_ref = reference(model, t_end)
        hs = [t_end / k for k in per_h[model]]
        curves = {
            "mbstudy dop853": mbstudy_curve(model, "dop853", tols, prob, q_ref, repeat),
            "mbstudy dopri5": mbstudy_curve(model, "dopri5", tols, prob, q_ref, repeat),
            "mbstudy rk4": mbstudy_curve(model, "rk4", hs, prob, q_ref, repeat),
            "scipy DOP853": scipy_curve(model, "DOP853", tols, prob, q_ref, repeat),
            "scipy Radau": scipy_curve(model, "Radau", radau, prob, q_ref, repeat),
            "scipy BDF": scipy_curve(model, "BDF", radau, prob, q_ref, repeat),
        }
        curves.update(implicit_curves(model, prob, q_ref, repeat, implicit_tols,
                                      [t_end / k for k in per_h_ga[model]]))  # fmt: skip
        if model == "fourbar":
            curves["exudyn gen-alpha"] = exudyn_fourbar_curve(steps, prob, q_ref, repeat)
        speedups = {}
        for other in ("scipy DOP853", "scipy Radau", "scipy BDF", "exudyn gen-alpha"):
            if isinstance(curves.get(other), list):
                for mine in ("mbstudy dop853", "mbstudy dopri5", "mbstudy rk4", *IMPLICIT):
                    if isinstance(curves.get(mine), list):
                        speedups[f"{mine} vs {other}"] = speedup_at_equal_error(
                            curves[mine], curves[other]
                        )
        results[model] = {"t_end": t_end, "curves": curves, "speedups": speedups}
        print(f"== {model} (t_end = {t_end} s)")
        for name, curve in curves.items():
            if isinstance(curve, str):
                print(f"  {name}: {curve}")
                continue
            pts = ", ".join(f"{c['error']:.1e}@{c['seconds'] * 1e3:.3g}ms" for c in curve)
            print(f"  {name}: {pts}")
        for name, rows in speedups.items():
            pts = ", ".join(f"{r['error']:.0e}: x{r['speedup']:.0f}" for r in rows)
            print(f"  speed-up {name}: {pts or 'no common error range'}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"loadavg": list(os.getloadavg()), "results": results},
                                    indent=1))  # fmt: skip
    plot(results, args.plot)
    print(f"# load average {os.getloadavg()}; written {args.json} and {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
