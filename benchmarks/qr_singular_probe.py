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

    def __init__(self, model: str, variant: str, mu: float, rank_tol: float = 1e-10,
                 h_fd: float = 1e-3, h_j: float = 1e-3, vtan: bool = False):
        self.mod, self.p = _params(model)
        self.n, self.m = (int(x) for x in self.mod.sizes(self.p))
        self.variant, self.mu, self.rank_tol = variant, mu, rank_tol
        self.h_fd = h_fd
        self.h_j = h_j
        self.n_shift = 0
        self.vtan = vtan
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
        self._W = W
        w = np.where(soft, W, 1.0)
        fq = 1.0 / s if self.variant == "e3k" else w / s
        return U[:, :r], s, Vt.T[:, :r], Vt.T[:, r:], fq, 1.0 / s if W == 1.0 else w / s, soft

    def _tangent(self, M, Q, b, V2):
        y = np.linalg.solve(V2.T @ M @ V2, V2.T @ (Q - M @ b))
        return b + V2 @ y

    def _gn(self, t, q, k):
        """Gauss-Newton position correction; the last k non-zero singular directions are
        left out (k = 0: the full correction)."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        qc, ph, J = q.copy(), np.zeros(m), np.zeros((m, n))
        d_prev = np.inf
        for _ in range(10):
            mod.phi(qc, t, p, ph)
            mod.phi_q(qc, t, p, J)
            U, s, Vt = np.linalg.svd(J)
            r = int(np.sum(s > self.rank_tol * s[0])) - k
            dq = Vt[:r].T @ ((U[:, :r].T @ ph) / s[:r])
            d = np.linalg.norm(dq)
            if d <= 1e-14 or d > 0.5 * d_prev:
                break
            qc -= dq
            d_prev = d
        return qc

    def _window(self, s):
        """Window weight W (1 outside) and the number k of soft directions."""
        if self.variant == "plain":
            return 1.0, 0
        W = _step(s[-1] / (self.mu * s[0]))
        return W, (int(np.sum(s < 10 * self.mu * s[0])) if W < 1.0 else 0)

    def rhs_e3(self, t, q, v, jcorr=None, k_force=None):
        """The e3 variants: inside the window q_c = q_h + W (q_f - q_h) (q_h: Gauss-Newton
        without the soft directions, q_f: the full one; each a continuous function of q),
        v_c with the soft part of its correction scaled by W, a = W a_E2 + (1 - W) a_E3.
        ``jcorr`` (e3j): a_E3 <- a_E3 - B (I + B')^{-1} a_E3' (the O(sigma) bias of E3,
        a_E3 - a = B j, removed with a_E3' and B' from central differences along the flow)."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        J = np.zeros((m, n))
        mod.phi_q(q, t, p, J)
        s0 = np.linalg.svd(J, compute_uv=False)
        r0 = int(np.sum(s0 > self.rank_tol * s0[0]))
        W, k = self._window(s0[:r0])
        if k_force is not None:
            k = k_force
        qc = self._gn(t, q, 0)
        if k:
            qh = self._gn(t, q, k)
            qc = qh + W * (qc - qh)
        mod.phi_q(qc, t, p, J)
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > self.rank_tol * s[0]))
        U, s, V1, V2 = U[:, :r], s[:r], Vt[:r].T, Vt[r:].T
        fq = 1.0 / s
        fq[r - k:] *= W
        pt = np.zeros(m)
        mod.phi_t(qc, t, p, pt)
        vc = v - V1 @ (fq * (U.T @ (J @ v + pt)))
        g, M, Q = np.zeros(m), np.zeros((n, n)), np.zeros(n)
        mod.gamma(qc, vc, t, p, g)
        mod.mass(qc, p, M)
        mod.forces(qc, vc, t, p, Q)
        a = self._tangent(M, Q, V1 @ ((U.T @ g) / s), V2)
        if not k:
            return qc, vc, a, None, None
        hard = slice(0, r - k)
        b = V1[:, hard] @ ((U[:, hard].T @ g) / s[hard])
        if self.vtan:
            ae3, B = self._e3v_accel(t, qc, vc, M, Q, b, np.hstack([V1[:, r - k:], V2]),
                                     U[:, r - k:], J)
        else:
            ae3, B = self._e3_accel(t, qc, vc, M, Q, b, V1[:, r - k:], V2, U[:, r - k:],
                                    s[r - k:])
        if jcorr is not None:
            ae3 = self._jcorr(t, qc, vc, ae3, B, k, jcorr, self.variant == "e3j2")
        return qc, vc, W * a + (1.0 - W) * ae3, B, ae3

    def _shifted(self, t, qc, vc, a, j, h, k):
        """Pure E3 (a_E3, B) at the states t +- h along the flow (Taylor to h^3 j)."""
        out = []
        for sg in (1.0, -1.0):
            qs = qc + sg * h * vc + 0.5 * h * h * a + sg * h**3 / 6.0 * j
            vs = vc + sg * h * a + 0.5 * h * h * j
            out.append(self.rhs_e3(t + sg * h, qs, vs, None, k)[3:])
        return out

    def _jcorr(self, t, qc, vc, ae3, B, k, h, second):
        """Remove the bias a_E3 - a = B j (j = a'): first order a = a_E3 - B (I + B')^{-1}
        a_E3'; ``second``: also the O(sigma^2) term from a'' = (I + 2B')^{-1}
        (a_E3'' - B'' a'), a' = (I + B')^{-1} (a_E3' - B a'') (a second pass of shifted
        states with the jerk in the Taylor shift)."""
        n = self.n
        I = np.eye(n)
        (Bp, ap), (Bm, am) = self._shifted(t, qc, vc, ae3, np.zeros(n), h, k)
        self.n_shift += 2
        j1 = np.linalg.solve(I + (Bp - Bm) / (2 * h), (ap - am) / (2 * h))
        if not second:
            return ae3 - B @ j1
        a1 = ae3 - B @ j1
        (Bp, ap), (Bm, am) = self._shifted(t, qc, vc, a1, j1, h, k)
        self.n_shift += 2
        dB, dA = (Bp - Bm) / (2 * h), (ap - am) / (2 * h)
        ddB, ddA = (Bp - 2 * B + Bm) / h**2, (ap - 2 * ae3 + am) / h**2
        j1 = np.linalg.solve(I + dB, dA)
        a2 = np.linalg.solve(I + 2 * dB, ddA - ddB @ j1)
        j1 = np.linalg.solve(I + dB, dA - B @ a2)
        return ae3 - B @ j1

    def rhs(self, t, q, v):
        """Corrected velocity and acceleration at the raw state (q, v)."""
        if self.variant in ("e3", "e3j", "e3j2"):
            out = self.rhs_e3(t, q, v, self.h_j if self.variant != "e3" else None)
            return out[0], out[1], out[2]
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
            if self.variant == "e3k":
                alt = self._e3_accel(t, qc, vc, M, Q, b, V1[:, soft], V2, U[:, soft],
                                     s[soft])[0]
            else:
                tang = np.hstack([V1[:, soft], V2]) if self.variant == "free" else V2
                alt = self._tangent(M, Q, b, tang)
            a = W * a + (1.0 - W) * alt
        return qc, vc, a

    def _e3_terms(self, t, q, v):
        """D = d/dh Phi_q(q + h v, t + h), g_3 = d/dh gamma(q + h v, v, t + h) (4-point
        central differences, h = h_fd / |v|) and x -> gamma_v x (polarization: gamma is
        quadratic in v), the pieces of the E3 residual r_3(a) = D a - gamma_v a - g_3."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        h = self.h_fd / max(np.linalg.norm(v), 1e-300)
        J = np.zeros((m, n))
        g = np.zeros(m)
        D = np.zeros((m, n))
        g3 = np.zeros(m)
        for c, kk in ((1.0, 1), (-1.0, -1), (-1.0 / 8.0, 2), (1.0 / 8.0, -2)):
            mod.phi_q(q + kk * h * v, t + kk * h, p, J)
            mod.gamma(q + kk * h * v, v, t + kk * h, p, g)
            D += (8.0 * c / (12.0 * h)) * J
            g3 += (8.0 * c / (12.0 * h)) * g

        def gam_v(x):
            nx = np.linalg.norm(x)
            if nx == 0.0:
                return np.zeros(m)
            cc = max(np.linalg.norm(v), 1.0) / nx
            gp, gm = np.zeros(m), np.zeros(m)
            mod.gamma(q, v + cc * x, t, p, gp)
            mod.gamma(q, v - cc * x, t, p, gm)
            return (gp - gm) / (2.0 * cc)

        return D, g3, gam_v

    def _e3v_accel(self, t, q, v, M, Q, b, N, Us, J):
        """E3 with the tangent equation along the velocity: a = b + N z, N the null space
        of the hard rows (soft and tangent directions together, a subspace that is stable
        through the crossing), k soft rows U_s^T r_3(a) = 0 and (1 DOF) v^T (M a - Q) = 0
        (on the branch Phi_q v = 0, so v^T Phi_q^T lam = 0 whatever the soft multiplier).
        The split of N into soft and tangent directions by the SVD (gap sigma) is not
        used. B: a_E3 - a = B j, B = N C^{-1} [U_s^T Phi_q; 0]."""
        D, g3, gam_v = self._e3_terms(t, q, v)
        k = Us.shape[1]
        d = N.shape[1] - k
        T = (v / np.linalg.norm(v))[:, None] if d == 1 else N[:, k:]
        L = lambda x: D @ x - gam_v(x)  # noqa: E731
        C = np.zeros((k + d, k + d))
        for c in range(k + d):
            C[:k, c] = Us.T @ L(N[:, c])
        C[k:, :] = T.T @ M @ N
        rhs = np.concatenate([-Us.T @ (L(b) - g3), T.T @ (Q - M @ b)])
        z = np.linalg.solve(C, rhs)
        R = np.zeros((k + d, self.n))
        R[:k] = Us.T @ J
        return b + N @ z, N @ np.linalg.solve(C, R)

    def _e3_accel(self, t, q, v, M, Q, b, Ws, V2, Us, ss):
        """Acceleration whose soft normal components solve the soft rows of the third
        time derivative of the constraints (E3), d/dt (Phi_q a - gamma) = 0 with the term
        Phi_q j (= U_s S W_s^T j on the soft rows) dropped:
        U_s^T (D a - gamma_v a - g_3) = 0, D = d/dh Phi_q(q + h v, t + h),
        g_3 = d/dh gamma(q + h v, v, t + h) (4-point central differences), gamma_v a by
        polarization (gamma is quadratic in v). a(alpha) = tangent(b + W_s alpha) is affine
        in the soft components alpha: K alpha = -r_0. Returns a_E3 and B with
        a_E3 - a = B j (B = A_s K^{-1} S W_s^T, A_s = da/dalpha; O(sigma))."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        h = self.h_fd / max(np.linalg.norm(v), 1e-300)
        J = np.zeros((m, n))
        g = np.zeros(m)
        D = np.zeros((m, n))
        g3 = np.zeros(m)
        for c, kk in ((1.0, 1), (-1.0, -1), (-1.0 / 8.0, 2), (1.0 / 8.0, -2)):
            mod.phi_q(q + kk * h * v, t + kk * h, p, J)
            mod.gamma(q + kk * h * v, v, t + kk * h, p, g)
            D += (8.0 * c / (12.0 * h)) * J
            g3 += (8.0 * c / (12.0 * h)) * g

        def gam_v(x):
            nx = np.linalg.norm(x)
            if nx == 0.0:
                return np.zeros(m)
            cc = max(np.linalg.norm(v), 1.0) / nx
            gp, gm = np.zeros(m), np.zeros(m)
            mod.gamma(q, v + cc * x, t, p, gp)
            mod.gamma(q, v - cc * x, t, p, gm)
            return (gp - gm) / (2.0 * cc)

        a0 = self._tangent(M, Q, b, V2)
        r0 = Us.T @ (D @ a0 - gam_v(a0) - g3)
        k = Ws.shape[1]
        A = np.column_stack([self._tangent(M, Q, b + Ws[:, j], V2) - a0 for j in range(k)])
        K = np.column_stack([Us.T @ (D @ A[:, j] - gam_v(A[:, j])) for j in range(k)])
        alpha = np.linalg.solve(K, -r0)
        B = A @ np.linalg.solve(K, ss[:, None] * Ws.T)
        return self._tangent(M, Q, b + Ws @ alpha, V2), B

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


