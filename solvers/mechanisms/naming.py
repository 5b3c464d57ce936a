"""The names of mechanism models: ``PATH[#normalization=MODE]`` split and recognized.

A leaf module (no imports of mbstudy): the package's ``__init__`` re-exports these, and
the code generator imports them from here, so that the generator does not import the
package that loads it (the import graph of ``solvers/`` has no cycle,
tests/test_layering.py).
"""

from __future__ import annotations

MODE_MARK = "#normalization="

MODE_MARK = "#normalization="


def split_model_name(name: str) -> tuple[str, str | None]:
    """(path, normalization or None) of a mechanism model name ``PATH[#normalization=MODE]``."""
    path, sep, mode = str(name).rpartition(MODE_MARK)
    return (path, mode) if sep else (str(name), None)


def is_model_path(name: str) -> bool:
    """True if a model name is a path to a mechanism file (``.toml`` or a path separator,
    optionally followed by ``#normalization=MODE``)."""
    path = split_model_name(name)[0]
    return path.endswith(".toml") or "/" in path or "\\" in path
