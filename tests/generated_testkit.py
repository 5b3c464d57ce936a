"""Helpers of the generated-code tests: hostile strings, TOML writing of any string, and an
independent whitelist of what a generated module's syntax tree may hold.

The whitelist is the test's own, written from what a model module and a composed kernel
must contain (docs/explanation/solver-contract.md), not read from the generators: imports of the
project's and NumPy's modules, assignments of constants, calls that build the model's
specification, and function definitions with the two decorators the generators use.
Every name must be one of the generator's own (``q_3``, ``c_12``, ``model_mass``...) and
every string constant a docstring, the module's one JSON data constant, a fixed
generator string or a key of that data. A user string can only appear inside the JSON
constant, which the check parses and returns.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MECHANISMS = REPO / "studies" / "mechanisms"

# strings that broke or could break a generated module: quotes of every kind, the closing
# of a docstring followed by code, backslashes (a trailing one escapes a closing quote),
# line ends Python knows (\n, \r, U+2028, U+2029, U+0085, \f, \v), NUL, a BOM, braces
# (f-strings), a comment sign and a non-ASCII identifier
HOSTILE = (
    'x"""\nimport os; open(MARKER, "w").write("pwned")\n"""',
    "x'''\nopen(MARKER, 'w')\n'''",
    'a"b\'c',
    "ends with a backslash \\",
    "\\\"\"\"\\'''\\",
    "line\nbreak",
    "carriage\rreturn",
    "u2028\u2028end",
    "u2029\u2029end",
    "u0085\x85end",
    "form\x0cfeed\x0bvtab",
    "nul\x00byte",
    "\ufeffbom",
    "{brace} {{double}} {MARKER!r}",
    "# comment",
    "é∂ identifier ünïcödé",
    "\x1b[31mred\x1b[0m",
)


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (any Unicode scalar value; controls escaped)."""
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def pendulum_file(
    name: str = "pendulum_file",
    summary: str = "a rigid pendulum",
    body: str = "bar",
    point: str = "P",
    param: str = "m",
    branch: str | None = None,
    mass: str | None = None,
    joint_type: str = "revolute",
    fix_key: str | None = None,
    inertia: str = "1/12",
    gravity: str = "-g",
    at: str | None = None,
    normalization: str | None = None,
    speed_key: str | None = None,
) -> str:
    """A one-body planar pendulum mechanism file with the given strings written verbatim
    (as TOML strings or quoted keys)."""
    b, pt, pm = toml_string(body), toml_string(point), toml_string(param)
    branch = branch if branch is not None else f"{body}.x > -1"
    mass = mass if mass is not None else param
    fix_key = fix_key if fix_key is not None else f"{body}.theta"
    at = at if at is not None else f"{body}.{point}"
    speed_key = speed_key if speed_key is not None else f"{body}.theta"
    mode = f"normalization = {toml_string(normalization)}" if normalization is not None else ""
    return f"""
[mechanism]
name = {toml_string(name)}
dimension = 2
gravity = [0.0, {toml_string(gravity)}]
t_end = 1.0
summary = {toml_string(summary)}
{mode}

[parameters]
{pm} = 1.0
g = 9.81

[ground]
points = {{ {pt} = [0, 0] }}

[bodies.{b}]
mass = {toml_string(mass)}
inertia = {toml_string(inertia)}
points = {{ {pt} = [-0.5, 0] }}
guess = [0.4, -0.3, -0.6435]

[[joints]]
type = {toml_string(joint_type)}
at = [{toml_string(at)}, {toml_string(f"ground.{point}")}]

[initial]
fix = {{ {toml_string(fix_key)} = -0.6435 }}
speed = {{ {toml_string(speed_key)} = 0.5 }}
branch = {toml_string(branch)}
"""


