"""Planar pendulum in Cartesian coordinates, one holonomic constraint
(docs/explanation/models.md#pendulum).

A point mass on a massless rod of length L under gravity, no drive. Coordinates
q = [x y] (position of the mass, pivot at the origin, gravity along -y) with the
constraint

    Phi = x^2 + y^2 - L^2 = 0,

so n = 2, m = 1, 1 degree of freedom. This is the "constrained Cartesian pendulum" of
docs/explanation/hermite.md#properties on which the Hermite DVI (seed 001) is checked: conservative,
constant mass matrix, an exact-energy problem with a nonlinear constraint.

References
----------
docs/explanation/methods.md#node-velocity, docs/explanation/hermite.md#properties 3 and 8 (order 2
with node multipliers, bounded energy over 200 s); seed 001; Hairer, Lubich & Wanner, *Geometric
Numerical Integration*, 2nd ed., 2006, Sect. VII.1 (the pendulum as a constrained system).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="pendulum",
    summary="planar pendulum in Cartesian coordinates (2 coordinates, 1 constraint)",
    params=(
        Param("mass", 1.0, "point mass (kg)", positive=True),
        Param("L", 1.0, "rod length (m)", positive=True),
        Param("g", 9.81, "gravity along -y (m/s^2)"),
        Param("theta0", float(np.pi / 2), "initial angle from the downward vertical (rad)"),
        Param("omega0", 0.0, "initial angular velocity (rad/s)"),
    ),
    t_end=10.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#pendulum; docs/explanation/hermite.md#properties; seed 001",
    coordinate_labels=("mass.x", "mass.y"),
    constraint_labels=("rod.length",),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_MASS, _L, _G, _TH0, _OM0 = range(5)


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (2, 1)."""
    return 2, 1


@njit(cache=True)
def mass(q, p, M):
    """Fill M = diag(mass, mass)."""
    M[0, 0] = p[_MASS]
    M[0, 1] = 0.0
    M[1, 0] = 0.0
    M[1, 1] = p[_MASS]


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q with gravity: -mass g on y."""
    Q[0] = 0.0
    Q[1] = -p[_MASS] * p[_G]


@njit(cache=True)
def phi(q, t, p, out):
    """Rod constraint x^2 + y^2 - L^2."""
    out[0] = q[0] * q[0] + q[1] * q[1] - p[_L] * p[_L]


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill the 1 x 2 Jacobian [2x, 2y]."""
    out[0, 0] = 2.0 * q[0]
    out[0, 1] = 2.0 * q[1]


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraint: dPhi/dt = 0."""
    out[0] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(phi_q v)_q v = -2 |v|^2."""
    out[0] = -2.0 * (v[0] * v[0] + v[1] * v[1])


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus gravitational potential energy (zero at the pivot height, at rest)."""
    return 0.5 * p[_MASS] * (v[0] * v[0] + v[1] * v[1]) + p[_MASS] * p[_G] * q[1]


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """No angular coordinates: x and y are translations."""
    return np.array([False, False])


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0) in closed form from the initial angle and angular velocity.

    q0 = L (sin th0, -cos th0), v0 = L om0 (cos th0, sin th0): Phi = 0 and Phi_q v0 = 0 to
    rounding (the default is the rod horizontal at rest, q0 = [L, 0], E0 = 0).

    Raises
    ------
    AssemblyError
        If the angle or rate is not finite.
    """
    L, th, om = p[_L], p[_TH0], p[_OM0]
    if not (np.isfinite(th) and np.isfinite(om)):
        raise AssemblyError("pendulum cannot be assembled: non-finite theta0 or omega0")
    q = np.array([L * np.sin(th), -L * np.cos(th)])
    v = L * om * np.array([np.cos(th), np.sin(th)])
    return q, v


__all__ = ["SPEC", "AssemblyError", "angle_mask", "initial_state"]