def run(args) -> None:
    pr = Probe(args.model, args.variant, args.mu, h_fd=args.h_fd, h_j=args.h_j,
               vtan=args.vtan)
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
    err = np.abs(qc - q_ex).max(axis=1)
    print(f"{args.model} {args.method} {args.variant} mu={args.mu:g} rtol={args.rtol:g}: "
          f"t={sol.t[-1]:g} rhs={sol.nfev} (+{pr.n_shift} shifted) error={err.max():.2e}"
          + ("" if sol.success else f" ({sol.message})"))
    if args.verbose:
        print("  per sample:", " ".join(f"{e:.1e}" for e in err))


def noise(args) -> None:
    pr = Probe(args.model, args.variant, args.mu, h_fd=args.h_fd, h_j=args.h_j,
               vtan=args.vtan)
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
    ap.add_argument("--variant", default="plain", choices=("plain", "tikhonov", "free", "zero", "e3", "e3k", "e3j", "e3j2"))
    ap.add_argument("--mu", type=float, default=1e-2)
    ap.add_argument("--rtol", type=float, default=1e-12)
    ap.add_argument("--method", default="DOP853", choices=("DOP853", "RK45"))
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--vtan", action="store_true")
    ap.add_argument("--perturb", type=float, default=1e-13)
    ap.add_argument("--dts", type=float, nargs="+",
                    default=[1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 0.0])
    ap.add_argument("--h-j", type=float, default=1e-3)
    ap.add_argument("--h-fd", type=float, default=1e-3)
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args()
    (run if args.what == "run" else noise)(args)


if __name__ == "__main__":
    main()
