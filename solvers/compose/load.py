"""The composed kernel module, generated once per process and executed through the one
loader of generated code (solvers/loader.py), and the per-kernel compile lock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from mbstudy.solvers.compose.generate import generate_source
from mbstudy.solvers.compose.keys import kernel_key
from mbstudy.solvers.loader import GENERATION_LOCK, kernel_dir, load_generated_module, secure_dir

_LOADED: dict[tuple[str, str, str, bool], ModuleType] = {}


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
