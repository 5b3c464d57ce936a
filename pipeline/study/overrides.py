"""Command-line overrides of a study file (``--set KEY=VALUE``, in the manner of Hydra).

An override names a key of the study file by its path and gives it a value::

    study.t_end=2                    [study] t_end = 2
    runs.baumgarte.h=0.005,0.0025    h = [0.005, 0.0025] in the [[runs]] block named baumgarte
    runs[1].omega_n=5,20,80          the same by the block's position (0-based)
    model.k=100                      [model] k = 100
    reference.rtol=1e-10

The value is read as one TOML value (``2``, ``1e-10``, ``"rk4"``, ``[1, 2]``,
``{ halving = 0.02, num = 6 }``, ``true``); a word that is no TOML value is a string
(``integrator=rk4``), and commas outside brackets and quotes make a list, that is an axis
(``h=0.005,0.0025`` is ``h = [0.005, 0.0025]``, Hydra's sweep syntax).

The overrides are applied to the parsed TOML document *before* validation
(:func:`mbstudy.pipeline.study.parse.parse_study`), so every check of a study file applies
to them, and the study they give is hashed like a file that says the same: an override
that changes a value changes ``spec_hash``, one that repeats the file's value does not.
An error in an overridden value is the file's one-line error with the override named
(:func:`blame`). A block named by ``runs.NAME`` must exist (a block's name is its ``name``
key, else its formulation, as in :mod:`.blocks`).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mbstudy.pipeline.study.checks import _hint
from mbstudy.pipeline.study.spec import StudyError

__all__ = ["Override", "apply_overrides", "blame", "parse_value", "split_commas"]

_INDEXED = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\[(\d+)\]$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Override:
    """One applied override: as typed, and the key path the study's errors use for it
    (``runs[0].h``)."""

    text: str
    key: str
    value: Any


def parse_value(raw: str) -> Any:
    """The value of ``raw``: one TOML value, else a list when it has top-level commas
    (each item read the same way), else the string itself."""
    raw = raw.strip()
    items = split_commas(raw)
    if len(items) > 1:
        return [_scalar(item) for item in items]
    return _scalar(raw)


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if "\n" not in raw and raw:
        try:
            return tomllib.loads(f"x = {raw}")["x"]
        except tomllib.TOMLDecodeError:
            pass
    return raw


def split_commas(raw: str) -> list[str]:
    """``raw`` split at the commas outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(raw):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(raw[start:i])
            start = i + 1
    parts.append(raw[start:])
    return parts


def apply_overrides(
    doc: dict, overrides: Sequence[str], source: str
) -> tuple[dict, tuple[Override, ...]]:
    """A copy of the parsed study document ``doc`` with every override set in it, and the
    overrides as applied. Raises :class:`StudyError` (key ``--set TEXT``) for an override
    that is malformed, names no block or a value that is not a table, or sets a key that
    an earlier override set."""
    doc = copy.deepcopy(doc)
    applied: list[Override] = []
    for text in overrides:
        text = text.strip()
        where = f"--set {text}"
        if not text.isprintable():
            raise StudyError(source, where, "control characters are not allowed")
        name, eq, raw = text.partition("=")
        name = name.strip()
        if not eq or not name:
            raise StudyError(source, where, "expected KEY=VALUE (e.g. study.t_end=2 or"
                             " runs.NAME.h=0.01,0.005)")  # fmt: skip
        table, leaf, key = _locate(doc, name.split("."), source, where)
        if any(o.key == key for o in applied):
            raise StudyError(source, where, f"{key} is set twice on the command line")
        table[leaf] = parse_value(raw)
        applied.append(Override(text=text, key=key, value=table[leaf]))
    return doc, tuple(applied)


def _locate(doc: dict, parts: list[str], source: str, where: str) -> tuple[dict, str, str]:
    """(table, leaf key, error key path) of the dotted ``parts``; missing tables are made."""
    node: Any = doc
    shown: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        index = _INDEXED.match(part)
        if index is None and not _KEY.match(part):
            raise StudyError(source, where, f"{part!r} is not a key name")
        if index is not None or (shown == ["runs"] and isinstance(node, list)):
            node, label = _block(node, part, index, source, where, shown)
            shown[-1:] = [label]
            if last:
                raise StudyError(source, where, f"{label} is a [[runs]] block; name one of its"
                                 " keys (runs.NAME.KEY=VALUE)")  # fmt: skip
            continue
        if not isinstance(node, dict):
            raise StudyError(source, where, f"{'.'.join(shown)} is not a table")
        shown.append(part)
        if last:
            return node, part, ".".join(shown)
        if part not in node:
            node[part] = {}
        node = node[part]
        if part == "runs" and not isinstance(node, list) and not shown[:-1]:
            raise StudyError(source, where, "the study has no [[runs]] blocks to set")
    raise AssertionError("unreachable")


def _block(node: Any, part: str, index: re.Match | None, source: str, where: str,
           shown: list[str]) -> tuple[dict, str]:  # fmt: skip
    """The [[runs]] block that ``part`` names (``runs.NAME`` or ``runs[i]``)."""
    if index is not None:
        section, i = index.group(1), int(index.group(2))
        if shown or section != "runs":
            raise StudyError(source, where, f"{part!r}: only [[runs]] blocks are indexed")
        blocks = node.get("runs") if isinstance(node, dict) else None
        if not isinstance(blocks, list) or not 0 <= i < len(blocks):
            n = len(blocks) if isinstance(blocks, list) else 0
            raise StudyError(source, where, f"no block runs[{i}] (the study has {n})")
        shown.append("runs")
        return blocks[i], f"runs[{i}]"
    names = [_block_name(b) for b in node]
    if part not in names:
        raise StudyError(source, where, f"no [[runs]] block named {part!r}"
                         f"{_hint(part, names)} (blocks: {', '.join(map(str, names))})")
    i = names.index(part)
    return node[i], f"runs[{i}]"


def _block_name(block: Any) -> Any:
    """A block's name as :mod:`.blocks` resolves it (``name``, else the formulation)."""
    if not isinstance(block, dict):
        return None
    return block.get("name", block.get("formulation"))


def blame(err: StudyError, applied: Sequence[Override]) -> StudyError:
    """``err`` with the override that set its key named, if one did."""
    for o in applied:
        if (err.key == o.key or err.key.startswith((o.key + ".", o.key + "["))
                or o.key.startswith(err.key + ".")):  # a table the override made
            return StudyError(err.source, err.key, f"{err.message} (set by --set {o.text})")
    return err
