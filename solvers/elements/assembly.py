"""Assembly of element contributions into the global residual and Jacobian.

The topological equation (seed 003 (2.16)) says that at every free node the flows of all
element branches connected to it sum to zero. With ``A_e`` the Boolean gather map from
the free DOFs to the element's DOFs (BASE DOFs are not in it: they carry x = v = a = 0
and their equations are removed, seed 003 §2.10), docs/explanation/methods.md#network-elements gives

    f(z)  = sum_e A_e^T F_e(A_e x, A_e v, A_e a, t)
    df/dz = sum_e A_e^T (c_x Jx_e + c_v Jv_e + c_a Ja_e) A_e

where ``z`` is the solution variable of the Newton iteration and ``c_x = dx/dz``,
``c_v = dv/dz``, ``c_a = da/dz`` are the chain-rule coefficients of the integration
formulas (docs/explanation/methods.md#implicit, seed 003 §2.4–2.5, (2.8))::

    a_i = (v_i - v_{i-1}) / dt,     x_i = x_{i-1} + (v_{i-1} + v_i) dt / 2

    z = x:  c_x = 1,         c_v = 2/dt,  c_a = 2/dt^2
    z = v:  c_x = dt/2,      c_v = 1,     c_a = 1/dt     (the seed's choice)
    z = a:  c_x = dt^2/2,    c_v = dt,    c_a = 1

Jitted kernels take the network as three arrays (``etype``, ``enodes``, ``eparams``; see
:mod:`solvers.elements.library`), so a sweep over parameter values changes data, never
code (docs/explanation/solver-contract.md). :func:`build_network` turns a
:class:`~solvers.elements.netlist. Netlist` into a :class:`Network` holding those arrays.

References
----------
Seed 003 §2.3–2.7 (residual, its derivative by the chain rule, (2.15)), §2.10–2.12;
docs/explanation/methods.md#network-elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mbstudy.solvers.elements.library import (
    BASE_DOF,
    ELEMENT_TYPES,
    EVAL_OK,
    MAX_NODES,
    MAX_PARAMS,
    NO_NODE,
    element_eval,
)
from mbstudy.solvers.elements.netlist import Netlist
from numba import njit

VAR_X = 0
"""Solution variable z = x (potential, e.g. displacement)."""
VAR_V = 1
"""Solution variable z = v (its rate, e.g. velocity; the seed's choice)."""
VAR_A = 2
"""Solution variable z = a (second rate, e.g. acceleration)."""
VARIABLES = ("x", "v", "a")
"""Names of the solution variables; index = ``VAR_*`` code."""


@dataclass(frozen=True)
class Network:
    """A netlist as arrays for the jitted kernels.

    Attributes
    ----------
    netlist : the source netlist.
    etype : (n_el,) int64 type ids.
    enodes : (n_el, MAX_NODES) int64 free-DOF indices (``BASE_DOF``, ``NO_NODE``).
    eparams : (n_el, MAX_PARAMS) float64 parameters.
    nodes : free node names; index = DOF.
    """

    netlist: Netlist
    etype: np.ndarray
    enodes: np.ndarray
    eparams: np.ndarray
    nodes: tuple[str, ...]

    @property
    def n_dof(self) -> int:
        """Number of free DOFs (one per free node)."""
        return len(self.nodes)

    @property
    def names(self) -> tuple[str, ...]:
        """Element names, in array order."""
        return tuple(el.name for el in self.netlist.elements)

    def dof(self, node: str) -> int:
        """Return the DOF index of a free node (KeyError for BASE or unknown nodes)."""
        try:
            return self.nodes.index(node)
        except ValueError:
            raise KeyError(node) from None

    def with_params(self, element: str, **values: float) -> Network:
        """Return a copy with some parameters of one element replaced (for sweeps, tests).

        Raises
        ------
        KeyError
            Unknown element or parameter name.
        """
        idx = self.names.index(element) if element in self.names else -1
        if idx < 0:
            raise KeyError(element)
        et = ELEMENT_TYPES[self.netlist.elements[idx].code]
        names = [p.name for p in et.params]
        ep = self.eparams.copy()
        for key, val in values.items():
            if key not in names:
                raise KeyError(f"{et.code} has no parameter {key!r} (parameters: {names})")
            ep[idx, names.index(key)] = float(val)
        return Network(self.netlist, self.etype, self.enodes, ep, self.nodes)

    def residual(self, t: float, x: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Return f = sum_e A_e^T F_e at one state, shape (n_dof,)."""
        f = np.empty(self.n_dof)
        J = np.empty((self.n_dof, self.n_dof))
        st = assemble(self.etype, self.enodes, self.eparams, float(t), _f(x), _f(v), _f(a),
                      0.0, 0.0, 0.0, f, J, False)
        if st != EVAL_OK:
            raise RuntimeError("unknown element type id in the network arrays")
        return f

    def jacobian(
        self, t: float, x: np.ndarray, v: np.ndarray, a: np.ndarray, cx: float, cv: float,
        ca: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return (f, df/dz) with chain-rule coefficients ``(cx, cv, ca)``
        (docs/explanation/methods.md#network-elements)."""
        f = np.empty(self.n_dof)
        J = np.empty((self.n_dof, self.n_dof))
        st = assemble(self.etype, self.enodes, self.eparams, float(t), _f(x), _f(v), _f(a),
                      float(cx), float(cv), float(ca), f, J, True)
        if st != EVAL_OK:
            raise RuntimeError("unknown element type id in the network arrays")
        return f, J


def _f(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def build_network(netlist: Netlist) -> Network:
    """Turn a checked netlist into the arrays the kernels loop over.

    BASE nodes get ``BASE_DOF``; free nodes are numbered in order of first appearance
    (``Netlist.free_nodes``); unused node and parameter slots are padded.
    """
    nodes = netlist.free_nodes
    index = {nd: i for i, nd in enumerate(nodes)}
    base = set(netlist.base)
    n_el = len(netlist.elements)
    etype = np.empty(n_el, dtype=np.int64)
    enodes = np.full((n_el, MAX_NODES), NO_NODE, dtype=np.int64)
    eparams = np.zeros((n_el, MAX_PARAMS))
    for e, el in enumerate(netlist.elements):
        etype[e] = ELEMENT_TYPES[el.code].type_id
        for j, nd in enumerate(el.nodes):
            enodes[e, j] = BASE_DOF if nd in base else index[nd]
        eparams[e, : len(el.params)] = el.params
    return Network(netlist, etype, enodes, eparams, nodes)


@njit(cache=True)
def chain_coefficients(var, dt):
    """Return (c_x, c_v, c_a) = (dx/dz, dv/dz, da/dz) for the solution variable ``var``.

    From a_i = (v_i - v_{i-1})/dt and x_i = x_{i-1} + (v_{i-1} + v_i) dt/2
    (docs/explanation/methods.md, implicit; seed 003 (2.8)). For z = v and dt = 2.63e-3 these are
    the seed's 1.315e-3 (printed 1.31e-3) and 380.2 (§2.13.1, §2.14).
    """
    if var == VAR_X:
        return 1.0, 2.0 / dt, 2.0 / (dt * dt)
    if var == VAR_A:
        return 0.5 * dt * dt, dt, 1.0
    return 0.5 * dt, 1.0, 1.0 / dt


@njit(cache=True)
def state_from_z(var, z, dt, x_prev, v_prev, x, v, a):
    """Fill (x, v, a) at the new time from the solution variable ``z``
    (docs/explanation/methods.md#implicit).

    Parameters
    ----------
    var : VAR_X, VAR_V or VAR_A.
    z : (n,) solution-variable values.
    dt : step size.
    x_prev, v_prev : (n,) state at the start of the step.
    x, v, a : (n,) out.
    """
    n = z.shape[0]
    for i in range(n):
        if var == VAR_X:
            x[i] = z[i]
            v[i] = 2.0 * (z[i] - x_prev[i]) / dt - v_prev[i]
        elif var == VAR_A:
            v[i] = v_prev[i] + z[i] * dt
            x[i] = x_prev[i] + 0.5 * (v_prev[i] + v[i]) * dt
        else:
            v[i] = z[i]
            x[i] = x_prev[i] + 0.5 * (v_prev[i] + z[i]) * dt
        a[i] = (v[i] - v_prev[i]) / dt if var != VAR_A else z[i]


@njit(cache=True)
def select_z(var, x, v, a, z):
    """Copy the solution variable (x, v or a) into ``z``."""
    if var == VAR_X:
        z[:] = x
    elif var == VAR_A:
        z[:] = a
    else:
        z[:] = v


@njit(cache=True)
def assemble(etype, enodes, eparams, t, x, v, a, cx, cv, ca, f, J, want_jac):
    """Assemble the residual f and (optionally) the Jacobian df/dz
    (docs/explanation/methods.md#network-elements).

    Parameters
    ----------
    etype, enodes, eparams : the network arrays (:mod:`solvers.elements.library`).
    t : time of the state.
    x, v, a : (n,) free-DOF state (BASE DOFs are not in it).
    cx, cv, ca : chain-rule coefficients (:func:`chain_coefficients`).
    f : (n,) out, residual = sum of element flows at each free node.
    J : (n, n) out (if ``want_jac``), df/dz = sum A^T (cx Jx + cv Jv + ca Ja) A.
    want_jac : fill J as well.

    Returns
    -------
    int
        ``EVAL_OK``, or the first non-OK code of :func:`element_eval`.
    """
    n = f.shape[0]
    for i in range(n):
        f[i] = 0.0
    if want_jac:
        for i in range(n):
            for j in range(n):
                J[i, j] = 0.0
    xe = np.zeros(MAX_NODES)
    ve = np.zeros(MAX_NODES)
    ae = np.zeros(MAX_NODES)
    Fe = np.zeros(MAX_NODES)
    Jx = np.zeros((MAX_NODES, MAX_NODES))
    Jv = np.zeros((MAX_NODES, MAX_NODES))
    Ja = np.zeros((MAX_NODES, MAX_NODES))
    for e in range(etype.shape[0]):
        for k in range(MAX_NODES):
            d = enodes[e, k]
            if d >= 0:
                xe[k] = x[d]
                ve[k] = v[d]
                ae[k] = a[d]
            else:  # BASE node (x = v = a = 0) or unused slot
                xe[k] = 0.0
                ve[k] = 0.0
                ae[k] = 0.0
        st = element_eval(etype[e], eparams[e], xe, ve, ae, t, Fe, Jx, Jv, Ja)
        if st != EVAL_OK:
            return st
        for k in range(MAX_NODES):
            dk = enodes[e, k]
            if dk < 0:  # equations of BASE nodes are removed
                continue
            f[dk] += Fe[k]
            if want_jac:
                for m in range(MAX_NODES):
                    dm = enodes[e, m]
                    if dm < 0:
                        continue
                    J[dk, dm] += cx * Jx[k, m] + cv * Jv[k, m] + ca * Ja[k, m]
    return EVAL_OK
