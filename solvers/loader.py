"""Execute the Python modules mbstudy generates: one loader, one guarantee.

Two generators write Python source: :mod:`mbstudy.solvers.compose` (a composed kernel,
``mbk_*``) and :mod:`mbstudy.solvers.mechanisms.codegen` (the model of a mechanism file,
``mbm_*``). Both hand their text to :func:`load_generated_module`, which guarantees:

* **What runs is the text generated in this process.** The module is compiled from that
  text with :func:`compile` and executed in a fresh module object; a file on disk is never
  imported. The file is still written (numba's on-disk cache keys machine code by the
  source file's path and time stamp), atomically (temporary file + ``os.replace``), and
  left untouched only when it already holds exactly that text; anything else found under
  the name (a planted module, a torn write) is replaced before the module runs.
* **Only from a verified directory.** The directory of the file and ``$NUMBA_CACHE_DIR``
  (whose index files numba unpickles, i.e. executes) are checked by :func:`secure_dir`:
  owned by this user, no group or other write permission (``__pycache__`` too, where
  numba writes without ``$NUMBA_CACHE_DIR``). A directory of another user, or one that
  cannot be made or written, is refused with :class:`UnsafeCacheDir`, whose message is
  one line.
* **One generation or compile at a time per process.** :data:`GENERATION_LOCK` (a
  re-entrant lock) is held around reading and deriving a mechanism file, generating and
  executing a module, a kernel's first compile (``compose.compile_lock``), a netlist's
  parse and the network kernels' warm-up. CPython 3.11's conversion of a C syntax tree
  into ``ast`` objects keeps its recursion depth in per-interpreter state, so two threads
  in :func:`ast.parse` at once corrupt each other's count (``SystemError: AST
  constructor recursion depth mismatch``). A multi-threaded dask worker on a cold cache
  met exactly that: two compile tasks parsing template sources in two threads (measured:
  4 of 4 cold launches on a ``--nthreads 2`` worker failed so, tests/test_threaded_workers.py).
  numba's compiler builds ``ast`` objects too (array expressions, debug line lookup),
  which is why a compile holds the lock as well. The lock costs nothing once a module is
  loaded: callers look up their cache first.

Threat model (docs/explanation/reliability.md, "Generated code"): user text (mechanism names,
summaries, keys, labels) reaches a generated module only as data, never as code; this
module makes sure that no other text is executed in its place.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["GENERATION_LOCK", "UnsafeCacheDir", "check_cache_dirs", "kernel_dir",
           "load_generated_module", "secure_dir", "secure_numba_dir"]  # fmt: skip

#: held around generation, execution and first compile of generated modules (see above)
GENERATION_LOCK = threading.RLock()


class UnsafeCacheDir(RuntimeError):
    """A kernel or numba cache directory that cannot be used safely: another user's, one
    that is not a directory, or one this user cannot write (the message is one line)."""


def secure_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) or check it: owned by this user, and not writable by group
    or others (a group/other write bit on a directory this user owns is removed).

    Generated modules are executed and numba unpickles its cache index from these
    directories: anyone who can write there could run code in every worker.

    Raises
    ------
    UnsafeCacheDir
        If the directory belongs to another user or cannot be made (one-line message).
    """
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        raise UnsafeCacheDir(
            f"{path}: cannot use this cache directory ({exc.strerror or exc});"
            " set MBSTUDY_KERNEL_DIR / NUMBA_CACHE_DIR to a directory of your own"
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeCacheDir(f"{path}: cache directory is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeCacheDir(
            f"{path}: cache directory owned by uid {st.st_uid}, not by this user;"
            " set MBSTUDY_KERNEL_DIR / NUMBA_CACHE_DIR to a directory of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
    return path


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


def check_cache_dirs() -> None:
    """:func:`secure_dir` of the kernel directory and ``$NUMBA_CACHE_DIR``, for a launcher
    whose workers share this machine's caches: an unsafe directory is refused before
    anything starts (one line), not found by every case as an error. Imports no numba."""
    secure_numba_dir()
    secure_dir(kernel_dir())


def secure_numba_dir() -> None:
    """:func:`secure_dir` of ``$NUMBA_CACHE_DIR`` when it is set (else numba writes next to
    the generated file, in the kernel directory's ``__pycache__``)."""
    nb = os.environ.get("NUMBA_CACHE_DIR")
    if nb:
        secure_dir(Path(nb))


def write_if_different(path: Path, text: str) -> None:
    """Make ``path`` hold ``text``: left untouched if it already does (its time stamp keys
    numba's cache), else written to a temporary file and renamed over it (atomic: processes
    sharing the directory write identical text)."""
    data = text.encode()
    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            return
    except OSError:
        pass
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    except OSError as exc:
        raise UnsafeCacheDir(_cannot_write(path, exc)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UnsafeCacheDir(_cannot_write(path, exc)) from None
        raise


def _cannot_write(path: Path, exc: OSError) -> str:
    return (f"{path}: cannot write a generated module ({exc.strerror or exc}); set"
            " MBSTUDY_KERNEL_DIR to a writable directory of your own")


def load_generated_module(modname: str, path: Path, text: str) -> ModuleType:
    """Execute ``text`` as the module ``modname`` with file name ``path``; return it.

    ``path``'s directory and ``$NUMBA_CACHE_DIR`` are verified (:func:`secure_dir`), the file
    is made to hold ``text`` (:func:`write_if_different`), and the module is compiled from
    ``text``, never re-read from disk. It is entered in ``sys.modules`` while it executes
    (its functions' ``__module__``) and removed again if executing fails. Callers hold
    :data:`GENERATION_LOCK` and keep their own cache of loaded modules.

    Raises
    ------
    UnsafeCacheDir
        If a directory belongs to another user.
    """
    with GENERATION_LOCK:
        secure_dir(path.parent)
        secure_numba_dir()
        if (path.parent / "__pycache__").exists():  # numba's cache without NUMBA_CACHE_DIR
            secure_dir(path.parent / "__pycache__")
        write_if_different(path, text)
        code = compile(text, str(path), "exec")
        module = ModuleType(modname, None)
        module.__file__ = str(path)
        sys.modules[modname] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(modname, None)
            raise
        return module
