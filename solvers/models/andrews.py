"""Andrews' squeezing mechanism (seven bodies), relative coordinates
(docs/explanation/models.md#andrews).

The IVP Test Set problem "andrews": seven rigid bodies, no gravity, driven by the
constant torque ``mom`` on the crank angle beta and loaded by the spring c0 between the
fixed point C and point D of body 3. Coordinates (radians)

    q = (beta, Theta, gamma, Phi, delta, Omega, epsilon)

(Theta relative to beta; Phi + delta and Omega + epsilon appear as sums). Three loop
closures give m = 6 equations, 1 DOF. The mass matrix depends on Theta, Phi and Omega and
the forces include the matching velocity-dependent terms; docs/explanation/models.md#andrews gives
M, f, g, G and h = g_qq(qdot, qdot).

Sign convention: the test set writes M qddot = f - G^T lambda, G qddot + h = 0; with the
contract's ``M a + phi_q^T lam = Q``, ``phi_q a = gamma`` this is Q = f, phi_q = G,
gamma = -h, and the multipliers coincide with the test set's lambda.

Energy: E = 1/2 qdot^T M qdot + c0 (L - l0)^2 / 2 (L the spring length); the drive
power is mom * beta_dot, so E - E0 - W stays zero (docs/explanation/models.md#andrews).

References
----------
docs/explanation/models.md#andrews (parameters, equations, consistent initial values);
Hairer & Wanner, *Solving ODEs II*, sect. VII.7; Mazzia & Magherini, *Test Set for IVP
Solvers*, release 2.4 (problem "andrews", Fortran ``andrews.F``: ``andfunc``);
Schiehlen (ed.), *Multibody Systems Handbook*, 1990 (Giles 1978, Manning 1981).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity
from mbstudy.solvers.spec import ModelSpec, Param
from numba import njit

# Published consistent initial positions (docs/explanation/models.md#andrews [V2: TS-F, deTestSet,
# SciML, MEBDFI-drv]); the velocities are zero.
_Q0_PUBLISHED = np.array(
    [
        -0.0617138900142764496358948458001,
        0.0,
        0.455279819163070380255912382449,
        0.222668390165885884674473185609,
        0.487364979543842550225598953530,
        -0.222668390165885884674473185609,
        1.23054744454982119249735015568,
    ]
)

_MASSES = (0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498)
_INERTIAS = (2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5)
_GEOMETRY = (
    ("xa", -0.06934, "x of fixed point A (m)"),
    ("ya", -0.00227, "y of fixed point A (m)"),
    ("xb", -0.03635, "x of fixed point B (m)"),
    ("yb", 0.03273, "y of fixed point B (m)"),
    ("xc", 0.014, "x of spring anchor C (m)"),
    ("yc", 0.072, "y of spring anchor C (m)"),
)
_LOADS = (
    Param("c0", 4530.0, "spring stiffness (N/m)", nonnegative=True),
    Param("l0", 0.07785, "spring rest length (m)", positive=True),
    Param("mom", 0.033, "driving torque on beta (N m)"),
)
_LENGTHS = (
    ("d", 0.028), ("da", 0.0115), ("e", 0.02), ("ea", 0.01421), ("rr", 0.007),
    ("ra", 0.00092), ("ss", 0.035), ("sa", 0.01874), ("sb", 0.01043), ("sc", 0.018),
    ("sd", 0.02), ("ta", 0.02308), ("tb", 0.00916), ("u", 0.04), ("ua", 0.01228),
    ("ub", 0.00449), ("zf", 0.02), ("zt", 0.04), ("fa", 0.01421),
)  # fmt: skip

SPEC = ModelSpec(
    name="andrews",
    summary="Andrews' squeezing mechanism, IVP Test Set (7 coordinates, 6 constraints, driven)",
    params=(
        *(
            Param(f"m{k + 1}", val, f"mass of body {k + 1} (kg)", positive=True)
            for k, val in enumerate(_MASSES)
        ),
        *(
            Param(f"I{k + 1}", val, f"moment of inertia of body {k + 1} (kg m^2)", positive=True)
            for k, val in enumerate(_INERTIAS)
        ),
        *(Param(name, val, meaning) for name, val, meaning in _GEOMETRY),
        *_LOADS,
        *(
            Param(name, val, f"geometry length {name} of docs/explanation/models.md#andrews (m)")
            for name, val in _LENGTHS
        ),
        Param("beta0", float(_Q0_PUBLISHED[0]), "initial crank angle beta (rad)"),
    ),
    t_end=0.03,
    conservative=False,
    driven=True,
    constant_mass=False,
    reference={"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14},
    source="docs/explanation/models.md#andrews (IVP Test Set 'andrews'; Hairer & Wanner II, VII.7)",
    # the closures g1..g6 of the IVP Test Set: the loop through point B, then the two
    # loops that close at the fixed point A (x and y rows each)
    coordinate_labels=(
        "body1.beta", "body2.Theta", "body3.gamma", "body4.Phi", "body5.delta", "body6.Omega",
        "body7.epsilon"
    ),
    constraint_labels=(
        "loop1-B.x", "loop1-B.y", "loop2-A.x", "loop2-A.y", "loop3-A.x", "loop3-A.y"
    ),
    regular_mass=True,  # M(q) is positive definite (hermite inverts it)
)

_NAMES = tuple(prm.name for prm in SPEC.params)
_DEFAULTS = np.array([float(prm.default) for prm in SPEC.params])  # type: ignore[arg-type]

# parameter vector slots (order of SPEC.params)
_M1 = 0  # m1..m7 at 0..6
_I1 = 7  # I1..I7 at 7..13
(_XA, _YA, _XB, _YB, _XC, _YC, _C0, _L0, _MOM,
 _D, _DA, _E, _EA, _RR, _RA, _SS, _SA, _SB, _SC, _SD, _TA, _TB, _U, _UA, _UB, _ZF, _ZT, _FA,
 _BETA0) = range(14, 43)  # fmt: skip
assert _NAMES[_XA] == "xa" and _NAMES[_FA] == "fa" and _NAMES[_BETA0] == "beta0"


@njit(cache=True)
def sizes(p):
    """Return (n, m) = (7, 6)."""
    return 7, 6


@njit(cache=True)
def _mass_entries(q, p):
    """Return the ten distinct non-zero entries of M(q) (docs/explanation/models.md#andrews).

    Order: M11, M21, M22, M33, M44, M54, M55, M66, M76, M77.
    """
    m1, m2, m3, m4, m5, m6, m7 = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
    i1, i2, i3, i4, i5, i6, i7 = p[7], p[8], p[9], p[10], p[11], p[12], p[13]
    da, e, ea, rr, ra = p[_DA], p[_E], p[_EA], p[_RR], p[_RA]
    sa, sb, ta, tb = p[_SA], p[_SB], p[_TA], p[_TB]
    u, ua, ub, zf, zt, fa = p[_U], p[_UA], p[_UB], p[_ZF], p[_ZT], p[_FA]
    cth = np.cos(q[1])
    sphi = np.sin(q[3])
    som = np.sin(q[5])
    ee = e - ea
    zz = zf - fa
    m11 = m1 * ra * ra + m2 * (rr * rr - 2.0 * da * rr * cth + da * da) + i1 + i2
    m21 = m2 * (da * da - da * rr * cth) + i2
    m22 = m2 * da * da + i2
    m33 = m3 * (sa * sa + sb * sb) + i3
    m44 = m4 * ee * ee + i4
    m54 = m4 * (ee * ee + zt * ee * sphi) + i4
    m55 = m4 * (zt * zt + 2.0 * zt * ee * sphi + ee * ee) + m5 * (ta * ta + tb * tb) + i4 + i5
    m66 = m6 * zz * zz + i6
    m76 = m6 * (zz * zz - u * zz * som) + i6
    m77 = m6 * (zz * zz - 2.0 * u * zz * som + u * u) + m7 * (ua * ua + ub * ub) + i6 + i7
    return m11, m21, m22, m33, m44, m54, m55, m66, m76, m77


@njit(cache=True)
def mass(q, p, M):
    """Fill M(q) of docs/explanation/models.md#andrews (depends on Theta, Phi, Omega)."""
    m11, m21, m22, m33, m44, m54, m55, m66, m76, m77 = _mass_entries(q, p)
    M[:, :] = 0.0
    M[0, 0] = m11
    M[1, 0] = m21
    M[0, 1] = m21
    M[1, 1] = m22
    M[2, 2] = m33
    M[3, 3] = m44
    M[4, 3] = m54
    M[3, 4] = m54
    M[4, 4] = m55
    M[5, 5] = m66
    M[6, 5] = m76
    M[5, 6] = m76
    M[6, 6] = m77


@njit(cache=True)
def _spring(q, p):
    """Return (xd - xc, yd - yc, L, F) of the spring C-D (docs/explanation/models.md#andrews)."""
    cg, sg = np.cos(q[2]), np.sin(q[2])
    sc, sd = p[_SC], p[_SD]
    xd = sd * cg + sc * sg + p[_XB]
    yd = sd * sg - sc * cg + p[_YB]
    dx = xd - p[_XC]
    dy = yd - p[_YC]
    L = np.sqrt(dx * dx + dy * dy)
    # D on C: the spring direction is undefined; NaN (not a ZeroDivisionError) so that a
    # kernel reports a status instead of raising
    F = -p[_C0] * (L - p[_L0]) / L if L > 0.0 else np.nan
    return dx, dy, L, F


@njit(cache=True)
def forces(q, v, t, p, Q):
    """Fill Q = f of docs/explanation/models.md#andrews: drive torque, spring, velocity-dependent
    terms."""
    m2, m4, m6 = p[1], p[3], p[5]
    da, e, ea, rr = p[_DA], p[_E], p[_EA], p[_RR]
    sc, sd = p[_SC], p[_SD]
    u, zf, zt, fa = p[_U], p[_ZF], p[_ZT], p[_FA]
    bd, thd, phd, dld, omd, epd = v[0], v[1], v[3], v[4], v[5], v[6]
    sth = np.sin(q[1])
    cphi = np.cos(q[3])
    com = np.cos(q[5])
    cg, sg = np.cos(q[2]), np.sin(q[2])
    dx, dy, _, F = _spring(q, p)
    fx = F * dx
    fy = F * dy
    Q[0] = p[_MOM] - m2 * da * rr * thd * (thd + 2.0 * bd) * sth
    Q[1] = m2 * da * rr * bd * bd * sth
    Q[2] = fx * (sc * cg - sd * sg) + fy * (sd * cg + sc * sg)
    Q[3] = m4 * zt * (e - ea) * dld * dld * cphi
    Q[4] = -m4 * zt * (e - ea) * phd * (phd + 2.0 * dld) * cphi
    Q[5] = -m6 * u * (zf - fa) * epd * epd * com
    Q[6] = m6 * u * (zf - fa) * omd * (omd + 2.0 * epd) * com


@njit(cache=True)
def _trig(q):
    """Sines and cosines of the seven angles the constraints use (computed once by
    :func:`constraint_terms`, once per function otherwise)."""
    b, th, ga, ph, de, om, ep = q[0], q[1], q[2], q[3], q[4], q[5], q[6]
    return (
        np.sin(b), np.cos(b), np.sin(b + th), np.cos(b + th), np.sin(ga), np.cos(ga),
        np.sin(ph + de), np.cos(ph + de), np.sin(de), np.cos(de),
        np.sin(om + ep), np.cos(om + ep), np.sin(ep), np.cos(ep),
    )  # fmt: skip


@njit(cache=True)
def _fill_phi(p, tr, out):
    d, e, rr, ss, u, zf, zt = p[_D], p[_E], p[_RR], p[_SS], p[_U], p[_ZF], p[_ZT]
    sb, cb, sbt, cbt, sg, cg, spd, cpd, sd, cd, soe, coe, se, ce = tr
    cx = rr * cb - d * cbt
    cy = rr * sb - d * sbt
    out[0] = cx - ss * sg - p[_XB]
    out[1] = cy + ss * cg - p[_YB]
    out[2] = cx - e * spd - zt * cd - p[_XA]
    out[3] = cy + e * cpd - zt * sd - p[_YA]
    out[4] = cx - zf * coe - u * se - p[_XA]
    out[5] = cy - zf * soe + u * ce - p[_YA]


@njit(cache=True)
def _fill_phi_q(p, tr, out):
    d, e, rr, ss, u, zf, zt = p[_D], p[_E], p[_RR], p[_SS], p[_U], p[_ZF], p[_ZT]
    sb, cb, sbt, cbt, sg, cg, spd, cpd, sd, cd, soe, coe, se, ce = tr
    out[:, :] = 0.0
    for r in range(3):
        out[2 * r, 0] = -rr * sb + d * sbt
        out[2 * r, 1] = d * sbt
        out[2 * r + 1, 0] = rr * cb - d * cbt
        out[2 * r + 1, 1] = -d * cbt
    out[0, 2] = -ss * cg
    out[1, 2] = -ss * sg
    out[2, 3] = -e * cpd
    out[2, 4] = -e * cpd + zt * sd
    out[3, 3] = -e * spd
    out[3, 4] = -e * spd - zt * cd
    out[4, 5] = zf * soe
    out[4, 6] = zf * soe - u * ce
    out[5, 5] = -zf * coe
    out[5, 6] = -zf * coe - u * se


@njit(cache=True)
def _fill_gamma(v, p, tr, out):
    d, e, rr, ss, u, zf, zt = p[_D], p[_E], p[_RR], p[_SS], p[_U], p[_ZF], p[_ZT]
    sb, cb, sbt, cbt, sg, cg, spd, cpd, sd, cd, soe, coe, se, ce = tr
    bd, thd, gad, phd, ded, omd, epd = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
    bb = bd * bd
    bt = (bd + thd) * (bd + thd)
    hx = -rr * cb * bb + d * cbt * bt
    hy = -rr * sb * bb + d * sbt * bt
    pd2 = (phd + ded) * (phd + ded)
    oe2 = (omd + epd) * (omd + epd)
    out[0] = -(hx + ss * sg * gad * gad)
    out[1] = -(hy - ss * cg * gad * gad)
    out[2] = -(hx + e * spd * pd2 + zt * cd * ded * ded)
    out[3] = -(hy - e * cpd * pd2 + zt * sd * ded * ded)
    out[4] = -(hx + zf * coe * oe2 + u * se * epd * epd)
    out[5] = -(hy + zf * soe * oe2 - u * ce * epd * epd)


@njit(cache=True)
def phi(q, t, p, out):
    """The three loop closures g1..g6 of docs/explanation/models.md#andrews."""
    _fill_phi(p, _trig(q), out)


@njit(cache=True)
def phi_q(q, t, p, out):
    """Fill G = dg/dq (6 x 7) of docs/explanation/models.md#andrews."""
    _fill_phi_q(p, _trig(q), out)


@njit(cache=True)
def phi_t(q, t, p, out):
    """Scleronomic constraints (the drive is a torque): dPhi/dt = 0."""
    out[:] = 0.0


@njit(cache=True)
def gamma(q, v, t, p, out):
    """gamma = -h of docs/explanation/models.md#andrews (h = g_qq(qdot, qdot))."""
    _fill_gamma(v, p, _trig(q), out)


@njit(cache=True)
def constraint_terms(q, v, t, p, ph, G, pt, gam):
    """:func:`phi`, :func:`phi_q`, :func:`phi_t` and :func:`gamma` in one pass, sharing the
    seven angles' sines and cosines (the optional fused model function,
    docs/explanation/solver-contract.md): the same fill functions on one :func:`_trig`, so the
    results are identical (tests/models/test_constraint_terms.py)."""
    tr = _trig(q)
    _fill_phi(p, tr, ph)
    _fill_phi_q(p, tr, G)
    pt[:] = 0.0
    _fill_gamma(v, p, tr, gam)


@njit(cache=True)
def energy(q, v, t, p):
    """Kinetic energy 1/2 qdot^T M qdot plus spring energy c0 (L - l0)^2 / 2 (no gravity)."""
    m11, m21, m22, m33, m44, m54, m55, m66, m76, m77 = _mass_entries(q, p)
    t_kin = (m11 * v[0] * v[0] + 2.0 * m21 * v[0] * v[1] + m22 * v[1] * v[1]
             + m33 * v[2] * v[2]
             + m44 * v[3] * v[3] + 2.0 * m54 * v[3] * v[4] + m55 * v[4] * v[4]
             + m66 * v[5] * v[5] + 2.0 * m76 * v[5] * v[6] + m77 * v[6] * v[6])  # fmt: skip
    _, _, L, _ = _spring(q, p)
    return 0.5 * t_kin + 0.5 * p[_C0] * (L - p[_L0]) ** 2


@njit(cache=True)
def power(q, v, t, p):
    """Power of the drive torque: mom * beta_dot."""
    return p[_MOM] * v[0]


def angle_mask(p: np.ndarray) -> np.ndarray:
    """All seven coordinates are angles."""
    return np.ones(7, dtype=bool)


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Consistent (q0, v0 = 0).

    With the default parameters this is exactly the published state of
    docs/explanation/models.md#andrews (max|g(q0)| = 1.4e-17). Otherwise Newton
    (``solvers.assembly.assemble``) solves g(q) = 0 for Theta..epsilon with beta = ``beta0`` fixed,
    starting at the published state (so it stays on the published assembly branch for moderate
    changes).

    Raises
    ------
    AssemblyError
        If the loops cannot be closed with these parameters.
    """
    v = np.zeros(7)
    if np.array_equal(np.asarray(p, dtype=float), _DEFAULTS):
        return _Q0_PUBLISHED.copy(), v
    q = _Q0_PUBLISHED.copy()
    q[0] = p[_BETA0]
    try:
        q = assemble(phi, phi_q, q, np.array([0]), p, 6)
    except AssemblyError as exc:
        raise AssemblyError(f"andrews: {exc} (geometry or beta0 admits no closed loops)") from None
    return q, assemble_velocity(phi_q, phi_t, q, v, np.array([0]), p, 6)


__all__ = ["SPEC", "AssemblyError", "angle_mask", "initial_state"]
