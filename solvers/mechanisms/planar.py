"""Planar elements (``dimension = 2``): bodies, joints and torques in absolute coordinates.

Body ``i`` has ``q[3i:3i+3] = (x, y, theta)``: its centre of mass and its angle from +x.
A point with body-frame coordinates ``s`` is at ``r + A(theta) s``, ``A`` the 2x2
rotation (Nikravesh 1988, ch. 5; Haug 1989, sect. 3.3). The ground has ``r = 0``,
``theta = 0``. Each function returns the constraint rows (sympy expressions) an element
contributes; the first point of a joint enters with a plus sign.
"""

from __future__ import annotations

import sympy as sp


def rotation(theta: sp.Expr) -> sp.Matrix:
    """A(theta) = [[cos, -sin], [sin, cos]]."""
    c, s = sp.cos(theta), sp.sin(theta)
    return sp.Matrix([[c, -s], [s, c]])


class Planar:
    """Kinematics of planar bodies in absolute coordinates."""

    ncoord = 3

    def __init__(self, q: list[sp.Symbol]) -> None:
        self.q = q

    def coords(self, index: int | None) -> list[sp.Expr]:
        """(x, y, theta) of body ``index`` (None: the ground, all zero)."""
        if index is None:
            return [sp.Integer(0)] * 3
        return self.q[3 * index : 3 * index + 3]

    def angle(self, index: int | None) -> sp.Expr:
        return self.coords(index)[2]

    def position(self, index: int | None) -> sp.Matrix:
        return sp.Matrix(self.coords(index)[:2])

    def point(self, index: int | None, s: list[sp.Expr]) -> sp.Matrix:
        """Global position r + A(theta) s of a body-frame point (ground: s itself)."""
        if index is None:
            return sp.Matrix(s)
        return self.position(index) + rotation(self.angle(index)) * sp.Matrix(s)

    def body_mass(self, index: int, m: sp.Expr, inertia: sp.Expr) -> sp.Matrix:
        """diag(m, m, J): translational and rotational inertia about the centre of mass."""
        return sp.diag(m, m, inertia)

    def normalization(self, index: int) -> list[sp.Expr]:
        return []

    def torque(self, index: int, tau: sp.Expr) -> dict[int, sp.Expr]:
        """Generalized force of a torque ``tau`` on body ``index``: on its theta."""
        return {3 * index + 2: tau}


def revolute(pl: Planar, i: int | None, si: list, j: int | None, sj: list) -> list[sp.Expr]:
    """Phi = r_i + A_i s_i - r_j - A_j s_j (2 rows)."""
    return list(pl.point(i, si) - pl.point(j, sj))


def prismatic(
    pl: Planar, i: int | None, si: list, j: int | None, sj: list, axis: list, angle: sp.Expr
) -> list[sp.Expr]:
    """Translational joint along ``axis`` (a vector in body j's frame) through the points:

    n_j^T (P_i - P_j) = 0 with n_j = A_j [-a_y, a_x] (P_i stays on the line of P_j along
    the axis) and theta_i - theta_j - angle = 0 (no relative rotation); Haug 1989, 3.3.
    """
    nj = rotation(pl.angle(j)) * sp.Matrix([-axis[1], axis[0]])
    d = pl.point(i, si) - pl.point(j, sj)
    return [(nj.T * d)[0], pl.angle(i) - pl.angle(j) - angle]


def fixed(
    pl: Planar, i: int | None, si: list, j: int | None, sj: list, angle: sp.Expr
) -> list[sp.Expr]:
    """Weld: the points coincide and theta_i - theta_j = angle (3 rows)."""
    return [*revolute(pl, i, si, j, sj), pl.angle(i) - pl.angle(j) - angle]
