"""Probe of the qr right-hand side near a singular position (not a speed benchmark).

A dense-SVD re-implementation of the qr right-hand side (docs/methods.md#qr, steps 1-4:
Gauss-Newton position correction, residual-form velocity correction, normal/tangent
acceleration), written in NumPy so that variants can be tried without a numba compile.
Where the smallest non-zero singular value s_min of Phi_q falls below 2 mu s_max (the
"window") the soft singular directions (s_i < 10 mu s_max) are released with a
C-infinity step W in log(s_min) (W = 1 above 2 mu, 0 below mu / 2, regular positions
unchanged):

- ``--variant free``: position and velocity corrections along the soft directions scaled
  by W, acceleration W a_constrained + (1 - W) a_free (the soft directions join the
  tangent basis);
- ``--variant zero``: the same, but a_free has no soft component;
- ``--variant tikhonov``: no window; the soft filter s / (s^2 + mu^2) in all three solves;
- ``--variant plain``: the qr right-hand side as it is (mu unused);
- ``--variant e3``, ``e3j``, ``e3j2``: the E3 window of benchmarks/qr_e3.py (soft
  acceleration from the third time derivative of the constraints, tangent equation along
  v; bias correction of order 0, 1, 2; ``--h-fd``, ``--h-j`` its difference steps,
  ``--svd-tangent`` the tangent equation along the SVD's V2 instead). Measured table:
  docs/methods.md#qr-through-singular-positions.

``run`` integrates with scipy's ``solve_ivp`` (DOP853 or RK45, atol = 1e-2 rtol) to
t_end and prints the right-hand sides and the error of the corrected output against the
model's exact reduction (docs/methods.md#redundant-and-singular). ``noise`` evaluates the
right-hand side on the exact trajectory at 1e-2 .. 1e-7 s before the singular time and
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
from mbstudy.solvers import registry
from mbstudy.solvers.spec import pack_params
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar

from benchmarks.qr_e3 import E3Window, step


def _params(model: str):
    spec = registry.model(model)
    return spec.module, pack_params(spec.params, {"n": 2} if model == "nfourbar" else {})


class Probe:
    """The qr right-hand side of one model, dense SVD, with a soft-direction variant."""

    def __init__(self, model: str, variant: str, mu: float, rank_tol: float = 1e-10,
                 h_fd: float = 1e-3, h_j: float = 1e-4, vtan: bool = True):
        self.mod, self.p = _params(model)
        self.n, self.m = (int(x) for x in self.mod.sizes(self.p))
        self.variant, self.mu, self.rank_tol = variant, mu, rank_tol
        orders = {"e3": 0, "e3j": 1, "e3j2": 2}
        self.e3 = (E3Window(self.mod, self.p, mu, orders[variant], h_fd, h_j, vtan, rank_tol)
                   if variant in orders else None)
        self.nfev = 0

    def _factor(self, J):
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > self.rank_tol * s[0]))
        s = s[:r]
        if self.variant == "tikhonov":
            f = s / (s**2 + (self.mu * s[0]) ** 2)
            return U[:, :r], s, Vt.T[:, :r], Vt.T[:, r:], f, f, np.zeros(r, bool)
        W = 1.0 if self.variant == "plain" else step(s[-1] / (self.mu * s[0]))
        soft = (s < 10 * self.mu * s[0]) & (W < 1.0)
        self._W = W
        w = np.where(soft, W, 1.0)
        return U[:, :r], s, Vt.T[:, :r], Vt.T[:, r:], w / s, 1.0 / s if W == 1.0 else w / s, soft

    def _tangent(self, M, Q, b, V2):
        y = np.linalg.solve(V2.T @ M @ V2, V2.T @ (Q - M @ b))
        return b + V2 @ y

    def rhs(self, t, q, v):
        """Corrected velocity and acceleration at the raw state (q, v)."""
        if self.e3 is not None:
            return self.e3.rhs(t, q, v)
        mod, p, n, m = self.mod, self.p, self.n, self.m
        qc, ph, J = q.copy(), np.zeros(m), np.zeros((m, n))
        d_prev = np.inf
        for it in range(11):
            mod.phi(qc, t, p, ph)
            mod.phi_q(qc, t, p, J)
            U, s, V1, V2, fq, fa, soft = self._factor(J)
            if it == 10:
                break
            dq = V1 @ (fq * (U.T @ ph))
            d = np.linalg.norm(dq)
            if d <= 1e-14 or d > 0.5 * d_prev:
                break
            qc -= dq
            d_prev = d
        pt = np.zeros(m)
        mod.phi_t(qc, t, p, pt)
        vc = v - V1 @ (fq * (U.T @ (J @ v + pt)))
        g, M, Q = np.zeros(m), np.zeros((n, n)), np.zeros(n)
        mod.gamma(qc, vc, t, p, g)
        mod.mass(qc, p, M)
        mod.forces(qc, vc, t, p, Q)
        if self.variant == "tikhonov":
            return qc, vc, self._tangent(M, Q, V1 @ (fa * (U.T @ g)), V2)
        a = self._tangent(M, Q, V1 @ ((U.T @ g) / s), V2)
        if soft.any():
            W = self._W
            b = V1[:, ~soft] @ ((U[:, ~soft].T @ g) / s[~soft])
            tang = np.hstack([V1[:, soft], V2]) if self.variant == "free" else V2
            alt = self._tangent(M, Q, b, tang)
            a = W * a + (1.0 - W) * alt
        return qc, vc, a

    def f(self, t, y):
        self.nfev += 1
        if self.nfev > 200_000:
            raise RuntimeError(f"right-hand side budget exhausted at t = {t!r}")
        n = self.n
        _, vc, a = self.rhs(t, y[:n], y[n:])
        return np.concatenate([vc, a])


def exact_accel(model: str, p, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Acceleration of the exact branch motion at a branch state (q, v): th = q[2],
    om = v[2] (crank 0), th'' = -k cos th (docs/models.md), a = f'(th) th'' + f''(th) om^2
    with f' from ``branch_state(th, 1)`` and f'' by a 4-point difference in th."""
    spec = registry.model(model)
    mod = spec.module
    names = [prm.name for prm in spec.params]
    P = dict(zip(names, p, strict=True))
    if model == "nfourbar":
        nw = P["n"]
        k = ((nw + 1) / 2 + nw) * P["g"] / (((nw + 1) / 3 + nw) * P["L"])
    else:
        k = (1.5 * P["m"] + P["mc"]) * P["g"] / ((P["m"] + P["mc"]) * P["L"])
    th, om = float(q[2]), float(v[2])
    h = 1e-3

    def fp(x):
        return mod.branch_state(p, np.array([x]), np.array([1.0]))[1][0]

    fpp = (8 * (fp(th + h) - fp(th - h)) - (fp(th + 2 * h) - fp(th - 2 * h))) / (12 * h)
    return fp(th) * (-k * np.cos(th)) + fpp * om**2


