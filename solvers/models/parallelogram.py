"""Parallelogram linkage with a redundant third crank (docs/explanation/models.md#parallelogram).

Three parallel cranks of length L on ground pivots O_k = (k a, 0), k = 0, 1, 2, and one
rigid coupler of length 2a hinged to all three crank tips; uniform slender bars under
gravity, no drive. Coordinates (4 bodies x 3 = 12)

    q = [x0 y0 th0 | x1 y1 th1 | x2 y2 th2 | xc yc thc]

(centre of mass and angle from +x of cranks 0, 1, 2, then of the coupler). Six revolute
joints give m = 12 equations: rows 0-5 the crank tails on the ground pivots, rows 6-11
the crank tips on the coupler points ((k - 1) a, 0). The Grübler count is 0 DOF but the
mobility is 1: rank Phi_q = 11 in generic positions (one redundant equation) and 10 in
the horizontal position (instantaneous mobility 2). The augmented matrix
[M Phi_q^T; Phi_q 0] is therefore always singular: only formulations that cope with
redundant constraints (QR with column pivoting, pseudo-inverse, augmented Lagrangian,
penalty) apply; the multipliers are not unique.

On the parallelogram branch all cranks share the angle th and the coupler translates,
which reduces the motion exactly to (docs/explanation/models.md#parallelogram)

    (3 m L^2/3 + mc L^2) th'' = -(3 m g L/2 + mc g L) cos th,

the A02 reduction with N = 2 for the default data (Ieff = 3 kg m^2, Geff = 3.5 g):
:func:`exact_reference` integrates it and maps it to absolute coordinates.

Default reference: dopri5 + qr at rtol 1e-12, atol 1e-14. qr crosses the horizontal
(singular) positions (t ~ 0.714 s first; the rank drops from 11 to 10) through its E3
window (docs/explanation/methods.md#qr-through-singular-positions); without it (qr's sing_mu = 0)
dopri5 stalls there for rtol <= 1e-10 (docs/explanation/methods.md#redundant-and-singular). Measured
over 20 s against :func:`exact_reference`: error 1.2e-10, the check run's estimate 9.0e-9
(1.4e-6 and 2.6e-4 with the earlier default, rtol 1e-8). The plain LU of the augmented
matrix (formulations none, baumgarte, projection) ends with status ``singular`` at the
first step.

References
----------
docs/explanation/models.md#parallelogram; Wojtyra 2005,
Multibody Syst Dyn 14:23-46; García de Jalón & Gutiérrez-López 2013, Multibody Syst Dyn
30:311-341; docs/explanation/methods.md#redundant-and-singular.
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
from mbstudy.solvers.models._reduction import reduced_solution
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="parallelogram",
    summary="parallelogram linkage with a redundant third crank (12 coordinates, 12 "
    "constraints, rank 11)",
    params=(
        Param("L", 1.0, "crank length (m)", positive=True),
        Param("m", 1.0, "mass of each crank (kg)", positive=True),
        Param("a", 1.0, "pivot spacing (m); the coupler is 2a long", positive=True),
        Param("mc", 2.0, "coupler mass (kg)", positive=True),
        Param("g", 9.81, "gravity along -y (m/s^2)"),
        Param("theta0", float(np.pi / 2), "initial crank angle from +x (rad)"),
        Param("omega0", -1.0, "initial crank angular velocity (rad/s); -1 gives xdot(B0) = 1"),
    ),
    t_end=20.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "qr", "rtol": 1e-12, "atol": 1e-14},
    source=(
        "docs/explanation/models.md#parallelogram "
        "(our data; exact 1-DOF reduction of nfourbar, N = 2)"
    ),
    coordinate_labels=(
        "crank0.x", "crank0.y", "crank0.theta", "crank1.x", "crank1.y", "crank1.theta",
        "crank2.x", "crank2.y", "crank2.theta", "coupler.x", "coupler.y", "coupler.theta"
    ),
    constraint_labels=(
        "crank0-ground.x", "crank0-ground.y", "crank1-ground.x", "crank1-ground.y",
        "crank2-ground.x", "crank2-ground.y", "crank0-coupler.x", "crank0-coupler.y",
        "crank1-coupler.x", "crank1-coupler.y", "crank2-coupler.x", "crank2-coupler.y"
    ),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_L, _M, _A, _MC, _G, _TH0, _OM0 = range(7)
_N_COORD = 12
_N_EQ = 12


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (12, 12)."""
    return 12, 12


@njit(cache=True)
def _body(p, b):
    """(mass, length) of body ``b``: cranks 0-2, then the coupler (2a long)."""
    if b < 3:
        return p[_M], p[_L]
    return p[_MC], 2.0 * p[_A]


@njit(cache=True)
def mass(q, p, M):
    """Fill the constant diagonal mass matrix (slender bars, J = m l^2/12)."""
    M[:, :] = 0.0
    for b in range(4):
        mb, lb = _body(p, b)
        body_mass(M, b, mb, bar_inertia(mb, lb))


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q with gravity: -m_b g on each body's y coordinate."""
    Q[:] = 0.0
    for b in range(4):
        body_gravity(Q, b, _body(p, b)[0], p[_G])


