"""Every use of a dependency's private API in the solvers layer, in one place.

The solvers layer may not import the pipeline (tests/test_layering.py), so it has its own
guarded module: this one, the only one of solvers/ (pipeline/private_api.py is the
pipeline's). Nothing else in solvers/ imports a private module of a dependency or reads a
private attribute of one; :data:`PRIVATE_API` lists every internal used here or through
the names this module hands out, with the signature it is used with, and
``tests/test_private_api.py`` checks each against the installed release (pyproject.toml
also bounds numba below its next minor release) and exercises the helpers on real
objects, so a release that changes one fails there by name.

- numba's compilation internals, for the link-only compile units of
  :mod:`mbstudy.solvers.compile_units` (no public API lets a function's code library be
  linked into its callers without being optimized on its own): the code library
  classes, the ``NativeLowering`` pass, ``CompilerBase`` / ``DefaultPassBuilder``, the
  CPU dispatcher, ``register_pass`` and the global compiler lock
  (:func:`numba_compiler_internals`), and the private state of a code library that the
  link-only library reads (:func:`library_links`, :func:`library_reload_hooks`,
  :func:`library_final_module`, :func:`library_module_for_linking`);
- numba's ``_nrt`` option (compile a function without reference counting:
  :func:`nrt_option_supported`, used by :mod:`mbstudy.solvers.compose`);
- numba's on-disk cache layout: ``<module>.<function>-<line>.pyXY.nbi`` index and
  ``.nbc`` data files, in ``__pycache__`` beside the source or, with ``NUMBA_CACHE_DIR``,
  in one sub-directory per source directory (:func:`numba_cache_roots`,
  :func:`numba_cache_module`, :func:`has_numba_index`, used by
  :mod:`mbstudy.solvers.kernel_cache`);
- scipy's bundled OpenBLAS (``scipy.libs/*openblas*``) and its
  ``openblas_set_num_threads_local`` (:func:`openblas_threads_local_address`, used by
  :mod:`mbstudy.solvers.svd`).

This module imports no other module of mbstudy and imports each dependency only inside
the function that needs it.
"""

from __future__ import annotations

import ctypes
import glob
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

__all__ = [
    "LIBRARY_STATE",
    "PRIVATE_API",
    "c_int_function",
    "has_numba_index",
    "library_final_module",
    "library_links",
    "library_module_for_linking",
    "library_reload_hooks",
    "nrt_option_supported",
    "numba_cache_module",
    "numba_cache_roots",
    "numba_compiler_internals",
    "openblas_threads_local_address",
]

# (module, dotted attribute, parameter names of the callable or None for a plain value)
PRIVATE_API: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("numba.core.codegen", "JITCodeLibrary", None),
    ("numba.core.codegen", "JITCodeLibrary.finalize", ("self",)),
    ("numba.core.codegen", "JITCodeLibrary.get_pointer_to_function", ("self", "name")),
    ("numba.core.codegen", "CPUCodeLibrary._get_module_for_linking", ("self",)),
    ("numba.core.codegen", "CPUCodeLibrary.add_linking_library", ("self", "library")),
    ("numba.core.codegen", "CodeLibrary._raise_if_finalized", ("self",)),
    ("numba.core.codegen", "CodeLibrary._ensure_finalized", ("self",)),
    ("numba.core.codegen", "CodeLibrary.codegen", None),
    ("numba.core.codegen", "JITCPUCodegen.set_env", ("self", "env_name", "env")),
    ("numba.core.typed_passes", "NativeLowering.run_pass", ("self", "state")),
    ("numba.core.compiler", "CompilerBase.define_pipelines", ("self",)),
    ("numba.core.compiler", "DefaultPassBuilder.define_nopython_pipeline", ("state", "name")),
    ("numba.core.compiler_machinery", "register_pass", ("mutates_CFG", "analysis_only")),
    ("numba.core.compiler_lock", "require_global_compiler_lock", ()),
    ("numba.core.registry", "CPUDispatcher", None),
    ("numba.core.dispatcher", "Dispatcher.add_overload", ("self", "cres")),
    ("numba.core.dispatcher", "Dispatcher._compile_for_args", ("self", "args", "kws")),
    ("numba.core.options", "DefaultOptions._nrt", None),
)

# the private state of a compiled numba code library that the link-only libraries read or
# set (checked on a real library by tests/test_private_api.py)
LIBRARY_STATE = ("_linking_libraries", "_reload_init", "_final_module", "_finalized",
                 "_shared_module", "_codegen")  # fmt: skip


