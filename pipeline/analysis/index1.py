"""A model's equations evaluated with NumPy alone, independent of every kernel.

The conformance matrix and ``mbstudy certify`` judge a kernel's stored numbers against
quantities recomputed here from the stored states, with the model's functions run as plain
Python (:func:`mbstudy.pipeline.plan.purepy.pure_model`) and the linear algebra done by
NumPy, so that no formulation or integrator template is involved:

- the constraint levels Phi(q, t) and Phi_q v + Phi_t (docs/explanation/solver-contract.md);
- the index-1 system of the sign convention M a + Phi_q^T lam = Q, Phi_q a = gamma
  (Hairer & Wanner, *Solving ODEs II*, sect. VII.1, eq. (1.13)), solved as the augmented
  matrix [M Phi_q^T; Phi_q 0] by least squares so that redundant constraints get the
  minimum-norm multipliers;
- an independent reference trajectory: the index-1 ODE y' = (v, a(q, v, t), power)
  integrated by SciPy's DOP853 (Hairer, Norsett & Wanner, *Solving ODEs I*, sect. II.10)
  at a tight tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class ModelEquations:
    """The model ``name`` at parameter vector ``p``, its functions as plain Python."""

    name: str
    p: np.ndarray
    mod: Any
    n: int
    m: int

    def phi(self, q: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros(self.m)
        self.mod.phi(q, t, self.p, out)
        return out

    def phi_q(self, q: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros((self.m, self.n))
        self.mod.phi_q(q, t, self.p, out)
        return out

    def phi_t(self, q: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros(self.m)
        self.mod.phi_t(q, t, self.p, out)
        return out

    def gamma(self, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros(self.m)
        self.mod.gamma(q, v, t, self.p, out)
        return out

    def mass(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros((self.n, self.n))
        self.mod.mass(q, self.p, out)
        return out

    def forces(self, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros(self.n)
        self.mod.forces(q, v, t, self.p, out)
        return out

    def energy(self, q: np.ndarray, v: np.ndarray, t: float) -> float:
        return float(self.mod.energy(q, v, t, self.p))

    def power(self, q: np.ndarray, v: np.ndarray, t: float) -> float:
        return float(self.mod.power(q, v, t, self.p))

    def dphi(self, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
        """Phi_q v + Phi_t, the velocity constraint residual."""
        if self.m == 0:
            return np.zeros(0)
        return self.phi_q(q, t) @ v + self.phi_t(q, t)

    def accel(self, q: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(a, lam) of the index-1 system [M Phi_q^T; Phi_q 0] [a; lam] = [Q; gamma]
        (minimum-norm least squares: redundant constraints have no unique lam)."""
        n, m = self.n, self.m
        M = self.mass(q)
        Q = self.forces(q, v, t)
        if m == 0:
            return np.linalg.solve(M, Q), np.zeros(0)
        G = self.phi_q(q, t)
        K = np.zeros((n + m, n + m))
        K[:n, :n] = M
        K[:n, n:] = G.T
        K[n:, :n] = G
        rhs = np.concatenate([Q, self.gamma(q, v, t)])
        x = np.linalg.lstsq(K, rhs, rcond=1e-13)[0]
        return x[:n], x[n:]


def equations(name: str, model_params: dict | None = None) -> ModelEquations:
    """The :class:`ModelEquations` of registry model ``name`` with ``model_params``."""
    from mbstudy.pipeline.plan.purepy import pure_model
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import pack_params

    entry = solvers.model(name)
    p = pack_params(entry.params, dict(model_params or {}))
    mod = pure_model(entry.module)
    n, m = (int(x) for x in mod.sizes(p))
    return ModelEquations(name, p, mod, n, m)


def norms_along(eq: ModelEquations, t: np.ndarray, q: np.ndarray, v: np.ndarray
                ) -> dict[str, np.ndarray]:  # fmt: skip
    """|Phi|_2, |Phi_q v + Phi_t|_2 and E at every row of a stored (t, q, v) series."""
    K = t.size
    out = {"phi": np.empty(K), "dphi": np.empty(K), "energy": np.empty(K)}
    for k in range(K):
        out["phi"][k] = np.linalg.norm(eq.phi(q[k], t[k])) if eq.m else 0.0
        out["dphi"][k] = np.linalg.norm(eq.dphi(q[k], v[k], t[k])) if eq.m else 0.0
        out["energy"][k] = eq.energy(q[k], v[k], t[k])
    return out


def reaction_forces(eq: ModelEquations, t: np.ndarray, q: np.ndarray, v: np.ndarray
                    ) -> np.ndarray:  # fmt: skip
    """Phi_q^T lam of the index-1 solve at every row: the generalized constraint forces,
    unique even where lam is not (redundant constraints)."""
    out = np.empty((t.size, eq.n))
    for k in range(t.size):
        _, lam = eq.accel(q[k], v[k], t[k])
        out[k] = eq.phi_q(q[k], t[k]).T @ lam if eq.m else 0.0
    return out


def input_gain(eq: ModelEquations, t: np.ndarray, q: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(||Phi_q||_2 ||K^+||_2, cond(K)) at every row, K = [M Phi_q^T; Phi_q 0]: the first
    bounds how far the constraint forces Phi_q^T lam move when the acceleration constraint
    is shifted by an input u (Phi_q a = gamma + u), per unit |u|; the second how much
    round-off a solve with K may amplify (on its nonzero singular values)."""
    out = np.zeros(t.size)
    cond = np.ones(t.size)
    if eq.m == 0:
        return out, cond
    n = eq.n
    for k in range(t.size):
        G = eq.phi_q(q[k], t[k])
        K = np.zeros((n + eq.m, n + eq.m))
        K[:n, :n] = eq.mass(q[k])
        K[:n, n:] = G.T
        K[n:, :n] = G
        s = np.linalg.svd(K, compute_uv=False)
        s_min = s[s > 1e-13 * s[0]][-1]
        out[k] = np.linalg.norm(G, 2) / s_min
        cond[k] = s[0] / s_min
    return out, cond


def stored_reaction_forces(eq: ModelEquations, t: np.ndarray, q: np.ndarray,
                           lam: np.ndarray) -> np.ndarray:  # fmt: skip
    """Phi_q^T lam of stored multipliers at every row."""
    out = np.empty((t.size, eq.n))
    for k in range(t.size):
        out[k] = eq.phi_q(q[k], t[k]).T @ lam[k] if eq.m else 0.0
    return out


def reference_trajectory(eq: ModelEquations, t_out: np.ndarray, q0: np.ndarray,
                         v0: np.ndarray, rtol: float = 1e-12, atol: float = 1e-14
                         ) -> tuple[np.ndarray, np.ndarray, bool]:  # fmt: skip
    """(q, v, success) at ``t_out`` of the index-1 ODE integrated by SciPy's DOP853.

    No stabilization: over the short intervals it is used on, the drift of Phi is of the
    order of the tolerance (the ODE keeps Phi'' = 0 exactly)."""
    from scipy.integrate import solve_ivp  # lazy: scipy.integrate costs ~1 s per process

    n = eq.n

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        a, _ = eq.accel(y[:n], y[n:], t)
        return np.concatenate([y[n:], a])

    sol = solve_ivp(rhs, (float(t_out[0]), float(t_out[-1])), np.concatenate([q0, v0]),
                    method="DOP853", t_eval=t_out, rtol=rtol, atol=atol)  # fmt: skip
    if not sol.success or sol.y.shape[1] != t_out.size:
        nan = np.full((t_out.size, n), np.nan)
        return nan, nan.copy(), False
    Y = sol.y.T
    return Y[:, :n], Y[:, n:], True
