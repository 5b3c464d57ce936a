"""A kernel's name: what the compiled machine code is made of, hashed
(:func:`kernel_key`), so numba's on-disk cache is reused across processes and never stale,
while an edit elsewhere under ``solvers/`` keeps every kernel."""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import numba
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose.names import _identifier


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
    launch resolved once and passes on (:func:`mbstudy.solvers.model_entry.resolve`).
    """
    mentry = model_entry.resolve(model)
    h = hashlib.sha256(numba.__version__.encode())
    h.update(text.encode())
    h.update(_module_digest(mentry.module).encode())
    # every mbstudy module the text imports from (the star-imported status, linalg and
    # workspace, the model, a template module's KERNEL_IMPORTS), with its dependencies
    for home in sorted(set(re.findall(r"^from (mbstudy\.[\w.]+) import", text, re.M))):
        h.update(home.encode())
        h.update(_module_digest(importlib.import_module(home)).encode())
    variant = "_lu" if augmented else ""
    name = _identifier(model_entry.kernel_key(mentry), "model")
    formulation = _identifier(formulation, "formulation")
    integrator = _identifier(integrator, "integrator")
    return f"mbk_{name}_{formulation}_{integrator}{variant}_{h.hexdigest()[:16]}"
