"""Heavy symmetric top about a fixed point, in Euler parameters (docs/explanation/models.md#top).

Coordinates q = (e0, e1, e2, e3), the Euler parameters (e0 scalar part) of the body
frame; the fixed point O is the origin and the body's symmetry axis is z'. One
constraint Phi = q^T q - 1 (4 coordinates, 1 constraint, 3 DOF). With e = (e1, e2, e3)
and ~e its cross-product matrix (docs/explanation/models.md#top; Nikravesh 1988, ch. 6):

    A(q) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 ~e,
    L(q) = [-e, -~e + e0 I],  E(q) = [-e, ~e + e0 I]   (3 x 4),
    omega' = 2 L qdot (body frame),  omega = 2 E qdot (space frame).

Kinetic energy T = 1/2 omega'^T J' omega' = 1/2 qdot^T M(q) qdot with M = 4 L^T J' L,
J' = diag(A, A, C) about O; potential V = m g (A(q) s')_z = m g l (e0^2 - e1^2 - e2^2
+ e3^2) for the centre of mass s' = (0, 0, l), gravity along -z.

Generalized forces. Lagrange's equations of T(q, qdot) - V(q) on the whole R^4 give
M qddot + Phi_q^T lam = Q with Q = -Mdot qdot + dT/dq - dV/dq. Since L is linear in q
and L(q) qdot = -L(qdot) q (antisymmetric bilinear form), dT/dq = -2 L(qdot)^T J' omega'
and Mdot qdot = 2 L(qdot)^T J' omega' (using L(qdot) qdot = 0), so

    Q = -4 L(qdot)^T J' omega' - dV/dq = -8 L(qdot)^T J' L(q) qdot - dV/dq

(Nikravesh's 8 Ldot^T J' Ldot q, as Ldot q = -L qdot). The energy T + V is conserved.

Singular mass matrix. L(q) q = 0, so M q = 0: M is singular (rank 3) and its null
direction is the constraint normal Phi_q^T = 2q. The augmented matrix
[M Phi_q^T; Phi_q 0] is nevertheless regular (M is positive definite on the tangent
space q^T x = 0). Formulations that solve the augmented system (none, Baumgarte,
projection, QR null-space with N^T M N, penalty and augmented Lagrangian, whose
M + alpha Phi_q^T Phi_q = M + 4 alpha q q^T is regular) accept the top; formulas that
need M^-1 (a Schur complement, DRCS written with M^-1 as in seed 004) do not as they
stand; they may use M + c q q^T (c a mass scale, e.g. 4 trace(J')/3), which leaves the
motion on the constraint manifold unchanged. :data:`SINGULAR_MASS` flags this.

qdot is not an angular velocity (seed 003's warning): report :func:`angular_velocity`.

References
----------
docs/explanation/models.md#top (our parameters; seed 003 section 3); Nikravesh,
*Computer-Aided Analysis of Mechanical Systems*, 1988, ch. 6 and 11; Haug, *Computer
Aided Kinematics and Dynamics of Mechanical Systems*, 1989, ch. 9.
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

SPEC = ModelSpec(
    name="top",
    summary="heavy symmetric top in Euler parameters (4 coordinates, 1 constraint; "
    "M singular, augmented matrix regular)",
    params=(
        Param("m", 1.0, "mass (kg)", positive=True),
        Param("l", 0.1, "distance of the centre of mass from the fixed point along z' (m)"),
        Param("A", 0.02, "transverse moment of inertia about O (kg m^2)", positive=True),
        Param("C", 0.01, "axial moment of inertia about O (kg m^2)", positive=True),
        Param("g", 9.81, "gravity along -z (m/s^2)"),
        Param("theta0", 0.5, "initial tilt about the x axis (rad)"),
        Param("wx0", 0.0, "initial body angular velocity omega'_x (rad/s)"),
        Param("wy0", 0.0, "initial body angular velocity omega'_y (rad/s)"),
        Param("wz0", 50.0, "initial spin omega'_z (rad/s)"),
    ),
    t_end=10.0,
    conservative=True,
    driven=False,
    constant_mass=False,
    reference={"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#top (our parameters; seed 003 section 3; Nikravesh 1988)",
    coordinate_labels=("top.e0", "top.e1", "top.e2", "top.e3"),
    constraint_labels=("top.e_norm",),
)

#: M(q) is singular (null vector q): formulations needing M^-1 must refuse or regularize.
SINGULAR_MASS = True

# parameter vector slots
_M, _L, _A, _C, _G, _TH0, _WX, _WY, _WZ = range(9)


@njit(cache=True)
def _lmat(q, out):
    """Fill out (3 x 4) with L(q) = [-e, -~e + e0 I]."""
    e0, e1, e2, e3 = q[0], q[1], q[2], q[3]
    out[0, 0] = -e1
    out[0, 1] = e0
    out[0, 2] = e3
    out[0, 3] = -e2
    out[1, 0] = -e2
    out[1, 1] = -e3
    out[1, 2] = e0
    out[1, 3] = e1
    out[2, 0] = -e3
    out[2, 1] = e2
    out[2, 2] = -e1
    out[2, 3] = e0


@njit(cache=True)
def _lvec(q, x):
    """Return L(q) x as a 3-tuple (body angular velocity / 2 when x = qdot)."""
    e0, e1, e2, e3 = q[0], q[1], q[2], q[3]
    w0 = -e1 * x[0] + e0 * x[1] + e3 * x[2] - e2 * x[3]
    w1 = -e2 * x[0] - e3 * x[1] + e0 * x[2] + e1 * x[3]
    w2 = -e3 * x[0] + e2 * x[1] - e1 * x[2] + e0 * x[3]
    return w0, w1, w2


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (4, 1)."""
    return 4, 1


