"""Cost of qr's E3 window on large models (nfourbar with N four-bars; docs/performance.md,
"qr's E3 window").

Two measurements, qr without the window (``sing_mu`` = 0) and with it (3e-3) side by side,
interleaved, medians of ``--repeat`` runs (the machine is shared: read the load average
printed with them):

1. ``rhs``: one right-hand side of the qr kernel (solvers/formulations/qr.py) at exact
   states of the branch motion perturbed by 1e-13 (a raw state's drift): 50 ms before the
   singular time t_s (window closed), 1 ms before (W = 0: the E3 acceleration with its
   bias correction, four shifted states) and 1e-7 s before (also the narrow position
   window, one Gauss-Newton projection more).
2. ``run``: whole runs ``run_case("nfourbar", "qr", "dopri5", t_end=1.0, samples=11,
   model_params={"n": N}, integrator_params={"rtol": R, "atol": 1e-2 R})`` through the
   first crossing (t_s ~ 0.71 s), wall time without compilation, status and counters.

    python -m benchmarks.qr_window_cost rhs --sizes 2 10 40 --repeat 7
    python -m benchmarks.qr_window_cost run --sizes 10 40 --repeat 3 --rtol 1e-8
    python -m benchmarks.qr_window_cost run --sizes 40 --repeat 1 --rtol 1e-10 --mus 3e-3
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from mbstudy.solvers import model_entry
from mbstudy.solvers.compose import kernel_module
from mbstudy.solvers.formulations import qr
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import STATUS_NAMES

from benchmarks.qr_singular_probe import singular_time
from mbstudy import run_case

MUS = (0.0, 3e-3)  # plain qr, the window
STATES = (
    ("closed, t_s - 50 ms", 5e-2),
    ("W = 0, t_s - 1 ms", 1e-3),
    ("narrow, t_s - 1e-7 s", 1e-7),
)


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def rhs_cost(sizes: list[int], repeat: int) -> None:
    """Median time of one right-hand side, plain and with the window (module docstring)."""
    k = kernel_module("nfourbar", "qr", "dopri5")
    spec = model_entry.model("nfourbar")
    print(f"one right-hand side, median of {repeat} ({_load()})")
    print(f"{'N':>3} {'n':>4} {'state':<22} {'plain ms':>9} {'window ms':>10} {'W':>6}")
    for N in sizes:
        mod = spec.module
        p = pack_params(spec.params, {"n": N})
        n, m = (int(x) for x in mod.sizes(p))
        ts, _ = singular_time(mod, p)
        rng = np.random.default_rng(0)
        for label, dt in STATES:
            t = ts - dt
            q, v = (x[0] for x in mod.exact_reference(p, np.array([t])))
            y = np.zeros(2 * n + 1)
            y[:n] = q + 1e-13 * rng.standard_normal(n)
            y[n : 2 * n] = v + 1e-13 * rng.standard_normal(n)
            dy = np.zeros_like(y)
            cases = []
            for mu in MUS:
                fp = pack_params(qr.SPEC.params, {"sing_mu": mu})
                ws = k.form_alloc(n, m, fp)
                assert k.form_rhs(float(t), y, p, fp, dy, ws) == 0  # compiles, warms
                cases.append((fp, ws))
            times = [[], []]
            for _ in range(repeat):  # interleaved
                for c, (fp, ws) in enumerate(cases):
                    t0 = time.perf_counter()
                    k.form_rhs(float(t), y, p, fp, dy, ws)
                    times[c].append(time.perf_counter() - t0)
            W = cases[1][1][qr.QRW_SING][k.SW_INFO][1]
            print(f"{N:>3} {n:>4} {label:<22} {1e3 * np.median(times[0]):>9.2f} "
                  f"{1e3 * np.median(times[1]):>10.2f} {W:>6.3g}", flush=True)  # fmt: skip


def run_cost(sizes: list[int], repeat: int, rtols: list[float], t_end: float,
             mus: tuple[float, ...] = MUS) -> None:
    """Median wall time of whole runs through the first crossing, plain and windowed."""
    print(f"dopri5 to t = {t_end:g} s, 11 samples, median of {repeat} ({_load()})")
    print(f"{'N':>3} {'rtol':>7} {'sing_mu':>8} {'status':>12} {'steps/rej (rhs)':>18} "
          f"{'wall s':>8}")  # fmt: skip
    for N in sizes:
        for rtol in rtols:
            rows: dict[float, list] = {mu: [] for mu in mus}
            for _ in range(repeat):  # interleaved
                for mu in mus:
                    r = run_case("nfourbar", "qr", "dopri5", t_end=t_end, samples=11,
                                 model_params={"n": N}, formulation_params={"sing_mu": mu},
                                 integrator_params={"rtol": rtol, "atol": 1e-2 * rtol})  # fmt: skip
                    rows[mu].append(r)
            for mu in mus:
                r = rows[mu][-1]
                c = r.counters
                wall = np.median([x.wall_s for x in rows[mu]])
                print(f"{N:>3} {rtol:>7.0e} {mu:>8g} {STATUS_NAMES[r.status]:>12} "
                      f"{f'{c[0]}/{c[1]} ({c[2]})':>18} {wall:>8.2f}", flush=True)  # fmt: skip
    print(_load())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("rhs", "run"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 10, 40])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rtol", type=float, nargs="+", default=[1e-8])
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--mus", type=float, nargs="+", default=list(MUS),
                    help="sing_mu values of the runs (plain qr stalls at rtol <= 1e-10)")
    args = ap.parse_args(argv)
    if args.what == "rhs":
        rhs_cost(args.sizes, args.repeat)
    else:
        run_cost(args.sizes, args.repeat, args.rtol, args.t_end, tuple(args.mus))


if __name__ == "__main__":
    main()
