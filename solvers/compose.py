"""Compose a (model, formulation, integrator) triple into one cached kernel module.

See docs/explanation/solver-contract.md for the why. The generated module's text is: imports of the
model's jitted functions under the fixed names ``model_*``, then the source of every
template function of ``formulations/_common.py``, of the formulation and of the integrator:
the entry points ``common_run`` and ``common_state_size`` decorated ``@njit(cache=True)``,
every other template ``@link_only()`` (solvers/compile_units.py: compiled only as part of
the entry points, so LLVM optimizes the call tree once instead of once per level). Its
file name carries a hash of its own text and of the files it depends on (see
:func:`kernel_key`), so numba's on-disk cache is reused across processes and can never
be stale, while an edit elsewhere under ``solvers/`` (a docstring
in ``runner.py``) invalidates no kernel.

Loading goes through the one loader of generated code (solvers/loader.py): the module is
executed from the text generated in this process, after making the file on disk hold
exactly that text, so a file planted or altered in the kernel directory is never
executed; the kernel directory and ``NUMBA_CACHE_DIR`` (whose index files numba
unpickles) must be owned by the user and not writable by group or others. Threads of one
process asking for a kernel wait on the process's generation lock and all get the
complete module (a module is published only after it has executed); processes sharing
the kernel directory write its file atomically and serialise the first compile of a
kernel on a file lock (:func:`compile_lock`), so a kernel compiles once per machine or
shared cache, not once per worker. The names that reach the text (the model's kernel
name, the formulation and the integrator) are registry names checked against
:data:`IDENTIFIER`; nothing else in the text comes from a user file.

Public entry points: :func:`kernel_module` (the composed module), :func:`kernel_key`,
:func:`compile_lock` and :func:`kernel_dir`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FunctionType, ModuleType

import numba
import numpy as np
from mbstudy.solvers import registry
from mbstudy.solvers.loader import (
    GENERATION_LOCK,
    UnsafeCacheDir,
    kernel_dir,
    load_generated_module,
    secure_dir,
)
from mbstudy.solvers.private_api import nrt_option_supported

__all__ = ["ENTRY_POINTS", "IDENTIFIER", "UnsafeCacheDir", "compile_lock", "generate_source",
           "kernel_dir", "kernel_key", "kernel_module", "nrt_free_templates",
           "nrt_option_supported", "refcounted_options", "secure_dir"]  # fmt: skip

TEMPLATE_PREFIXES = ("common_", "form_", "integ_", "default_form_", "default_model_")
MODEL_FUNCTIONS = ("sizes", "mass", "forces", "phi", "phi_q", "phi_t", "gamma", "energy", "power")
# optional model functions: where a model lacks one, the template default_model_X serves
OPTIONAL_MODEL_FUNCTIONS = ("constraint_terms",)
_SOLVERS_DIR = Path(__file__).resolve().parent
# the templates a kernel's users call (solvers/runner.py); the others are link-only units
ENTRY_POINTS = ("common_run", "common_state_size")
#: what a name written into a kernel's text (and file name) must be: an ASCII identifier
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _identifier(value: object, what: str, pattern: re.Pattern = IDENTIFIER) -> str:
    """``value`` if it is a string that ``pattern`` matches entirely, else ValueError: the
    only names a generated kernel's text carries (registry names, module names)."""
    if not isinstance(value, str) or pattern.fullmatch(value) is None or len(value) > 200:
        raise ValueError(f"{what} {value!r} cannot name a generated kernel (not an identifier)")
    return value


