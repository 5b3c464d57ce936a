"""Spatial elements (``dimension = 3``): bodies in Euler parameters, joints, torques.

Body ``i`` has ``q[7i:7i+7] = (x, y, z, e0, e1, e2, e3)``: its centre of mass and the
Euler parameters of its frame (seed 003, sect. 3; the ``top`` model). With e = (e1, e2,
e3) and ~e the cross-product matrix (Nikravesh 1988, ch. 6):

    A(q) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 ~e,
    L = [-e, -~e + e0 I],  E = [-e, ~e + e0 I],  omega' = 2 L edot,  omega = 2 E edot.

Kinetic energy 1/2 m |rdot|^2 + 2 edot^T L^T J' L edot, so the mass block is
diag(m I, 4 L^T J' L) (J' the inertia tensor about the centre of mass in the body frame):
singular, its null vector e, the normal of the normalization constraint e^T e - 1 = 0
that every body contributes. Joint rows as in Haug 1989, ch. 9 / Nikravesh 1988, ch. 7
(dot-1 and spherical constraints).

The normalization element (``Spatial(q, element=(m_u, M_u))``; seed 003's element for
the finite-rotation parameters): e is not normalized, every element sees x = e/|e|
only. A, L and E are homogeneous (degree 2, 1, 1) and L(e) e = E(e) e = 0, so with
s = e^T e

    A(x) = A(e)/s,  omega' = 2 L(e) edot/s,  omega = 2 E(e) edot/s

(the radial part of edot drops out, no square root). The body's kinetic energy adds the
radial term 1/2 m_u Ldot^2 of the gauge coordinate L = |e| (Ldot = e^T edot/|e|), and a
Rayleigh dissipation 1/2 M_u Ldot^2 gives the seed's flow i4 = M_u Ldot:

    T_e = 2 edot^T L^T J' L edot/s^2 + 1/2 m_u (e^T edot)^2/s,
    Q_e = -M_u (e^T edot) e/s,

so the mass block 4 L^T J' L/s^2 + m_u e e^T/s is positive definite and Lagrange's
radial equation is m_u Lddot = -M_u Ldot (the physical T has no radial row: it depends
on x and xdot only).
"""

from __future__ import annotations

import sympy as sp


def _skew(e: sp.Matrix) -> sp.Matrix:
    return sp.Matrix([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])


def rotation(ep: list[sp.Expr]) -> sp.Matrix:
    """A(e0, e1, e2, e3) (exact for unit Euler parameters)."""
    e0 = ep[0]
    e = sp.Matrix(ep[1:])
    return (e0**2 - (e.T * e)[0]) * sp.eye(3) + 2 * e * e.T + 2 * e0 * _skew(e)


def lmat(ep: list[sp.Expr]) -> sp.Matrix:
    """L = [-e, -~e + e0 I] (3 x 4): omega' = 2 L edot."""
    e = sp.Matrix(ep[1:])
    return (-e).row_join(-_skew(e) + ep[0] * sp.eye(3))


def emat(ep: list[sp.Expr]) -> sp.Matrix:
    """E = [-e, ~e + e0 I] (3 x 4): omega = 2 E edot."""
    e = sp.Matrix(ep[1:])
    return (-e).row_join(_skew(e) + ep[0] * sp.eye(3))


def perpendiculars(axis: list[sp.Expr], defaults: dict) -> tuple[sp.Matrix, sp.Matrix]:
    """Two vectors perpendicular to ``axis`` and to each other: h1 = a x e_k (e_k the unit
    vector along a's smallest component at the default parameters), h2 = a x h1."""
    a = sp.Matrix(axis)
    vals = [abs(float(sp.N(c.subs(defaults)))) for c in a]
    k = vals.index(min(vals))
    ek = sp.Matrix([1 if r == k else 0 for r in range(3)])
    h1 = a.cross(ek)
    return h1, a.cross(h1)