def crossing(pr: Probe, method: str, rtol: float, t_end: float = 2.0):
    """Integrate the probe's right-hand side with scipy's ``solve_ivp`` from the model's
    initial state to t_end (atol = 1e-2 rtol); return the solution (None when the
    right-hand-side budget ran out), the corrected states at the 21 samples and their
    errors max_i |q_c,i - q_exact,i| against the exact reduction."""
    q0, v0 = pr.mod.initial_state(pr.p)
    t_out = np.linspace(0.0, t_end, 21)
    try:
        sol = solve_ivp(pr.f, (0.0, t_end), np.concatenate([q0, v0]), method=method,
                        rtol=rtol, atol=1e-2 * rtol, t_eval=t_out)
    except RuntimeError:
        return None, None, None
    n = pr.n
    qc = np.array([pr.rhs(tk, sol.y[:n, k], sol.y[n:, k])[0] for k, tk in enumerate(sol.t)])
    q_ex, _ = pr.mod.exact_reference(pr.p, sol.t)
    return sol, qc, np.abs(qc - q_ex).max(axis=1)


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


def singular_time(mod, p: np.ndarray):
    """The first singular time t_s of the exact motion (near 0.714 s for both models): the
    minimum of the smallest non-redundant singular value of Phi_q along it; returns t_s
    and that singular value as a function of t."""
    n, m = (int(x) for x in mod.sizes(p))

    def s_soft(t):
        q, _ = mod.exact_reference(p, np.array([t]))
        J = np.zeros((m, n))
        mod.phi_q(q[0], t, p, J)
        return np.linalg.svd(J, compute_uv=False)[n - 2]

    tt = np.linspace(0.70, 0.73, 301)
    i = int(np.argmin([s_soft(t) for t in tt]))
    return float(minimize_scalar(s_soft, bracket=(tt[i - 1], tt[i], tt[i + 1])).x), s_soft


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
