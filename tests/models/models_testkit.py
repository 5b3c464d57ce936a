"""Checks shared by the model tests: finite differences and a plain-NumPy reference.

Nothing here uses the formulations or integrators of ``solvers``: the index-1 form
(docs/explanation/methods.md (0.1) with u = 0)

    [M  phi_q^T] [a  ]   [Q    ]
    [phi_q    0] [lam] = [gamma]

is solved with NumPy (``solve``, or ``lstsq`` for redundant constraints) and integrated
with scipy's DOP853, so that a model is checked against an implementation that shares
only the model functions themselves. The state is y = [q, v, W] with dW/dt = power.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
from mbstudy.solvers.spec import pack_params
from scipy.integrate import solve_ivp


def params(mod: ModuleType, **values: object) -> np.ndarray:
    """Return the model's parameter vector (defaults, overridden by ``values``)."""
    return pack_params(mod.SPEC.params, values)


def dims(mod: ModuleType, p: np.ndarray) -> tuple[int, int]:
    """Return (n, m) of the model for ``p``."""
    n, m = mod.sizes(p)
    return int(n), int(m)


def phi(mod: ModuleType, q: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Return Phi(q, t)."""
    _, m = dims(mod, p)
    out = np.full(m, np.nan)
    mod.phi(q, t, p, out)
    return out


def phi_q(mod: ModuleType, q: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Return Phi_q(q, t), (m, n); NaN-prefilled so unfilled entries show up."""
    n, m = dims(mod, p)
    out = np.full((m, n), np.nan)
    mod.phi_q(q, t, p, out)
    return out


def phi_t(mod: ModuleType, q: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Return Phi_t(q, t)."""
    _, m = dims(mod, p)
    out = np.full(m, np.nan)
    mod.phi_t(q, t, p, out)
    return out


def gamma(mod: ModuleType, q: np.ndarray, v: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Return gamma(q, v, t)."""
    _, m = dims(mod, p)
    out = np.full(m, np.nan)
    mod.gamma(q, v, t, p, out)
    return out


def mass(mod: ModuleType, q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Return M(q), (n, n)."""
    n, _ = dims(mod, p)
    out = np.full((n, n), np.nan)
    mod.mass(q, p, out)
    return out


def forces(mod: ModuleType, q: np.ndarray, v: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Return Q(q, v, t)."""
    n, _ = dims(mod, p)
    out = np.full(n, np.nan)
    mod.forces(q, v, t, p, out)
    return out


def jacobian_fd_error(mod: ModuleType, p: np.ndarray, q: np.ndarray, t: float = 0.0) -> float:
    """Return |Phi_q - central FD of Phi|_F / |Phi_q|_F at q (step 1e-6 per coordinate)."""
    n, m = dims(mod, p)
    G = phi_q(mod, q, t, p)
    assert np.all(np.isfinite(G)), "phi_q left entries unfilled"
    fd = np.empty((m, n))
    h = 1e-6
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        fd[:, k] = (phi(mod, q + e, t, p) - phi(mod, q - e, t, p)) / (2 * h)
    return float(np.linalg.norm(G - fd) / np.linalg.norm(G))


def gamma_fd_error(
    mod: ModuleType, p: np.ndarray, q: np.ndarray, v: np.ndarray, a: np.ndarray, h: float = 1e-3
) -> float:
    """Return the relative error of gamma against d^2/dt^2 Phi along q(t) = q + v t + a t^2/2.

    For any a, d^2 Phi/dt^2 at t = 0 equals phi_q a - gamma(q, v) (scleronomic models), so
    gamma = phi_q a - Phi''; Phi'' is taken by the fourth-order five-point stencil.
    """

    def ph(s: float) -> np.ndarray:
        return phi(mod, q + v * s + 0.5 * a * s * s, 0.0, p)

    d2 = (-ph(2 * h) + 16 * ph(h) - 30 * ph(0.0) + 16 * ph(-h) - ph(-2 * h)) / (12 * h * h)
    g_fd = phi_q(mod, q, 0.0, p) @ a - d2
    g = gamma(mod, q, v, 0.0, p)
    return float(np.linalg.norm(g - g_fd) / max(np.linalg.norm(g_fd), 1e-300))


def initial_residuals(mod: ModuleType, p: np.ndarray) -> tuple[float, float]:
    """Return (|Phi(q0)|, |Phi_q v0 + Phi_t|) of ``mod.initial_state(p)``."""
    q0, v0 = mod.initial_state(p)
    r = phi(mod, q0, 0.0, p)
    dr = phi_q(mod, q0, 0.0, p) @ v0 + phi_t(mod, q0, 0.0, p)
    return float(np.linalg.norm(r)), float(np.linalg.norm(dr))


def mass_rate_fd(
    mod: ModuleType, p: np.ndarray, q: np.ndarray, v: np.ndarray, h: float = 1e-6
) -> np.ndarray:
    """dM/dt = dM/dq . v along the velocity, by a central difference of step ``h``."""
    return (mass(mod, q + h * v, p) - mass(mod, q - h * v, p)) / (2 * h)


def energy_gradient_fd(
    mod: ModuleType, p: np.ndarray, q: np.ndarray, v: np.ndarray, h: float = 1e-6
) -> np.ndarray:
    """d(energy)/dq at fixed v, by central differences of step ``h`` (``mod.energy``)."""
    n = q.size
    grad = np.empty(n)
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        grad[k] = (mod.energy(q + e, v, 0.0, p) - mod.energy(q - e, v, 0.0, p)) / (2 * h)
    return grad


def assert_initial_state_consistent(mod: ModuleType, p: np.ndarray) -> None:
    """Assert that ``mod.initial_state(p)`` satisfies Phi = 0 and its time derivative
    Phi_q v + Phi_t = 0 to 1e-12 (the two :func:`initial_residuals`)."""
    r, dr = initial_residuals(mod, p)
    assert r <= 1e-12
    assert dr <= 1e-12


def assert_mass_spd(mod: ModuleType, p: np.ndarray, nq: int) -> np.ndarray:
    """Assert that the mass matrix at q = 0 (``nq`` coordinates) is exactly symmetric and
    positive definite; return it for model-specific checks."""
    M = mass(mod, np.zeros(nq), p)
    np.testing.assert_array_equal(M, M.T)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    return M


def assert_exact_reference_consistent(
    mod: ModuleType, p: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Assert that ``mod.exact_reference(p, t)`` starts at ``mod.initial_state(p)`` (to
    1e-15), conserves the energy (relative 1e-10) and satisfies Phi = 0 (1e-13) at every
    time; return its (q, v) for model-specific checks."""
    q, v = mod.exact_reference(p, t)
    q0, v0 = mod.initial_state(p)
    np.testing.assert_allclose(q[0], q0, atol=1e-15)
    np.testing.assert_allclose(v[0], v0, atol=1e-15)
    e = energies(mod, p, q, v)
    assert np.max(np.abs(e - e[0])) < 1e-10 * abs(e[0])
    assert max(np.linalg.norm(phi(mod, qk, 0.0, p)) for qk in q) < 1e-13
    return q, v


def accel(
    mod: ModuleType,
    p: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    t: float,
    redundant: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve the index-1 system for (a, lam) with NumPy (lstsq if ``redundant``)."""
    n, m = dims(mod, p)
    K = np.zeros((n + m, n + m))
    K[:n, :n] = mass(mod, q, p)
    G = phi_q(mod, q, t, p)
    K[:n, n:] = G.T
    K[n:, :n] = G
    rhs = np.concatenate([forces(mod, q, v, t, p), gamma(mod, q, v, t, p)])
    if redundant:
        x, *_ = np.linalg.lstsq(K, rhs, rcond=1e-12)
    else:
        x = np.linalg.solve(K, rhs)
    return x[:n], x[n:]


def integrate(
    mod: ModuleType,
    p: np.ndarray,
    t_out: np.ndarray,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    rtol: float = 1e-11,
    atol: float = 1e-13,
    redundant: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integrate the index-1 form with DOP853; return q (K, n), v (K, n), W (K,)."""
    n, _ = dims(mod, p)
    if q0 is None or v0 is None:
        q0, v0 = mod.initial_state(p)

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        q, v = y[:n], y[n : 2 * n]
        a, _ = accel(mod, p, q, v, t, redundant)
        return np.concatenate([v, a, [mod.power(q, v, t, p)]])

    y0 = np.concatenate([q0, v0, [0.0]])
    sol = solve_ivp(rhs, (t_out[0], t_out[-1]), y0, method="DOP853", t_eval=t_out,
                    rtol=rtol, atol=atol)  # fmt: skip
    assert sol.success, sol.message
    Y = sol.y.T
    return Y[:, :n], Y[:, n : 2 * n], Y[:, 2 * n]


def energies(mod: ModuleType, p: np.ndarray, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Return the model energy at each row of q, v (t = 0: all models are autonomous)."""
    return np.array([mod.energy(qk, vk, 0.0, p) for qk, vk in zip(q, v, strict=True)])


def numerical_rank(G: np.ndarray, rtol: float = 1e-10) -> int:
    """Return the number of singular values of G above ``rtol`` times the largest."""
    s = np.linalg.svd(G, compute_uv=False)
    return int(np.sum(s > rtol * s[0]))