@cache
def _file_digest(path: str) -> str:
    """sha256 of a file's bytes, taken once per process (the version this process imported)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _dependency_files(module: ModuleType) -> list[str]:
    """Source files of ``module`` and of every ``mbstudy`` module it reaches through its
    globals (imported modules, functions and numba dispatchers), transitively, sorted."""
    seen: dict[str, str] = {}
    todo = [module]
    while todo:
        mod = todo.pop()
        if mod.__name__ in seen:
            continue
        seen[mod.__name__] = getattr(mod, "__file__", None) or ""
        for value in list(vars(mod).values()):
            target = getattr(value, "py_func", value)
            name = value.__name__ if isinstance(value, ModuleType) else getattr(
                target, "__module__", None
            )
            if isinstance(name, str) and name.startswith("mbstudy.") and name not in seen:
                dep = sys.modules.get(name)
                if dep is not None:
                    todo.append(dep)
    return sorted(f for f in seen.values() if f)


def _module_digest(module: ModuleType) -> str:
    """What identifies a model module's code: its ``KERNEL_SOURCE_HASH`` attribute where it
    sets one (a model generated in memory), else the content of its file and of the mbstudy
    files it depends on."""
    own = getattr(module, "KERNEL_SOURCE_HASH", None)
    h = hashlib.sha256()
    if isinstance(own, str) and own:
        h.update(own.encode())
    for path in _dependency_files(module):
        if own and path == getattr(module, "__file__", None):
            continue
        h.update(os.path.basename(path).encode())
        h.update(_file_digest(path).encode())
    return h.hexdigest()


def kernel_key(
    model: str | registry.Entry, formulation: str, integrator: str, text: str,
    augmented: bool = False,
) -> str:
    """The kernel's module name: ``mbk_<model>_<formulation>_<integrator>[_lu]_<hash>``.

    ``hash`` (16 hex digits of sha256) covers exactly what the compiled kernel is made of:
    numba's version, the generated text ``text`` (every template it contains, constants,
    decorator options) and the model module's code with the mbstudy modules it uses
    and every ``mbstudy`` module the text imports from (with theirs).
    An edit anywhere else leaves the key alone. ``model``: its name, or the entry a
    launch resolved once and passes on (:func:`mbstudy.solvers.registry.resolve`).
    """
    mentry = registry.resolve(model)
    h = hashlib.sha256(numba.__version__.encode())
    h.update(text.encode())
    h.update(_module_digest(mentry.module).encode())
    # every mbstudy module the text imports from (the star-imported status, linalg and
    # workspace, the model, a template module's KERNEL_IMPORTS), with its dependencies
    for home in sorted(set(re.findall(r"^from (mbstudy\.[\w.]+) import", text, re.M))):
        h.update(home.encode())
        h.update(_module_digest(importlib.import_module(home)).encode())
    variant = "_lu" if augmented else ""
    name = _identifier(registry.kernel_key(mentry), "model")
    formulation = _identifier(formulation, "formulation")
    integrator = _identifier(integrator, "integrator")
    return f"mbk_{name}_{formulation}_{integrator}{variant}_{h.hexdigest()[:16]}"


# Calls that allocate a NumPy array (a function making one needs numba's reference-counting
# runtime); a scalar ``np.sqrt`` / ``np.sin`` ... does not match
_ALLOCATES = re.compile(
    r"\bnp\.(zeros|empty|ones|full|array|asarray|eye|identity|copy|dot|outer|cross|"
    r"concatenate|stack|hstack|vstack|linalg|zeros_like|empty_like|ones_like|full_like)\b"
    r"|\.copy\(|\.astype\(| @ "
)


def refcounted_options() -> dict:
    """``njit`` options of a compiled helper that allocates (solvers/svd.py) but is called
    from NRT-free templates: ``_nrt=True``, else it would take its callers' setting and not
    compile; nothing where this numba has no such option (then no template is NRT-free)."""
    return {"_nrt": True} if nrt_option_supported() else {}


@functools.lru_cache(maxsize=4096)
def _body(src: str) -> str:
    """Function source without its decorator lines and docstring (for the checks; a pure
    function of the text, kept per process: a study's kernels share most templates)."""
    tree = ast.parse(textwrap.dedent(src))
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(ast.unparse(node) for node in body)


@functools.lru_cache(maxsize=4096)
def _called_names(src: str) -> frozenset[str]:
    """Names of the plain functions called in ``src`` (kept per process, as :func:`_body`)."""
    tree = ast.parse(textwrap.dedent(src))
    return frozenset({
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    })


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
    """Source text of the template functions defined in ``module``, by name (read once per
    process: a study's kernels share most templates, and ``inspect.getsource`` tokenizes
    the whole file for each function)."""
    return dict(_templates_read(module))


@functools.cache
def _templates_read(module: ModuleType) -> dict[str, str]:
    out: dict[str, str] = {}
    # templates a module shares with others by importing them from a private module
    # (hht and newmark use genalpha's step): listed by name in SHARED_TEMPLATES (a module
    # listed there instead shares all its templates, see _shared)
    shared = {n for n in getattr(module, "SHARED_TEMPLATES", ()) if isinstance(n, str)}
    for name, obj in vars(module).items():
        if (
            isinstance(obj, FunctionType)
            and (obj.__module__ == module.__name__ or name in shared)
            and name.startswith(TEMPLATE_PREFIXES)
        ):
            out[name] = textwrap.dedent(inspect.getsource(obj))
    return out


# Modules the generated kernel star-imports (their names are not copied as constants)
_STAR_IMPORTED = ("mbstudy.solvers.status", "mbstudy.solvers.linalg", "mbstudy.solvers.workspace")
# Placeholders of the names composition provides (templates import them for the linters)
_DECLARATIONS = "mbstudy.solvers.kernel_names"


def _assigned_names(module: ModuleType) -> set[str]:
    """Names a module assigns at its top level (as opposed to the ones it imports)."""
    return set(_assigned_read(module))


@functools.cache
def _assigned_read(module: ModuleType) -> frozenset[str]:
    out: set[str] = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return frozenset(out)


def _constants(module: ModuleType) -> list[str]:
    """Module-level constants (UPPER_CASE) of a template module, as source lines: ints,
    floats, tuples of them and float/int ndarrays (numba freezes global tuples and arrays
    as constants, e.g. a Runge-Kutta tableau). Not copied unless the module assigns them
    itself: the names of the star-imported modules, of the shared templates
    (formulations/_common.py) and the declarations of solvers/kernel_names.py, which a
    template imports for the linters."""
    lines = []
    homes = (*_STAR_IMPORTED, _DECLARATIONS, "mbstudy.solvers.formulations._common")
    skip = {n for home in homes for n in vars(importlib.import_module(home))}
    skip -= _assigned_names(module)
    for name, obj in vars(module).items():
        if name in skip or not name.isupper():
            continue
        if isinstance(obj, int | float) and not isinstance(obj, bool):
            lines.append(f"{name} = {obj!r}")
        elif isinstance(obj, tuple) and all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in obj
        ):
            lines.append(f"{name} = {obj!r}")
        elif isinstance(obj, np.ndarray) and obj.dtype.kind in "if":
            lines.append(f"{name} = np.array({obj.tolist()!r}, dtype=np.{obj.dtype.name})")
    return lines