# -- the whitelist -------------------------------------------------------------------------
# the symbols of the generated expressions, the unpacked state, the cse temporaries
_SYMBOL = re.compile(r"[qvpc]_[0-9]+|t")
# every other name a model module may use: its imports, its own functions and constants,
# the arrays it fills, and the locals of initial_state and the SPEC's generator expression
MODEL_NAMES = frozenset({
    "json", "math", "np", "njit", "link_only", "AssemblyError", "assemble",
    "assemble_velocity", "ModelSpec", "Param", "tuple", "bool", "len", "range", "abs", "float",
    "int", "_DATA_JSON", "_DATA", "KERNEL_KEY", "FILE_SHA256", "N_COORDS", "N_CONSTRAINTS",
    "ROW_LABELS", "COORD_NAMES", "SINGULAR_MASS", "NORMALIZATION", "GAUGE_DOF", "SPEC",
    "_FIXED", "_SPEED", "BRANCH", "ANGLE_MASK", "sizes", "mass", "forces",
    "forces_conservative", "phi", "phi_q", "phi_t", "gamma", "constraint_terms", "energy",
    "potential", "power", "phi_init", "phi_q_init", "phi_t_init", "initial_guess",
    "branch_values", "angle_mask", "initial_state", "M", "Q", "G", "ph", "pt", "gam", "out",
    "result", "q", "v", "p", "g", "k", "b", "op", "text", "ok", "name", "default", "meaning",
    "sign",
})  # fmt: skip
MODEL_IMPORTS = frozenset({"json", "math", "numpy", "numba", "mbstudy.solvers.compile_units",
                           "mbstudy.solvers.assembly", "mbstudy.solvers.spec"})  # fmt: skip
# the fixed strings of initial_state (comparison operators, its error message)
MODEL_STRINGS = frozenset({">", ">=", "<", "<=", " does not hold",
                           "the mechanism assembled on the wrong branch: "})  # fmt: skip
_DATA_KEYS = frozenset({"name", "summary", "source", "sha256", "normalization", "row_labels",
                        "coord_names", "branch", "params", "t_end", "reference"})  # fmt: skip
_DECORATORS = ("link_only()", "njit(cache=True)")


class Rejected(AssertionError):
    """A generated module holds something the whitelist does not allow."""