@njit(cache=True)
def phi(q, t, p, out):
    """Crank tails on the ground pivots (rows 0-5), crank tips on the coupler (6-11)."""
    h = 0.5 * p[_L]
    a = p[_A]
    for k in range(3):
        rev_phi(q, k, -h, 0.0, -1, k * a, 0.0, out, 2 * k)
        rev_phi(q, k, h, 0.0, 3, (k - 1) * a, 0.0, out, 6 + 2 * k)


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill the 12 x 12 Jacobian of :func:`phi` (rank 11, or 10 when horizontal)."""
    h = 0.5 * p[_L]
    a = p[_A]
    out[:, :] = 0.0
    for k in range(3):
        rev_phi_q(q, k, -h, 0.0, -1, k * a, 0.0, out, 2 * k)
        rev_phi_q(q, k, h, 0.0, 3, (k - 1) * a, 0.0, out, 6 + 2 * k)


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraints: dPhi/dt = 0."""
    out[:] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(phi_q v)_q v of the six revolute joints."""
    h = 0.5 * p[_L]
    a = p[_A]
    for k in range(3):
        rev_gamma(q, v, k, -h, 0.0, -1, k * a, 0.0, out, 2 * k)
        rev_gamma(q, v, k, h, 0.0, 3, (k - 1) * a, 0.0, out, 6 + 2 * k)


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus gravitational potential energy."""
    e = 0.0
    for b in range(4):
        mb, lb = _body(p, b)
        e = body_energy(q, v, b, mb, bar_inertia(mb, lb), p[_G], e)
    return e


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """Angular coordinates: the four body angles."""
    return np.array([False, False, True] * 4)


def branch_state(
    p: np.ndarray, theta: np.ndarray, omega: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Map crank angles/rates on the parallelogram branch to absolute (q, v).

    Parameters
    ----------
    p : parameter vector.
    theta, omega : (K,) common crank angle and angular velocity.

    Returns
    -------
    q, v : (K, 12) absolute coordinates and velocities (the coupler translates).
    """
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    omega = np.atleast_1d(np.asarray(omega, dtype=float))
    L, a = p[_L], p[_A]
    c, s = np.cos(theta), np.sin(theta)
    q = np.zeros((theta.size, _N_COORD))
    v = np.zeros((theta.size, _N_COORD))
    for k in range(3):
        q[:, 3 * k] = k * a + 0.5 * L * c
        q[:, 3 * k + 1] = 0.5 * L * s
        q[:, 3 * k + 2] = theta
        v[:, 3 * k] = -0.5 * L * s * omega
        v[:, 3 * k + 1] = 0.5 * L * c * omega
        v[:, 3 * k + 2] = omega
    q[:, 9] = a + L * c
    q[:, 10] = L * s
    v[:, 9] = -L * s * omega
    v[:, 10] = L * c * omega
    return q, v


def exact_reference(p: np.ndarray, t_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-DOF reference on the parallelogram branch, in absolute coordinates.

    Integrates Ieff th'' = -Geff cos th, Ieff = m L^2 + mc L^2, Geff = (3/2 m + mc) g L,
    th(0) = theta0, th'(0) = omega0 (docs/explanation/models.md#parallelogram)
    with DOP853 at rtol 1e-13, and maps th to the 12 absolute coordinates. The branch is
    the symmetric continuation through the horizontal (singular) positions.

    Parameters
    ----------
    p : parameter vector.
    t_out : (K,) non-decreasing output times, t_out >= 0 (the motion starts at t = 0).

    Returns
    -------
    q, v : (K, 12) positions and velocities at ``t_out``.
    """
    L, m, mc, g = p[_L], p[_M], p[_MC], p[_G]
    i_eff = 3.0 * m * L * L / 3.0 + mc * L * L
    g_eff = (1.5 * m + mc) * g * L
    th, om = reduced_solution(g_eff / i_eff, p[_TH0], p[_OM0], t_out)
    return branch_state(p, th, om)



def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0) on the parallelogram branch at crank angle/rate ``theta0``, ``omega0``.

    The branch state is exact; Newton (least squares, which handles the redundant row)
    and the velocity solve keep crank 0's angle and rate fixed
    (docs/explanation/models.md#parallelogram: cranks vertical, coupler horizontal at y = L,
    xdot(B0) = -L omega0 sin theta0 = 1 m/s).

    Raises
    ------
    AssemblyError
        If the constraints cannot be met (not expected: the branch always closes).
    """
    q, v = branch_state(p, np.array([p[_TH0]]), np.array([p[_OM0]]))
    q, v = q[0], v[0]
    fixed = np.array([2])
    q = assemble(phi, phi_q, q, fixed, p, _N_EQ)
    v = assemble_velocity(phi_q, phi_t, q, v, fixed, p, _N_EQ)
    return q, v


__all__ = ["SPEC", "AssemblyError", "angle_mask", "exact_reference", "initial_state"]