# -- numba's compiler -----------------------------------------------------------------------
def numba_compiler_internals() -> SimpleNamespace:
    """numba's classes and helpers that :mod:`mbstudy.solvers.compile_units` builds on:
    ``JITCodeLibrary``, ``NativeLowering``, ``CompilerBase``, ``DefaultPassBuilder``,
    ``CPUDispatcher``, ``register_pass``, ``require_global_compiler_lock``."""
    from numba.core import codegen, compiler
    from numba.core.compiler_lock import require_global_compiler_lock
    from numba.core.compiler_machinery import register_pass
    from numba.core.registry import CPUDispatcher
    from numba.core.typed_passes import NativeLowering

    return SimpleNamespace(
        JITCodeLibrary=codegen.JITCodeLibrary, NativeLowering=NativeLowering,
        CompilerBase=compiler.CompilerBase, DefaultPassBuilder=compiler.DefaultPassBuilder,
        CPUDispatcher=CPUDispatcher, register_pass=register_pass,
        require_global_compiler_lock=require_global_compiler_lock,
    )  # fmt: skip


def library_links(library: Any) -> list:
    """The code libraries ``library`` links into its own (``_linking_libraries``)."""
    return list(library._linking_libraries)


def library_reload_hooks(library: Any) -> set:
    """The reload hooks ``library`` runs when loaded from the cache (``_reload_init``)."""
    return library._reload_init


def library_module_for_linking(library: Any) -> Any:
    """The LLVM module a caller of ``library`` links in (``_get_module_for_linking``)."""
    return library._get_module_for_linking()


def library_final_module(library: Any) -> Any:
    """The LLVM module of a finalized ``library``'s own functions (``_final_module``)."""
    return library._final_module


def nrt_option_supported() -> bool:
    """Whether this numba accepts ``_nrt=False`` (compile a function without its
    reference-counting runtime); every numba this project supports does."""
    try:
        from numba.core.options import DefaultOptions
    except ImportError:
        return False
    return hasattr(DefaultOptions, "_nrt")


# -- numba's cache files --------------------------------------------------------------------
def numba_cache_roots(source_dir: Path) -> list[Path]:
    """Where numba writes the cache files of functions defined in ``source_dir``'s
    modules: ``source_dir/__pycache__`` and, when ``NUMBA_CACHE_DIR`` is set, that
    directory, which holds one sub-directory per source directory (search it
    recursively)."""
    roots = [source_dir / "__pycache__"]
    nb = os.environ.get("NUMBA_CACHE_DIR")
    if nb:
        roots.append(Path(nb))
    return roots


def numba_cache_module(path: Path) -> str:
    """The name of the module whose function a numba cache file belongs to
    (``<module>.<function>-<line>.pyXY.nbi`` / ``.nbc``)."""
    return path.name.split(".", 1)[0]


def has_numba_index(source_dir: Path, module: str, function: str) -> bool:
    """Whether numba has cached ``module.function`` (a module of ``source_dir``): an
    index file ``<module>.<function>-<line>.pyXY.nbi`` in one of its cache roots."""
    pattern = f"{module}.{function}-*.nbi"
    local, *user = numba_cache_roots(source_dir)
    if any(local.glob(pattern)):
        return True
    return any(root.is_dir() and any(root.glob(f"*/{pattern}")) for root in user)


# -- scipy's OpenBLAS -----------------------------------------------------------------------
def c_int_function(address: int):
    """The C function ``int f(int)`` at ``address`` as a Python callable (ctypes), for the
    plain-Python path of solvers/svd.py's OpenBLAS thread setter."""
    import ctypes

    return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(address)


def openblas_threads_local_address() -> int | None:
    """Address of ``openblas_set_num_threads_local`` (OpenBLAS >= 0.3.27: the thread count
    of the calling thread only; returns the previous one) in the OpenBLAS bundled with
    scipy's wheels (``scipy.libs``), whose LAPACK numba's ``np.linalg`` calls; None where
    there is none (a scipy built on another LAPACK)."""
    import scipy

    pattern = os.path.join(os.path.dirname(scipy.__file__), os.pardir, "scipy.libs", "*openblas*")
    for path in sorted(glob.glob(pattern)):
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        return int(ctypes.cast(fn, ctypes.c_void_p).value)
    return None
