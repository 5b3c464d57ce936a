"""Two-link planar manipulator (double pendulum), absolute coordinates
(docs/explanation/models.md#manipulator).

Uniform slender links under gravity, no drive. Coordinates
q = [x1 y1 th1 x2 y2 th2]: centre of mass and angle from +x (CCW) of link 1 (pinned to
the ground at the origin at its tail) and link 2 (pinned to the tip of link 1). Two
revolute joints give m = 4 equations, 2 degrees of freedom:

    Phi1 = x1 - (L1/2) cos th1,                      Phi2 = y1 - (L1/2) sin th1,
    Phi3 = x2 - (L2/2) cos th2 - x1 - (L1/2) cos th1,
    Phi4 = y2 - (L2/2) sin th2 - y1 - (L1/2) sin th1.

References
----------
docs/explanation/models.md#manipulator (our parameters for seed 001, whose equations (18)-(19) are
missing); seed 001 (Zhang, Wang & Ding, discrete variational method with Hermite interpolation);
Nikravesh, *Computer-Aided Analysis of Mechanical Systems*, 1988, ch. 5.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity
from mbstudy.solvers.models._planar import (
    bar_inertia,
    body_energy,
    body_gravity,
    body_mass,
    rev_gamma,
    rev_phi,
    rev_phi_q,
)
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="manipulator",
    summary="two-link planar arm (double pendulum), absolute coordinates (6 coordinates, "
    "4 constraints)",
    params=(
        Param("m1", 1.0, "mass of link 1 (kg)", positive=True),
        Param("m2", 1.0, "mass of link 2 (kg)", positive=True),
        Param("L1", 1.0, "length of link 1 (m)", positive=True),
        Param("L2", 1.0, "length of link 2 (m)", positive=True),
        Param("g", 9.81, "gravity along -y (m/s^2)"),
        Param("theta1_0", 0.0, "initial absolute angle of link 1 from +x (rad)"),
        Param("theta2_0", 0.0, "initial absolute angle of link 2 from +x (rad)"),
        Param("omega1_0", 0.0, "initial angular velocity of link 1 (rad/s)"),
        Param("omega2_0", 0.0, "initial angular velocity of link 2 (rad/s)"),
    ),
    t_end=20.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14},
    source=(
        "docs/explanation/models.md#manipulator "
        "(our data for seed 001: m = 1 kg, L = 1 m, at rest)"
    ),
    coordinate_labels=("link1.x", "link1.y", "link1.theta", "link2.x", "link2.y", "link2.theta"),
    constraint_labels=("link1-ground.x", "link1-ground.y", "link2-link1.x", "link2-link1.y"),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_M1, _M2, _L1, _L2, _G, _TH1, _TH2, _OM1, _OM2 = range(9)


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (6, 4)."""
    return 6, 4


@njit(cache=True)
def mass(q, p, M):
    """Fill the constant diagonal mass matrix diag(m1, m1, J1, m2, m2, J2), J = m L^2/12."""
    M[:, :] = 0.0
    for b in range(2):
        body_mass(M, b, p[_M1 + b], bar_inertia(p[_M1 + b], p[_L1 + b]))


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q with gravity: -m_b g on each link's y coordinate."""
    Q[:] = 0.0
    for b in range(2):
        body_gravity(Q, b, p[_M1 + b], p[_G])


@njit(cache=True)
def phi(q, t, p, out):
    """Revolute O (link 1 tail at the origin) and revolute A (link 2 tail at link 1 tip)."""
    h1 = 0.5 * p[_L1]
    h2 = 0.5 * p[_L2]
    rev_phi(q, 0, -h1, 0.0, -1, 0.0, 0.0, out, 0)
    rev_phi(q, 1, -h2, 0.0, 0, h1, 0.0, out, 2)


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill the 4 x 6 Jacobian of :func:`phi`."""
    h1 = 0.5 * p[_L1]
    h2 = 0.5 * p[_L2]
    out[:, :] = 0.0
    rev_phi_q(q, 0, -h1, 0.0, -1, 0.0, 0.0, out, 0)
    rev_phi_q(q, 1, -h2, 0.0, 0, h1, 0.0, out, 2)


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraints: dPhi/dt = 0."""
    out[:] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(phi_q v)_q v (docs/explanation/models.md#manipulator lists h = -gamma)."""
    h1 = 0.5 * p[_L1]
    h2 = 0.5 * p[_L2]
    rev_gamma(q, v, 0, -h1, 0.0, -1, 0.0, 0.0, out, 0)
    rev_gamma(q, v, 1, -h2, 0.0, 0, h1, 0.0, out, 2)


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus gravitational potential energy (zero for the horizontal rest state)."""
    e = 0.0
    for b in range(2):
        mb = p[_M1 + b]
        e = body_energy(q, v, b, mb, bar_inertia(mb, p[_L1 + b]), p[_G], e)
    return e


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """Angular coordinates: th1, th2."""
    return np.array([False, False, True] * 2)


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0) for the link angles and angular velocities in ``p``.

    The open chain always assembles: the centres of mass follow from the angles in
    closed form (docs/explanation/models.md#manipulator; the default is both links horizontal along
    +x at rest, q0 = [0.5, 0, 0, 1.5, 0, 0], v0 = 0), then Newton and the velocity solve polish the
    state with the angles and angular velocities fixed.

    Raises
    ------
    AssemblyError
        Never for finite parameters (kept for the contract's uniform interface).
    """
    L1, L2 = p[_L1], p[_L2]
    th1, th2 = p[_TH1], p[_TH2]
    w1, w2 = p[_OM1], p[_OM2]
    c1, s1, c2, s2 = np.cos(th1), np.sin(th1), np.cos(th2), np.sin(th2)
    q = np.array(
        [
            0.5 * L1 * c1, 0.5 * L1 * s1, th1,
            L1 * c1 + 0.5 * L2 * c2, L1 * s1 + 0.5 * L2 * s2, th2,
        ]
    )  # fmt: skip
    v = np.array(
        [
            -0.5 * L1 * s1 * w1, 0.5 * L1 * c1 * w1, w1,
            -L1 * s1 * w1 - 0.5 * L2 * s2 * w2, L1 * c1 * w1 + 0.5 * L2 * c2 * w2, w2,
        ]
    )  # fmt: skip
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        raise AssemblyError("manipulator cannot be assembled: non-finite initial angles or rates")
    fixed = np.array([2, 5])
    q = assemble(phi, phi_q, q, fixed, p, 4)
    v = assemble_velocity(phi_q, phi_t, q, v, fixed, p, 4)
    return q, v


__all__ = ["SPEC", "AssemblyError", "angle_mask", "initial_state"]
