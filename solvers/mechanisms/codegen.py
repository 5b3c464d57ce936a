"""Write the derived model of a mechanism file as a generated ``@njit`` module.

The module meets the model contract (docs/explanation/solver-contract.md): ``sizes``, ``mass``,
``forces``, ``phi``, ``phi_q``, ``phi_t``, ``gamma``, ``energy``, ``power``, the fused
``constraint_terms``, ``initial_state``, ``angle_mask`` and ``SPEC``; besides them
``potential`` and ``forces_conservative`` (U and -dU/dq, for the checks). Every
``[parameters]`` entry is a slot of the runtime vector ``p``, so a sweep never
recompiles.

The four constraint functions and ``constraint_terms`` come from ONE common-subexpression
elimination (sympy ``cse``) of Phi, Phi_q, Phi_t and gamma together; each separate
function evaluates the subset of those intermediate assignments it needs, in the same
order, so the fused function equals the four bit for bit.

The file is written once into the kernel directory (:func:`solvers.loader.kernel_dir`)
as ``mbm_<hash>.py``, the hash covering the mechanism file's bytes, the normalization
mode of its Euler parameters and the generator's sources; a changed file, mode or
generator is a new module, never a stale cache.

No text from the mechanism file becomes code. Its strings (name, summary, labels, branch
conditions) are carried as one JSON document in a single ASCII string constant, parsed
when the module is imported; its expressions are parsed into sympy (never evaluated by
Python) and printed back with the generator's own symbol names (``q_k``, ``v_k``,
``p_k``, ``t`` and the cse temporaries ``c_k``), each checked by :data:`SYMBOL` before it
is written; numbers are printed as Python literals. The module is executed only from the
text generated in this process (:func:`mbstudy.solvers.loader.load_generated_module`),
never imported from the kernel directory.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import ModuleType

import sympy as sp
from mbstudy.solvers.loader import GENERATION_LOCK, kernel_dir, load_generated_module, secure_dir
from mbstudy.solvers.mechanisms.derive import ELEMENT_PARAMS, Derived, derive
from mbstudy.solvers.mechanisms.naming import split_model_name
from mbstudy.solvers.mechanisms.schema import GENERATOR_VERSION, read
from sympy.printing.pycode import PythonCodePrinter

_HERE = Path(__file__).resolve().parent
_MODULE_PREFIX = "mbstudy_mechanisms"
#: default [reference] of a mechanism file's studies
REFERENCE = {"integrator": "dopri5", "formulation": "projection", "rtol": 1e-12, "atol": 1e-14}


#: the only names of symbols the generated code may contain: coordinates, velocities,
#: parameter slots, time and the common subexpressions
SYMBOL = re.compile(r"(?:[qvpc]_(?:0|[1-9][0-9]{0,8}))|t")
_KEY = re.compile(r"mbm_[0-9a-f]{20}")


def _symbol_name(name: str) -> str:
    if SYMBOL.fullmatch(name) is None:
        raise ValueError(f"symbol {name!r} cannot appear in generated code")
    return name


class _Printer(PythonCodePrinter):
    """Python code with ``math`` functions and floats printed exactly (``repr``); symbols
    only with the generator's own names (:data:`SYMBOL`)."""

    def _print_Float(self, expr):
        x = float(expr)
        if math.isfinite(x):
            return repr(x)
        return "math.nan" if x != x else "math.inf" if x > 0 else "(-math.inf)"

    def _print_NegativeInfinity(self, expr):
        return "(-math.inf)"

    def _print_Symbol(self, expr):
        return _symbol_name(expr.name)


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
        out = [f"{_symbol_name(s.name)} = {_code(e)}"
               for k, (s, e) in enumerate(self.repl) if k in need]  # fmt: skip
        out += [f"{self.targets[k][0]} = {_code(self.reduced[k])}" for k in select]
        return out


def _unpack(body: list[str], d: Derived) -> list[str]:
    """``q_3 = q[3]`` lines for the symbols the body uses."""
    text = "\n".join(body)
    out = []
    for name, syms in (("q", d.q), ("v", d.v), ("p", d.p)):
        for k, s in enumerate(syms):
            if _uses(text, str(s)):
                out.append(f"{_symbol_name(str(s))} = {name}[{int(k)}]")
    return out


