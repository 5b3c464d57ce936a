"""The one registry: names -> specs and modules of models, formulations and integrators.

A leaf of ``solvers/`` (it imports only the specs and the DAE-form vocabulary with its
compatibility decision, :mod:`mbstudy.solvers.forms`, itself a leaf): the model of a
*name* that may be a mechanism file is resolved by :mod:`mbstudy.solvers.model_entry`,
which reads files.

Entries are discovered, not listed: every module of ``solvers.models``,
``solvers.formulations`` and ``solvers.integrators`` whose name does not start with an
underscore and that defines ``SPEC`` is an entry under ``SPEC.name``. Adding a method is
adding one module; no central list needs editing.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from functools import cache

from mbstudy.solvers.forms import declaration_error, incompatibility
from mbstudy.solvers.spec import Entry, FormulationSpec, IntegratorSpec, ModelSpec

KINDS = ("model", "formulation", "integrator")
MODEL_PACKAGE = "mbstudy.solvers.models"  # the built-in models (each its own module)
_PACKAGES = {
    "model": MODEL_PACKAGE,
    "formulation": "mbstudy.solvers.formulations",
    "integrator": "mbstudy.solvers.integrators",
}


class UnknownName(KeyError):
    """A registry name that does not exist; carries the closest valid name."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = valid
        self.suggestion = closest(name, valid)
        super().__init__(name)

    def __str__(self) -> str:
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"unknown {self.kind} {self.name!r}{hint} (valid: {', '.join(self.valid)})"


def closest(name: str, valid: list[str] | tuple[str, ...]) -> str | None:
    """Return the valid name closest to ``name`` (difflib ratio >= 0.5), or None."""
    hits = difflib.get_close_matches(str(name), list(valid), n=1, cutoff=0.5)
    return hits[0] if hits else None


@cache
def entries(kind: str) -> dict[str, Entry]:
    """Return every entry of one kind (``model``, ``formulation``, ``integrator``), by name."""
    if kind not in _PACKAGES:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    package = importlib.import_module(_PACKAGES[kind])
    found: dict[str, Entry] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if spec is None:
            continue
        if spec.name in found:
            raise RuntimeError(f"two {kind}s are named {spec.name!r}")
        why = declaration_error(spec)
        if why:  # a form outside solvers/forms.py's vocabulary: a programming error
            raise RuntimeError(f"{kind} {why}")
        found[spec.name] = Entry(kind, spec, module)
    for name, entry in plugins(kind).items():
        if name in found:  # a plugin never replaces a built-in
            import warnings

            warnings.warn(f"{kind} plugin {name!r} skipped: a built-in {kind} has that name",
                          stacklevel=2)  # fmt: skip
            continue
        found[name] = entry
    return found


def get(kind: str, name: str) -> Entry:
    """Return one entry, or raise :class:`UnknownName` with the closest valid name."""
    table = entries(kind)
    if name not in table:
        raise UnknownName(kind, name, sorted(table))
    return table[name]


# entry-point groups of installed packages that add entries (a package's pyproject.toml:
# [project.entry-points."mbstudy.integrators"] NAME = "package.module")
PLUGIN_GROUPS = {
    "model": "mbstudy.models",
    "formulation": "mbstudy.formulations",
    "integrator": "mbstudy.integrators",
}
_SPEC_TYPES = {"model": ModelSpec, "formulation": FormulationSpec, "integrator": IntegratorSpec}


def plugins(kind: str) -> dict[str, Entry]:
    """Entries of ``kind`` registered by installed packages under ``PLUGIN_GROUPS[kind]``.

    Each entry point names a module with the contract of the built-in modules of that kind
    (docs/explanation/solver-contract.md: a ``SPEC`` and the templates or jitted
    functions); the entry is keyed by ``SPEC.name``. A plugin is installed code, trusted
    as any imported package; its templates are copied into the generated kernels, whose
    key hashes their text, so an edited plugin gets new kernels. A plugin that fails to
    import, has no ``SPEC`` of the kind, a name that is not an identifier or that of a
    built-in entry, declares a DAE form outside the vocabulary
    (:func:`mbstudy.solvers.forms.declaration_error`) or asks a kernel to import from
    outside mbstudy (``KERNEL_IMPORTS``) is skipped with a warning: it must not break the
    built-in entries.
    """
    import warnings
    from importlib.metadata import entry_points

    found: dict[str, Entry] = {}
    for ep in entry_points(group=PLUGIN_GROUPS[kind]):
        try:
            module = ep.load()
        except Exception as exc:  # a broken plugin must not break the registry
            warnings.warn(f"{kind} plugin {ep.name!r} cannot be imported: {exc}", stacklevel=2)
            continue
        spec = getattr(module, "SPEC", None)
        why = None
        if not isinstance(spec, _SPEC_TYPES[kind]):
            why = f"has no {_SPEC_TYPES[kind].__name__} SPEC"
        elif not (spec.name.isascii() and spec.name.isidentifier()):
            why = f"its name {spec.name!r} is not an identifier"
        elif declaration_error(spec):
            why = declaration_error(spec)
        elif any(not str(home).startswith("mbstudy.")
                 for home in getattr(module, "KERNEL_IMPORTS", {})):  # fmt: skip
            why = "asks its kernels to import from outside mbstudy (KERNEL_IMPORTS)"
        if why:
            warnings.warn(f"{kind} plugin {ep.name!r} skipped: {why}", stacklevel=2)
            continue
        found[spec.name] = Entry(kind, spec, module)
    return found


def plugin_models() -> dict[str, Entry]:
    """Models registered by installed packages (:func:`plugins` of kind ``model``)."""
    return plugins("model")


def formulation(name: str) -> Entry:
    """Return the formulation entry ``name``."""
    return get("formulation", name)


def integrator(name: str) -> Entry:
    """Return the integrator entry ``name``."""
    return get("integrator", name)


def compatibility(model_name: str, formulation_name: str, integrator_name: str) -> str | None:
    """Return None if the triple can run, else why not (naming what is allowed).

    The one decision, :func:`mbstudy.solvers.forms.incompatibility`, on the declared
    specs: the model's (a built-in or plugin model; a mechanism file's model, not an entry
    here, is passed by name: multibody equations, every form), the formulation's DAE form and
    the forms the integrator accepts. The allowed lists of the message are every
    registered formulation and integrator.
    """
    integ = integrator(integrator_name).spec
    form = formulation(formulation_name).spec
    assert isinstance(integ, IntegratorSpec) and isinstance(form, FormulationSpec)
    model = entries("model").get(model_name)
    model_spec = model.spec if model is not None else model_name
    assert isinstance(model_spec, ModelSpec | str)
    return incompatibility(
        model_spec,
        form,
        integ,
        [e.spec for e in entries("formulation").values()],  # type: ignore[misc]
        [e.spec for e in entries("integrator").values()],  # type: ignore[misc]
    )
