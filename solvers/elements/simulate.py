"""``simulate``: run an element network with the seed-003 integrator (Python convenience).

For tests and notebooks: parse (if needed), build the arrays, set the initial state,
run :func:`solvers.elements.implicit.implicit_run`, and wrap the outputs. The jitted
kernels stay usable directly (arrays in, status out) for the registry wiring.

Initial state ([I]; the seed's start-up procedure is unknown,
docs/reference/elements.md#seed-inconsistencies): x and v
from the netlist's ``# INITIAL:`` section, overridden by ``x0`` / ``v0``, zero elsewhere;
``a0`` consistent with the flow balance at t0 (:func:`~solvers.elements.implicit.
consistent_acceleration`) when the inertias make df/da regular, else zero (``a0`` only
enters the first predictor, so a wrong a0 costs rejected first steps, not accuracy).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mbstudy.solvers.elements.assembly import Network, build_network
from mbstudy.solvers.elements.implicit import (
    IP_DELTA_F,
    IP_MAX_NEWTON,
    N_HIST,
    PARAMS,
    consistent_acceleration,
    implicit_run,
    new_counters,
    pack_implicit_params,
)
from mbstudy.solvers.elements.library import ELEMENT_TYPES, MAX_NODES, element_eval
from mbstudy.solvers.elements.netlist import Netlist, load_netlist, parse_netlist
from mbstudy.solvers.status import COUNTER_NAMES, OK, status_name


@dataclass(frozen=True)
class SimulationResult:
    """Outputs of :func:`simulate`.

    Attributes
    ----------
    network : the network that was run (arrays and netlist).
    t : (n_out,) output times.
    x, v, a : (n_out, n_dof) potential, rate and second rate at the free nodes (columns in
        ``network.nodes`` order). Rows after ``k_reached`` are NaN (failed runs).
    status : code of :mod:`solvers.status`; ``status_name`` its name.
    k_reached : last output row written.
    t_reached : time of the last accepted state.
    counters : ``steps``, ``rejected``, ``rhs_evals``, ``newton_iters``, ``jac_evals``, ...
    history : (n_steps, 5) accepted steps ``[t_i, dt_i, l_i, dt_rec, newton_iters]`` (the
        first ``history_rows`` steps).
    a0_consistent : whether a0 was solved from the flow balance (else a0 = 0 or given).
    params : integrator parameters used (defaults filled).
    wall_s : wall time of the kernel call (includes compilation on the first call).
    """

    network: Network
    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    a: np.ndarray
    status: int
    k_reached: int
    t_reached: float
    counters: dict[str, int]
    history: np.ndarray
    a0_consistent: bool
    params: dict[str, object] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True if the run reached t_end."""
        return self.status == OK

    @property
    def status_name(self) -> str:
        """Name of the status code (``ok``, ``step_floor``, ...)."""
        return status_name(self.status)

    def node(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (x, v, a) columns of one free node."""
        j = self.network.dof(name)
        return self.x[:, j], self.v[:, j], self.a[:, j]

    def flow(self, element: str) -> np.ndarray:
        """Return the element's flow vector at every output time, shape (n_out, n_nodes).

        E.g. the inductor current of an ``L`` element is ``flow('L1')[:, 0]``.
        """
        return element_flow(self.network, element, self.t, self.x, self.v, self.a)


def element_flow(
    network: Network, element: str, t: np.ndarray, x: np.ndarray, v: np.ndarray, a: np.ndarray
) -> np.ndarray:
    """Flows of one element at states ``(t[k], x[k], v[k], a[k])``, shape (len(t), n_nodes).

    Raises
    ------
    KeyError
        If there is no element called ``element``.
    """
    names = network.names
    if element not in names:
        raise KeyError(element)
    e = names.index(element)
    code = int(network.etype[e])
    n_nodes = ELEMENT_TYPES[network.netlist.elements[e].code].n_nodes
    t = np.atleast_1d(np.asarray(t, dtype=float))
    x, v, a = (np.atleast_2d(np.asarray(arr, dtype=float)) for arr in (x, v, a))
    out = np.full((t.size, n_nodes), np.nan)
    buf = np.zeros((3, MAX_NODES))
    F = np.empty(MAX_NODES)
    Jx = np.empty((MAX_NODES, MAX_NODES))
    Jv = np.empty_like(Jx)
    Ja = np.empty_like(Jx)
    for k in range(t.size):
        buf[:] = 0.0
        for j in range(MAX_NODES):
            d = int(network.enodes[e, j])
            if d >= 0:
                buf[:, j] = (x[k, d], v[k, d], a[k, d])
        element_eval(code, network.eparams[e], buf[0], buf[1], buf[2], t[k], F, Jx, Jv, Ja)
        out[k] = F[:n_nodes]
    return out


def _as_network(netlist: Netlist | Network | str | Path) -> Network:
    if isinstance(netlist, Network):
        return netlist
    if isinstance(netlist, Netlist):
        return build_network(netlist)
    if isinstance(netlist, Path) or (isinstance(netlist, str) and "\n" not in netlist):
        return build_network(load_netlist(netlist))
    return build_network(parse_netlist(netlist))


def simulate(
    netlist: Netlist | Network | str | Path,
    t_end: float,
    t_out: int | np.ndarray | None = None,
    params: Mapping[str, object] | None = None,
    *,
    t0: float = 0.0,
    x0: Mapping[str, float] | None = None,
    v0: Mapping[str, float] | None = None,
    a0: Mapping[str, float] | None = None,
    history_rows: int = 100_000,
) -> SimulationResult:
    """Integrate an element network from ``t0`` to ``t_end`` with the seed-003 scheme.

    Parameters
    ----------
    netlist : a Netlist, a Network (e.g. from ``Network.with_params``), a path to a netlist
        file, or netlist text (a string with a newline).
    t_end : end time.
    t_out : output times: an int n (``linspace(t0, t_end, n)``), an increasing array
        in [t0, t_end] ending at t_end, or None (just t0 and t_end).
    params : integrator parameters (:data:`solvers.elements.implicit.PARAMS`: delta_l, c,
        cap, dt0, dt_min, dt_max, delta_f, delta_z, max_newton, variable, max_steps).
    t0 : start time.
    x0, v0 : initial x and v per free node name (override ``# INITIAL:``).
    a0 : initial a per free node; if given for every node, no consistent a0 is solved.
    history_rows : capacity of the step-history array.

    Returns
    -------
    SimulationResult
        Solver failures are a status, never an exception.

    Raises
    ------
    NetlistError
        If the netlist text/file is invalid.
    ValueError
        For invalid integrator parameters, output times or initial-value node names.
    """
    net = _as_network(netlist)
    ip = pack_implicit_params(params)
    used = {prm.name: (params or {}).get(prm.name, prm.default) for prm in PARAMS}
    t0 = float(t0)
    t_end = float(t_end)
    if not t_end > t0:
        raise ValueError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    if t_out is None:
        times = np.array([t0, t_end])
    elif isinstance(t_out, int | np.integer):
        if int(t_out) < 2:
            raise ValueError("t_out as a count must be >= 2")
        times = np.linspace(t0, t_end, int(t_out))
    else:
        times = np.asarray(t_out, dtype=float).ravel()
        if times.size == 0 or np.any(np.diff(times) <= 0):
            raise ValueError("t_out must be a non-empty increasing array")
        if times[0] < t0 or not np.isclose(times[-1], t_end, rtol=1e-12, atol=0.0):
            raise ValueError("t_out must lie in [t0, t_end] and end at t_end")
        times[-1] = t_end
    n = net.n_dof
    x = np.zeros(n)
    v = np.zeros(n)
    a = np.zeros(n)
    for iv in net.netlist.initial:
        x[net.dof(iv.node)] = iv.x
        v[net.dof(iv.node)] = iv.v
    for arr, given, label in ((x, x0, "x0"), (v, v0, "v0"), (a, a0, "a0")):
        for node, val in (given or {}).items():
            if node not in net.nodes:
                raise ValueError(f"{label}: {node!r} is not a free node (free: {net.nodes})")
            arr[net.dof(node)] = float(val)
    cnt = new_counters()
    start = time.perf_counter()
    a0_consistent = False
    if not (a0 is not None and set(a0) >= set(net.nodes)):
        st = consistent_acceleration(net.etype, net.enodes, net.eparams, t0, x, v, a,
                                     ip[IP_DELTA_F], int(ip[IP_MAX_NEWTON]), cnt)
        a0_consistent = st == OK
    X = np.full((times.size, n), np.nan)
    V = np.full_like(X, np.nan)
    A = np.full_like(X, np.nan)
    hist = np.zeros((max(int(history_rows), 0), N_HIST))
    status, k, t_reached = implicit_run(net.etype, net.enodes, net.eparams, t0, x, v, a,
                                        times, ip, X, V, A, hist, cnt)
    wall = time.perf_counter() - start
    n_steps = int(min(cnt[0], hist.shape[0]))
    return SimulationResult(
        network=net,
        t=times,
        x=X,
        v=V,
        a=A,
        status=int(status),
        k_reached=int(k),
        t_reached=float(t_reached),
        counters={name: int(cnt[slot]) for slot, name in COUNTER_NAMES.items()},
        history=hist[:n_steps].copy(),
        a0_consistent=a0_consistent,
        params=used,
        wall_s=wall,
    )
