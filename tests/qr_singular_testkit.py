"""NumPy references of the qr right-hand side near singular positions (a test kit: the
tests of qr's E3 window and benchmarks/qr_singular_probe.py use it).

:class:`E3Window`: the qr right-hand side with an E3 window at singular positions;
:class:`Probe`: the whole qr right-hand side with a soft-direction variant, and
:func:`crossing`, :func:`exact_accel`, :func:`singular_time` over it.

The E3 window:

A dense-SVD NumPy copy of the qr right-hand side (docs/explanation/methods.md#qr, steps 1-4) that
crosses the singular positions of ``parallelogram`` and ``nfourbar`` at rtol down to
1e-12 (docs/explanation/methods.md#qr-through-singular-positions). The reference of the kernel's
window (solvers/formulations/_qr_singular.py, qr's ``sing_mu``), and what
benchmarks/qr_singular_probe.py runs as ``--variant e3``, ``e3j``, ``e3j2``.

Let Phi_q = U S V^T (SVD), s_max its largest and s_min its smallest non-zero singular
value. Outside the window (s_min >= 2 mu s_max) the right-hand side is qr's (bit for bit
the probe's ``plain``). Inside, the k singular directions with s_i < 10 mu s_max are
*soft* (U_s, W_s), the others *hard*, and W = step(s_min / (mu s_max)) is a C-infinity
step in log s_min (1 at 2 mu, 0 at mu / 2):

1. Position: q_c = q_h + W (q_f - q_h), q_f the full Gauss-Newton projection, q_h the one
   that leaves the soft directions out (each a continuous function of q; scaling the step
   instead would make the iteration count, hence q_c, jump). W and k are judged at the
   raw state q: at q_f, within ~1e-6 s of t_s, the step eps / s_min along the soft
   direction makes the parallelogram's redundant singular value exceed rank_tol s_max
   (6e-10 measured at t_s), which would count it as soft. Conversely a raw drift above
   ~rank_tol makes it count at q (the window then opens with a redundant soft row).
2. Velocity: the residual-form correction with its soft part scaled by W.
3. Acceleration a = W a_E2 + (1 - W) a_E3. a_E2 is qr's (the soft rows of the
   index-1 equation Phi_q a = gamma, E2, divide round-off by s_i: noise ~ eps / s^3).
   a_E3 = b_h + N z, with b_h the minimum-norm solution of the hard rows of E2 and N the
   null space of the hard rows (soft and tangent directions together: separated from the
   hard ones by a gap of order 1, so stable through the crossing), solves
     - the soft rows of the third time derivative of the constraints (E3),
       d/dt (Phi_q a - gamma) = Phi_q j + r_3(a) = 0, r_3(a) = D a - gamma_v a - g_3,
       D = d/dh Phi_q(q + h v, t + h), g_3 = d/dh gamma(q + h v, v, t + h); with the term
       U_s^T Phi_q j = S_s W_s^T j dropped: U_s^T r_3(a) = 0 (well conditioned at the
       crossing, where it is exact: the L'Hopital limit of E2);
     - the tangent equation along the velocity, v^T (M a - Q) = 0 (1 DOF): on the branch
       Phi_q v = 0, so v^T Phi_q^T lam = 0 whatever the (unbounded) soft multiplier. The
       SVD's split of N into W_s and the tangent V_2 has a gap s_min: off the branch by
       delta it turns by delta / s_min, and V_2^T (M a - Q) = 0 then carries an error
       ~ delta / s_min (measured: 3e-8 m/s^2 at 1e-7 s from t_s, 7.6e-7 at t_s).
4. Bias of E3 (``order`` 1, 2): dropping S_s W_s^T j makes a_E3 - a = B j, j = a',
   B = N C^{-1} [U_s^T Phi_q; 0] = O(s_min) (C the matrix of step 3). Differentiating
   a = a_E3 - B a' along the trajectory: a' = (I + B')^{-1} (a_E3' - B a''),
   a'' = (I + 2 B')^{-1} (a_E3'' - B'' a') + O(s); order 1 keeps a' = (I + B')^{-1}
   a_E3' (error O(s^2)), order 2 the a'' term (error O(s^3)). a_E3', a_E3'', B', B''
   are central differences of a_E3 and B at the states t +- h_j along the flow (two
   pairs: the second Taylor shift carries the jerk of the first, so that the even
   terms of the shifted velocities do not spoil the second differences).

D and g_3 are 4-point central differences (h = h_fd / |v|; error ~ h^4 + eps / h);
gamma_v x is exact by polarization (gamma is quadratic in v: (gamma(v + c x) -
gamma(v - c x)) / 2c). For scleronomic constraints (gamma = -Phi_qq(v, v)) the E3 soft
rows read 3 u^T Phi_qq(v, a) + u^T Phi_qqq(v, v, v) = 0.

References: the E2/E3 relations are the time derivatives of the constraints of the
index-1 formulation (Hairer & Wanner, *Solving ODEs II*, 2nd ed., 1996, Sect. VII.1,
index reduction); singular (bifurcation) positions: Wojtyra (2005), Multibody Syst. Dyn.
14:23-46; docs/explanation/methods.md#qr.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers import model_entry
from mbstudy.solvers.spec import pack_params
from scipy.integrate import solve_ivp
from scipy.optimize import minimize_scalar


def step(x: float) -> float:
    """C-infinity step in log2(x): 0 for x <= 1/2, 1 for x >= 2."""
    u = (np.log2(x) + 1.0) / 2.0
    if u <= 0.0:
        return 0.0
    if u >= 1.0:
        return 1.0
    a, b = np.exp(-1.0 / u), np.exp(-1.0 / (1.0 - u))
    return a / (a + b)


class E3Window:
    """qr's right-hand side with the E3 window of one model (module ``mod``, params ``p``).

    ``order``: 0 (a_E3 as is, bias O(s)), 1 or 2 (bias removed to O(s^2), O(s^3));
    ``vtan``: tangent equation along v (True) or along the SVD's V_2 (False, noisy near t_s).
    """

    def __init__(self, mod, p: np.ndarray, mu: float = 3e-3, order: int = 2,
                 h_fd: float = 1e-3, h_j: float = 1e-4, vtan: bool = True,
                 rank_tol: float = 1e-10) -> None:
        self.mod, self.p = mod, p
        self.n, self.m = (int(x) for x in mod.sizes(p))
        self.mu, self.order, self.h_fd, self.h_j, self.vtan = mu, order, h_fd, h_j, vtan
        self.rank_tol = rank_tol
        self.n_shift = 0  # E3 evaluations at shifted states (the bias correction's cost)

    # --- pieces ----------------------------------------------------------------------

    def svd(self, q: np.ndarray, t: float):
        """Phi_q and its SVD truncated to the numerical rank: J, U, s, V1, V2."""
        J = np.zeros((self.m, self.n))
        self.mod.phi_q(q, t, self.p, J)
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > self.rank_tol * s[0]))
        return J, U[:, :r], s[:r], Vt[:r].T, Vt[r:].T

    def window(self, s: np.ndarray) -> tuple[float, int]:
        """Window weight W (1 outside) and the number k of soft directions (0 outside)."""
        W = step(s[-1] / (self.mu * s[0]))
        return W, (int(np.sum(s < 10 * self.mu * s[0])) if W < 1.0 else 0)

    def gauss_newton(self, q: np.ndarray, t: float, k: int) -> np.ndarray:
        """qr's position correction (stop on the step, docs/explanation/methods.md#qr step 2); the
        last k non-zero singular directions are left out (k = 0: the full projection)."""
        qc, ph = q.copy(), np.zeros(self.m)
        d_prev = np.inf
        for _ in range(10):
            self.mod.phi(qc, t, self.p, ph)
            _, U, s, V1, _ = self.svd(qc, t)
            r = s.size - k
            dq = V1[:, :r] @ ((U[:, :r].T @ ph) / s[:r])
            d = np.linalg.norm(dq)
            if d <= 1e-14 or d > 0.5 * d_prev:
                break
            qc -= dq
            d_prev = d
        return qc

    def e3_terms(self, q: np.ndarray, v: np.ndarray, t: float):
        """D = d/dh Phi_q(q + h v, t + h), g_3 = d/dh gamma(q + h v, v, t + h) (4-point
        central differences, h = h_fd / |v|) and the map x -> gamma_v(q, v) x
        (polarization); r_3(a) = D a - gamma_v a - g_3 (module docstring, step 3)."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        h = self.h_fd / max(np.linalg.norm(v), 1e-300)
        J, g = np.zeros((m, n)), np.zeros(m)
        D, g3 = np.zeros((m, n)), np.zeros(m)
        for c, i in ((8.0, 1), (-8.0, -1), (-1.0, 2), (1.0, -2)):
            mod.phi_q(q + i * h * v, t + i * h, p, J)
            mod.gamma(q + i * h * v, v, t + i * h, p, g)
            D += (c / (12.0 * h)) * J
            g3 += (c / (12.0 * h)) * g

        def gamma_v(x: np.ndarray) -> np.ndarray:
            nx = np.linalg.norm(x)
            if nx == 0.0:
                return np.zeros(m)
            cc = max(np.linalg.norm(v), 1.0) / nx
            gp, gm = np.zeros(m), np.zeros(m)
            mod.gamma(q, v + cc * x, t, p, gp)
            mod.gamma(q, v - cc * x, t, p, gm)
            return (gp - gm) / (2.0 * cc)

        return D, g3, gamma_v

    def e3_accel(self, q, v, t, M, Q, b, N, Us, J, V2):
        """a_E3 and B (module docstring, steps 3-4): a = b + N z with k soft rows
        U_s^T r_3(a) = 0 and d tangent rows T^T (M a - Q) = 0, T = v / |v| (vtan, d = 1)
        or V_2; a_E3 - a = B j, B = N C^{-1} [U_s^T Phi_q; 0]."""
        D, g3, gamma_v = self.e3_terms(q, v, t)
        k = Us.shape[1]
        d = N.shape[1] - k
        T = (v / np.linalg.norm(v))[:, None] if (self.vtan and d == 1) else V2
        C = np.zeros((k + d, k + d))
        for c in range(k + d):
            C[:k, c] = Us.T @ (D @ N[:, c] - gamma_v(N[:, c]))
        C[k:] = T.T @ M @ N
        rhs = np.concatenate([-Us.T @ (D @ b - gamma_v(b) - g3), T.T @ (Q - M @ b)])
        R = np.zeros((k + d, self.n))
        R[:k] = Us.T @ J
        return b + N @ np.linalg.solve(C, rhs), N @ np.linalg.solve(C, R)

    # --- the right-hand side ---------------------------------------------------------

    def evaluate(self, t: float, q: np.ndarray, v: np.ndarray, k_force: int | None = None,
                 order: int | None = None):
        """(q_c, v_c, a, W, a_E3, B) at the raw state (q, v); a_E3, B None outside the
        window. ``k_force``: evaluate E3 with k soft directions wherever the state is
        (the shifted states of the bias correction); ``order``: overrides self.order."""
        mod, p, n, m = self.mod, self.p, self.n, self.m
        order = self.order if order is None else order
        _, _, s, _, _ = self.svd(q, t)
        W, k = self.window(s)
        if k_force is not None:
            k = k_force
        qc = self.gauss_newton(q, t, 0)
        if k:
            qh = self.gauss_newton(q, t, k)
            qc = qh + W * (qc - qh)
        J, U, s, V1, V2 = self.svd(qc, t)
        r = s.size
        f = 1.0 / s
        f[r - k:] *= W
        pt = np.zeros(m)
        mod.phi_t(qc, t, p, pt)
        vc = v - V1 @ (f * (U.T @ (J @ v + pt)))
        g, M, Q = np.zeros(m), np.zeros((n, n)), np.zeros(n)
        mod.gamma(qc, vc, t, p, g)
        mod.mass(qc, p, M)
        mod.forces(qc, vc, t, p, Q)
        b = V1 @ ((U.T @ g) / s)
        y = np.linalg.solve(V2.T @ M @ V2, V2.T @ (Q - M @ b))
        a = b + V2 @ y  # qr's tangent-space acceleration (E2)
        if not k:
            return qc, vc, a, W, None, None
        hard = slice(0, r - k)
        bh = V1[:, hard] @ ((U[:, hard].T @ g) / s[hard])
        N = np.hstack([V1[:, r - k:], V2])
        ae3, B = self.e3_accel(qc, vc, t, M, Q, bh, N, U[:, r - k:], J, V2)
        if order:
            ae3 = self._unbias(t, qc, vc, ae3, B, k, order)
        return qc, vc, W * a + (1.0 - W) * ae3, W, ae3, B

    def _shifted(self, t, qc, vc, a, j, k):
        """Uncorrected a_E3 and B at t +- h_j along the flow (Taylor to h^3 j)."""
        h = self.h_j
        out = []
        for sg in (1.0, -1.0):
            qs = qc + sg * h * vc + 0.5 * h * h * a + sg * h**3 / 6.0 * j
            vs = vc + sg * h * a + 0.5 * h * h * j
            res = self.evaluate(t + sg * h, qs, vs, k_force=k, order=0)
            out.append((res[4], res[5]))
        self.n_shift += 2
        return out

    def _unbias(self, t, qc, vc, ae3, B, k, order):
        """a = a_E3 - B a' with a' to first (order 1) or second (order 2) order in s."""
        eye = np.eye(self.n)
        h = self.h_j
        (ap, Bp), (am, Bm) = self._shifted(t, qc, vc, ae3, np.zeros(self.n), k)
        j1 = np.linalg.solve(eye + (Bp - Bm) / (2 * h), (ap - am) / (2 * h))
        if order == 1:
            return ae3 - B @ j1
        (ap, Bp), (am, Bm) = self._shifted(t, qc, vc, ae3 - B @ j1, j1, k)
        dB, da = (Bp - Bm) / (2 * h), (ap - am) / (2 * h)
        ddB, dda = (Bp - 2 * B + Bm) / h**2, (ap - 2 * ae3 + am) / h**2
        j1 = np.linalg.solve(eye + dB, da)
        a2 = np.linalg.solve(eye + 2 * dB, dda - ddB @ j1)
        j1 = np.linalg.solve(eye + dB, da - B @ a2)
        return ae3 - B @ j1

    def rhs(self, t: float, q: np.ndarray, v: np.ndarray):
        """Corrected state and acceleration (q_c, v_c, a) at the raw state (q, v)."""
        qc, vc, a, *_ = self.evaluate(t, q, v)
        return qc, vc, a


def _params(model: str):
    spec = model_entry.model(model)
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
    om = v[2] (crank 0), th'' = -k cos th (docs/explanation/models.md), a = f'(th) th'' + f''(th)
    om^2 with f' from ``branch_state(th, 1)`` and f'' by a 4-point difference in th."""
    spec = model_entry.model(model)
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
