"""IFToMM benchmark A02, the N four-bar mechanism, absolute coordinates
(docs/explanation/models.md#nfourbar).

A row of N unit four-bar windows: N + 1 cranks on ground pivots (i L, 0), i = 0..N, and
N couplers, coupler j hinged to the tips of cranks j and j + 1; all 2N + 1 links are
uniform slender bars of length L and mass m, under gravity, no drive. Bodies are ordered
along the chain, crank 0, coupler 0, crank 1, coupler 1, ..., crank N, so that

    q[6i : 6i+3]   = (x, y, th) of crank i   (i = 0..N)
    q[6j+3 : 6j+6] = (x, y, th) of coupler j (j = 0..N-1)

(centre of mass, angle from +x): 6N + 3 coordinates. Constraints, in chain order: crank 0
on its pivot (rows 0-1), then for j = 0..N-1 coupler j's left end on crank j's tip, its
right end on crank j+1's tip, crank j+1 on its pivot (rows 6j+2 .. 6j+7): 6N + 2
equations, full row rank and 1 DOF generically. When the mechanism is horizontal the
Jacobian loses N ranks (rank 5N + 2, N + 1 instantaneous DOF), the singular positions
this benchmark is about; they recur every half turn of the cranks.

On the parallelogram branch every crank has the angle th and the couplers translate:

    [(N+1)/3 + N] m L^2 th'' = -[(N+1)/2 + N] m g L cos th   (docs/explanation/models.md#nfourbar
    [D]),

integrated by :func:`exact_reference` (our substitute for the unavailable
``A02_solution_data.txt``).

Default reference: dopri5 + qr at rtol 1e-12, atol 1e-14. qr crosses the horizontal
(singular) positions through its E3 window
(docs/explanation/methods.md#qr-through-singular-positions); without it (qr's sing_mu = 0) dopri5
stalls at the first one for rtol <= 1e-10. Measured for N = 2 over 20 s (20 crossings) against
:func:`exact_reference`: error 2.2e-10, the check run's estimate 1.2e-8 (1.6e-6 and 1.8e-4 with the
earlier default, rtol 1e-8). The plain LU of the augmented matrix (none, baumgarte, projection)
meets the rank drop at every horizontal crossing (n = 2: first at t ~ 0.7144 s).

References
----------
docs/explanation/models.md#nfourbar; IFToMM benchmark A02 specification (M. González Castro, 2005,
lim.ii.udc.es/mbsbenchmark); González, Dopico, Lugrís & Cuadrado 2006, Multibody Syst
Dyn 16:179-190; the OpenSim and simEngine3D ports of A02.
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
    name="nfourbar",
    summary="IFToMM A02 N four-bar mechanism, absolute coordinates (6N+3 coordinates, "
    "6N+2 constraints, singular when horizontal)",
    params=(
        Param("n", 40, "number N of four-bar windows", kind="int", minimum=1),
        Param("L", 1.0, "length of every link and pivot spacing (m)", positive=True),
        Param("m", 1.0, "mass of every link (kg)", positive=True),
        Param("g", 9.81, "gravity along -y (m/s^2)"),
        Param("theta0", float(np.pi / 2), "initial crank angle from +x (rad)"),
        Param("omega0", -1.0, "initial crank angular velocity (rad/s); -1 gives xdot(B0) = 1"),
    ),
    t_end=20.0,
    conservative=True,
    driven=False,
    constant_mass=True,
    reference={"integrator": "dopri5", "formulation": "qr", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#nfourbar (IFToMM A02; exact 1-DOF reduction [D] as "
    "reference)",
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

# parameter vector slots
_N, _L, _M, _G, _TH0, _OM0 = range(6)


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (6N + 3, 6N + 2) for N = p[0] windows."""
    nw = int(p[_N])
    return 6 * nw + 3, 6 * nw + 2


@njit(cache=True)
def mass(q, p, M):
    """Fill the constant diagonal mass matrix (every link m, J = m L^2/12)."""
    nb = 2 * int(p[_N]) + 1
    jb = bar_inertia(p[_M], p[_L])
    M[:, :] = 0.0
    for b in range(nb):
        body_mass(M, b, p[_M], jb)


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q with gravity: -m g on each body's y coordinate."""
    nb = 2 * int(p[_N]) + 1
    Q[:] = 0.0
    for b in range(nb):
        body_gravity(Q, b, p[_M], p[_G])


