"""Probe of the qr right-hand side near a singular position (not a speed benchmark).

The command line over the dense-SVD re-implementation of the qr right-hand side in
tests/qr_singular_testkit.py (the tests check the kernel against it)
(docs/explanation/methods.md#qr, steps 1-4: Gauss-Newton position correction, residual-form velocity
correction, normal/tangent acceleration), written in NumPy so that variants can be tried without a
numba compile. Where the smallest non-zero singular value s_min of Phi_q falls below 2 mu s_max (the
"window") the soft singular directions (s_i < 10 mu s_max) are released with a
C-infinity step W in log(s_min) (W = 1 above 2 mu, 0 below mu / 2, regular positions
unchanged):

- ``--variant free``: position and velocity corrections along the soft directions scaled
  by W, acceleration W a_constrained + (1 - W) a_free (the soft directions join the
  tangent basis);
- ``--variant zero``: the same, but a_free has no soft component;
- ``--variant tikhonov``: no window; the soft filter s / (s^2 + mu^2) in all three solves;
- ``--variant plain``: the qr right-hand side as it is (mu unused);
- ``--variant e3``, ``e3j``, ``e3j2``: the E3 window of tests/qr_singular_testkit.py (soft
  acceleration from the third time derivative of the constraints, tangent equation along
  v; bias correction of order 0, 1, 2; ``--h-fd``, ``--h-j`` its difference steps,
  ``--svd-tangent`` the tangent equation along the SVD's V2 instead). Measured table:
  docs/explanation/methods.md#qr-through-singular-positions.

``run`` integrates with scipy's ``solve_ivp`` (DOP853 or RK45, atol = 1e-2 rtol) to
t_end and prints the right-hand sides and the error of the corrected output against the
model's exact reduction (docs/explanation/methods.md#redundant-and-singular). ``noise`` evaluates
the right-hand side on the exact trajectory at 1e-2 .. 1e-7 s before the singular time and
prints the largest error of the corrected velocity and of the acceleration over 10 states
perturbed by ``--perturb`` (default 1e-13, a raw state's drift) at the times ``--dts``
before t_s; the exact acceleration is the branch's, f'(th) th'' + f''(th) th'^2 with
th'' from the 1-DOF reduction (:func:`exact_accel`).

Run (repository root)::

    python -m benchmarks.qr_singular_probe run --model nfourbar --variant zero --mu 3e-3 \\
        --rtol 1e-12 --method DOP853
    python -m benchmarks.qr_singular_probe noise --model parallelogram
    python -m benchmarks.qr_singular_probe run --model nfourbar --variant e3j2 --mu 3e-3 \\
        --rtol 1e-12 --method RK45
"""

from __future__ import annotations

import argparse

import numpy as np

from tests.qr_singular_testkit import Probe, crossing, exact_accel, singular_time


def run(args) -> None:
    pr = Probe(args.model, args.variant, args.mu, h_fd=args.h_fd, h_j=args.h_j,
               vtan=not args.svd_tangent)
    sol, _, err = crossing(pr, args.method, args.rtol, args.t_end)
    if sol is None:
        print(f"{args.model} {args.variant} mu={args.mu:g} rtol={args.rtol:g}: "
              f"right-hand-side budget exhausted")
        return
    print(f"{args.model} {args.method} {args.variant} mu={args.mu:g} rtol={args.rtol:g}: "
          f"t={sol.t[-1]:g} rhs={sol.nfev}"
          + (f" (+{pr.e3.n_shift} shifted)" if pr.e3 is not None else "")
          + f" error={err.max():.2e}"
          + ("" if sol.success else f" ({sol.message})"))
    if args.verbose:
        print("  per sample:", " ".join(f"{e:.1e}" for e in err))


def noise(args) -> None:
    pr = Probe(args.model, args.variant, args.mu, h_fd=args.h_fd, h_j=args.h_j,
               vtan=not args.svd_tangent)
    mod, p, n = pr.mod, pr.p, pr.n
    ts, s_soft = singular_time(mod, p)
    print(f"{args.model} {args.variant}: singular time {ts:.6f} s")
    for dt in args.dts:
        t = ts - dt
        q, v = mod.exact_reference(p, np.array([t]))
        a_ex = exact_accel(args.model, p, q[0], v[0])
        ev = ea = 0.0
        rng = np.random.default_rng(0)
        for _ in range(10):
            dq, dv = args.perturb * rng.standard_normal((2, n))
            _, vc, a = pr.rhs(t, q[0] + dq, v[0] + dv)
            ev = max(ev, np.abs(vc - v[0]).max())
            ea = max(ea, np.abs(a - a_ex).max())
        print(f"  t_s - {dt:.0e}: s_min {s_soft(t):.2e}  |v_c - v| {ev:.2e}  "
              f"|a - a_exact| {ea:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("run", "noise"))
    ap.add_argument("--model", default="parallelogram", choices=("parallelogram", "nfourbar"))
    ap.add_argument("--variant", default="plain",
                    choices=("plain", "tikhonov", "free", "zero", "e3", "e3j", "e3j2"))
    ap.add_argument("--mu", type=float, default=1e-2)
    ap.add_argument("--rtol", type=float, default=1e-12)
    ap.add_argument("--method", default="DOP853", choices=("DOP853", "RK45"))
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--svd-tangent", action="store_true",
                    help="e3*: tangent equation along the SVD's V2, not along v")
    ap.add_argument("--perturb", type=float, default=1e-13)
    ap.add_argument("--dts", type=float, nargs="+",
                    default=[1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 0.0])
    ap.add_argument("--h-j", type=float, default=1e-4)
    ap.add_argument("--h-fd", type=float, default=1e-3)
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args()
    (run if args.what == "run" else noise)(args)


if __name__ == "__main__":
    main()