def _kernel_imports(*modules: ModuleType) -> list[str]:
    """Import lines for the compiled helpers templates call (a module's ``KERNEL_IMPORTS``:
    {module name: (function names, ...)}), e.g. one step rule shared with another kernel."""
    lines = []
    for module in modules:
        for home, names in getattr(module, "KERNEL_IMPORTS", {}).items():
            lines.append(f"from {home} import {', '.join(names)}")
    return lines


def _shared(module: ModuleType) -> tuple[ModuleType, ...]:
    """The template modules a formulation or integrator shares (its ``SHARED_TEMPLATES``:
    e.g. the explicit Runge-Kutta driver), composed as if they were part of it."""
    return tuple(
        m for m in getattr(module, "SHARED_TEMPLATES", ()) if isinstance(m, ModuleType)
    )


def generate_source(
    model: str | registry.Entry, formulation: str, integrator: str, *, augmented: bool = False
) -> str:
    """Return the text of the kernel module for one triple (pure function of the sources).

    ``augmented=True`` composes the straightforward index-1 solve (LU of the (n+m)
    augmented matrix at every right-hand side) instead of the structured one (Schur
    complement of size m where M is positive definite; see ``common_solve_index1``).
    """
    with GENERATION_LOCK:  # parses template sources (ast): one thread at a time
        return _generate_source(model, formulation, integrator, augmented)


def _generate_source(model: str | registry.Entry, formulation: str, integrator: str,
                     augmented: bool) -> str:
    from mbstudy.solvers.formulations import _common

    mentry = registry.resolve(model)
    mod = mentry.module
    form = registry.formulation(formulation).module
    integ = registry.integrator(integrator).module
    provided = MODEL_FUNCTIONS + tuple(f for f in OPTIONAL_MODEL_FUNCTIONS if hasattr(mod, f))
    imports = ", ".join(f"{f} as model_{f}" for f in provided)
    name = _identifier(registry.kernel_key(mentry), "model")
    formulation = _identifier(formulation, "formulation")
    integrator = _identifier(integrator, "integrator")
    parts = [
        f'"""Generated kernel: model={name} formulation={formulation}'
        f' integrator={integrator}. Do not edit (solvers/compose.py)."""',
        "# ruff: noqa",
        "import numpy as np",
        "from numba import njit",
        "from mbstudy.solvers.compile_units import link_only",
        *(f"from {home} import *" for home in _STAR_IMPORTED),
        *_model_import_lines(mod, provided, imports),
        *_kernel_imports(form, *_shared(form), integ, *_shared(integ)),
        "",
    ]
    shared = _shared(form) + _shared(integ)
    for module in (_common, form, *shared, integ):
        parts += _constants(module)
    parts += [
        f"KERNEL_STRUCTURED_SOLVE = {not augmented}",
        f"KERNEL_CONSTANT_MASS = {bool(mentry.spec.constant_mass)}",
    ]
    common = _templates(_common)
    own = {**_templates(form)}
    for module in (*shared, integ):
        own.update(_templates(module))
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
        declared = _declared_nrt_free(_common, form, *shared, integ)
        nrt_free = nrt_free_templates(funcs, declared, model_sources)
    for name in sorted(funcs):
        parts.append("")
        parts.append(_decorator(name, name in nrt_free))
        parts.append(funcs[name].rstrip())
        parts.append("")
    return "\n".join(parts) + "\n"


