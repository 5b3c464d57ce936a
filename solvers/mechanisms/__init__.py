"""Mechanism files: bodies, joints, forces and drivers in a TOML file, compiled to a model.

A mechanism file (docs/explanation/mechanisms.md) is expanded (``[sizes]``, ``[[repeat]]``) by
:mod:`.repeat`, read and validated by :mod:`.schema`, its
expressions parsed by :mod:`.expressions` (a whitelisted syntax tree, never ``eval``), its
elements turned into symbolic equations by :mod:`.planar` / :mod:`.spatial`, the model
functions derived by :mod:`.derive` (Phi, Phi_q, Phi_t, gamma, M, Q, energy, power) and
written as a generated ``@njit`` module meeting docs/explanation/solver-contract.md by
:mod:`.codegen`.
:mod:`.checks` runs the ``mbstudy check-model`` checks on any model.

A spatial file's Euler parameters are normalized by a constraint row or by the
normalization element (docs/explanation/mechanisms.md). The mode changes the number of constraints,
so it is part of the model's name: ``PATH#normalization=element`` is the file at PATH in
element mode (:func:`model_name`), and a plain PATH is the mode the file itself states.

Public entry points: :func:`load_model` (a model name -> a registry entry),
:func:`is_model_path`, :func:`split_model_name`, :func:`model_name`.
"""

from __future__ import annotations

from mbstudy.solvers.mechanisms.naming import MODE_MARK as _MODE
from mbstudy.solvers.mechanisms.naming import is_model_path, split_model_name
from mbstudy.solvers.mechanisms.schema import NORMALIZATIONS, MechanismError


def model_name(path: str, normalization: str | None) -> str:
    """The model name of the mechanism file ``path`` with its Euler parameters normalized as
    ``normalization`` (``"constraint"`` or ``"element"``; None: as the file states). The
    plain path when the mode is the file's own, so a study that restates it is the same
    study.

    Raises
    ------
    MechanismError
        Key ``normalization``: an unknown mode, or a planar file (no Euler parameters); or
        the file's own error if it does not read.
    """
    from mbstudy.solvers.mechanisms.schema import read

    path = split_model_name(path)[0]
    if normalization is None:
        return path
    mech = read(path, normalization=normalization)
    return path if normalization == mech.own_normalization else f"{path}{_MODE}{normalization}"


def load_model(name: str):
    """Return the registry entry of the mechanism model ``name`` (a path, optionally with
    ``#normalization=MODE``; generated on first use).

    Raises
    ------
    MechanismError
        For a file that is missing, malformed or inconsistent (one line naming the key).
    """
    from mbstudy.solvers.mechanisms.codegen import load_entry

    return load_entry(name)


__all__ = [
    "NORMALIZATIONS", "MechanismError", "is_model_path", "load_model", "model_name",
    "split_model_name",
]  # fmt: skip
