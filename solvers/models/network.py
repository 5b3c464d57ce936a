"""Model ``network``: a PRADIS element network read from a netlist file (seed 003).

Unlike the multibody models this one is not composed into a kernel module: its
equations are the element network of :mod:`solvers.elements` and it runs with the jitted
network kernel :func:`solvers.elements.implicit.implicit_run`. ``solvers.runner``
dispatches to :func:`run_network_case` / :func:`warm_kernel` for modules that define them,
so the pipeline needs no special case.

Study parameters
----------------
* ``netlist`` (required, in ``[model]``): path of the netlist file, relative to the study
  file's directory. The study validation resolves it to an absolute path (so workers in
  another directory find it; the absolute path is part of ``spec_hash``).
* element parameters ``model.ELEMENT.PARAM`` (TOML dotted keys; quote names that are not
  bare keys, e.g. ``model."Пружина".k``): fixed in ``[model]`` or ``[[runs]]``, or swept
  as ``model.ELEMENT.PARAM = [...]`` axes. They are validated against the parsed
  netlist (:func:`study_element_params`, :func:`unknown_element_param`).
* methods: integrator ``implicit`` with formulation ``none`` only, declared in ``SPEC``
  (``equations="element-network"``, which only ``implicit`` declares it runs, and
  ``forms=("index1-ode",)``: the network has no constraints) and decided by
  :func:`solvers.forms.incompatibility` like every other triple.

Outputs (:class:`solvers.runner.CaseResult`): ``Y = [x of the free nodes | v | W]`` with
W = NaN (the work of sources is not defined generically), n = free DOFs, m = 0; ``D`` has
the constraint levels 0, energy NaN (no element energy functions) and |u| = 0.
Accelerations at the output times are in ``extra["a"]``. ``angle_mask`` is all False:
every DOF's error goes to ``e_r`` / ``e_dr`` whatever its domain.

Parameter vector ``p``: the only registry parameter, ``netlist``, is a
:class:`NetlistParam` whose ``to_float`` interns the path and returns its index in a
per-process table, so ``sizes(p)``, ``angle_mask(p)`` and ``initial_state(p)`` work on
``pack_params(SPEC.params, model_params)`` like for the other models.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from mbstudy.solvers.elements.assembly import Network, build_network
from mbstudy.solvers.elements.implicit import (
    IP_DELTA_F,
    IP_MAX_NEWTON,
    N_HIST,
    consistent_acceleration,
    implicit_run,
    new_counters,
    pack_implicit_params,
)
from mbstudy.solvers.elements.netlist import load_netlist, parse_netlist
from mbstudy.solvers.loader import GENERATION_LOCK
from mbstudy.solvers.registry import closest, compatibility
from mbstudy.solvers.spec import ModelSpec, Param
from mbstudy.solvers.status import ERROR

N_DIAG = 5
_PATHS: list[str] = []


def _intern(path: str) -> int:
    if path not in _PATHS:
        _PATHS.append(path)
    return _PATHS.index(path)


@dataclass(frozen=True)
class NetlistParam(Param):
    """The ``netlist`` path parameter: encoded for ``p`` as an interned index."""

    def to_float(self, value: object) -> float:
        return float(_intern(str(value)))


SPEC = ModelSpec(
    name="network",
    summary="PRADIS element network from a netlist file (seed 003; integrator implicit)",
    params=(
        NetlistParam(
            "netlist", None, "netlist file, relative to the study file's directory", kind="str"
        ),
    ),
    t_end=1.0,
    conservative=False,
    driven=True,
    energy=False,  # elements define no energy functions: de_*, du_max declared absent
    constant_mass=True,
    # delta_l: the study validation replaces it by 1/1000 of the smallest delta_l of the
    # runs when [reference] does not set it (study_reference_defaults, used by
    # pipeline/study/network_section.py)
    reference={"integrator": "implicit", "formulation": "none", "delta_l": 1e-6},
    equations="element-network",
    forms=("index1-ode",),
    forms_reason="has no constraints",
    source="seed 003 §2; docs/explanation/methods.md#implicit; docs/reference/elements.md",
)



@lru_cache(maxsize=32)
def _load(path: str, mtime_ns: int, size: int) -> Network:
    with GENERATION_LOCK:  # the netlist's numbers are parsed with ast (solvers/loader.py)
        return build_network(load_netlist(path))


def load_network(path: str | Path) -> Network:
    """Parse and build the netlist file at ``path`` (cached by path and mtime).

    Raises
    ------
    OSError
        If the file cannot be read.
    solvers.elements.NetlistError
        If it is not a valid netlist.
    """
    path = str(path)
    st = Path(path).stat()
    return _load(path, st.st_mtime_ns, st.st_size)


#: The parameters the coordinate names depend on (solvers/model_labels.py).
LABEL_PARAMS = ("netlist",)


def coordinate_names_of(model_params: Mapping[str, object]) -> tuple[str, ...]:
    """Names of the coordinates of the network of ``model_params``: ``NODE.x`` for each
    free node of its netlist, in DOF order (free nodes numbered by first appearance in
    ``# STRUCTURE:``, :func:`solvers.elements.assembly.build_network`); empty when the
    netlist cannot be read (the caller then names them generically)."""
    path = model_params.get("netlist")
    if not isinstance(path, str | Path):
        return ()
    try:
        return tuple(f"{node}.x" for node in load_network(path).nodes)
    except Exception:
        return ()


def _path_of(p: np.ndarray) -> str:
    return _PATHS[int(p[0])]


def sizes(p: np.ndarray) -> tuple[int, int]:
    """(free DOFs, 0) of the netlist encoded in ``p``."""
    return load_network(_path_of(p)).n_dof, 0


def angle_mask(p: np.ndarray) -> np.ndarray:
    """All False: every DOF counts as a 'translational' coordinate (e_r, e_dr)."""
    return np.zeros(sizes(p)[0], dtype=bool)


def initial_state(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x0 and v0 from the netlist's ``# INITIAL:`` section (zero elsewhere)."""
    net = load_network(_path_of(p))
    return _initial(net)


def _initial(net: Network) -> tuple[np.ndarray, np.ndarray]:
    x = np.zeros(net.n_dof)
    v = np.zeros(net.n_dof)
    for iv in net.netlist.initial:
        x[net.dof(iv.node)] = iv.x
        v[net.dof(iv.node)] = iv.v
    return x, v


# ---------------------------------------------------------------------------------------
# study validation hooks (pipeline/study/network_section.py)


def _element_table(net: Network) -> list[tuple[str, str, tuple[Param, ...], tuple[float, ...]]]:
    return [(el.name, el.code, el.type.params, el.params) for el in net.netlist.elements]


def study_element_params(path: str | Path) -> dict[str, Param]:
    """``"ELEMENT.PARAM" -> Param`` for every element parameter of the netlist at ``path``.

    The Param keeps the element type's checks (e.g. m > 0); its default is the
    netlist's value.
    """
    out: dict[str, Param] = {}
    for name, code, params, values in _element_table(load_network(path)):
        for prm, val in zip(params, values, strict=False):
            out[f"{name}.{prm.name}"] = Param(
                f"{name}.{prm.name}",
                float(val),
                f"{code} {prm.meaning}",
                positive=prm.positive,
            )
    return out


def _describe(code: str, params: tuple[Param, ...]) -> str:
    return f"{code}: {', '.join(p.name for p in params) or 'no parameters'}"


def unknown_element_param(path: str | Path, key: str) -> str:
    """One-line message for a model key that is not ``ELEMENT.PARAM`` of the netlist."""
    table = _element_table(load_network(path))
    by_name = {name: (code, params) for name, code, params, _ in table}
    fname = Path(path).name
    elem, _, pname = key.rpartition(".")
    if not elem:  # a bare key: an element without a parameter, or a typo
        if key in by_name:
            code, params = by_name[key]
            return (
                f"{key!r} is an element; name one of its parameters, "
                f"model.{key}.PARAM ({_describe(code, params)})"
            )
        elem, pname = key, ""
    if elem not in by_name:
        hint = closest(elem, list(by_name))
        hint_txt = f"; did you mean {hint!r}?" if hint else ""
        listing = "; ".join(f"{n} ({_describe(c, ps)})" for n, (c, ps) in by_name.items())
        return f"unknown element {elem!r} of netlist {fname}{hint_txt} (elements: {listing})"
    code, params = by_name[elem]
    names = [p.name for p in params]
    hint = closest(pname, names)
    hint_txt = f"; did you mean {hint!r}?" if hint else ""
    return f"unknown parameter {pname!r} of element {elem}{hint_txt} ({_describe(code, params)})"


def study_reference_defaults(delta_ls: list[float]) -> dict[str, float]:
    """Default reference parameters given every delta_l the runs use: 1000x tighter."""
    if not delta_ls:
        return {}
    return {"delta_l": min(delta_ls) / 1000.0}


# ---------------------------------------------------------------------------------------
# running (solvers.runner dispatches here)


def network_from_params(model_params: Mapping[str, object]) -> Network:
    """The network of ``model_params`` (``netlist`` plus ``ELEMENT.PARAM`` overrides).

    Raises
    ------
    KeyError
        If ``netlist`` is missing or an element / parameter does not exist.
    OSError, NetlistError
        If the netlist cannot be read.
    """
    mp = dict(model_params)
    if "netlist" not in mp:
        raise KeyError("netlist")
    src = str(mp.pop("netlist"))
    net = load_network(src) if "\n" not in src else build_network(parse_netlist(src))
    per_element: dict[str, dict[str, float]] = {}
    for key, val in mp.items():
        elem, _, pname = key.rpartition(".")
        if not elem:
            raise KeyError(f"model parameter {key!r} is not ELEMENT.PARAM")
        per_element.setdefault(elem, {})[pname] = float(val)  # type: ignore[arg-type]
    for elem, values in per_element.items():
        net = net.with_params(elem, **values)
    return net


_WARM_NET = """# BASE: 0
# STRUCTURE:
k ' K (0 1; 1)
m ' M (1; 1)
f ' FSIN (1 0; 1, 1)
"""


def warm_kernel() -> None:
    """Compile (or load from numba's cache) the network kernels on a tiny network (one
    thread of the process at a time: solvers/loader.py, ``GENERATION_LOCK``)."""
    with GENERATION_LOCK:
        net = build_network(parse_netlist(_WARM_NET))
        _run(net, np.array([0.0, 1e-3]), pack_implicit_params({}), np.zeros(1), np.zeros(1))


def _run(net: Network, t_out: np.ndarray, ip: np.ndarray, x: np.ndarray, v: np.ndarray):
    n = net.n_dof
    x = np.array(x, dtype=float)
    v = np.array(v, dtype=float)
    a = np.zeros(n)
    cnt = new_counters()
    t0 = float(t_out[0])
    start = time.perf_counter()
    consistent_acceleration(
        net.etype, net.enodes, net.eparams, t0, x, v, a, ip[IP_DELTA_F], int(ip[IP_MAX_NEWTON]), cnt
    )
    X = np.full((t_out.size, n), np.nan)
    V = np.full_like(X, np.nan)
    A = np.full_like(X, np.nan)
    hist = np.zeros((0, N_HIST))
    st, k, _ = implicit_run(
        net.etype, net.enodes, net.eparams, t0, x, v, a, t_out, ip, X, V, A, hist, cnt
    )
    return int(st), int(k), X, V, A, cnt, time.perf_counter() - start


def run_network_case(
    formulation: str,
    integrator: str,
    *,
    t_end: float | None = None,
    samples: int = 301,
    model_params: dict | None = None,
    formulation_params: dict | None = None,
    integrator_params: dict | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
):
    """:func:`solvers.runner.run_case` for a network (same arguments and result type).

    Raises
    ------
    ValueError
        For methods other than implicit / none, or invalid integrator parameters.
    KeyError, OSError, NetlistError
        For a bad netlist or element parameter (bad input, not solver failure).
    """
    from mbstudy.solvers import runner  # runner imports the registry, which imports this module

    why = compatibility(SPEC.name, formulation, integrator)
    if why:
        raise ValueError(why)
    net = network_from_params(model_params or {})
    ip = pack_implicit_params(integrator_params or {})
    t_end = SPEC.t_end if t_end is None else float(t_end)
    t_out = runner.output_times(t_end, int(samples))
    x, v = _initial(net)
    if q0 is not None:
        x = np.asarray(q0, dtype=float)
    if v0 is not None:
        v = np.asarray(v0, dtype=float)
    info = runner.load_kernel.cache_info()
    kernel = runner.load_kernel("network", formulation, integrator)
    compile_s = kernel.compile_s if runner.load_kernel.cache_info().misses > info.misses else 0.0
    n = net.n_dof
    error = ""
    try:
        st, k, X, V, A, cnt, wall = _run(net, t_out, ip, x, v)
    except Exception as exc:  # a kernel must never raise; record it as data
        st, k, error, wall = ERROR, -1, f"{type(exc).__name__}: {exc}", 0.0
        X = V = A = np.full((t_out.size, n), np.nan)
        cnt = new_counters()
    Y = np.full((t_out.size, 2 * n + 1), np.nan)
    Y[:, :n] = X
    Y[:, n : 2 * n] = V
    D = np.full((t_out.size, N_DIAG), np.nan)
    D[: k + 1, 0:3] = 0.0
    D[: k + 1, 4] = 0.0
    if k < t_out.size - 1:
        Y[k + 1 :] = np.nan
    return runner.CaseResult(
        status=st,
        t=t_out,
        Y=Y,
        D=D,
        counters=cnt,
        k_reached=k,
        n=n,
        m=0,
        wall_s=wall,
        compile_s=compile_s,
        error=error,
        extra={"a": A, "nodes": net.nodes},
    )


__all__ = [
    "SPEC",
    "NetlistParam",
    "angle_mask",
    "initial_state",
    "load_network",
    "network_from_params",
    "run_network_case",
    "sizes",
    "study_element_params",
    "study_reference_defaults",
    "unknown_element_param",
    "warm_kernel",
]
