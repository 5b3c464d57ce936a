"""Planar four-bar linkage in absolute coordinates (docs/explanation/models.md#fourbar, provisional
stand-in).

Grashof crank-rocker under gravity, uniform slender bars, no drive. Coordinates
q = [x2 y2 th2 x3 y3 th3 x4 y4 th4]: centre of mass and angle from +x of crank AB (2),
coupler BC (3) and rocker DC (4); ground pivots A = (0, 0), D = (L1, 0). Four revolute
joints give m = 8 equations, 1 degree of freedom.

References
----------
docs/explanation/models.md#fourbar (stand-in for Marques, Souto & Flores 2017, whose data were not
found); seed 004 (the four-bar study); Nikravesh, *Computer-Aided Analysis of Mechanical
Systems*, 1988, ch. 5 (revolute joints in absolute coordinates).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity
from mbstudy.solvers.models._planar import (
    bar_inertia,
    body_energy,
    body_gravity,
    body_mass,
    rev_gamma_axis,
    rev_phi_axis,
    rev_phi_q_axis,
)
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="fourbar",
    summary="planar four-bar crank-rocker, absolute coordinates (9 coordinates, 8 constraints)",
    params=(
        Param("L1", 0.35, "ground link length AD (m)", positive=True),
        Param("L2", 0.10, "crank length AB (m)", positive=True),
        Param("L3", 0.40, "coupler length BC (m)", positive=True),
        Param("L4", 0.30, "rocker length DC (m)", positive=True),
        Param("m2", 0.10, "crank mass (kg)", positive=True),
        Param("m3", 0.40, "coupler mass (kg)", positive=True),
        Param("m4", 0.30, "rocker mass (kg)", positive=True),
        Param("g", 9.81, "gravity along -y (m/s^2)"),
        Param("theta2_0", float(np.pi / 2), "initial crank angle (rad)"),
        Param("omega2_0", float(2 * np.pi), "initial crank angular velocity (rad/s)"),
    ),
    t_end=5.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#fourbar (provisional stand-in for Marques et al. "
    "2017); seed 004",
    # revolutes A (crank-ground), B (crank-coupler), C (coupler-rocker), D (rocker-ground)
    coordinate_labels=(
        "crank.x", "crank.y", "crank.theta", "coupler.x", "coupler.y", "coupler.theta",
        "rocker.x", "rocker.y", "rocker.theta"
    ),
    constraint_labels=(
        "crank-ground.x", "crank-ground.y", "crank-coupler.x", "crank-coupler.y",
        "coupler-rocker.x", "coupler-rocker.y", "rocker-ground.x", "rocker-ground.y"
    ),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_L1, _L2, _L3, _L4, _M2, _M3, _M4, _G, _TH0, _OM0 = range(10)


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (9, 8)."""
    return 9, 8


@njit(cache=True)
def mass(q, p, M):
    """Fill the constant diagonal mass matrix diag(m2, m2, J2, m3, m3, J3, m4, m4, J4)."""
    M[:, :] = 0.0
    for b in range(3):
        body_mass(M, b, p[_M2 + b], bar_inertia(p[_M2 + b], p[_L2 + b]))


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q with gravity: -m_b g on each body's y coordinate."""
    Q[:] = 0.0
    for b in range(3):
        body_gravity(Q, b, p[_M2 + b], p[_G])


@njit(cache=True)
def _trig(q):
    """(cos, sin) of the three body angles th2, th3, th4."""
    return np.cos(q[2]), np.sin(q[2]), np.cos(q[5]), np.sin(q[5]), np.cos(q[8]), np.sin(q[8])


# The four revolutes on bodies 0 (crank), 1 (coupler), 2 (rocker), -1 (ground), each as
# (body i, its point on the bar's axis, body j, its point) (half lengths h): A joins
# the crank tail to the origin, B the crank tip to the coupler tail, C the coupler tip to
# the rocker tip, D the rocker tail to the pivot (L1, 0).


@njit(cache=True)
def _fill_phi(q, p, tr, out):
    h2 = 0.5 * p[_L2]
    h3 = 0.5 * p[_L3]
    h4 = 0.5 * p[_L4]
    c2, s2, c3, s3, c4, s4 = tr
    rev_phi_axis(q, 0, c2, s2, -h2, -1, 1.0, 0.0, 0.0, out, 0)
    rev_phi_axis(q, 0, c2, s2, h2, 1, c3, s3, -h3, out, 2)
    rev_phi_axis(q, 1, c3, s3, h3, 2, c4, s4, h4, out, 4)
    rev_phi_axis(q, 2, c4, s4, -h4, -1, 1.0, 0.0, p[_L1], out, 6)


