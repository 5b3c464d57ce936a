"""The registry entry of a model *name*: a built-in or plugin model
(:func:`mbstudy.solvers.registry.get`), or, for a path, the model generated from that
mechanism file (``solvers/mechanisms``); and the model's part of a kernel's name.

Kept out of the registry so that the registry stays a leaf: resolving a file imports the
mechanism reader and its code generator, which themselves make registry entries.
"""

from __future__ import annotations

from mbstudy.solvers import registry
from mbstudy.solvers.spec import Entry

__all__ = ["kernel_key", "model", "resolve"]


def model(name: str) -> Entry:
    """Return the model entry ``name``: a built-in or plugin model, or, for a name ending
    in ``.toml`` or containing a path separator, the model generated from that mechanism
    file (``solvers/mechanisms``; raises its ``MechanismError`` for a bad file)."""
    from mbstudy.solvers.mechanisms import is_model_path, load_model

    if is_model_path(name):
        return load_model(name)
    return registry.get("model", name)


def resolve(model_or_entry: str | Entry) -> Entry:
    """The model entry of ``model_or_entry``: an :class:`Entry` resolved earlier and passed
    on is returned as it is (a launch resolves its model once, when the study is loaded,
    and hands the entry to every stage); a name is resolved by :func:`model`."""
    if isinstance(model_or_entry, Entry):
        return model_or_entry
    return model(model_or_entry)


def kernel_key(name: str | Entry) -> str:
    """The model's part of a composed kernel's name.

    A built-in model: its name (its source is covered by the kernel's hash of
    ``solvers/``). A mechanism file: the generated module's ``KERNEL_KEY`` (a hash of the
    file's content and the generator). A plugin: its name and the sha256 of its module's
    source file, so an edited plugin is never served from a stale cache.
    """
    import hashlib
    import re

    entry = resolve(name)
    name = entry.name
    key = getattr(entry.module, "KERNEL_KEY", None)
    if key:
        return str(key)
    if entry.module.__name__.startswith(registry.MODEL_PACKAGE + "."):
        return name
    src = getattr(entry.module, "__file__", None)
    digest = "nosource"
    if src:
        with open(src, "rb") as fh:  # closed here: an unclosed file is a ResourceWarning
            digest = hashlib.sha256(fh.read()).hexdigest()[:16]
    return f"plg_{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{digest}"
