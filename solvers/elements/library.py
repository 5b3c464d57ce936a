"""The element library: element types, their equations and one jitted evaluator.

Every element of a network (seed 003 §2.9–2.12) is a component model: from its
parameters and the current potential variables of its nodes (x, v = dx/dt, a = dv/dt)
it returns its *flow vector* ``F`` ("the forces acting from the system on the
element", seed 003 §2.2, §2.11) and its Jacobian of shape N × N × 3, stored here as
three N × N matrices ``Jx = dF/dx``, ``Jv = dF/dv``, ``Ja = dF/da``
(docs/explanation/methods.md#network-elements).
The integrator never sees the physics: it only balances flows at nodes (topological
equation (2.16)), so one integrator serves every domain whose flows balance at nodes.

Data layout (what numba loops over)
-----------------------------------
A network is three arrays, never per-element Python objects (``assembly.py``):

``etype``   int64 (n_el,)          type id of each element (``T_K``, ``T_MUNL``, ...)
``enodes``  int64 (n_el, 2)        free-DOF index of each element node; ``BASE_DOF`` (-1)
                                   for a BASE node (x = v = a = 0), ``NO_NODE`` (-2) for an
                                   unused slot (one-node elements)
``eparams`` float64 (n_el, 3)      parameters in the order of :data:`ELEMENT_TYPES`
                                   ``[code].params``, padded with zeros

:func:`element_eval` dispatches on the type id. Adding an element = one
:class:`ElementType` entry in :data:`ELEMENT_TYPES` plus one branch in
:func:`element_eval`; the finite-difference test of ``tests/elements`` runs over the
whole table, so an element without a correct Jacobian cannot go unnoticed.

Element table (node order n1 n2; flows F1, F2 on n1, n2; d_x = x1 - x2, d_v = v1 - v2,
d_a = a1 - a2; for every two-node element F2 = -F1, so flow is conserved)

=====  ====================  =========================================================
code   params                F1 (flow from the system on the element at n1)
=====  ====================  =========================================================
K      k                     k d_x                          linear spring (seed 003)
D      d                     d d_v                          linear damper
MUNL   mu                    -mu s|s|, s = v2 - v1          nonlinear damper (seed 003)
M      m        (one node)   m a1                           point mass (seed 003)
FCON   F                     -F                             constant force on n1
FSTEP  F, t0                 -F H(t - t0), H(0) = 1         force step on n1
FSIN   Q, T, phi0=0          -Q sin(2 pi t / T + phi0)      sine force on n1 (seed 003)
KR     k                     k d_x                          torsional spring (x = angle)
DR     d                     d d_v                          rotational damper
J      J        (one node)   J a1                           rotational inertia
TCON   Mt                    -Mt                            constant torque on n1
TSTEP  Mt, t0                -Mt H(t - t0)                  torque step on n1
TSIN   Q, T, phi0=0          -Q sin(2 pi t / T + phi0)      sine torque on n1
R      R                     d_v / R                        resistor
L      L, i0=0               d_x / L + i0                   inductor
C      C                     C d_a                          capacitor
ICON   I                     -I                             current source into n1
ISTEP  I, t0                 -I H(t - t0)                   current step into n1
ISIN   Q, T, phi0=0          -Q sin(2 pi t / T + phi0)      sine current into n1
=====  ====================  =========================================================

Sources: a *negative* flow at n1 means the source pushes flow *into* node n1 (a force
+F on the body at n1, a current +I injected into n1), with the reaction on n2. This is
the seed's sign: ``FSIN (2 1; Q, T, phi0)`` gives F_c = -Q sin(2 pi t/T) at node 2
(seed 003 §2.14, F_c = -40.6 at t = 4.068e-3).

Electrical domain (force–current or "mobility" analogy, [I]): the node's flow is the
current, ``v`` is the node voltage, ``x = ∫ v dt`` the flux linkage and ``a = dv/dt``. A
resistor is then a linear damper (conductance 1/R), an inductor a spring (1/L, i0 its
initial current), a capacitor a two-node inertia; Kirchhoff's current law is the
topological equation (2.16).

References
----------
Seed 003 (PRADIS tutorial) §2.6 (partial derivatives of the forces), §2.9 (element
models K, MUNL, M, FSIN), §2.11 (element inputs and outputs), §2.12 (spring (2.19)–(2.21));
docs/explanation/methods.md#network-elements (element library, assembly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mbstudy.solvers.spec import Param
from numba import njit

MAX_NODES = 2
"""Node slots per element in ``enodes``."""
MAX_PARAMS = 3
"""Parameter slots per element in ``eparams``."""
BASE_DOF = -1
"""``enodes`` entry of a BASE (fixed) node: x = v = a = 0, its equation removed."""
NO_NODE = -2
"""``enodes`` entry of an unused node slot."""

# Type ids (the jitted dispatch keys). Stable: they are data in ``etype`` arrays.
T_K = 0
T_D = 1
T_MUNL = 2
T_M = 3
T_FCON = 4
T_FSTEP = 5
T_FSIN = 6
T_KR = 7
T_DR = 8
T_J = 9
T_TCON = 10
T_TSTEP = 11
T_TSIN = 12
T_R = 13
T_L = 14
T_C = 15
T_ICON = 16
T_ISTEP = 17
T_ISIN = 18

# element_eval return codes
EVAL_OK = 0
EVAL_UNKNOWN = 1

_TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class ElementType:
    """Metadata of one element type (the Python side of the library).

    Attributes
    ----------
    code : the Latin code used in netlists (``K``, ``MUNL``, ...), as in seed 003 §2.9.
    type_id : the integer the jitted :func:`element_eval` dispatches on.
    n_nodes : number of nodes (each node carries one DOF).
    params : parameters in slot order; ``default=None`` means required.
    domain : ``translational``, ``rotational`` or ``electrical`` (documentation only; the
        core does not depend on it).
    source : True for sources (flow depends on t only, zero Jacobian). Sources do not
        connect nodes for the floating-node check.
    summary : one line for documentation.
    equation : F1 as text (see the module table).
    """

    code: str
    type_id: int
    n_nodes: int
    params: tuple[Param, ...]
    domain: str
    source: bool
    summary: str
    equation: str


def _p(name: str, meaning: str, default: float | None = None, positive: bool = False) -> Param:
    return Param(name, default, meaning, positive=positive)


_SIN_PARAMS = (
    _p("Q", "amplitude"),
    _p("T", "period (s)", positive=True),
    _p("phi0", "initial phase (rad)", default=0.0),
)

_TYPES = (
    ElementType("K", T_K, 2, (_p("k", "stiffness (N/m)"),), "translational", False,
                "linear spring", "k (x1 - x2)"),
    ElementType("D", T_D, 2, (_p("d", "viscous damping (N s/m)"),), "translational", False,
                "linear damper", "d (v1 - v2)"),
    ElementType("MUNL", T_MUNL, 2, (_p("mu", "quadratic damping (N s^2/m^2)"),),
                "translational", False, "nonlinear (quadratic) damper, seed 003",
                "-mu s|s|, s = v2 - v1"),
    ElementType("M", T_M, 1, (_p("m", "mass (kg)", positive=True),), "translational", False,
                "point mass (absolute acceleration)", "m a1"),
    ElementType("FCON", T_FCON, 2, (_p("F", "force on n1 (N)"),), "translational", True,
                "constant force", "-F"),
    ElementType("FSTEP", T_FSTEP, 2, (_p("F", "force on n1 for t >= t0 (N)"),
                                      _p("t0", "switch time (s)", default=0.0)),
                "translational", True, "force step", "-F H(t - t0)"),
    ElementType("FSIN", T_FSIN, 2, _SIN_PARAMS, "translational", True,
                "sinusoidal force, seed 003", "-Q sin(2 pi t / T + phi0)"),
    ElementType("KR", T_KR, 2, (_p("k", "torsional stiffness (N m/rad)"),), "rotational",
                False, "torsional spring", "k (phi1 - phi2)"),
    ElementType("DR", T_DR, 2, (_p("d", "rotational damping (N m s/rad)"),), "rotational",
                False, "rotational damper", "d (w1 - w2)"),
    ElementType("J", T_J, 1, (_p("J", "moment of inertia (kg m^2)", positive=True),),
                "rotational", False, "rotational inertia", "J eps1"),
    ElementType("TCON", T_TCON, 2, (_p("Mt", "torque on n1 (N m)"),), "rotational", True,
                "constant torque", "-Mt"),
    ElementType("TSTEP", T_TSTEP, 2, (_p("Mt", "torque on n1 for t >= t0 (N m)"),
                                      _p("t0", "switch time (s)", default=0.0)),
                "rotational", True, "torque step", "-Mt H(t - t0)"),
    ElementType("TSIN", T_TSIN, 2, _SIN_PARAMS, "rotational", True, "sinusoidal torque",
                "-Q sin(2 pi t / T + phi0)"),
    ElementType("R", T_R, 2, (_p("R", "resistance (ohm)", positive=True),), "electrical",
                False, "resistor", "(u1 - u2) / R"),
    ElementType("L", T_L, 2, (_p("L", "inductance (H)", positive=True),
                              _p("i0", "initial current n1 -> n2 (A)", default=0.0)),
                "electrical", False, "inductor", "(lambda1 - lambda2) / L + i0"),
    ElementType("C", T_C, 2, (_p("C", "capacitance (F)", positive=True),), "electrical",
                False, "capacitor", "C (du1/dt - du2/dt)"),
    ElementType("ICON", T_ICON, 2, (_p("I", "current into n1 (A)"),), "electrical", True,
                "constant current source", "-I"),
    ElementType("ISTEP", T_ISTEP, 2, (_p("I", "current into n1 for t >= t0 (A)"),
                                      _p("t0", "switch time (s)", default=0.0)),
                "electrical", True, "current step source", "-I H(t - t0)"),
    ElementType("ISIN", T_ISIN, 2, _SIN_PARAMS, "electrical", True,
                "sinusoidal current source", "-Q sin(2 pi t / T + phi0)"),
)

ELEMENT_TYPES: dict[str, ElementType] = {et.code: et for et in _TYPES}
"""Every element type, by netlist code."""

for _et in _TYPES:  # layout invariants the jitted code relies on
    assert 1 <= _et.n_nodes <= MAX_NODES and len(_et.params) <= MAX_PARAMS
assert sorted(et.type_id for et in _TYPES) == list(range(len(_TYPES)))


@njit(cache=True)
def _source_value(code, p, t):
    """Applied flow of a source at time t (into node n1)."""
    if code == T_FCON or code == T_TCON or code == T_ICON:
        return p[0]
    if code == T_FSTEP or code == T_TSTEP or code == T_ISTEP:
        return p[0] if t >= p[1] else 0.0
    # sine sources: Q sin(2 pi t / T + phi0), seed 003 §2.14 (F_c argument 2 pi t / T)
    return p[0] * math.sin(_TWO_PI * t / p[1] + p[2])


@njit(cache=True)
def _two_node(F, Jm, g, d):
    """Fill F = g d [1, -1] and Jm = g [[1, -1], [-1, 1]] (a conserving branch)."""
    F[0] = g * d
    F[1] = -g * d
    Jm[0, 0] = g
    Jm[0, 1] = -g
    Jm[1, 0] = -g
    Jm[1, 1] = g


@njit(cache=True)
def element_eval(code, p, xe, ve, ae, t, F, Jx, Jv, Ja):
    """Evaluate one element: its flow vector and its three Jacobians (seed 003 §2.11).

    Parameters
    ----------
    code : int
        Type id (``T_*``).
    p : (MAX_PARAMS,) float64
        The element's parameters in the slot order of its :class:`ElementType`.
    xe, ve, ae : (MAX_NODES,) float64
        Potential variable, its first and second time derivative at the element's nodes
        (zero for BASE nodes and unused slots).
    t : float
        Time (sources).
    F : (MAX_NODES,) float64, out
        Flows "from the system acting on the element" at its nodes (seed 003 §2.2).
    Jx, Jv, Ja : (MAX_NODES, MAX_NODES) float64, out
        dF/dx, dF/dv, dF/da (docs/explanation/methods.md#network-elements: J_e[:, :, 0..2]).

    Returns
    -------
    int
        ``EVAL_OK`` or ``EVAL_UNKNOWN`` (unknown type id; nothing meaningful is filled).
    """
    for i in range(MAX_NODES):
        F[i] = 0.0
        for j in range(MAX_NODES):
            Jx[i, j] = 0.0
            Jv[i, j] = 0.0
            Ja[i, j] = 0.0
    if code == T_K or code == T_KR:
        # spring (2.19)-(2.21): F = k [x1 - x2; x2 - x1]
        _two_node(F, Jx, p[0], xe[0] - xe[1])
    elif code == T_L:
        # inductor: i = (lambda1 - lambda2) / L + i0
        _two_node(F, Jx, 1.0 / p[0], xe[0] - xe[1])
        F[0] += p[1]
        F[1] -= p[1]
    elif code == T_D or code == T_DR:
        _two_node(F, Jv, p[0], ve[0] - ve[1])
    elif code == T_R:
        _two_node(F, Jv, 1.0 / p[0], ve[0] - ve[1])
    elif code == T_MUNL:
        # docs/explanation/methods.md#network-elements: F = mu s|s| [-1; 1], s = v2 - v1; dF2/dv2 =
        # 2 mu |s|
        s = ve[1] - ve[0]
        f2 = p[0] * s * abs(s)
        g = 2.0 * p[0] * abs(s)
        F[0] = -f2
        F[1] = f2
        Jv[0, 0] = g
        Jv[0, 1] = -g
        Jv[1, 0] = -g
        Jv[1, 1] = g
    elif code == T_M or code == T_J:
        # inertia force F = m a, dF/da = m (seed 003 §2.14)
        F[0] = p[0] * ae[0]
        Ja[0, 0] = p[0]
    elif code == T_C:
        _two_node(F, Ja, p[0], ae[0] - ae[1])
    elif T_FCON <= code <= T_FSIN or T_TCON <= code <= T_TSIN or T_ICON <= code <= T_ISIN:
        val = _source_value(code, p, t)
        F[0] = -val
        F[1] = val
    else:
        return EVAL_UNKNOWN
    return EVAL_OK


def element_type(code: str) -> ElementType:
    """Return the :class:`ElementType` of a netlist code.

    Raises
    ------
    KeyError
        If ``code`` is not in :data:`ELEMENT_TYPES`.
    """
    return ELEMENT_TYPES[code]


def eval_element(
    code: str, params: np.ndarray, xe: np.ndarray, ve: np.ndarray, ae: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Python convenience around :func:`element_eval` for one element.

    Parameters
    ----------
    code : netlist code.
    params : the element's parameters (length <= MAX_PARAMS, defaults already filled).
    xe, ve, ae : values at the element's nodes (length ``n_nodes``).
    t : time.

    Returns
    -------
    F, Jx, Jv, Ja : arrays of shape (n, ), (n, n), (n, n), (n, n), n = ``n_nodes``.
    """
    et = ELEMENT_TYPES[code]
    n = et.n_nodes
    p = np.zeros(MAX_PARAMS)
    p[: len(params)] = params
    pad = np.zeros((3, MAX_NODES))
    for row, vals in enumerate((xe, ve, ae)):
        pad[row, :n] = np.asarray(vals, dtype=float)[:n]
    F = np.empty(MAX_NODES)
    Jx = np.empty((MAX_NODES, MAX_NODES))
    Jv = np.empty((MAX_NODES, MAX_NODES))
    Ja = np.empty((MAX_NODES, MAX_NODES))
    element_eval(et.type_id, p, pad[0], pad[1], pad[2], float(t), F, Jx, Jv, Ja)
    return F[:n].copy(), Jx[:n, :n].copy(), Jv[:n, :n].copy(), Ja[:n, :n].copy()