@njit(cache=True)
def mass(q, p, M):
    """Fill M(q) = 4 L^T J' L (symmetric, singular: M q = 0)."""
    j0, j1, j2 = p[_A], p[_A], p[_C]
    e0, e1, e2, e3 = q[0], q[1], q[2], q[3]
    # columns of L as rows r_k (k = 0..3), so M[a, b] = 4 sum_i J_i L[i, a] L[i, b]
    lc = ((-e1, -e2, -e3), (e0, -e3, e2), (e3, e0, -e1), (-e2, e1, e0))
    for a in range(4):
        for b in range(4):
            M[a, b] = 4.0 * (j0 * lc[a][0] * lc[b][0] + j1 * lc[a][1] * lc[b][1]
                             + j2 * lc[a][2] * lc[b][2])  # fmt: skip


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q = -8 L(qdot)^T J' L(q) qdot - dV/dq (gyroscopic terms and gravity)."""
    w0, w1, w2 = _lvec(q, v)  # omega'/2
    h0 = p[_A] * w0
    h1 = p[_A] * w1
    h2 = p[_C] * w2  # J' omega' / 2
    d0, d1, d2, d3 = v[0], v[1], v[2], v[3]
    # L(qdot)^T h: columns of L(qdot)
    Q[0] = -8.0 * (-d1 * h0 - d2 * h1 - d3 * h2)
    Q[1] = -8.0 * (d0 * h0 - d3 * h1 + d2 * h2)
    Q[2] = -8.0 * (d3 * h0 + d0 * h1 - d1 * h2)
    Q[3] = -8.0 * (-d2 * h0 + d1 * h1 + d0 * h2)
    k = 2.0 * p[_M] * p[_G] * p[_L]
    Q[0] -= k * q[0]
    Q[1] += k * q[1]
    Q[2] += k * q[2]
    Q[3] -= k * q[3]


@njit(cache=True)
def phi(q, t, p, out):
    """Normalization Phi = q^T q - 1."""
    out[0] = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1.0


@njit(cache=True)
def phi_q(q, t, p, out):
    """Phi_q = 2 q^T (1 x 4)."""
    for k in range(4):
        out[0, k] = 2.0 * q[k]


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraint: dPhi/dt = 0."""
    out[0] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -(Phi_q v)_q v = -2 qdot^T qdot."""
    out[0] = -2.0 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3])


@njit(cache=True)
def energy(q, v, t, p):
    """T + V = 2 (L qdot)^T J' (L qdot) + m g l (e0^2 - e1^2 - e2^2 + e3^2)."""
    w0, w1, w2 = _lvec(q, v)
    t_kin = 2.0 * (p[_A] * (w0 * w0 + w1 * w1) + p[_C] * w2 * w2)
    a33 = q[0] * q[0] - q[1] * q[1] - q[2] * q[2] + q[3] * q[3]
    return t_kin + p[_M] * p[_G] * p[_L] * a33


