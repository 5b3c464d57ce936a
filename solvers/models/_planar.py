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
own non-zero entries (the caller zeroes the matrix first).

Kept deliberately small and stable: numba's disk cache of a model module does not
notice changes in the functions it imports from here (the generated kernel modules do,
their names hash all of ``solvers/``).

References
----------
Nikravesh, *Computer-Aided Analysis of Mechanical Systems*, 1988, ch. 5 (revolute joint
in planar absolute coordinates); Haug, *Computer Aided Kinematics and Dynamics of
Mechanical Systems*, 1989, sect. 3.3; docs/methods.md#equations-of-motion (gamma).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
