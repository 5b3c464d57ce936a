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

from mbstudy.solvers.compose.generate import generate_source
from mbstudy.solvers.compose.keys import kernel_key
from mbstudy.solvers.compose.load import compile_lock, kernel_module
from mbstudy.solvers.compose.names import (
    ENTRY_POINTS,
    IDENTIFIER,
    MODEL_FUNCTIONS,
    OPTIONAL_MODEL_FUNCTIONS,
    TEMPLATE_PREFIXES,
)
from mbstudy.solvers.compose.nrt import nrt_free_templates, refcounted_options
from mbstudy.solvers.loader import UnsafeCacheDir, kernel_dir, secure_dir
from mbstudy.solvers.private_api import nrt_option_supported

__all__ = ["ENTRY_POINTS", "IDENTIFIER", "MODEL_FUNCTIONS", "OPTIONAL_MODEL_FUNCTIONS",
           "TEMPLATE_PREFIXES", "UnsafeCacheDir", "compile_lock", "generate_source",
           "kernel_dir", "kernel_key", "kernel_module", "nrt_free_templates",
           "nrt_option_supported", "refcounted_options", "secure_dir"]  # fmt: skip
