"""Independent references for the implicit DAE integrators' tests: scipy's solvers on the
index-1 form M a + Phi_q^T lam = Q, Phi_q a = gamma, written here with NumPy from the
model's own functions (no mbstudy kernel involved)."""

from __future__ import annotations

import numpy as np
from mbstudy.solvers import model_entry
from mbstudy.solvers.spec import pack_params
from scipy.integrate import solve_ivp

# IVP Test Set, andrews.f SOLN: q(0.03) computed with PSIDE at rtol = atol = 1e-14
ANDREWS_Q_003 = np.array([
    0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
    -0.5347301163226948, 0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1,
])  # fmt: skip


def model_params(model: str) -> np.ndarray:
    return pack_params(model_entry.model(model).params, {})


def index1(model: str, p: np.ndarray, q: np.ndarray, v: np.ndarray, t: float):
    """(a, lam) of the index-1 system by NumPy's dense solve."""
    mod = model_entry.model(model).module
    n, m = (int(x) for x in mod.sizes(p))
    M = np.zeros((n, n))
    Q = np.zeros(n)
    G = np.zeros((m, n))
    g = np.zeros(m)
    mod.mass(q, p, M)
    mod.forces(q, v, t, p, Q)
    mod.phi_q(q, t, p, G)
    mod.gamma(q, v, t, p, g)
    K = np.block([[M, G.T], [G, np.zeros((m, m))]])
    x = np.linalg.solve(K, np.concatenate([Q, g]))
    return x[:n], x[n:]


def reference(model: str, t_out: np.ndarray, method: str = "DOP853", rtol: float = 1e-13,
              atol: float = 1e-13):
    """q, v, lam (K rows) of the index-1 form integrated by scipy's ``method``; also the
    solver's nfev and njev."""
    mod = model_entry.model(model).module
    p = model_params(model)
    n, _ = (int(x) for x in mod.sizes(p))
    q0, v0 = mod.initial_state(p)

    def rhs(t, y):
        a, _ = index1(model, p, y[:n], y[n:], t)
        return np.concatenate([y[n:], a])

    sol = solve_ivp(rhs, (t_out[0], t_out[-1]), np.concatenate([q0, v0]), method=method,
                    t_eval=t_out, rtol=rtol, atol=atol)  # fmt: skip
    assert sol.success, sol.message
    Y = sol.y.T
    lam = np.array([index1(model, p, y[:n], y[n:], t)[1] for t, y in zip(t_out, Y, strict=True)])
    return Y[:, :n], Y[:, n:], lam, sol.nfev, getattr(sol, "njev", 0)


def slope(h: np.ndarray, err: np.ndarray) -> float:
    """Least-squares slope of log(err) against log(h)."""
    return float(np.polyfit(np.log(h), np.log(err), 1)[0])
