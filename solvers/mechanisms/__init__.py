"""Mechanism files: bodies, joints, forces and drivers in a TOML file, compiled to a model.

A mechanism file (docs/mechanisms.md) is expanded (``[sizes]``, ``[[repeat]]``) by
:mod:`.repeat`, read and validated by :mod:`.schema`, its
expressions parsed by :mod:`.expressions` (a whitelisted syntax tree, never ``eval``), its
elements turned into symbolic equations by :mod:`.planar` / :mod:`.spatial`, the model
functions derived by :mod:`.derive` (Phi, Phi_q, Phi_t, gamma, M, Q, energy, power) and
written as a generated ``@njit`` module meeting docs/solver-contract.md by :mod:`.codegen`.
:mod:`.checks` runs the ``mbstudy check-model`` checks on any model.

Public entry point: :func:`load_model` (a path -> a registry entry).
"""

from __future__ import annotations

from mbstudy.solvers.mechanisms.schema import MechanismError


def is_model_path(name: str) -> bool:
    """True if a model name is a path to a mechanism file (``.toml`` or a path separator)."""
    return str(name).endswith(".toml") or "/" in str(name) or "\\" in str(name)


def load_model(path: str):
    """Return the registry entry of the mechanism file at ``path`` (generated on first use).

    Raises
    ------
    MechanismError
        For a file that is missing, malformed or inconsistent (one line naming the key).
    """
    from mbstudy.solvers.mechanisms.codegen import load_entry

    return load_entry(path)


__all__ = ["MechanismError", "is_model_path", "load_model"]
