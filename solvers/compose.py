"""Compose a (model, formulation, integrator) triple into one cached kernel module.

See docs/solver-contract.md for the why. The generated module's text is: imports of the
model's jitted functions under the fixed names ``model_*``, then the source of every
template function of ``formulations/_common.py``, of the formulation and of the integrator,
each decorated ``@njit(cache=True)``. Its file name carries a hash of every source file
under ``solvers/`` (and numba's version), so numba's on-disk cache is reused across
processes and can never be stale.

Public entry points: :func:`kernel_module` (the composed module) and :func:`kernel_dir`.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import os
import re
import sys
import textwrap
from functools import cache
from pathlib import Path
from types import FunctionType, ModuleType

import numba
from mbstudy.solvers import registry

TEMPLATE_PREFIXES = ("common_", "form_", "integ_", "default_form_", "default_model_")
MODEL_FUNCTIONS = ("sizes", "mass", "forces", "phi", "phi_q", "phi_t", "gamma", "energy", "power")
# optional model functions: where a model lacks one, the template default_model_X serves
OPTIONAL_MODEL_FUNCTIONS = ("constraint_terms",)
_SOLVERS_DIR = Path(__file__).resolve().parent


def kernel_dir() -> Path:
    """Directory of generated kernel modules.

    ``$MBSTUDY_KERNEL_DIR`` if set, else ``$NUMBA_CACHE_DIR/mbstudy_kernels``, else
    ``~/.cache/mbstudy/kernels``.
    """
    env = os.environ.get("MBSTUDY_KERNEL_DIR")
    if env:
        return Path(env)
    nb = os.environ.get("NUMBA_CACHE_DIR")
    if nb:
        return Path(nb) / "mbstudy_kernels"
    return Path.home() / ".cache" / "mbstudy" / "kernels"


@cache
def source_hash() -> str:
    """sha256 (16 hex digits) of every ``solvers/**/*.py`` file and numba's version
    (taken once per process)."""
    return _hash_sources()


def _hash_sources() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for path in sorted(_SOLVERS_DIR.rglob("*.py")):
        h.update(str(path.relative_to(_SOLVERS_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


# Calls that allocate a NumPy array (a function making one needs numba's reference-counting
# runtime); a scalar ``np.sqrt`` / ``np.sin`` ... does not match
_ALLOCATES = re.compile(
    r"\bnp\.(zeros|empty|ones|full|array|asarray|eye|identity|copy|dot|outer|cross|"
    r"concatenate|stack|hstack|vstack|linalg|zeros_like|empty_like|ones_like|full_like)\b"
    r"|\.copy\(|\.astype\(| @ "
)


def nrt_option_supported() -> bool:
    """Whether this numba accepts ``_nrt=False`` (compile a function without its
    reference-counting runtime); every numba this project supports does."""
    try:
        from numba.core.options import DefaultOptions
    except ImportError:
        return False
    return hasattr(DefaultOptions, "_nrt")


def _body(src: str) -> str:
    """Function source without its decorator lines and docstring (for the checks)."""
    tree = ast.parse(textwrap.dedent(src))
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(ast.unparse(node) for node in body)


def _called_names(src: str) -> set[str]:
    """Names of the plain functions called in ``src``."""
    tree = ast.parse(textwrap.dedent(src))
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def nrt_free_templates(
    funcs: dict[str, str], declared: set[str], model_sources: dict[str, str]
) -> set[str]:
    """The template functions compiled without numba's reference counting (``_nrt=False``).

    Why: every call of a function that takes the workspace tuple increfs and decrefs each
    array in it (an atomic ``lock inc`` / ``lock dec`` pair per array: 13 arrays for the
    index-1 workspace). Profiled on the four-bar (perf), NRT_incref / NRT_decref took
    ~45 % of an RK4 step; compiled without them the step is ~2x faster with bit-identical
    results (docs/performance.md). Such a function must neither allocate nor return an
    array, and everything it calls is compiled in the same mode, so it may only call
    functions that do not allocate either.

    ``declared``: the names the template modules list in ``NRT_FREE`` (an author's
    promise: no allocation, no array returned). Checked here: a declared function whose
    source allocates, or that calls a template or model function that allocates or is
    not declared, is a programming error (ValueError). If a model function allocates,
    the whole kernel keeps reference counting (empty set): a model is not required to be
    allocation-free.
    """
    if not nrt_option_supported():
        return set()
    for src in model_sources.values():
        if _ALLOCATES.search(_body(src)):
            return set()
    chosen = {name for name in declared if name in funcs}
    for name in sorted(chosen):
        if _ALLOCATES.search(_body(funcs[name])):
            raise ValueError(f"template {name} is declared NRT_FREE but allocates an array")
        for callee in _called_names(funcs[name]):
            if callee in funcs and callee not in chosen:
                raise ValueError(
                    f"template {name} is declared NRT_FREE but calls {callee}, which is not"
                )
    return chosen


def _declared_nrt_free(*modules: ModuleType) -> set[str]:
    """Union of the modules' ``NRT_FREE`` name tuples (default_ names mapped to form_)."""
    out: set[str] = set()
    for module in modules:
        for name in getattr(module, "NRT_FREE", ()):
            out.add(name[len("default_") :] if name.startswith("default_") else name)
    return out


