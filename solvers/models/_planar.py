"""Revolute joints between planar rigid bodies in absolute coordinates (shared helpers).

Body ``i`` has the coordinates ``q[3i:3i+3] = (x_i, y_i, th_i)``: the position of its
reference point (the centre of mass in every mbstudy model) and its angle from +x. A
point with body-fixed coordinates ``s = (sx, sy)`` sits at ``r_i + A(th_i) s`` with
``A`` the 2x2 rotation. A revolute joint between point ``s_i`` of body ``i`` and point
``s_j`` of body ``j`` gives two equations

    Phi = r_i + A_i s_i - r_j - A_j s_j = 0,

and a joint to the ground (``j < 0``) uses the fixed point ``(sxj, syj)`` in place of
``r_j + A_j s_j``. With ``B = dA/dth``:

    Phi_q : d/dr_i = I, d/dth_i = B_i s_i, d/dr_j = -I, d/dth_j = -B_j s_j;
    gamma = -(Phi_q v)_q v = A_i s_i thdot_i^2 - A_j s_j thdot_j^2.

The helpers write rows ``row`` and ``row + 1`` of the output; ``phi_q`` writes only its
own non-zero entries (the caller zeroes the matrix first). The ``*_axis`` variants are
for points on the bodies' x axes, s = (a, 0) (a bar's centre line; a fixed point
(a, 0)), and take the cosines and sines of both angles from the caller, so a model that
evaluates all joints at once computes each body's pair once (the four-bar's fused
``constraint_terms``) and no zero offset costs a multiplication.

Every body of the planar models is a uniform slender bar or a body given by its mass
``m`` and central inertia ``J`` (a bar of length ``l``: ``J = m l^2 / 12``), so the
mass matrix is diag(m, m, J) per body, gravity along -y puts ``-m g`` on its ``y``, and
its energy is ``m (xdot^2 + ydot^2) / 2 + J thdot^2 / 2 + m g y``
(:func:`body_mass`, :func:`body_gravity`, :func:`body_energy`).

The helpers are link-only units (solvers/compile_units.py): they are compiled only as part
of the model functions that call them, never into machine code of their own.

Kept deliberately small and stable: numba's disk cache of a model module does not
notice changes in the functions it imports from here (the generated kernel modules do,
their names hash all of ``solvers/``).

References
----------
Nikravesh, *Computer-Aided Analysis of Mechanical Systems*, 1988, ch. 5 (revolute joint
in planar absolute coordinates); Haug, *Computer Aided Kinematics and Dynamics of
Mechanical Systems*, 1989, sect. 3.3; docs/explanation/methods.md#equations-of-motion (gamma).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.compile_units import link_only


@link_only()
def bar_inertia(m, length):
    """Central moment of inertia m l^2 / 12 of a uniform slender bar."""
    return m * length * length / 12.0


@link_only()
def body_mass(M, b, m, inertia):
    """Write body ``b``'s diagonal block diag(m, m, J) of the mass matrix (the caller
    zeroes M first)."""
    M[3 * b, 3 * b] = m
    M[3 * b + 1, 3 * b + 1] = m
    M[3 * b + 2, 3 * b + 2] = inertia


@link_only()
def body_gravity(Q, b, m, g):
    """Write gravity -m g along -y on body ``b``'s y coordinate (the caller zeroes Q)."""
    Q[3 * b + 1] = -m * g


@link_only()
def body_energy(q, v, b, m, inertia, g, e):
    """Return ``e`` plus body ``b``'s kinetic energy (translation, then rotation) and its
    gravitational potential m g y, added in that order."""
    e += 0.5 * m * (v[3 * b] ** 2 + v[3 * b + 1] ** 2)
    e += 0.5 * inertia * v[3 * b + 2] ** 2
    e += m * g * q[3 * b + 1]
    return e