def _docstring_nodes(tree: ast.Module) -> set[int]:
    out = set()
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, ast.Module | ast.FunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def check_model_module(text: str) -> dict:
    """Parse a generated mechanism module, fail (:class:`Rejected`) on anything outside the
    whitelist, and return its JSON data (where every user string must be)."""
    tree = ast.parse(text)
    docs = _docstring_nodes(tree)
    data_nodes: list[ast.Constant] = []
    for k, node in enumerate(tree.body):
        if k == 0 and isinstance(node, ast.Expr) and id(node.value) in docs:
            continue
        if isinstance(node, ast.Import):
            names = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {node.module or ""}
        elif isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise Rejected(f"line {node.lineno}: assignment to {ast.unparse(node)[:60]}")
            if node.targets[0].id == "_DATA_JSON":
                if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                    raise Rejected("_DATA_JSON is not one string constant")
                data_nodes.append(node.value)
            continue
        elif isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if ast.unparse(deco) not in _DECORATORS:
                    raise Rejected(f"line {node.lineno}: decorator {ast.unparse(deco)}")
            continue
        else:
            raise Rejected(f"line {node.lineno}: top-level {type(node).__name__} statement")
        bad = names - MODEL_IMPORTS
        if bad:
            raise Rejected(f"line {node.lineno}: imports {sorted(bad)}")
    if len(data_nodes) != 1:
        raise Rejected(f"{len(data_nodes)} data constants, expected one")
    allowed_str = docs | {id(data_nodes[0])}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.arg):
            name = node.id if isinstance(node, ast.Name) else node.arg
            if name not in MODEL_NAMES and not _SYMBOL.fullmatch(name):
                raise Rejected(f"line {node.lineno}: name {name!r}")
        elif isinstance(node, ast.FunctionDef) and node.name not in MODEL_NAMES:
            raise Rejected(f"line {node.lineno}: function {node.name!r}")
        elif isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id in ("math", "np", "json")
        ):
            raise Rejected(f"line {node.lineno}: attribute {ast.unparse(node)[:60]}")
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and (
            node.value.id == "_DATA"
        ):
            key = node.slice
            if not (isinstance(key, ast.Constant) and key.value in _DATA_KEYS):
                raise Rejected(f"line {node.lineno}: _DATA[{ast.unparse(key)}]")
            allowed_str.add(id(key))
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "KERNEL_KEY":
            value = node.value
            if not (isinstance(value, ast.Constant) and re.fullmatch(r"mbm_[0-9a-f]{20}",
                                                                      str(value.value))):
                raise Rejected("KERNEL_KEY is not a module key")
            allowed_str.add(id(value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            if id(node) not in allowed_str and node.value not in MODEL_STRINGS:
                raise Rejected(f"line {node.lineno}: string {node.value!r:.60}")
        if isinstance(node, ast.JoinedStr):
            raise Rejected(f"line {node.lineno}: f-string")
    return json.loads(data_nodes[0].value)


_KERNEL_DOC = re.compile(
    r"Generated kernel: model=[A-Za-z_][A-Za-z0-9_]* formulation=[A-Za-z_][A-Za-z0-9_]*"
    r" integrator=[A-Za-z_][A-Za-z0-9_]*\. Do not edit \(solvers/compose/generate\.py\)\."
)
_KERNEL_DECORATOR = re.compile(
    r"njit\(cache=True(, _nrt=False)?\)"
    r"|link_only\((_nrt=False|always_inline=True|_nrt=False, always_inline=True)?\)"
)
_TEMPLATE = re.compile(r"(common|form|integ|model)_[A-Za-z0-9_]+")


def check_kernel_module(text: str) -> None:
    """Parse a composed kernel module and fail (:class:`Rejected`) unless its top level is
    the fixed docstring, imports from ``numpy``, ``numba`` and ``mbstudy``, assignments of
    constants (numbers, tuples and arrays of them, the model's functions) and template
    function definitions with the generator's decorators."""
    tree = ast.parse(text)
    for k, node in enumerate(tree.body):
        if k == 0:
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                    and _KERNEL_DOC.fullmatch(str(node.value.value))):  # fmt: skip
                raise Rejected(f"kernel docstring {ast.unparse(node)[:80]}")
            continue
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        elif isinstance(node, ast.Assign):
            _check_kernel_assign(node)
            continue
        elif isinstance(node, ast.FunctionDef):
            if not _TEMPLATE.fullmatch(node.name):
                raise Rejected(f"line {node.lineno}: function {node.name!r}")
            for deco in node.decorator_list:
                src = ast.unparse(deco)
                if not _KERNEL_DECORATOR.fullmatch(src):
                    raise Rejected(f"line {node.lineno}: decorator {src}")
            continue
        else:
            raise Rejected(f"line {node.lineno}: top-level {type(node).__name__} statement")
        for mod in mods:
            if not (mod in ("numpy", "numba") or mod.startswith("mbstudy.solvers.")):
                raise Rejected(f"line {node.lineno}: imports {mod}")


def _check_kernel_assign(node: ast.Assign) -> None:
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        raise Rejected(f"line {node.lineno}: assignment {ast.unparse(node)[:60]}")
    value = node.value
    src = ast.unparse(value)
    if node.targets[0].id == "_model":
        ok = (isinstance(value, ast.Call) and ast.unparse(value.func) == "_load_generated"
              and len(value.args) == 1 and isinstance(value.args[0], ast.Constant)
              and re.fullmatch(r"mbm_[0-9a-f]{20}", str(value.args[0].value)))  # fmt: skip
    elif node.targets[0].id.startswith("model_"):
        ok = re.fullmatch(r"_model\.[a-z_]+", src) is not None
    else:  # numbers, booleans, tuples of numbers, np.array([...], dtype=np.float64)
        ok = all(_constant_part(n) for n in ast.walk(value))
    if not ok:
        raise Rejected(f"line {node.lineno}: {node.targets[0].id} = {src[:60]}")


_ARRAY_NAMES = ("np", "np.array", "np.float64", "np.int64")


def _constant_part(n: ast.AST) -> bool:
    """A node of a kernel constant: numbers, tuples and lists, unary minus, an np.array call
    with a dtype; never a string."""
    if isinstance(n, ast.Constant):
        return not isinstance(n.value, str | bytes)
    if isinstance(n, ast.Tuple | ast.List | ast.UnaryOp | ast.USub | ast.Load):
        return True
    if isinstance(n, ast.keyword):
        return n.arg == "dtype"
    if isinstance(n, ast.Call):
        return ast.unparse(n.func) in ("np.array", "np.float64")
    if isinstance(n, ast.Attribute | ast.Name):
        return ast.unparse(n) in _ARRAY_NAMES
    return False
