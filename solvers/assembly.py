"""Consistent initial states: Newton on the position and velocity constraints.

Given some coordinates fixed (the independent ones), solve ``phi(q, t) = 0`` for the
others by Newton's method with a least-squares step (works for redundant constraints,
whose Jacobian has full column rank in the dependent coordinates but more rows), then
``phi_q v = -phi_t`` for the dependent velocities.

References
----------
García de Jalón & Bayo, *Kinematic and Dynamic Simulation of Multibody Systems*, 1994,
ch. 3 (position and velocity analysis by Newton–Raphson).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _python(fn: Callable) -> Callable:
    """The Python source of a jitted function (the function itself when not jitted)."""
    return getattr(fn, "py_func", fn)


class AssemblyError(ValueError):
    """The mechanism cannot be assembled with the given parameters (one-line reason)."""


def assemble(
    phi: Callable,
    phi_q: Callable,
    q_guess: np.ndarray,
    fixed: np.ndarray,
    p: np.ndarray,
    m: int,
    t: float = 0.0,
    tol: float = 1e-14,
    max_iter: int = 50,
    interpret: bool = False,
) -> np.ndarray:
    """Solve ``phi(q, t) = 0`` for the coordinates not in ``fixed``, starting at ``q_guess``.

    Parameters
    ----------
    phi, phi_q : the model's jitted functions (filling output arrays).
    q_guess : (n,) starting point; entries at ``fixed`` are kept.
    fixed : indices of the independent coordinates.
    p : model parameter vector.
    m : number of constraint equations.
    interpret : call the Python source (``py_func``) of jitted ``phi`` and ``phi_q``: a
        few Newton iterations once per initial state do not pay for compiling them into
        machine code of their own (a mechanism file's model, solvers/mechanisms/codegen.py,
        whose constraint functions are then compiled only inside its kernels). Same IEEE
        operations, same bits (checked in tests/test_compile_units.py).

    Raises
    ------
    AssemblyError
        If Newton does not reach ``|phi| <= tol * max(1, |q|)`` (the loop cannot close).
    """
    if interpret:
        phi, phi_q = _python(phi), _python(phi_q)
    q = np.array(q_guess, dtype=float)
    n = q.size
    free = np.setdiff1d(np.arange(n), np.asarray(fixed, dtype=int))
    r = np.empty(m)
    G = np.empty((m, n))
    scale = max(1.0, float(np.max(np.abs(q))))
    for _ in range(max_iter):
        phi(q, t, p, r)
        if not np.all(np.isfinite(r)):
            break
        if np.linalg.norm(r) <= tol * scale * np.sqrt(m):
            return q
        phi_q(q, t, p, G)
        dq, *_ = np.linalg.lstsq(G[:, free], -r, rcond=None)
        q[free] += dq
    phi(q, t, p, r)
    res = float(np.linalg.norm(r))
    if np.isfinite(res) and res <= 1e-12 * scale * np.sqrt(m):
        return q
    raise AssemblyError(
        f"the mechanism cannot be assembled: |phi| = {res:.3g} after {max_iter} Newton iterations"
    )


def assemble_velocity(
    phi_q: Callable,
    phi_t: Callable,
    q: np.ndarray,
    v_guess: np.ndarray,
    fixed: np.ndarray,
    p: np.ndarray,
    m: int,
    t: float = 0.0,
    interpret: bool = False,
) -> np.ndarray:
    """Solve ``phi_q v = -phi_t`` for the velocities not in ``fixed`` (least squares);
    ``interpret`` as for :func:`assemble`.

    Raises
    ------
    AssemblyError
        If the velocity constraints cannot be met (the independent velocities are not
        admissible, e.g. at a singular configuration).
    """
    if interpret:
        phi_q, phi_t = _python(phi_q), _python(phi_t)
    n = q.size
    v = np.array(v_guess, dtype=float)
    free = np.setdiff1d(np.arange(n), np.asarray(fixed, dtype=int))
    G = np.empty((m, n))
    pt = np.empty(m)
    phi_q(q, t, p, G)
    phi_t(q, t, p, pt)
    rhs = -pt - G[:, fixed] @ v[fixed]
    sol, *_ = np.linalg.lstsq(G[:, free], rhs, rcond=None)
    v[free] = sol
    res = float(np.linalg.norm(G @ v + pt))
    if res > 1e-12 * max(1.0, float(np.max(np.abs(v)))) * np.sqrt(m):
        raise AssemblyError(
            f"the velocity constraints cannot be met: |phi_q v + phi_t| = {res:.3g}"
        )
    return v
