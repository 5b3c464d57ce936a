"""Unconstrained one-dimensional harmonic oscillator (m = 0; docs/explanation/models.md#oscillator).

A mass on a linear spring, no damping, no drive: q = [x], M = [mass],
Q = -k x, so x(t) = x0 cos(w t) + (v0 / w) sin(w t) with w = sqrt(k / mass). It has no
constraint equations (m = 0), which exercises every code path with empty constraint
arrays, and an exact solution for order tests.

References
----------
docs/explanation/hermite.md#properties 2, 7 (orders 6 and 2 of the two-point Hermite DVI with 3 and
2 Gauss points; linear stability); seed 001; Ober-Blöbaum & Saake, Adv. Comput. Math. 41
(2015) 955-986 (superconvergence of Galerkin variational integrators).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="oscillator",
    summary="unconstrained 1-D harmonic oscillator (1 coordinate, 0 constraints)",
    params=(
        Param("mass", 1.0, "mass (kg)", positive=True),
        Param("k", 1.0, "spring stiffness (N/m)", positive=True),
        Param("x0", 1.0, "initial position (m)"),
        Param("v0", 0.0, "initial velocity (m/s)"),
    ),
    t_end=10.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "none", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#oscillator; exact solution x0 cos wt + v0/w sin wt",
    coordinate_labels=("mass.x",),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_MASS, _K, _X0, _V0 = range(4)


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (1, 0)."""
    return 1, 0


@njit(cache=True)
def mass(q, p, M):
    """Fill M = [mass]."""
    M[0, 0] = p[_MASS]


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q = -k x (spring)."""
    Q[0] = -p[_K] * q[0]


@njit(cache=True)
def phi(q, t, p, out):
    """No constraints (out has length 0)."""
    return


@njit(cache=True)
def phi_q(q, t, p, out):
    """No constraints (out has shape (0, 1))."""
    return


@njit(cache=True)
def phi_t(q, t, p, out):
    """No constraints."""
    return


@njit(cache=True)
def gamma(q, v, t, p, out):
    """No constraints."""
    return


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus spring energy."""
    return 0.5 * p[_MASS] * v[0] * v[0] + 0.5 * p[_K] * q[0] * q[0]


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """x is a translation."""
    return np.array([False])


def exact(p: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the exact (x(t), v(t)) for the parameters ``p`` at times ``t``."""
    w = np.sqrt(p[_K] / p[_MASS])
    x = p[_X0] * np.cos(w * t) + p[_V0] / w * np.sin(w * t)
    v = -p[_X0] * w * np.sin(w * t) + p[_V0] * np.cos(w * t)
    return x, v


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (q0, v0) = ([x0], [v0]) (there is nothing to assemble).

    Raises
    ------
    AssemblyError
        If x0 or v0 is not finite.
    """
    if not (np.isfinite(p[_X0]) and np.isfinite(p[_V0])):
        raise AssemblyError("oscillator: non-finite x0 or v0")
    return np.array([p[_X0]]), np.array([p[_V0]])


__all__ = ["SPEC", "AssemblyError", "angle_mask", "exact", "initial_state"]