@njit(cache=True)
def power(q, v, t, p):
    """No drives: zero input power."""
    return 0.0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """Euler parameters count as angular coordinates (the contract's ``e_theta``)."""
    return np.ones(4, dtype=bool)


def _lmat_np(x: np.ndarray) -> np.ndarray:
    """L(x) for x (..., 4); returns (..., 3, 4)."""
    e0, e1, e2, e3 = x[..., 0], x[..., 1], x[..., 2], x[..., 3]
    return np.stack(
        [
            np.stack([-e1, e0, e3, -e2], axis=-1),
            np.stack([-e2, -e3, e0, e1], axis=-1),
            np.stack([-e3, e2, -e1, e0], axis=-1),
        ],
        axis=-2,
    )


def _emat_np(x: np.ndarray) -> np.ndarray:
    """E(x) for x (..., 4); returns (..., 3, 4)."""
    e0, e1, e2, e3 = x[..., 0], x[..., 1], x[..., 2], x[..., 3]
    return np.stack(
        [
            np.stack([-e1, e0, -e3, e2], axis=-1),
            np.stack([-e2, e3, e0, -e1], axis=-1),
            np.stack([-e3, -e2, e1, e0], axis=-1),
        ],
        axis=-2,
    )


def angular_velocity(q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True angular velocity from Euler parameters and their rates.

    omega' = 2 L(x) xdot (body frame) and omega = 2 E(x) xdot (space frame), with
    x = q/|q| and xdot = (qdot - x x^T qdot)/|q|, so that a small drift of |q| from 1
    does not distort the result (docs/explanation/models.md#top; for |q| = 1 and q^T qdot = 0 this
    is docs/explanation/models.md#top: omega' = 2 L qdot).

    Parameters
    ----------
    q, v : (4,) or (K, 4) Euler parameters and their time derivatives.

    Returns
    -------
    omega_body, omega_space : (3,) or (K, 3).
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    nrm = np.linalg.norm(q, axis=-1, keepdims=True)
    x = q / nrm
    xd = (v - x * np.sum(x * v, axis=-1, keepdims=True)) / nrm
    w_body = 2.0 * np.einsum("...ij,...j->...i", _lmat_np(x), xd)
    w_space = 2.0 * np.einsum("...ij,...j->...i", _emat_np(x), xd)
    return w_body, w_space


def rotation_matrix(q: np.ndarray) -> np.ndarray:
    """A(q) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 ~e for unit q, (4,) -> (3, 3)."""
    q = np.asarray(q, dtype=float)
    e0, e = q[0], q[1:]
    ex = np.array([[0.0, -e[2], e[1]], [e[2], 0.0, -e[0]], [-e[1], e[0], 0.0]])
    return (e0 * e0 - e @ e) * np.eye(3) + 2.0 * np.outer(e, e) + 2.0 * e0 * ex


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0): tilt theta0 about x, body angular velocity (wx0, wy0, wz0).

    q0 = (cos(theta0/2), sin(theta0/2), 0, 0) and v0 = 1/2 L(q0)^T omega'0
    (docs/explanation/models.md#top; default omega'0 = (0, 0, 50) rad/s, a fast spin without initial
    precession). Newton and the velocity solve only polish the last bits.

    Raises
    ------
    AssemblyError
        Not expected (the normalization always holds); kept for the uniform contract.
    """
    th = p[_TH0]
    q = np.array([np.cos(0.5 * th), np.sin(0.5 * th), 0.0, 0.0])
    w = np.array([p[_WX], p[_WY], p[_WZ]])
    Lm = np.empty((3, 4))
    _lmat(q, Lm)
    v = 0.5 * Lm.T @ w
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
        raise AssemblyError("top cannot be assembled: non-finite initial tilt or rates")
    # the largest component is a well-conditioned choice of independent coordinates
    fixed = np.setdiff1d(np.arange(4), [int(np.argmax(np.abs(q)))])
    q = assemble(phi, phi_q, q, fixed, p, 1)
    v = assemble_velocity(phi_q, phi_t, q, v, fixed, p, 1)
    return q, v


__all__ = [
    "SINGULAR_MASS",
    "SPEC",
    "AssemblyError",
    "angle_mask",
    "angular_velocity",
    "initial_state",
    "rotation_matrix",
]