@njit(cache=True)
def _fill_phi_q(p, tr, out):
    h2 = 0.5 * p[_L2]
    h3 = 0.5 * p[_L3]
    h4 = 0.5 * p[_L4]
    c2, s2, c3, s3, c4, s4 = tr
    out[:, :] = 0.0
    rev_phi_q_axis(0, c2, s2, -h2, -1, 1.0, 0.0, 0.0, out, 0)
    rev_phi_q_axis(0, c2, s2, h2, 1, c3, s3, -h3, out, 2)
    rev_phi_q_axis(1, c3, s3, h3, 2, c4, s4, h4, out, 4)
    rev_phi_q_axis(2, c4, s4, -h4, -1, 1.0, 0.0, p[_L1], out, 6)


@njit(cache=True)
def _fill_gamma(v, p, tr, out):
    h2 = 0.5 * p[_L2]
    h3 = 0.5 * p[_L3]
    h4 = 0.5 * p[_L4]
    c2, s2, c3, s3, c4, s4 = tr
    rev_gamma_axis(v, 0, c2, s2, -h2, -1, 1.0, 0.0, 0.0, out, 0)
    rev_gamma_axis(v, 0, c2, s2, h2, 1, c3, s3, -h3, out, 2)
    rev_gamma_axis(v, 1, c3, s3, h3, 2, c4, s4, h4, out, 4)
    rev_gamma_axis(v, 2, c4, s4, -h4, -1, 1.0, 0.0, p[_L1], out, 6)


@njit(cache=True)
def phi(q, t, p, out):
    """Revolutes A (crank-ground), B (crank-coupler), C (coupler-rocker), D (rocker-ground)."""
    _fill_phi(q, p, _trig(q), out)


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill the 8 x 9 Jacobian of :func:`phi`."""
    _fill_phi_q(p, _trig(q), out)


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraints: dPhi/dt = 0."""
    out[:] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(phi_q v)_q v: the centripetal terms of each revolute joint."""
    _fill_gamma(v, p, _trig(q), out)


@njit(cache=True)
def constraint_terms(q, v, t, p, ph, G, pt, gam):
    """:func:`phi`, :func:`phi_q`, :func:`phi_t` and :func:`gamma` in one pass, sharing the
    three angles' sines and cosines (the optional fused model function,
    docs/explanation/solver-contract.md): the same fill functions on one :func:`_trig`."""
    tr = _trig(q)
    _fill_phi(q, p, tr, ph)
    _fill_phi_q(p, tr, G)
    pt[:] = 0.0
    _fill_gamma(v, p, tr, gam)


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus gravitational potential energy."""
    e = 0.0
    for b in range(3):
        mb = p[_M2 + b]
        e = body_energy(q, v, b, mb, bar_inertia(mb, p[_L2 + b]), p[_G], e)
    return e


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """Angular coordinates: th2, th3, th4."""
    return np.array([False, False, True] * 3)


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0) on the open branch for the crank angle and speed in ``p``.

    The rocker tip C is the upper intersection of the circles |C - B| = L3 and
    |C - D| = L4 (open branch), then Newton polishes q and the velocity constraints are
    solved with the crank speed fixed.

    Raises
    ------
    AssemblyError
        If the circles do not intersect (the loop cannot close at this crank angle).
    """
    L1, L2, L3, L4 = p[_L1], p[_L2], p[_L3], p[_L4]
    th2 = p[_TH0]
    B = np.array([L2 * np.cos(th2), L2 * np.sin(th2)])
    D = np.array([L1, 0.0])
    d = float(np.linalg.norm(D - B))
    if d > L3 + L4 or d < abs(L3 - L4) or d == 0.0:
        raise AssemblyError(
            f"four-bar cannot be assembled at theta2_0 = {th2:.6g}: |BD| = {d:.6g} is outside"
            f" [|L3 - L4|, L3 + L4] = [{abs(L3 - L4):.6g}, {L3 + L4:.6g}]"
        )
    a = (L3 * L3 - L4 * L4 + d * d) / (2 * d)
    hgt = np.sqrt(max(L3 * L3 - a * a, 0.0))
    e = (D - B) / d
    C = B + a * e + hgt * np.array([-e[1], e[0]])
    th3 = np.arctan2(C[1] - B[1], C[0] - B[0])
    th4 = np.arctan2(C[1] - D[1], C[0] - D[0])
    q = np.array(
        [
            0.5 * B[0], 0.5 * B[1], th2,
            0.5 * (B[0] + C[0]), 0.5 * (B[1] + C[1]), th3,
            0.5 * (C[0] + D[0]), 0.5 * (C[1] + D[1]), th4,
        ]
    )  # fmt: skip
    q = assemble(phi, phi_q, q, np.array([2]), p, 8)
    v = np.zeros(9)
    v[2] = p[_OM0]
    v = assemble_velocity(phi_q, phi_t, q, v, np.array([2]), p, 8)
    return q, v


__all__ = ["SPEC", "AssemblyError", "angle_mask", "initial_state"]
