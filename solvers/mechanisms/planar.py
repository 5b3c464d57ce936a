"""Planar elements (``dimension = 2``): bodies, joints and torques in absolute or joint
coordinates.

A free body has ``q[k:k+3] = (x, y, theta)`` (k its offset in q): its centre of mass and
its angle from +x.
A point with body-frame coordinates ``s`` is at ``r + A(theta) s``, ``A`` the 2x2
rotation (Nikravesh 1988, ch. 5; Haug 1989, sect. 3.3). The ground has ``r = 0``,
``theta = 0``.

A hinged body (joint coordinates, ``hinge = [P, "parent.Q"]``) has one coordinate, its
angle ``phi`` relative to the parent's frame: theta = theta_parent + phi and
r = P_parent(Q) - A(theta) s_P (its point P sits on the parent's point Q). Its mass block
follows from T = 1/2 (m |rdot|^2 + J thetadot^2) with rdot = (dr/dq) qdot: the
contribution J_b^T diag(m, m, J) J_b, J_b = d(x, y, theta)/dq (Haug 1989, sect. 6.2;
relative coordinates as in the Andrews model of Hairer & Wanner II, VII.7).

Each function returns the constraint rows (sympy expressions) an element contributes;
the first point of a joint enters with a plus sign.
"""

from __future__ import annotations

import sympy as sp


def rotation(theta: sp.Expr) -> sp.Matrix:
    """A(theta) = [[cos, -sin], [sin, cos]]."""
    c, s = sp.cos(theta), sp.sin(theta)
    return sp.Matrix([[c, -s], [s, c]])


#: hinged body index -> (parent index or None for the ground, parent point s, own point s)
Hinges = dict[int, tuple[int | None, list[sp.Expr], list[sp.Expr]]]


class Planar:
    """Kinematics of planar bodies: absolute coordinates, or joint coordinates (hinged)."""

    ncoord = 3

    def __init__(
        self, q: list[sp.Symbol], offsets: list[int] | None = None, hinges: Hinges | None = None
    ) -> None:
        self.q = q
        self.offsets = offsets if offsets is not None else list(range(0, len(q), 3))
        self.hinges = hinges or {}
        self._pose: dict[int, tuple[sp.Matrix, sp.Expr]] = {}

    def pose(self, index: int) -> tuple[sp.Matrix, sp.Expr]:
        """(r, theta) of body ``index`` as expressions of q."""
        if index not in self._pose:
            k = self.offsets[index]
            if index in self.hinges:
                parent, s_parent, s_own = self.hinges[index]
                theta = self.angle(parent) + self.q[k]
                r = self.point(parent, s_parent) - rotation(theta) * sp.Matrix(s_own)
            else:
                r, theta = sp.Matrix(self.q[k : k + 2]), self.q[k + 2]
            self._pose[index] = (r, theta)
        return self._pose[index]

    def angle(self, index: int | None) -> sp.Expr:
        return sp.Integer(0) if index is None else self.pose(index)[1]

    def position(self, index: int | None) -> sp.Matrix:
        return sp.zeros(2, 1) if index is None else self.pose(index)[0]

    def point(self, index: int | None, s: list[sp.Expr]) -> sp.Matrix:
        """Global position r + A(theta) s of a body-frame point (ground: s itself)."""
        if index is None:
            return sp.Matrix(s)
        return self.position(index) + rotation(self.angle(index)) * sp.Matrix(s)

    def add_mass(self, M: sp.Matrix, index: int, m: sp.Expr, inertia: sp.Expr) -> None:
        """Add the body's inertia to M: diag(m, m, J) on a free body's (x, y, theta), or
        J_b^T diag(m, m, J) J_b (J_b = d(x, y, theta)/dq) for a hinged body."""
        if index not in self.hinges:
            k = self.offsets[index]
            for a, val in enumerate((m, m, inertia)):
                M[k + a, k + a] += val
            return
        r, theta = self.pose(index)
        Jb = sp.Matrix([r[0], r[1], theta]).jacobian(self.q)
        cols = [c for c in range(len(self.q)) if any(Jb[a, c] != 0 for a in range(3))]
        D = (m, m, inertia)
        for a in cols:
            for b in cols:
                M[a, b] += sum(D[k] * Jb[k, a] * Jb[k, b] for k in range(3))

    def normalization(self, index: int) -> list[sp.Expr]:
        return []

    def torque(self, index: int, tau: sp.Expr) -> dict[int, sp.Expr]:
        """Generalized force of a torque ``tau`` on body ``index``: tau dtheta/dq (its theta;
        for a hinged body the relative angles of the chain to the ground)."""
        theta = self.angle(index)
        return {k: tau * g for k, qk in enumerate(self.q) if (g := sp.diff(theta, qk)) != 0}

    def angular_velocity(self, index: int, v: list[sp.Symbol]) -> sp.Expr:
        """thetadot = (dtheta/dq) v."""
        theta = self.angle(index)
        return sum((sp.diff(theta, qk) * vk for qk, vk in zip(self.q, v, strict=True)),
                   sp.Integer(0))  # fmt: skip


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
