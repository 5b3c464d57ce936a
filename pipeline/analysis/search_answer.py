"""The answers of ``[[search]]`` blocks read from a search store (store/search_block.py).

:func:`search_blocks` lists a store's search blocks with their state (rounds done, cases,
done, goal) and current answer; :func:`boundary_points` is what ``mbstudy boundary``
prints: one object per boundary point holding every continuous axis's value by name, the
list axes' values and ``lo`` / ``hi``, the last case on the ok side (status ok, or the
metric below ``at``) and the first on the other side of the crossed axis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.search_block import read_search_root
from mbstudy.pipeline.store.search_reader import is_search_store, search_part

__all__ = ["boundary_points", "is_search_store", "search_blocks", "search_part"]


def search_blocks(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per search block: goal, metric, at, axes, lists, cases, rounds, done, answer (of
    the search store of ``path``: :func:`search_part`)."""
    root = read_search_root(search_part(path) or path)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(root.group_keys()):
        a = dict(root[name].attrs)
        if not a.get("search"):
            continue
        out[name] = {
            "goal": a["goal"], "metric": a["metric"], "at": a.get("at"),
            "axes": list(a["axes"]), "lists": list(a["lists"]), "cases": int(a["n"]),
            "budget": int(a["capacity"]), "rounds": int(a["rounds"]), "done": bool(a["done"]),
            "seed": a.get("seed"), "answer": list(a.get("estimate") or []),
        }  # fmt: skip
    return out


def boundary_points(path: str | Path, name: str) -> tuple[dict[str, Any], list[dict]]:
    """The block's state and its boundary points; StoreError for an unknown block or a
    block whose goal is not a boundary."""
    blocks = search_blocks(path)
    if name not in blocks:
        raise StoreError(f"{path}: no search block {name!r} (blocks: "
                         f"{', '.join(blocks) or 'none'})")  # fmt: skip
    info = blocks[name]
    if info["goal"] != "boundary":
        raise StoreError(f"{path}: search block {name!r} is a {info['goal']} search, not a"
                         " boundary; mbstudy aggregate prints its optimum")
    return info, info["answer"]
