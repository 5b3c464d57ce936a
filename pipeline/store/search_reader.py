"""Reading a search store (store/search_block.py) like a grid store: ``open_results``.

One search block becomes an xarray Dataset (:func:`search_dataset`) holding its first
``n`` cases along ``case`` -- every axis by name, ``combo`` and ``round`` as coordinates;
``status``, every float metric, every work counter (and ``error`` where stored) as data
variables -- and its answer as the ``answer_*`` data variables along ``point``; every
array keeps its CF attributes (``long_name``, ``units``) and the block's attributes
(goal, metric, at, axes, lists, n, rounds, done, estimate) are the Dataset's. Without a
block name, :func:`search_tree` returns an ``xarray.DataTree`` of every block, the
store's attributes on the root, as ``open_results`` does for grid stores.

:func:`search_axes` gives each continuous axis's scale and bounds, from the study text
the store records (the block's attributes name the axes only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.search_block import (
    ROOT_MARK,
    SEARCH_GROUP,
    _metric_names,
    read_search_root,
)

__all__ = [
    "AxisInfo",
    "is_search_store",
    "search_axes",
    "search_dataset",
    "search_names",
    "search_part",
    "search_tree",
]  # fmt: skip


def is_search_store(path: str | Path) -> bool:
    """Whether ``path`` is a local folder holding a search store (root ``zarr.json``
    attribute ``mbstudy_search``)."""
    import json

    p = Path(str(path))
    if not (p / "zarr.json").is_file():
        return False
    try:
        doc = json.loads((p / "zarr.json").read_text())
    except (OSError, ValueError):
        return False
    return ROOT_MARK in (doc.get("attributes") or {})


def search_part(path: str | Path) -> Path | None:
    """The search store of ``path``: the store itself (a study of search blocks only), its
    ``search`` group (a study of grid and search blocks), or None."""
    if is_search_store(path):
        return Path(str(path))
    nested = Path(str(path)) / SEARCH_GROUP
    return nested if is_search_store(nested) else None


def search_names(root) -> list[str]:
    """The search blocks of an open search store's root group, by name."""
    return sorted(n for n in root.group_keys() if dict(root[n].attrs).get("search"))


def _block(path: str | Path, root, name: str):
    names = search_names(root)
    if name not in names:
        raise StoreError(f"{path}: no search block {name!r} (blocks: "
                         f"{', '.join(names) or 'none'})")  # fmt: skip
    return root[name]


def search_dataset(path: str | Path, name: str, root=None):
    """Search block ``name`` of the store at ``path`` as an xarray Dataset (module
    docstring); StoreError (one line) for an unknown block."""
    import xarray as xr

    root = read_search_root(path) if root is None else root
    g = _block(path, root, name)
    attrs = dict(g.attrs)
    n = int(attrs["n"])
    present = set(g.array_keys())
    floats, counters = _metric_names()

    def var(key: str, dim: str, stop: int | None):
        a = g[key]
        values = np.asarray(a[:stop] if stop is not None else a[:])
        if values.dtype.kind == "T":  # zarr's variable-length strings: text as in the grid
            values = values.astype(object)  # reader's error (where, drop keep working)
        return (dim,), values, dict(a.attrs)

    axes = [*attrs.get("axes", []), *attrs.get("lists", [])]
    coords = {k: var(k, "case", n) for k in [*axes, "combo", "round"] if k in present}
    data = {k: var(k, "case", n)
            for k in ["status", *floats, *counters, "error"] if k in present}  # fmt: skip
    for k in sorted(k for k in present if k.startswith("answer_")):
        data[k] = var(k, "point", None)
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    ds.attrs["group"] = name
    return ds


def search_tree(path: str | Path):
    """Every search block of the store at ``path`` as an ``xarray.DataTree`` (one node
    per block, :func:`search_dataset`; the store's attributes on the root)."""
    import xarray as xr

    root = read_search_root(path)
    nodes = {"/": xr.Dataset(attrs=dict(root.attrs))}
    for name in search_names(root):
        nodes[f"/{name}"] = search_dataset(path, name, root)
    return xr.DataTree.from_dict(nodes)


@dataclass(frozen=True)
class AxisInfo:
    """A continuous axis of a search block: its name, scale (``log``/``lin``), bounds."""

    name: str
    scale: str
    lo: float
    hi: float


def search_axes(path: str | Path, name: str, root=None) -> list[AxisInfo]:
    """The continuous axes of block ``name`` in file order (the first is the one a
    boundary crosses), read from the study text recorded in the store's root attributes;
    where that text no longer parses, each axis's stored range in linear scale."""
    from mbstudy.pipeline.study import StudyError, parse_study

    root = read_search_root(path) if root is None else root
    g = _block(path, root, name)
    names = list(dict(g.attrs).get("axes", []))
    try:
        spec = parse_study(str(dict(root.attrs).get("study", "")), source=str(path))
        search = next(s for s in spec.searches if s.name == name)
        return [AxisInfo(a.name, a.scale, a.lo, a.hi) for a in search.continuous]
    except (StudyError, StopIteration, ValueError, KeyError):
        n = int(g.attrs["n"])
        out = []
        for a in names:
            v = np.asarray(g[a][:n], dtype=float)
            v = v[np.isfinite(v)]
            out.append(AxisInfo(a, "lin", float(v.min()) if v.size else 0.0,
                                float(v.max()) if v.size else 1.0))  # fmt: skip
        return out
