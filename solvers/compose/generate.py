"""The text of a kernel module for one (model, formulation, integrator) triple: a pure
function of the sources (:func:`generate_source`)."""

from __future__ import annotations

import inspect
from types import ModuleType

from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose.harvest import (
    _STAR_IMPORTED,
    _constants,
    _kernel_imports,
    _shared,
    _templates,
)
from mbstudy.solvers.compose.names import (
    _DOTTED,
    ENTRY_POINTS,
    MODEL_FUNCTIONS,
    OPTIONAL_MODEL_FUNCTIONS,
    _identifier,
)
from mbstudy.solvers.compose.nrt import _declared_nrt_free, nrt_free_templates
from mbstudy.solvers.loader import GENERATION_LOCK


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

    mentry = model_entry.resolve(model)
    mod = mentry.module
    form = registry.formulation(formulation).module
    integ = registry.integrator(integrator).module
    provided = MODEL_FUNCTIONS + tuple(f for f in OPTIONAL_MODEL_FUNCTIONS if hasattr(mod, f))
    imports = ", ".join(f"{f} as model_{f}" for f in provided)
    name = _identifier(model_entry.kernel_key(mentry), "model")
    formulation = _identifier(formulation, "formulation")
    integrator = _identifier(integrator, "integrator")
    parts = [
        f'"""Generated kernel: model={name} formulation={formulation}'
        f' integrator={integrator}. Do not edit (solvers/compose/generate.py)."""',
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
    inline = _declared(_common, form, *shared, integ, what="ALWAYS_INLINE")
    for name in sorted(funcs):
        parts.append("")
        parts.append(_decorator(name, name in nrt_free, name in inline))
        parts.append(funcs[name].rstrip())
        parts.append("")
    return "\n".join(parts) + "\n"


def _declared(*modules: ModuleType, what: str) -> set[str]:
    """Union of the modules' ``what`` name tuples (``ALWAYS_INLINE``: templates LLVM must
    inline into every caller, solvers/compile_units.py ``link_only``)."""
    return {name for module in modules for name in getattr(module, what, ())}


def _decorator(name: str, nrt_free: bool, always_inline: bool = False) -> str:
    """A template's decorator: the entry points (:data:`ENTRY_POINTS`) are cached ``njit``
    functions; every other template is a link-only unit (solvers/compile_units.py),
    optimized and turned into machine code only inside the entry points that call it."""
    nrt = "_nrt=False" if nrt_free else ""
    if name in ENTRY_POINTS:
        return f"@njit(cache=True, {nrt})" if nrt else "@njit(cache=True)"
    options = ", ".join(o for o in (nrt, "always_inline=True" if always_inline else "") if o)
    return f"@link_only({options})"


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
