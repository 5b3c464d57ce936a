"""Probe of the qr right-hand side near a singular position (issue 18; not a speed benchmark).

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
- ``--variant plain``: the qr right-hand side as it is (mu unused).

``run`` integrates with scipy's ``solve_ivp`` (DOP853 or RK45, atol = 1e-2 rtol) to
t_end and prints the right-hand sides and the error of the corrected output against the
model's exact reduction (docs/methods.md#redundant-and-singular). ``noise`` evaluates the
right-hand side on the exact trajectory at 1e-2 .. 1e-7 s before the singular time and
prints the largest error of the corrected velocity and of the acceleration over 10 states
perturbed by 1e-13 (a raw state's drift; exact acceleration by central differences of the
exact reduction).

Run (repository root)::

    python -m benchmarks.qr_singular_probe run --model nfourbar --variant zero --mu 3e-3 \\
        --rtol 1e-12 --method DOP853
    python -m benchmarks.qr_singular_probe noise --model parallelogram
"""

from __future__ import annotations

import argparse

import numpy as np
from mbstudy.solvers import registry
from mbstudy.solvers.spec import pack_params
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar


def _params(model: str):
    spec = registry.model(model)
    return spec.module, pack_params(spec.params, {"n": 2} if model == "nfourbar" else {})


def _step(x: float) -> float:
    """C-infinity step in log2(x): 0 for x <= 1/2, 1 for x >= 2."""
    u = (np.log2(x) + 1.0) / 2.0
    if u <= 0.0:
        return 0.0
    if u >= 1.0:
        return 1.0
    a, b = np.exp(-1.0 / u), np.exp(-1.0 / (1.0 - u))
    return a / (a + b)


class Probe:
    """The qr right-hand side of one model, dense SVD, with a soft-direction variant."""

    def __init__(self, model: str, variant: str, mu: float, rank_tol: float = 1e-10):
        self.mod, self.p = _params(model)
        self.n, self.m = (int(x) for x in self.mod.sizes(self.p))
        self.variant, self.mu, self.rank_tol = variant, mu, rank_tol
        self.nfev = 0

    def _factor(self, J):
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > self.rank_tol * s[0]))
        s = s[:r]
        if self.variant == "tikhonov":
            f = s / (s**2 + (self.mu * s[0]) ** 2)
            return U[:, :r], s, Vt.T[:, :r], Vt.T[:, r:], f, f, np.zeros(r, bool)
        W = 1.0 if self.variant == "plain" else _step(s[-1] / (self.mu * s[0]))
        soft = (s < 10 * self.mu * s[0]) & (W < 1.0)
        w = np.where(soft, W, 1.0)
        return U[:, :r], s, Vt.T[:, :r], Vt.T[:, r:], w / s, 1.0 / s if W == 1.0 else w / s, soft

    def _tangent(self, M, Q, b, V2):
        y = np.linalg.solve(V2.T @ M @ V2, V2.T @ (Q - M @ b))
        return b + V2 @ y

    def rhs(self, t, q, v):
        """Corrected velocity and acceleration at the raw state (q, v)."""
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
            W = fq[soft][0] * s[soft][0]
            b = V1[:, ~soft] @ ((U[:, ~soft].T @ g) / s[~soft])
            tang = np.hstack([V1[:, soft], V2]) if self.variant == "free" else V2
            a = W * a + (1.0 - W) * self._tangent(M, Q, b, tang)
        return qc, vc, a

    def f(self, t, y):
        self.nfev += 1
        if self.nfev > 200_000:
            raise RuntimeError(f"right-hand side budget exhausted at t = {t!r}")
        n = self.n
        _, vc, a = self.rhs(t, y[:n], y[n:])
        return np.concatenate([vc, a])


def run(args) -> None:
    pr = Probe(args.model, args.variant, args.mu)
    q0, v0 = pr.mod.initial_state(pr.p)
    t_out = np.linspace(0.0, args.t_end, 21)
    try:
        sol = solve_ivp(pr.f, (0.0, args.t_end), np.concatenate([q0, v0]), method=args.method,
                        rtol=args.rtol, atol=1e-2 * args.rtol, t_eval=t_out)
    except RuntimeError as exc:
        print(f"{args.model} {args.variant} mu={args.mu:g} rtol={args.rtol:g}: {exc}")
        return
    n = pr.n
    qc = np.array([pr.rhs(tk, sol.y[:n, k], sol.y[n:, k])[0] for k, tk in enumerate(sol.t)])
    q_ex, _ = pr.mod.exact_reference(pr.p, sol.t)
    print(f"{args.model} {args.method} {args.variant} mu={args.mu:g} rtol={args.rtol:g}: "
          f"t={sol.t[-1]:g} rhs={sol.nfev} error={np.abs(qc - q_ex).max():.2e}")


def noise(args) -> None:
    pr = Probe(args.model, args.variant, args.mu)
    mod, p, n, m = pr.mod, pr.p, pr.n, pr.m

    def s_soft(t):
        q, _ = mod.exact_reference(p, np.array([t]))
        J = np.zeros((m, n))
        mod.phi_q(q[0], t, p, J)
        return np.linalg.svd(J, compute_uv=False)[n - 2]

    tt = np.linspace(0.70, 0.73, 301)
    i = int(np.argmin([s_soft(t) for t in tt]))
    ts = minimize_scalar(s_soft, bracket=(tt[i - 1], tt[i], tt[i + 1])).x
    print(f"{args.model} {args.variant}: singular time {ts:.6f} s")
    for dt in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7):
        t = ts - dt
        q, v = mod.exact_reference(p, np.array([t]))
        h = 1e-6 * max(dt, 1e-4)
        _, vp = mod.exact_reference(p, np.array([t + h, t - h]))
        a_ex = (vp[0] - vp[1]) / (2 * h)
        ev = ea = 0.0
        rng = np.random.default_rng(0)
        for _ in range(10):
            dq, dv = 1e-13 * rng.standard_normal((2, n))
            _, vc, a = pr.rhs(t, q[0] + dq, v[0] + dv)
            ev = max(ev, np.abs(vc - v[0]).max())
            ea = max(ea, np.abs(a - a_ex).max())
        print(f"  t_s - {dt:.0e}: s_min {s_soft(t):.2e}  |v_c - v| {ev:.2e}  "
              f"|a - a_exact| {ea:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("run", "noise"))
    ap.add_argument("--model", default="parallelogram", choices=("parallelogram", "nfourbar"))
    ap.add_argument("--variant", default="plain", choices=("plain", "tikhonov", "free", "zero"))
    ap.add_argument("--mu", type=float, default=1e-2)
    ap.add_argument("--rtol", type=float, default=1e-12)
    ap.add_argument("--method", default="DOP853", choices=("DOP853", "RK45"))
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args()
    (run if args.what == "run" else noise)(args)


if __name__ == "__main__":
    main()
