"""What a kernel is composed of, read from the template modules: their template
functions' source, their UPPER_CASE constants (a Runge-Kutta tableau), the compiled
helpers they import (``KERNEL_IMPORTS``) and the modules they share (``SHARED_TEMPLATES``)."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import textwrap
from types import FunctionType, ModuleType

import numpy as np
from mbstudy.solvers.compose.names import TEMPLATE_PREFIXES


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
    """The template modules a formulation or integrator shares (its ``SHARED_TEMPLATES``,
    and theirs in turn: the explicit Runge-Kutta methods share the kernel driver, which
    shares the step-size control), composed as if they were part of it; each once, a
    module after the ones it shares."""
    out: list[ModuleType] = []

    def visit(m: ModuleType) -> None:
        for s in getattr(m, "SHARED_TEMPLATES", ()):
            if isinstance(s, ModuleType) and s not in out:
                visit(s)
                out.append(s)

    visit(module)
    return tuple(out)