@link_only()
def rev_phi_axis(q, i, c, s, ai, j, cj, sj, aj, out, row):
    """Residual rows of a joint between the points (ai, 0) of body i and (aj, 0) of body
    j, both on the bodies' x axes (a bar's centre line), with (c, s) = (cos, sin) of th_i
    and (cj, sj) of th_j given; ``j < 0``: the fixed point (aj, 0). The terms of a zero
    y offset are left out, not multiplied by zero."""
    x = q[3 * i] + c * ai
    y = q[3 * i + 1] + s * ai
    if j >= 0:
        x -= q[3 * j] + cj * aj
        y -= q[3 * j + 1] + sj * aj
    else:
        x -= aj
    out[row] = x
    out[row + 1] = y


@link_only()
def rev_phi_q_axis(i, c, s, ai, j, cj, sj, aj, out, row):
    """Jacobian rows of :func:`rev_phi_axis` (non-zero entries only)."""
    out[row, 3 * i] = 1.0
    out[row + 1, 3 * i + 1] = 1.0
    out[row, 3 * i + 2] = -s * ai
    out[row + 1, 3 * i + 2] = c * ai
    if j >= 0:
        out[row, 3 * j] = -1.0
        out[row + 1, 3 * j + 1] = -1.0
        out[row, 3 * j + 2] = sj * aj
        out[row + 1, 3 * j + 2] = -(cj * aj)


@link_only()
def rev_gamma_axis(v, i, c, s, ai, j, cj, sj, aj, out, row):
    """gamma rows of :func:`rev_phi_axis`."""
    w = v[3 * i + 2] * v[3 * i + 2]
    gx = (c * ai) * w
    gy = (s * ai) * w
    if j >= 0:
        wj = v[3 * j + 2] * v[3 * j + 2]
        gx -= (cj * aj) * wj
        gy -= (sj * aj) * wj
    out[row] = gx
    out[row + 1] = gy


@link_only()
def rev_phi(q, i, sxi, syi, j, sxj, syj, out, row):
    """Fill ``out[row:row+2]`` with the revolute-joint residual (``j < 0``: ground)."""
    c, s = np.cos(q[3 * i + 2]), np.sin(q[3 * i + 2])
    x = q[3 * i] + c * sxi - s * syi
    y = q[3 * i + 1] + s * sxi + c * syi
    if j >= 0:
        cj, sj = np.cos(q[3 * j + 2]), np.sin(q[3 * j + 2])
        x -= q[3 * j] + cj * sxj - sj * syj
        y -= q[3 * j + 1] + sj * sxj + cj * syj
    else:
        x -= sxj
        y -= syj
    out[row] = x
    out[row + 1] = y


@link_only()
def rev_phi_q(q, i, sxi, syi, j, sxj, syj, out, row):
    """Write the non-zero Jacobian entries of the joint into rows ``row``, ``row + 1``."""
    c, s = np.cos(q[3 * i + 2]), np.sin(q[3 * i + 2])
    out[row, 3 * i] = 1.0
    out[row + 1, 3 * i + 1] = 1.0
    out[row, 3 * i + 2] = -s * sxi - c * syi
    out[row + 1, 3 * i + 2] = c * sxi - s * syi
    if j >= 0:
        cj, sj = np.cos(q[3 * j + 2]), np.sin(q[3 * j + 2])
        out[row, 3 * j] = -1.0
        out[row + 1, 3 * j + 1] = -1.0
        out[row, 3 * j + 2] = sj * sxj + cj * syj
        out[row + 1, 3 * j + 2] = -(cj * sxj - sj * syj)


@link_only()
def rev_gamma(q, v, i, sxi, syi, j, sxj, syj, out, row):
    """Fill ``out[row:row+2]`` with gamma = A_i s_i thdot_i^2 - A_j s_j thdot_j^2."""
    c, s = np.cos(q[3 * i + 2]), np.sin(q[3 * i + 2])
    w = v[3 * i + 2] * v[3 * i + 2]
    gx = (c * sxi - s * syi) * w
    gy = (s * sxi + c * syi) * w
    if j >= 0:
        cj, sj = np.cos(q[3 * j + 2]), np.sin(q[3 * j + 2])
        wj = v[3 * j + 2] * v[3 * j + 2]
        gx -= (cj * sxj - sj * syj) * wj
        gy -= (sj * sxj + cj * syj) * wj
    out[row] = gx
    out[row + 1] = gy
