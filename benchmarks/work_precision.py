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


def python_rhs(model: str, prob: dict):
    """f(t, y) for y = [q, v]: the Baumgarte index-1 equations with np.linalg.solve."""
    from mbstudy.solvers import registry
    from mbstudy.solvers.spec import pack_params

    entry = registry.model(model)
    mod = entry.module
    p = pack_params(entry.params, {})
    n, m = (int(x) for x in mod.sizes(p))
    kp = prob["omega_n"] ** 2
    kd = 2.0 * prob["xi"] * prob["omega_n"]
    M = np.zeros((n, n))
    Q = np.zeros(n)
    G = np.zeros((m, n))
    ph = np.zeros(m)
    pt = np.zeros(m)
    gam = np.zeros(m)
    K = np.zeros((n + m, n + m))

    def f(t, y):
        q = y[:n]
        v = y[n:]
        mod.mass(q, p, M)
        mod.forces(q, v, t, p, Q)
        mod.phi(q, t, p, ph)
        mod.phi_q(q, t, p, G)
        mod.phi_t(q, t, p, pt)
        mod.gamma(q, v, t, p, gam)
        u = -kp * ph - kd * (G @ v + pt)
        K[:n, :n] = M
        K[:n, n:] = G.T
        K[n:, :n] = G
        x = np.linalg.solve(K, np.concatenate([Q, gam + u]))
        return np.concatenate([v, x[:n]])

    q0, v0 = mod.initial_state(p)
    return f, np.concatenate([q0, v0]), n


def scipy_curve(model, method, tols, prob, q_ref, repeat) -> list[dict]:
    """(error, seconds) of solve_ivp(method) on :func:`python_rhs` for each rtol = atol."""
    from scipy.integrate import solve_ivp

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


def exudyn_fourbar_system(exu):
    """The four-bar in Exudyn (three RigidBody2D, four RevoluteJoint2D, gravity), assembled:
    (mbs, q_of) with q_of() the absolute coordinates [x2 y2 th2 ...] after a solve."""
    import exudyn.itemInterface as eii
    from mbstudy.solvers import registry
    from mbstudy.solvers.models import fourbar
    from mbstudy.solvers.spec import pack_params

    p = pack_params(registry.model("fourbar").params, {})
    q0, v0 = fourbar.initial_state(p)
    L1, L2, L3, L4, m2, m3, m4, g = (float(x) for x in p[:8])
    lengths, masses = (L2, L3, L4), (m2, m3, m4)
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(eii.ObjectGround())
    nodes, markers = [], []
    for b in range(3):
        nd = mbs.AddNode(eii.NodeRigidBody2D(
            referenceCoordinates=list(q0[3 * b : 3 * b + 3]),
            initialVelocities=list(v0[3 * b : 3 * b + 3])))  # fmt: skip
        body = mbs.AddObject(eii.ObjectRigidBody2D(
            mass=masses[b], inertia=masses[b] * lengths[b] ** 2 / 12.0,
            nodeNumber=nd))  # fmt: skip
        half = 0.5 * lengths[b]
        tail = mbs.AddMarker(
            eii.MarkerBodyPosition(bodyNumber=body, localPosition=[-half, 0.0, 0.0])
        )
        tip = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=body, localPosition=[half, 0.0, 0.0]))
        mass_marker = mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=body))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mass_marker, loadVector=[0.0, -g, 0.0]))
        nodes.append(nd)
        markers.append((tail, tip))
    gA = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    gD = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[L1, 0.0, 0.0]))
    for pair in ((gA, markers[0][0]), (markers[0][1], markers[1][0]),
                 (markers[1][1], markers[2][1]), (markers[2][0], gD)):  # fmt: skip
        mbs.AddObject(eii.ObjectJointRevolute2D(markerNumbers=list(pair)))
    mbs.Assemble()

    def q_of() -> np.ndarray:
        return np.concatenate([
            np.asarray(mbs.GetNodeOutput(nd, exu.OutputVariableType.Coordinates))
            + np.asarray(q0[3 * b : 3 * b + 3]) for b, nd in enumerate(nodes)
        ])  # fmt: skip

    return mbs, q_of


def exudyn_settings(exu, t_end: float, steps: int):
    """Exudyn's simulation settings for a run of ``steps`` fixed steps over [0, t_end] with
    its default dynamic solver, silent and writing no solution file."""
    s = exu.SimulationSettings()
    s.timeIntegration.endTime = t_end
    s.timeIntegration.numberOfSteps = int(steps)
    s.timeIntegration.verboseMode = 0
    s.solution.file.write = False
    s.show.computationTime = False
    s.show.statistics = False
    return s


def exudyn_fourbar_curve(steps_list, prob, q_ref, repeat) -> list[dict] | str:
    """(error, seconds) of Exudyn's default solver on the four-bar; a note if unavailable."""
    try:
        import exudyn as exu
    except ImportError:
        return "exudyn not installed (pip install '.[bench]')"
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