@njit(cache=True)
def phi(q, t, p, out):
    """Crank pivots and coupler-crank revolutes, in chain order."""
    nw = int(p[_N])
    L = p[_L]
    h = 0.5 * L
    rev_phi(q, 0, -h, 0.0, -1, 0.0, 0.0, out, 0)
    for j in range(nw):
        r = 6 * j + 2
        rev_phi(q, 2 * j + 1, -h, 0.0, 2 * j, h, 0.0, out, r)
        rev_phi(q, 2 * j + 1, h, 0.0, 2 * j + 2, h, 0.0, out, r + 2)
        rev_phi(q, 2 * j + 2, -h, 0.0, -1, (j + 1) * L, 0.0, out, r + 4)


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill the (6N+2) x (6N+3) Jacobian of :func:`phi`."""
    nw = int(p[_N])
    L = p[_L]
    h = 0.5 * L
    out[:, :] = 0.0
    rev_phi_q(q, 0, -h, 0.0, -1, 0.0, 0.0, out, 0)
    for j in range(nw):
        r = 6 * j + 2
        rev_phi_q(q, 2 * j + 1, -h, 0.0, 2 * j, h, 0.0, out, r)
        rev_phi_q(q, 2 * j + 1, h, 0.0, 2 * j + 2, h, 0.0, out, r + 2)
        rev_phi_q(q, 2 * j + 2, -h, 0.0, -1, (j + 1) * L, 0.0, out, r + 4)


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraints: dPhi/dt = 0."""
    out[:] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(phi_q v)_q v of every revolute joint."""
    nw = int(p[_N])
    L = p[_L]
    h = 0.5 * L
    rev_gamma(q, v, 0, -h, 0.0, -1, 0.0, 0.0, out, 0)
    for j in range(nw):
        r = 6 * j + 2
        rev_gamma(q, v, 2 * j + 1, -h, 0.0, 2 * j, h, 0.0, out, r)
        rev_gamma(q, v, 2 * j + 1, h, 0.0, 2 * j + 2, h, 0.0, out, r + 2)
        rev_gamma(q, v, 2 * j + 2, -h, 0.0, -1, (j + 1) * L, 0.0, out, r + 4)


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic plus gravitational potential energy."""
    nb = 2 * int(p[_N]) + 1
    jb = bar_inertia(p[_M], p[_L])
    e = 0.0
    for b in range(nb):
        e = body_energy(q, v, b, p[_M], jb, p[_G], e)
    return e


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """Angular coordinates: every body's angle."""
    nb = 2 * int(p[_N]) + 1
    return np.array([False, False, True] * nb)


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
    q, v : (K, 6N+3) absolute coordinates and velocities (the couplers translate).
    """
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    omega = np.atleast_1d(np.asarray(omega, dtype=float))
    nw = int(p[_N])
    L = p[_L]
    c, s = np.cos(theta), np.sin(theta)
    q = np.zeros((theta.size, 6 * nw + 3))
    v = np.zeros((theta.size, 6 * nw + 3))
    for i in range(nw + 1):
        b = 6 * i
        q[:, b] = i * L + 0.5 * L * c
        q[:, b + 1] = 0.5 * L * s
        q[:, b + 2] = theta
        v[:, b] = -0.5 * L * s * omega
        v[:, b + 1] = 0.5 * L * c * omega
        v[:, b + 2] = omega
    for j in range(nw):
        b = 6 * j + 3
        q[:, b] = (j + 0.5) * L + L * c
        q[:, b + 1] = L * s
        v[:, b] = -L * s * omega
        v[:, b + 1] = L * c * omega
    return q, v


def exact_reference(p: np.ndarray, t_out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-DOF reference on the parallelogram branch, in absolute coordinates.

    Integrates [(N+1)/3 + N] m L^2 th'' = -[(N+1)/2 + N] m g L cos th from
    th(0) = theta0, th'(0) = omega0 (docs/explanation/models.md#nfourbar [D]) with DOP853 at rtol
    1e-13 and maps th to the 6N + 3 absolute coordinates. The branch is the symmetric continuation
    through the horizontal (singular) positions; B0 = (L cos th, L sin th).

    Parameters
    ----------
    p : parameter vector.
    t_out : (K,) non-decreasing output times, t_out >= 0 (the motion starts at t = 0).

    Returns
    -------
    q, v : (K, 6N+3) positions and velocities at ``t_out``.
    """
    nw = int(p[_N])
    L, m, g = p[_L], p[_M], p[_G]
    i_eff = ((nw + 1) / 3.0 + nw) * m * L * L
    g_eff = ((nw + 1) / 2.0 + nw) * m * g * L
    th, om = reduced_solution(g_eff / i_eff, p[_TH0], p[_OM0], t_out)
    return branch_state(p, th, om)



def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0) on the parallelogram branch (docs/explanation/models.md#nfourbar).

    Default: cranks vertical, crank i at (i, 0.5, pi/2) with velocity (0.5, 0, -1);
    couplers horizontal, coupler j at (j + 0.5, 1, 0) with velocity (1, 0, 0), i.e.
    xdot(B0) = 1 m/s. The branch state is exact; Newton and the velocity solve keep crank
    0's angle and rate fixed.

    Raises
    ------
    AssemblyError
        If the constraints cannot be met (not expected: the branch always closes).
    """
    q, v = branch_state(p, np.array([p[_TH0]]), np.array([p[_OM0]]))
    q, v = q[0], v[0]
    _, m = sizes(p)
    fixed = np.array([2])
    q = assemble(phi, phi_q, q, fixed, p, m)
    v = assemble_velocity(phi_q, phi_t, q, v, fixed, p, m)
    return q, v


__all__ = ["SPEC", "AssemblyError", "angle_mask", "exact_reference", "initial_state"]


def coordinate_names(n: int) -> tuple[str, ...]:
    """Names of the 6N + 3 coordinates in chain order (solvers/model_labels.py): ``crank0.x,
    crank0.y, crank0.theta, coupler0.x, ..., crankN.theta``; empty for another count."""
    if n < 3 or (n - 3) % 6:
        return ()
    bodies = [f"crank{i // 2}" if i % 2 == 0 else f"coupler{i // 2}" for i in range(n // 3)]
    return tuple(f"{b}.{c}" for b in bodies for c in ("x", "y", "theta"))


def constraint_names(m: int) -> tuple[str, ...]:
    """Names of the 6N + 2 constraint rows in the order of :func:`phi`: crank 0 on its
    pivot, then per window j coupler j on crank j's tip, on crank j + 1's tip, and crank
    j + 1 on its pivot (``crank0-ground.x``, ``coupler0-crank0.x``, ``coupler0-crank1.x``,
    ``crank1-ground.x``, each with its ``y``)."""
    if m < 2 or (m - 2) % 6:
        return ()
    joints = ["crank0-ground"]
    for j in range((m - 2) // 6):
        joints += [f"coupler{j}-crank{j}", f"coupler{j}-crank{j + 1}", f"crank{j + 1}-ground"]
    return tuple(f"{jt}.{c}" for jt in joints for c in ("x", "y"))