class Spatial:
    """Kinematics of spatial bodies with Euler parameters."""

    ncoord = 7

    def __init__(self, q: list[sp.Symbol], element: tuple[sp.Expr, sp.Expr] | None = None):
        """``element``: (m_u, M_u) of the normalization element, or None for the
        normalization constraint."""
        self.q = q
        self.element = element

    def _scale(self, index: int) -> sp.Expr:
        """1/(e^T e) in element mode (the homogeneous maps of x = e/|e|), else 1."""
        if self.element is None:
            return sp.Integer(1)
        return 1 / sum(c**2 for c in self.coords(index)[3:])

    def coords(self, index: int | None) -> list[sp.Expr]:
        if index is None:
            return [sp.Integer(0)] * 3 + [sp.Integer(1)] + [sp.Integer(0)] * 3
        return self.q[7 * index : 7 * index + 7]

    def rot(self, index: int | None) -> sp.Matrix:
        if index is None:
            return sp.eye(3)
        return rotation(self.coords(index)[3:]) * self._scale(index)

    def point(self, index: int | None, s: list[sp.Expr]) -> sp.Matrix:
        if index is None:
            return sp.Matrix(s)
        return sp.Matrix(self.coords(index)[:3]) + self.rot(index) * sp.Matrix(s)

    def body_mass(self, index: int, m: sp.Expr, inertia: sp.Matrix) -> sp.Matrix:
        """diag(m I, 4 L^T J' L) of body ``index`` (element mode: diag(m I, 4 L^T J' L/s^2
        + m_u e e^T/s))."""
        ep = self.coords(index)[3:]
        Lm = lmat(ep)
        rot = 4 * Lm.T * inertia * Lm
        if self.element is not None:
            e = sp.Matrix(ep)
            w = self._scale(index)
            rot = rot * w**2 + self.element[0] * w * (e * e.T)
        return sp.diag(m * sp.eye(3), rot)

    def add_mass(self, M: sp.Matrix, index: int, m: sp.Expr, inertia: sp.Matrix) -> None:
        """Add the body's block diag(m I, 4 L^T J' L) to M."""
        block = self.body_mass(index, m, inertia)
        k = 7 * index
        M[k : k + 7, k : k + 7] = M[k : k + 7, k : k + 7] + block

    def normalization(self, index: int) -> list[sp.Expr]:
        """e^T e - 1 = 0."""
        ep = self.coords(index)[3:]
        return [sum(c**2 for c in ep) - 1]

    def radial_damping(self, index: int, v: list[sp.Symbol]) -> dict[int, sp.Expr]:
        """The element's flow: Q_e = -M_u (e^T edot) e/s = -dF/dedot of the Rayleigh
        function F = 1/2 M_u Ldot^2 (power -M_u Ldot^2)."""
        assert self.element is not None
        k = 7 * index + 3
        ep = self.coords(index)[3:]
        rate = sum(c * w for c, w in zip(ep, v[k : k + 4], strict=True))
        f = -self.element[1] * rate * self._scale(index)
        return {k + r: f * ep[r] for r in range(4)}

    def torque(self, index: int, n: list[sp.Expr]) -> dict[int, sp.Expr]:
        """A torque n (global frame) on body ``index``: power n . omega = 2 n^T E edot, so
        its generalized force on the Euler parameters is 2 E^T n (element mode 2 E^T n/s)."""
        g = 2 * emat(self.coords(index)[3:]).T * sp.Matrix(n) * self._scale(index)
        return {7 * index + 3 + k: g[k] for k in range(4)}

    def torque_body(self, index: int, n_body: list[sp.Expr]) -> dict[int, sp.Expr]:
        """A torque n' given in the body frame of body ``index``: power n' . omega' =
        2 n'^T L edot (omega' = 2 L edot), so its generalized force is 2 L^T n'
        (Nikravesh 1988, sect. 6.4; Haug 1989, sect. 11.2); element mode 2 L^T n'/s."""
        g = 2 * lmat(self.coords(index)[3:]).T * sp.Matrix(n_body) * self._scale(index)
        return {7 * index + 3 + k: g[k] for k in range(4)}


def spherical(sp3: Spatial, i, si, j, sj) -> list[sp.Expr]:
    """P_i - P_j = 0 (3 rows)."""
    return list(sp3.point(i, si) - sp3.point(j, sj))


def parallel(sp3: Spatial, i, ai, j, aj, defaults) -> list[sp.Expr]:
    """Axis a_i of body i parallel to axis a_j of body j: (A_j h_k)^T (A_i a_i) = 0, k = 1, 2."""
    h1, h2 = perpendiculars(aj, defaults)
    ui = sp3.rot(i) * sp.Matrix(ai)
    return [((sp3.rot(j) * h).T * ui)[0] for h in (h1, h2)]


def revolute(sp3, i, si, j, sj, ai, aj, defaults) -> list[sp.Expr]:
    """Spherical + parallel axes (5 rows)."""
    return spherical(sp3, i, si, j, sj) + parallel(sp3, i, ai, j, aj, defaults)


def universal(sp3, i, si, j, sj, ai, aj) -> list[sp.Expr]:
    """Spherical + perpendicular cross axes: (A_i a_i)^T (A_j a_j) = 0 (4 rows)."""
    dot = ((sp3.rot(i) * sp.Matrix(ai)).T * (sp3.rot(j) * sp.Matrix(aj)))[0]
    return [*spherical(sp3, i, si, j, sj), dot]


def cylindrical(sp3, i, si, j, sj, ai, aj, defaults) -> list[sp.Expr]:
    """Parallel axes + P_i on the line of P_j along a_j: (A_j h_k)^T (P_i - P_j) = 0 (4 rows)."""
    h1, h2 = perpendiculars(aj, defaults)
    d = sp3.point(i, si) - sp3.point(j, sj)
    return parallel(sp3, i, ai, j, aj, defaults) + [((sp3.rot(j) * h).T * d)[0] for h in (h1, h2)]


def prismatic(sp3, i, si, j, sj, ai, aj, defaults) -> list[sp.Expr]:
    """Cylindrical + no rotation about the axis: (A_j h1_j)^T (A_i h2_i) = 0 (5 rows)."""
    h1j, _ = perpendiculars(aj, defaults)
    _, h2i = perpendiculars(ai, defaults)
    twist = ((sp3.rot(j) * h1j).T * (sp3.rot(i) * h2i))[0]
    return [*cylindrical(sp3, i, si, j, sj, ai, aj, defaults), twist]


def fixed(sp3, i, si, j, sj) -> list[sp.Expr]:
    """Weld with aligned frames: spherical + (A_j x)^T(A_i y) = (A_j y)^T(A_i z) =
    (A_j z)^T(A_i x) = 0 (6 rows)."""
    Ai, Aj = sp3.rot(i), sp3.rot(j)
    rows = [(Aj[:, a].T * Ai[:, b])[0] for a, b in ((0, 1), (1, 2), (2, 0))]
    return spherical(sp3, i, si, j, sj) + rows
