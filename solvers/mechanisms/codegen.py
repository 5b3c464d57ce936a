"""Write the derived model of a mechanism file as a generated ``@njit`` module.

The module meets the model contract (docs/solver-contract.md): ``sizes``, ``mass``,
``forces``, ``phi``, ``phi_q``, ``phi_t``, ``gamma``, ``energy``, ``power``, the fused
``constraint_terms``, ``initial_state``, ``angle_mask`` and ``SPEC``; besides them
``potential`` and ``forces_conservative`` (U and -dU/dq, for the checks). Every
``[parameters]`` entry is a slot of the runtime vector ``p``, so a sweep never
recompiles.

The four constraint functions and ``constraint_terms`` come from ONE common-subexpression
elimination (sympy ``cse``) of Phi, Phi_q, Phi_t and gamma together; each separate
function evaluates the subset of those intermediate assignments it needs, in the same
order, so the fused function equals the four bit for bit.

The file is written once into the kernel directory (:func:`solvers.compose.kernel_dir`)
as ``mbm_<hash>.py``, the hash covering the mechanism file's bytes, the normalization
mode of its Euler parameters and the generator's sources; a changed file, mode or
generator is a new module, never a stale cache. User text
reaches the generated source only through ``repr`` of strings and validated names.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType

import sympy as sp
from mbstudy.solvers.mechanisms.derive import ELEMENT_PARAMS, Derived, derive
from mbstudy.solvers.mechanisms.schema import GENERATOR_VERSION, read
from sympy.printing.pycode import PythonCodePrinter

_HERE = Path(__file__).resolve().parent
_MODULE_PREFIX = "mbstudy_mechanisms"
#: default [reference] of a mechanism file's studies
REFERENCE = {"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14}


class _Printer(PythonCodePrinter):
    """Python code with ``math`` functions and floats printed exactly (``repr``)."""

    def _print_Float(self, expr):
        return repr(float(expr))


_PRINTER = _Printer({"fully_qualified_modules": True, "standard": "python3"})


def _code(expr: sp.Expr) -> str:
    return _PRINTER.doprint(expr)


@cache
def generator_hash() -> str:
    """sha256 of the generator version and of this package's sources (16 hex digits)."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    h.update(sp.__version__.encode())
    for path in sorted(_HERE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def module_key(file_bytes: bytes, normalization: str = "constraint") -> str:
    """``mbm_<hash>``: the generated module's name for a mechanism file's content (its
    bytes or their sha256), the normalization mode and the generator."""
    h = hashlib.sha256(generator_hash().encode())
    h.update(file_bytes)
    h.update(f"\0normalization={normalization}".encode())
    return f"mbm_{h.hexdigest()[:20]}"


class _Cse:
    """One cse over named targets; emits the assignments a subset of targets needs."""

    def __init__(self, targets: list[tuple[str, sp.Expr]]) -> None:
        self.targets = targets
        exprs = [e for _, e in targets]
        self.repl, self.reduced = sp.cse(exprs, symbols=sp.numbered_symbols("c_"), order="none")
        self.index = {s: k for k, (s, _) in enumerate(self.repl)}

    def lines(self, select: list[int]) -> list[str]:
        """Code for targets ``select``: the needed intermediates (in cse order), then them."""
        need: set[int] = set()
        stack = [s for k in select for s in self.reduced[k].free_symbols if s in self.index]
        while stack:
            s = stack.pop()
            k = self.index[s]
            if k in need:
                continue
            need.add(k)
            stack += [x for x in self.repl[k][1].free_symbols if x in self.index]
        out = [f"{s} = {_code(e)}" for k, (s, e) in enumerate(self.repl) if k in need]
        out += [f"{self.targets[k][0]} = {_code(self.reduced[k])}" for k in select]
        return out


def _unpack(body: list[str], d: Derived) -> list[str]:
    """``q_3 = q[3]`` lines for the symbols the body uses."""
    text = "\n".join(body)
    out = []
    for name, syms in (("q", d.q), ("v", d.v), ("p", d.p)):
        for k, s in enumerate(syms):
            if _uses(text, str(s)):
                out.append(f"{s} = {name}[{k}]")
    return out


def _uses(text: str, name: str) -> bool:
    import re

    return re.search(rf"\b{re.escape(name)}\b", text) is not None


def _function(
    signature: str, doc: str, body: list[str], d: Derived, pre: list[str] | None = None
) -> str:
    lines = _unpack(body, d) + (pre or []) + body
    inner = "\n".join("    " + ln for ln in lines) if lines else "    pass"
    return f"@njit(cache=True)\ndef {signature}:\n    {doc!r}\n{inner}\n"


def _fill(targets: list[tuple[str, sp.Expr]]) -> list[str]:
    cse = _Cse(targets)
    return cse.lines(list(range(len(targets))))


def _scalar(expr: sp.Expr) -> list[str]:
    return [*_fill([("result", expr)]), "return result"]


def _param(name: str, default: float, element: bool) -> str:
    """``Param(...)`` source of a mechanism parameter (the element's with their meaning and
    sign condition)."""
    if element and name in ELEMENT_PARAMS:
        meaning, sign = ELEMENT_PARAMS[name]
        return f"Param({name!r}, {default!r}, {meaning!r}, {sign}=True)"
    return f"Param({name!r}, {default!r}, 'mechanism parameter')"


def generate_source(d: Derived, key: str) -> str:
    """The generated module's text for the derived model ``d`` (module name ``key``)."""
    mech = d.mech
    n, m = d.n, d.m
    summary = mech.summary or f"mechanism file {mech.name} ({n} coordinates, {m} constraints)"
    spatial = mech.dimension == 3
    element = spatial and mech.normalization == "element"
    if element:
        summary += f"; normalization element ({m} constraints)"
    header = [
        f'"""Generated from mechanism file {mech.name!r} (sha256 {mech.sha256}). Do not edit'
        ' (solvers/mechanisms/codegen.py)."""',
        "# ruff: noqa",
        "import math",
        "import numpy as np",
        "from numba import njit",
        "from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity",
        "from mbstudy.solvers.spec import ModelSpec, Param",
        "",
        f"KERNEL_KEY = {key!r}",
        f"FILE_SHA256 = {mech.sha256!r}",
        f"N_COORDS = {n}",
        f"N_CONSTRAINTS = {m}",
        f"ROW_LABELS = {tuple(d.row_labels)!r}",
        f"COORD_NAMES = {tuple(f'{b.name}.{c}' for b in mech.bodies for c in b.coords)!r}",
        "SINGULAR_MASS = " + repr(spatial and not element),
        f"NORMALIZATION = {(mech.normalization if spatial else None)!r}",
        f"GAUGE_DOF = {len(mech.bodies) if element else 0}",
        "SPEC = ModelSpec(",
        f"    name={mech.name!r},",
        f"    summary={summary!r},",
        "    params=(",
        *[f"        {_param(k, v, element)}," for k, v in mech.parameters.items()],
        "    ),",
        f"    t_end={mech.t_end!r},",
        f"    conservative={d.conservative!r},",
        f"    driven={(not d.conservative)!r},",
        f"    constant_mass={d.constant_mass!r},",
        f"    reference={REFERENCE!r},",
        f"    source={('mechanism file ' + mech.path.name)!r},",
        ")",
    ]
    parts = [
        "\n".join(header),
        _function("sizes(p)", f"Return (n, m) = ({n}, {m}).", [f"return {n}, {m}"], d),
    ]
    # mass matrix
    mt = [(f"M[{r}, {c}]", d.M[r, c]) for r in range(n) for c in range(n) if d.M[r, c] != 0]
    parts.append(_function("mass(q, p, M)", "Fill M(q).", _fill(mt), d, ["M[:, :] = 0.0"]))
    qt = [(f"Q[{r}]", e) for r, e in enumerate(d.Q) if e != 0]
    parts.append(
        _function(
            "forces(q, v, t, p, Q)",
            "Fill the applied generalized forces Q.",
            _fill(qt),
            d,
            ["Q[:] = 0.0"],
        )
    )
    qc = [(f"Q[{r}]", e) for r, e in enumerate(d.Q_conservative) if e != 0]
    parts.append(
        _function("forces_conservative(q, t, p, Q)", "Fill -dU/dq.", _fill(qc), d, ["Q[:] = 0.0"])
    )
    # constraints: one cse, subsets per function
    targets: list[tuple[str, sp.Expr]] = []
    groups: dict[str, list[int]] = {"ph": [], "G": [], "pt": [], "gam": []}
    for r, e in enumerate(d.phi):
        groups["ph"].append(len(targets))
        targets.append((f"ph[{r}]", e))
    for r in range(m):
        for c in range(n):
            if d.phi_q[r, c] != 0:
                groups["G"].append(len(targets))
                targets.append((f"G[{r}, {c}]", d.phi_q[r, c]))
    for r, e in enumerate(d.phi_t):
        groups["pt"].append(len(targets))
        targets.append((f"pt[{r}]", e))
    for r, e in enumerate(d.gamma):
        groups["gam"].append(len(targets))
        targets.append((f"gam[{r}]", e))
    cse = _Cse(targets)
    zero = {"G": ["G[:, :] = 0.0"]}
    for sig, grp, arg in (
        ("phi(q, t, p, ph)", "ph", "Phi(q, t)"),
        ("phi_q(q, t, p, G)", "G", "Phi_q"),
        ("phi_t(q, t, p, pt)", "pt", "Phi_t"),
        ("gamma(q, v, t, p, gam)", "gam", "gamma = -(Phi_q v)_q v - 2 Phi_qt v - Phi_tt"),
    ):
        parts.append(_function(sig, f"Fill {arg}.", cse.lines(groups[grp]), d, zero.get(grp, [])))
    allrows = groups["ph"] + groups["G"] + groups["pt"] + groups["gam"]
    parts.append(
        _function(
            "constraint_terms(q, v, t, p, ph, G, pt, gam)",
            "phi, phi_q, phi_t and gamma in one pass (bit-identical to the four).",
            cse.lines(sorted(allrows)),
            d,
            ["G[:, :] = 0.0"],
        )
    )
    parts.append(
        _function("energy(q, v, t, p)", "Kinetic plus potential energy.", _scalar(d.energy), d)
    )
    parts.append(
        _function(
            "potential(q, t, p)", "Potential energy U (gravity, springs).", _scalar(d.potential), d
        )
    )
    parts.append(
        _function("power(q, v, t, p)", "Power of the non-conservative forces.", _scalar(d.power), d)
    )
    # rows of the initial assembly: the constraints, plus (element mode) e^T e - 1
    m_init = m + len(d.init_rows)
    if d.init_rows:
        rows = list(d.phi) + list(d.init_rows)
        Pi = sp.Matrix(rows)
        Gi = Pi.jacobian(d.q)
        it: list[tuple[str, sp.Expr]] = [(f"ph[{r}]", e) for r, e in enumerate(rows)]
        ig = [(f"G[{r}, {c}]", Gi[r, c]) for r in range(m_init) for c in range(n) if Gi[r, c] != 0]
        ip = [(f"pt[{r}]", e) for r, e in enumerate(d.phi_t)]  # the added rows have no t
        for sig, tg, arg, pre in (
            ("phi_init(q, t, p, ph)", it, "Phi", []),
            ("phi_q_init(q, t, p, G)", ig, "Phi_q", ["G[:, :] = 0.0"]),
            ("phi_t_init(q, t, p, pt)", ip, "Phi_t", ["pt[:] = 0.0"]),
        ):
            doc = f"{arg} with the normalization rows e^T e - 1 (initial assembly only)."
            parts.append(_function(sig, doc, _fill(tg), d, pre))
    else:
        parts.append("phi_init = phi\nphi_q_init = phi_q\nphi_t_init = phi_t\n")
    # initial state
    init = [(f"q[{r}]", e) for r, e in enumerate(d.guess)]
    init += [(f"q[{r}]", e) for r, e in sorted(d.fix.items())]
    init += [(f"v[{r}]", e) for r, e in sorted(d.speed.items())]
    parts.append(
        _function(
            "initial_guess(p, q, v)",
            "Guesses, fixed coordinates, given speeds.",
            _fill(init),
            d,
            ["v[:] = 0.0"],
        )
    )
    br = [(f"out[{k}]", g) for k, (g, _, _) in enumerate(d.branch)]
    parts.append(
        _function("branch_values(q, p, out)", "LHS - RHS of the branch conditions.", _fill(br), d)
    )
    fixed = sorted(d.fix)
    speed = sorted(d.speed)
    parts.append(
        f"""
_FIXED = np.array({fixed!r}, dtype=np.int64)
_SPEED = np.array({speed!r}, dtype=np.int64)
BRANCH = {tuple((op, text) for _, op, text in d.branch)!r}
ANGLE_MASK = {tuple(d.angle_mask)!r}


def angle_mask(p):
    \"\"\"Angular coordinates (body angles, Euler parameters).\"\"\"
    return np.array(ANGLE_MASK, dtype=bool)


def initial_state(p):
    \"\"\"Consistent (q0, v0): Newton from the guesses with the [initial] fix coordinates held,
    then phi_q v = -phi_t with the [initial] speed coordinates held; the branch conditions
    are checked after assembly. With the normalization element, the rows e^T e - 1 join
    the assembly (|e| = 1, e^T edot = 0 at the start), not the motion.\"\"\"
    q = np.zeros({n})
    v = np.zeros({n})
    initial_guess(p, q, v)
    q = assemble(phi_init, phi_q_init, q, _FIXED, p, {m_init})
    v = assemble_velocity(phi_q_init, phi_t_init, q, v, _SPEED, p, {m_init})
    if BRANCH:
        g = np.zeros(len(BRANCH))
        branch_values(q, p, g)
        for k in range(len(BRANCH)):
            op, text = BRANCH[k]
            ok = (g[k] > 0.0 if op == ">" else g[k] >= 0.0 if op == ">=" else
                  g[k] < 0.0 if op == "<" else g[k] <= 0.0)
            if not ok:
                raise AssemblyError(
                    "the mechanism assembled on the wrong branch: " + text + " does not hold"
                )
    return q, v
"""
    )
    return "\n\n".join(parts) + "\n"


def _kernel_dir() -> Path:
    from mbstudy.solvers.compose import kernel_dir

    return kernel_dir()


def load_generated(key: str) -> ModuleType:
    """Import the generated module ``key`` from the kernel directory (once per process)."""
    modname = f"{_MODULE_PREFIX}.{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    path = _kernel_dir() / f"{key}.py"
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


def generate(name: str | Path, display: str | None = None) -> ModuleType:
    """Read, derive and write (if not there yet) the module of a mechanism model ``name``
    (a file's path, optionally ``#normalization=MODE``); import it.

    Raises
    ------
    MechanismError
        For a malformed or inconsistent file.
    """
    from mbstudy.solvers.mechanisms import split_model_name

    path, mode = split_model_name(str(name))
    mech = read(path, display, normalization=mode)
    key = module_key(mech.sha256.encode(), mech.normalization)
    modname = f"{_MODULE_PREFIX}.{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    target = _kernel_dir() / f"{key}.py"
    if not target.exists():
        text = generate_source(derive(mech), key)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, target)  # atomic: concurrent workers write identical text
    module = load_generated(key)
    module.MECHANISM_TEXT = mech.text
    return module


_ENTRIES: dict[tuple, object] = {}


def load_entry(name: str):
    """Registry entry of the mechanism model ``name`` (a path, optionally
    ``#normalization=MODE``): the generated module and its SPEC with ``name`` = ``name``
    (the string the pipeline passes back to the registry). Cached per process by the
    name, the file's path, size and modification time."""
    from mbstudy.solvers.mechanisms import split_model_name
    from mbstudy.solvers.registry import Entry

    path = split_model_name(str(name))[0]
    try:
        st = os.stat(path)
        stamp: tuple = (str(name), os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = ()
    if stamp and stamp in _ENTRIES:
        return _ENTRIES[stamp]
    module = generate(name, display=path)
    entry = Entry("model", replace(module.SPEC, name=str(name)), module)
    if stamp:
        _ENTRIES[stamp] = entry
    return entry