def _uses(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


# Functions only the kernels call: compiled as link-only units (solvers/compile_units.py),
# optimized and turned into machine code only inside each kernel's entry points (the
# assembly of the initial state interprets phi, phi_q and phi_t, or their *_init variants
# with the normalization rows; the checks run the Python source). Functions only
# initial_state calls are plain Python; the others (sizes,
# potential, forces_conservative) stay ordinary cached njit functions.
KERNEL_ONLY = ("mass", "forces", "phi", "phi_q", "phi_t", "gamma", "constraint_terms",
               "energy", "power")  # fmt: skip
PYTHON_ONLY = ("initial_guess", "branch_values", "phi_init", "phi_q_init", "phi_t_init")


def _function(
    signature: str, doc: str, body: list[str], d: Derived, pre: list[str] | None = None
) -> str:
    lines = _unpack(body, d) + (pre or []) + body
    inner = "\n".join("    " + ln for ln in lines) if lines else "    pass"
    name = signature.split("(", 1)[0]
    deco = "@link_only()\n" if name in KERNEL_ONLY else "" if name in PYTHON_ONLY else (
        "@njit(cache=True)\n"
    )
    return f"{deco}def {signature}:\n    {doc!r}\n{inner}\n"


def _fill(targets: list[tuple[str, sp.Expr]]) -> list[str]:
    cse = _Cse(targets)
    return cse.lines(list(range(len(targets))))


def _scalar(expr: sp.Expr) -> list[str]:
    return [*_fill([("result", expr)]), "return result"]


def _param(name: str, default: float, element: bool) -> list:
    """``[name, default, meaning, sign]`` of a mechanism parameter for the module's data (the
    element's with their meaning and sign condition, ``sign`` None for the others)."""
    if element and name in ELEMENT_PARAMS:
        meaning, sign = ELEMENT_PARAMS[name]
        return [name, default, meaning, sign]
    return [name, default, "mechanism parameter", None]


def _data_literal(data: dict) -> str:
    """A Python string literal of ``data`` as JSON: ASCII only (``ensure_ascii``: every
    other character, line and paragraph separators, NUL and controls included, becomes a
    ``\\uXXXX`` escape), on one line, checked to read back as ``data``."""
    text = json.dumps(data, ensure_ascii=True, sort_keys=True)
    literal = repr(text)
    if not literal.isascii() or "\n" in literal or ast.literal_eval(literal) != text:
        raise AssertionError("generated data literal does not round-trip")  # pragma: no cover
    return literal


def generate_source(d: Derived, key: str) -> str:
    """The generated module's text for the derived model ``d`` (module name ``key``).

    Every string that comes from the mechanism file (its name, summary and path, the body,
    coordinate and row labels, the branch conditions) is data: one JSON document held in a
    single ASCII string constant ``_DATA_JSON`` and parsed at import. The code around it
    names only what the generator makes (``q_0``, ``p_3``, ``c_12``...), each checked
    against a strict pattern; a user string never becomes source text.
    """
    if _KEY.fullmatch(key) is None:
        raise ValueError(f"{key!r} is not a generated module key")
    mech = d.mech
    n, m = d.n, d.m
    summary = mech.summary or f"mechanism file {mech.name} ({n} coordinates, {m} constraints)"
    spatial = mech.dimension == 3
    element = spatial and mech.normalization == "element"
    if element:
        summary += f"; normalization element ({m} constraints)"
    data = {
        "name": mech.name,
        "summary": summary,
        "source": "mechanism file " + mech.path.name,
        "sha256": mech.sha256,
        "normalization": mech.normalization if spatial else None,
        "row_labels": [str(x) for x in d.row_labels],
        "coord_names": [f"{b.name}.{c}" for b in mech.bodies for c in b.coords],
        "branch": [[op, text] for _, op, text in d.branch],
        "params": [_param(k, float(v), element) for k, v in mech.parameters.items()],
        "t_end": float(mech.t_end),
        "reference": REFERENCE,
    }
    header = [
        '"""Generated from a mechanism file (name, path and sha256 in _DATA). Do not edit'
        ' (solvers/mechanisms/codegen.py)."""',
        "# ruff: noqa",
        "import json",
        "import math",
        "import numpy as np",
        "from numba import njit",
        "from mbstudy.solvers.compile_units import link_only",
        "from mbstudy.solvers.assembly import AssemblyError, assemble, assemble_velocity",
        "from mbstudy.solvers.spec import ModelSpec, Param",
        "",
        f"_DATA_JSON = {_data_literal(data)}",
        "_DATA = json.loads(_DATA_JSON)",
        f"KERNEL_KEY = {key!r}",
        'FILE_SHA256 = _DATA["sha256"]',
        f"N_COORDS = {int(n)}",
        f"N_CONSTRAINTS = {int(m)}",
        'ROW_LABELS = tuple(_DATA["row_labels"])',
        'COORD_NAMES = tuple(_DATA["coord_names"])',
        f"SINGULAR_MASS = {bool(spatial and not element)!r}",
        'NORMALIZATION = _DATA["normalization"]',
        f"GAUGE_DOF = {int(len(mech.bodies) if element else 0)}",
        "SPEC = ModelSpec(",
        '    name=_DATA["name"],',
        '    summary=_DATA["summary"],',
        "    params=tuple(",
        "        Param(name, default, meaning, **({sign: True} if sign else {}))",
        '        for name, default, meaning, sign in _DATA["params"]',
        "    ),",
        '    t_end=_DATA["t_end"],',
        f"    conservative={bool(d.conservative)!r},",
        f"    driven={(not d.conservative)!r},",
        f"    constant_mass={bool(d.constant_mass)!r},",
        '    reference=_DATA["reference"],',
        '    source=_DATA["source"],',
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
_FIXED = np.array({[int(k) for k in fixed]!r}, dtype=np.int64)
_SPEED = np.array({[int(k) for k in speed]!r}, dtype=np.int64)
BRANCH = tuple(tuple(b) for b in _DATA["branch"])
ANGLE_MASK = {tuple(bool(x) for x in d.angle_mask)!r}


def angle_mask(p):
    \"\"\"Angular coordinates (body angles, Euler parameters).\"\"\"
    return np.array(ANGLE_MASK, dtype=bool)


def initial_state(p):
    \"\"\"Consistent (q0, v0): Newton from the guesses with the [initial] fix coordinates held,
    then phi_q v = -phi_t with the [initial] speed coordinates held; the branch conditions
    are checked after assembly. With the normalization element, the rows e^T e - 1 join
    the assembly (|e| = 1, e^T edot = 0 at the start), not the motion.\"\"\"
    q = np.zeros({int(n)})
    v = np.zeros({int(n)})
    initial_guess(p, q, v)
    q = assemble(phi_init, phi_q_init, q, _FIXED, p, {int(m_init)}, interpret=True)
    v = assemble_velocity(phi_q_init, phi_t_init, q, v, _SPEED, p, {int(m_init)}, interpret=True)
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


#: the mechanism modules generated and executed in this process, by key
_GENERATED: dict[str, ModuleType] = {}


def load_generated(key: str) -> ModuleType:
    """The mechanism module ``key`` generated in this process (a composed kernel's text
    refers to its model this way). Never imported from a file: a key that this process has
    not generated is refused.

    Raises
    ------
    RuntimeError
        If no mechanism file of this key has been generated in this process.
    """
    module = _GENERATED.get(key)
    if module is None:
        raise RuntimeError(
            f"mechanism module {key!r} was not generated in this process; load its"
            " mechanism file first (model_entry.model(PATH))"
        )
    return module


def generate(name: str | Path, display: str | None = None) -> ModuleType:
    """Read, derive and generate the module of a mechanism model ``name`` (a file's path,
    optionally ``#normalization=MODE``) and execute it (once per process and key).

    The text is generated in this process and executed from that text
    (:func:`mbstudy.solvers.loader.load_generated_module`: the file ``mbm_<key>.py`` in the
    verified kernel directory is only written, for numba's cache); reading, deriving and
    executing hold the process's generation lock.

    Raises
    ------
    MechanismError
        For a malformed or inconsistent file.
    UnsafeCacheDir
        If the kernel directory belongs to another user.
    """
    path, mode = split_model_name(str(name))
    with GENERATION_LOCK:
        mech = read(path, display, normalization=mode)
        key = module_key(mech.sha256.encode(), mech.normalization)
        module = _GENERATED.get(key)
        if module is None:
            text = generate_source(derive(mech), key)
            target = secure_dir(kernel_dir()) / f"{key}.py"
            module = load_generated_module(f"{_MODULE_PREFIX}.{key}", target, text)
            module.MECHANISM_TEXT = mech.text
            _GENERATED[key] = module
        return module


_ENTRIES: dict[tuple, object] = {}


def load_entry(name: str):
    """Registry entry of the mechanism model ``name`` (a path, optionally
    ``#normalization=MODE``): the generated module and its SPEC with ``name`` = ``name``
    (the string the pipeline passes back to the registry). Cached per process by the
    name, the file's path, size and modification time."""
    from mbstudy.solvers.spec import Entry

    path = split_model_name(str(name))[0]
    try:
        st = os.stat(path)
        stamp: tuple = (str(name), os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = ()
    if stamp and stamp in _ENTRIES:
        return _ENTRIES[stamp]
    with GENERATION_LOCK:
        module = generate(name, display=path)
        entry = Entry("model", replace(module.SPEC, name=str(name)), module)
        if stamp:
            _ENTRIES[stamp] = entry
    return entry