def _templates(module: ModuleType) -> dict[str, str]:
    """Source text of the template functions defined in ``module``, by name."""
    out: dict[str, str] = {}
    for name, obj in vars(module).items():
        if (
            isinstance(obj, FunctionType)
            and obj.__module__ == module.__name__
            and name.startswith(TEMPLATE_PREFIXES)
        ):
            out[name] = textwrap.dedent(inspect.getsource(obj))
    return out


# Modules the generated kernel star-imports (their names are not copied as constants)
_STAR_IMPORTED = ("mbstudy.solvers.status", "mbstudy.solvers.linalg", "mbstudy.solvers.workspace")


def _constants(module: ModuleType) -> list[str]:
    """Module-level int/float constants (UPPER_CASE) of a template module, as source lines
    (except the names of the star-imported modules, which a template may import)."""
    lines = []
    star = {n for home in _STAR_IMPORTED for n in vars(importlib.import_module(home))}
    for name, obj in vars(module).items():
        if name in star:
            continue
        if name.isupper() and isinstance(obj, int | float) and not isinstance(obj, bool):
            lines.append(f"{name} = {obj!r}")
    return lines


def generate_source(
    model: str, formulation: str, integrator: str, *, augmented: bool = False
) -> str:
    """Return the text of the kernel module for one triple (pure function of the sources).

    ``augmented=True`` composes the straightforward index-1 solve (LU of the (n+m)
    augmented matrix at every right-hand side) instead of the structured one (Schur
    complement of size m where M is positive definite; see ``common_solve_index1``).
    """
    from mbstudy.solvers.formulations import _common

    mentry = registry.model(model)
    mod = mentry.module
    form = registry.formulation(formulation).module
    integ = registry.integrator(integrator).module
    provided = MODEL_FUNCTIONS + tuple(f for f in OPTIONAL_MODEL_FUNCTIONS if hasattr(mod, f))
    imports = ", ".join(f"{f} as model_{f}" for f in provided)
    parts = [
        f'"""Generated kernel: model={model} formulation={formulation}'
        f' integrator={integrator}. Do not edit (solvers/compose.py)."""',
        "# ruff: noqa",
        "import numpy as np",
        "from numba import njit",
        *(f"from {home} import *" for home in _STAR_IMPORTED),
        f"from {mod.__name__} import {imports}",
        "",
    ]
    parts += _constants(_common) + _constants(form) + _constants(integ)
    parts += [
        f"KERNEL_STRUCTURED_SOLVE = {not augmented}",
        f"KERNEL_CONSTANT_MASS = {bool(mentry.spec.constant_mass)}",
    ]
    common = _templates(_common)
    own = {**_templates(form), **_templates(integ)}
    funcs: dict[str, str] = {}
    for name, src in common.items():
        if name.startswith("default_"):
            target = name[len("default_") :]
            if target in own or target.removeprefix("model_") in provided:
                continue
            src = src.replace(f"def {name}(", f"def {target}(", 1)
            name = target
        funcs[name] = src
    funcs.update(own)
    nrt_free: set[str] = set()
    if not augmented:  # the augmented variant is the straightforward reference: plain njit
        model_sources = {
            f: inspect.getsource(getattr(mod, f).py_func)
            for f in provided
            if hasattr(getattr(mod, f), "py_func")
        }
        declared = _declared_nrt_free(_common, form, integ)
        nrt_free = nrt_free_templates(funcs, declared, model_sources)
    for name in sorted(funcs):
        parts.append("")
        parts.append("@njit(cache=True, _nrt=False)" if name in nrt_free else "@njit(cache=True)")
        parts.append(funcs[name].rstrip())
        parts.append("")
    return "\n".join(parts) + "\n"


@cache
def kernel_module(
    model: str, formulation: str, integrator: str, augmented: bool = False
) -> ModuleType:
    """Return the composed kernel module (generated on first use, then imported).

    ``augmented=True``: the variant with the straightforward augmented-LU index-1 solve
    (the reference the structured solve is tested against; see :func:`generate_source`).

    The module exposes ``common_run(q0, v0, t_out, p, fp, ip, Y, D, cnt)`` and
    ``common_state_size(p, fp)`` besides every template function.

    Raises
    ------
    solvers.registry.UnknownName
        For a name not in the registry.
    """
    variant = "_lu" if augmented else ""
    key = f"mbk_{model}_{formulation}_{integrator}{variant}_{source_hash()}"
    modname = f"mbstudy_kernels.{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    directory = kernel_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{key}.py"
    if not path.exists():
        text = generate_source(model, formulation, integrator, augmented=augmented)
        if _hash_sources() != source_hash():
            # the templates were read from disk just now; the name carries the hash taken
            # when this process first asked: an edit in between would cache a kernel
            # under a name that does not describe it
            raise RuntimeError(
                "solvers/ changed while this process was running; restart it so that the"
                " kernel name and the kernel text come from the same sources"
            )
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: concurrent workers write identical text
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module