def _decorator(name: str, nrt_free: bool) -> str:
    """A template's decorator: the entry points (:data:`ENTRY_POINTS`) are cached ``njit``
    functions; every other template is a link-only unit (solvers/compile_units.py),
    optimized and turned into machine code only inside the entry points that call it."""
    nrt = "_nrt=False" if nrt_free else ""
    if name in ENTRY_POINTS:
        return f"@njit(cache=True, {nrt})" if nrt else "@njit(cache=True)"
    return f"@link_only({nrt})"


_LOADED: dict[tuple[str, str, str, bool], ModuleType] = {}


def _model_import_lines(mod: ModuleType, provided: tuple[str, ...], imports: str) -> list[str]:
    """How a kernel module imports the model's functions: by module name, or for a model
    generated from a mechanism file (not importable by name) through its loader."""
    key = getattr(mod, "KERNEL_KEY", None)
    if key is None:
        return [f"from {_identifier(mod.__name__, 'model module', _DOTTED)} import {imports}"]
    lines = [
        "from mbstudy.solvers.mechanisms.codegen import load_generated as _load_generated",
        f"_model = _load_generated({_identifier(key, 'mechanism module')!r})",
    ]
    return lines + [f"model_{f} = _model.{f}" for f in provided]


def kernel_module(
    model: str, formulation: str, integrator: str, augmented: bool = False
) -> ModuleType:
    """Return the composed kernel module (generated on first use, then imported).

    ``augmented=True``: the variant with the straightforward augmented-LU index-1 solve
    (the reference the structured solve is tested against; see :func:`generate_source`).

    The module exposes ``common_run(q0, v0, t_out, p, fp, ip, Y, D, cnt)`` and
    ``common_state_size(p, fp)`` besides every template function. Safe to call from many
    threads and processes at once: every caller gets the completely executed module.

    Raises
    ------
    solvers.registry.UnknownName
        For a name not in the registry.
    UnsafeCacheDir
        If the kernel directory or ``NUMBA_CACHE_DIR`` belongs to another user.
    """
    triple = (model, formulation, integrator, bool(augmented))
    module = _LOADED.get(triple)
    if module is not None:
        return module
    with GENERATION_LOCK:
        module = _LOADED.get(triple)
        if module is None:
            module = _load(*triple)
            _LOADED[triple] = module  # published only once it has executed
    return module


def _load(model: str, formulation: str, integrator: str, augmented: bool) -> ModuleType:
    text = generate_source(model, formulation, integrator, augmented=augmented)
    key = kernel_key(model, formulation, integrator, text, augmented)
    directory = secure_dir(kernel_dir())
    return load_generated_module(f"mbstudy_kernels.{key}", directory / f"{key}.py", text)


@contextmanager
def compile_lock(
    model: str, formulation: str, integrator: str, augmented: bool = False
) -> Iterator[None]:
    """Hold this process's :data:`~mbstudy.solvers.loader.GENERATION_LOCK`, then the
    kernel's file lock (``<kernel_dir>/<key>.lock``, ``flock``), while compiling.

    Threads of one process (a dask worker with ``--nthreads 2``, a jobqueue job with more
    cores than processes) compile one kernel at a time: numba's compiler and the
    generators share CPython's syntax-tree conversion, which is not thread-safe in 3.11
    (solvers/loader.py). Processes that share the kernel directory and
    ``NUMBA_CACHE_DIR`` (the workers of a LocalCluster, jobs on a shared file system with
    working ``flock``) take the file lock around the first call of a kernel: the first
    compiles and writes numba's cache, the others wait and then load the machine code
    from the cache. Where ``fcntl`` is missing, only the process's lock is taken.
    """
    with GENERATION_LOCK:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        module = kernel_module(model, formulation, integrator, augmented)
        lock_path = Path(module.__file__).with_suffix(".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock
