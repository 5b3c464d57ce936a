"""Compose a (model, formulation, integrator) triple into one cached kernel module.

See docs/solver-contract.md for the why. The generated module's text is: imports of the
model's jitted functions under the fixed names ``model_*``, then the source of every
template function of ``formulations/_common.py``, of the formulation and of the integrator:
the entry points ``common_run`` and ``common_state_size`` decorated ``@njit(cache=True)``,
every other template ``@link_only()`` (solvers/compile_units.py: compiled only as part of
the entry points, so LLVM optimizes the call tree once instead of once per level). Its
file name carries a hash of its own text and of the files it depends on (see
:func:`kernel_key`), so numba's on-disk cache is reused across processes and can never
be stale, while an edit elsewhere under ``solvers/`` (a docstring
in ``runner.py``) invalidates no kernel.

Loading is safe under concurrency: threads of one process asking for the same
kernel wait on one lock and all get the complete module (a module is published only after
it has executed); processes sharing the kernel directory write its file atomically
(temporary file + ``os.replace``) and serialise the first compile of a kernel on a file
lock (:func:`compile_lock`), so a kernel compiles once per machine or shared cache, not
once per worker. The module is executed from the text generated in this process, after
checking that the file on disk holds exactly that text, so a file planted or altered in
the kernel directory is never executed; the kernel directory and ``NUMBA_CACHE_DIR`` (whose
index files numba unpickles) must be owned by the user and not writable by group or others.

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
import stat
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FunctionType, ModuleType

import numba
import numpy as np
from mbstudy.solvers import registry

TEMPLATE_PREFIXES = ("common_", "form_", "integ_", "default_form_", "default_model_")
MODEL_FUNCTIONS = ("sizes", "mass", "forces", "phi", "phi_q", "phi_t", "gamma", "energy", "power")
# optional model functions: where a model lacks one, the template default_model_X serves
OPTIONAL_MODEL_FUNCTIONS = ("constraint_terms",)
_SOLVERS_DIR = Path(__file__).resolve().parent
# the templates a kernel's users call (solvers/runner.py); the others are link-only units
ENTRY_POINTS = ("common_run", "common_state_size")


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


class UnsafeCacheDir(RuntimeError):
    """A kernel or numba cache directory that another user could write to."""


def secure_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) or check it: owned by this user, and not writable by group
    or others (a group/other write bit on a directory this user owns is removed).

    Generated modules are executed and numba unpickles its cache index from these
    directories: anyone who can write there could run code in every worker.

    Raises
    ------
    UnsafeCacheDir
        If the directory belongs to another user.
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeCacheDir(
            f"{path}: cache directory owned by uid {st.st_uid}, not by this user;"
            " set MBSTUDY_KERNEL_DIR / NUMBA_CACHE_DIR to a directory of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
    return path


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
    model: str, formulation: str, integrator: str, text: str, augmented: bool = False
) -> str:
    """The kernel's module name: ``mbk_<model>_<formulation>_<integrator>[_lu]_<hash>``.

    ``hash`` (16 hex digits of sha256) covers exactly what the compiled kernel is made of:
    numba's version, the generated text ``text`` (every template it contains, constants,
    decorator options) and the model module's code with the mbstudy modules it uses
    and every ``mbstudy`` module the text imports from (with theirs).
    An edit anywhere else leaves the key alone.
    """
    h = hashlib.sha256(numba.__version__.encode())
    h.update(text.encode())
    h.update(_module_digest(registry.model(model).module).encode())
    # every mbstudy module the text imports from (the star-imported status, linalg and
    # workspace, the model, a template module's KERNEL_IMPORTS), with its dependencies
    for home in sorted(set(re.findall(r"^from (mbstudy\.[\w.]+) import", text, re.M))):
        h.update(home.encode())
        h.update(_module_digest(importlib.import_module(home)).encode())
    variant = "_lu" if augmented else ""
    name = registry.kernel_key(model)
    return f"mbk_{name}_{formulation}_{integrator}{variant}_{h.hexdigest()[:16]}"


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
        f'"""Generated kernel: model={registry.kernel_key(model)} formulation={formulation}'
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
_LOCKS: dict[tuple[str, str, str, bool], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _thread_lock(key: tuple[str, str, str, bool]) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def _model_import_lines(mod: ModuleType, provided: tuple[str, ...], imports: str) -> list[str]:
    """How a kernel module imports the model's functions: by module name, or for a model
    generated from a mechanism file (not importable by name) through its loader."""
    key = getattr(mod, "KERNEL_KEY", None)
    if key is None:
        return [f"from {mod.__name__} import {imports}"]
    lines = [
        "from mbstudy.solvers.mechanisms.codegen import load_generated as _load_generated",
        f"_model = _load_generated({str(key)!r})",
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
    with _thread_lock(triple):
        module = _LOADED.get(triple)
        if module is None:
            module = _load(*triple)
            _LOADED[triple] = module  # published only once it has executed
    return module


def _load(model: str, formulation: str, integrator: str, augmented: bool) -> ModuleType:
    text = generate_source(model, formulation, integrator, augmented=augmented)
    key = kernel_key(model, formulation, integrator, text, augmented)
    modname = f"mbstudy_kernels.{key}"
    directory = secure_dir(kernel_dir())
    nb = os.environ.get("NUMBA_CACHE_DIR")
    if nb:
        secure_dir(Path(nb))
    path = directory / f"{key}.py"
    _write_if_different(path, text)
    module = ModuleType(modname, None)
    module.__file__ = str(path)
    # executed from ``text`` (checked equal to the file just above), never re-read from
    # the file: what runs is what this process generated. numba's cache locator uses the
    # file's path and time stamp only.
    code = compile(text, str(path), "exec")
    sys.modules[modname] = module  # under the triple's lock; _LOADED is what callers see
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return module


def _write_if_different(path: Path, text: str) -> None:
    """Make ``path`` hold ``text``: left untouched if it already does (its time stamp keys
    numba's cache), else written to a temporary file and renamed over it (atomic)."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def compile_lock(
    model: str, formulation: str, integrator: str, augmented: bool = False
) -> Iterator[None]:
    """Hold the kernel's file lock (``<kernel_dir>/<key>.lock``, ``flock``) while compiling.

    Processes and threads that share the kernel directory and ``NUMBA_CACHE_DIR`` (the
    workers of a LocalCluster, jobs on a shared file system with working ``flock``) take
    it around the first call of a kernel: the first compiles and writes numba's cache,
    the others wait and then load the machine code from the cache. Where ``fcntl`` is
    missing, no lock is taken (each process compiles, as before).
    """
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
