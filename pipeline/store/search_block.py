"""The store of ``[[search]]`` blocks: one Zarr group per search block, cases appended.

A search store is a Zarr (format 3) group whose root attributes say ``mbstudy_search``
(the study's text and spec hash) and which holds one group per search block, sized by
its budget (``capacity`` = budget x combinations of the list axes) along ``case``:

- one coordinate array per axis (continuous then list axes, by name), ``combo`` (which
  combination of the list axes, C order) and ``round`` (the round that proposed it);
- ``status`` (int8, fill -1), every float metric (NaN until run), every work counter and
  ``error`` (the exception text of a case with status error, as the grid's ``error``
  array): the same metrics and status codes as a grid case
  (:mod:`mbstudy.solvers.metrics`, :mod:`mbstudy.solvers.status`);
- the sampled series of the study's ``[output] series`` (when set), as in a grid block:
  ``(case, sample)`` arrays, ``(case, sample, coord)`` for ``q`` / ``v`` and ``(case,
  sample, constraint)`` for ``lam`` (NaN until run, and NaN-padded past a case's own
  width), with ``t`` along ``sample``;
- ``answer_*`` arrays along ``point``: the current answer (:func:`write_answer`);
- attributes: ``n`` (cases stored, written after their rows, so an interrupted round is
  simply proposed and run again), ``rounds``, ``seed``, ``done``, the goal.

Beside the blocks, the root's ``reference`` group holds the reference trajectories the
search cases are measured against (:func:`write_search_reference`), as the grid store's
``reference`` group: ``reference/rI`` with ``t``, ``q``, ``v`` (sample x coord) and the
attributes ``model_params``, ``t_end``, ``samples`` (its key), ``status``,
``error_estimate`` and ``done`` (written last: a reference cut short is computed again,
a done one is reused by every later launch).

Arrays carry CF attributes (``long_name``, ``units`` where known).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mbstudy.pipeline.store.errors import StoreError

__all__ = ["REFERENCE_GROUP", "SEARCH_GROUP", "SearchBlockStore", "SearchRows",
           "open_search_store", "read_search_reference", "write_search_reference"]

ROOT_MARK = "mbstudy_search"
# the group of a grid store that holds the study's search blocks when it has both
SEARCH_GROUP = "search"
# the group of a search store that holds the references of its cases
REFERENCE_GROUP = "reference"


@dataclass
class SearchRows:
    """The stored cases of one search block (the first ``n`` rows)."""

    n: int
    coords: dict[str, np.ndarray]
    combo: np.ndarray
    round: np.ndarray
    status: np.ndarray
    metrics: dict[str, np.ndarray]


def _metric_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from mbstudy.solvers.api import COUNTER_METRICS, FLOAT_METRICS

    return tuple(FLOAT_METRICS), tuple(COUNTER_METRICS)


def open_search_store(path: str | Path, study_text: str, spec_hash: str, create: bool = True):
    """The root group of a search store at ``path`` (created when absent and ``create``);
    :class:`StoreError` when it is another study's store or not a search store."""
    import zarr

    path = Path(path)
    if not path.exists():
        if not create:
            raise StoreError(f"{path}: no such store")
        root = zarr.open_group(str(path), mode="w", zarr_format=3)
        root.attrs.update({ROOT_MARK: 1, "spec_hash": spec_hash, "study": study_text})
        return root
    try:
        root = zarr.open_group(str(path), mode="a", zarr_format=3)
    except Exception as exc:  # any unreadable store is one line
        raise StoreError(f"{path}: not a Zarr store ({type(exc).__name__})") from None
    attrs = dict(root.attrs)
    if ROOT_MARK not in attrs:
        raise StoreError(f"{path}: not a search store (a grid store holds no search blocks)")
    if spec_hash and attrs.get("spec_hash") != spec_hash:
        raise StoreError(f"{path}: the store holds another study (spec hash"
                         f" {str(attrs.get('spec_hash'))[:12]}); use another store path")
    return root


def read_search_root(path: str | Path):
    """The root group of an existing search store, for reading (StoreError otherwise)."""
    import zarr

    path = Path(path)
    if not path.exists():
        raise StoreError(f"{path}: no such store")
    try:
        root = zarr.open_group(str(path), mode="r", zarr_format=3)
    except Exception as exc:
        raise StoreError(f"{path}: not a Zarr store ({type(exc).__name__})") from None
    if ROOT_MARK not in dict(root.attrs):
        raise StoreError(f"{path}: not a search store")
    return root


_UNITS = {"h": "s", "t": "s", "omega_n": "rad/s", "omega_o": "rad/s", "wall_s": "s",
          "compile_s": "s", "rms_phi": "m", "max_phi": "m"}  # fmt: skip


class SearchBlockStore:
    """One search block's group: create, append a round, read the rows, write answers."""

    def __init__(self, group) -> None:
        self.group = group

    @classmethod
    def open_or_create(cls, root, search, axis_dtypes: dict[str, Any],
                       series: dict[str, int] | None = None,
                       t_end: float = 0.0) -> SearchBlockStore:  # fmt: skip
        """The block's group in ``root``, created with its arrays when absent; ``series``:
        the sampled series by name with their width (0 for a scalar series; n for q / v,
        m for lam), sampled at ``search``'s ``samples`` output times up to ``t_end``."""
        name = search.name
        if name in root:
            return cls(root[name])
        g = root.create_group(name)
        cap = search.capacity
        floats, counters = _metric_names()

        def arr(key: str, dtype, fill, long_name: str) -> None:
            a = g.create_array(key, shape=(cap,), chunks=(cap,), dtype=dtype, fill_value=fill,
                               dimension_names=("case",))  # fmt: skip
            a.attrs.update({"long_name": long_name, **({"units": _UNITS[key]} if key in _UNITS
                                                        else {})})  # fmt: skip

        for axis, dt in axis_dtypes.items():
            arr(axis, dt, np.nan if np.dtype(dt).kind == "f" else 0, f"search axis {axis}")
        arr("combo", "int32", -1, "combination of the list axes (C order)")
        arr("round", "int32", -1, "round that proposed the case")
        arr("status", "int8", -1, "status code (solvers/status.py), -1 not run")
        for m in floats:
            arr(m, "float64", np.nan, m)
        for m in counters:
            arr(m, "int64", 0, m)
        arr("error", str, "", "exception text of a case with status error")
        if series:
            _series_arrays(g, cap, search.base.samples, t_end, series)
        g.attrs.update({
            "search": 1, "n": 0, "rounds": 0, "done": False, "seed": search.seed,
            "goal": search.goal, "metric": search.metric, "at": search.at,
            "budget": search.budget, "capacity": cap,
            "axes": [a.name for a in search.continuous], "lists": [n for n, _ in search.lists],
            "estimate": [], "series": list(series or ()),
        })  # fmt: skip
        return cls(g)

    @property
    def attrs(self) -> dict:
        return dict(self.group.attrs)

    def rows(self) -> SearchRows:
        """The stored cases (the first ``n`` rows)."""
        n = int(self.group.attrs["n"])
        floats, counters = _metric_names()
        names = [*self.group.attrs["axes"], *self.group.attrs["lists"]]
        return SearchRows(
            n=n,
            coords={a: np.asarray(self.group[a][:n]) for a in names},
            combo=np.asarray(self.group["combo"][:n]),
            round=np.asarray(self.group["round"][:n]),
            status=np.asarray(self.group["status"][:n]),
            metrics={m: np.asarray(self.group[m][:n]) for m in (*floats, *counters)},
        )

    def append(self, rnd: int, coords: dict[str, np.ndarray], combo: np.ndarray,
               status: np.ndarray, metrics: dict[str, np.ndarray],
               series: dict[str, np.ndarray] | None = None) -> None:  # fmt: skip
        """Write one round's rows after the stored ones, then ``n`` and ``rounds`` (last:
        a round cut short is proposed and run again on resume); ``series``: per name an
        array (cases, samples[, width]), NaN-padded here to the stored width."""
        n0 = int(self.group.attrs["n"])
        k = len(combo)
        if n0 + k > int(self.group.attrs["capacity"]):
            raise StoreError(f"search block {self.group.basename}: more cases than its budget")
        sl = slice(n0, n0 + k)
        for a, v in coords.items():
            self.group[a][sl] = v
        self.group["combo"][sl] = combo
        self.group["round"][sl] = np.full(k, rnd, dtype=np.int32)
        self.group["status"][sl] = status
        for m, v in metrics.items():
            if m in self.group:  # a store made before an array existed lacks it
                self.group[m][sl] = np.asarray(v).astype(str) if m == "error" else v
        for name, v in (series or {}).items():
            if name not in self.group:
                continue
            a = self.group[name]
            full = np.full((k, *a.shape[1:]), np.nan)
            v = np.asarray(v, dtype=float)
            full[(slice(None), slice(0, v.shape[1]), *(slice(0, w) for w in v.shape[2:]))] = v
            a[sl] = full
        self.group.attrs.update({"n": n0 + k, "rounds": rnd + 1})

    def write_answer(self, rows: list[dict], done: bool) -> None:
        """The answer as ``answer_<key>`` arrays along ``point`` (CF attributes), and in
        the attributes (``estimate``, ``done``)."""
        keys: list[str] = []
        for r in rows:
            keys.extend(k for k in r if k not in keys)
        for k in list(self.group.array_keys()):
            if k.startswith("answer_"):
                del self.group[k]
        for k in keys:
            vals = [r.get(k) for r in rows]
            data = np.array([np.nan if v is None else v for v in vals])
            if data.dtype.kind not in "fiub":
                data = data.astype(str)
            a = self.group.create_array(f"answer_{k}", shape=data.shape, dtype=data.dtype,
                                        dimension_names=("point",))  # fmt: skip
            if data.size:
                a[:] = data
            what = {"lo": "last case on the ok side of the crossed axis",
                    "hi": "first case on the other side of the crossed axis"}.get(k, k)
            a.attrs.update({"long_name": f"search answer: {what}",
                            **({"units": _UNITS[k]} if k in _UNITS else {})})  # fmt: skip
        self.group.attrs.update({"estimate": _jsonable(rows), "done": bool(done)})


def _key_attrs(key) -> dict:
    """The attributes that identify a reference: its model parameters (a JSON-ready dict),
    t_end and samples."""
    mp = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in key.model_params}
    return {"model_params": mp, "t_end": float(key.t_end), "samples": int(key.samples)}


def write_search_reference(root, index: int, key, ref, error: str = "") -> None:
    """Store reference ``index`` of the search cases (``key``: its
    :class:`~mbstudy.pipeline.plan.grid.ReferenceKey`, ``ref``: its
    :class:`~mbstudy.solvers.metrics.Reference`; ``error``: the exception text of a
    reference that could not run) in ``root``'s ``reference`` group as ``rI`` (module
    docstring), ``done`` last."""
    refs = root.require_group(REFERENCE_GROUP)
    g = refs.create_group(f"r{index}", overwrite=True)
    g.attrs.update({**_key_attrs(key), "done": False})
    for name, dims in (("t", ("sample",)), ("q", ("sample", "coord")),
                       ("v", ("sample", "coord"))):  # fmt: skip
        data = np.asarray(getattr(ref, name), dtype=float)
        a = g.create_array(name, shape=data.shape, dtype="float64", fill_value=np.nan,
                           dimension_names=dims)  # fmt: skip
        a[...] = data
        a.attrs.update({"long_name": {"t": "time", "q": "reference generalized coordinates",
                                      "v": "reference generalized velocities"}[name],
                        **({"units": "s"} if name == "t" else {})})  # fmt: skip
    g.attrs.update({"status": int(ref.status), "error_estimate": float(ref.error_estimate),
                    **({"error": error} if error else {})})  # fmt: skip
    g.attrs["done"] = True


def read_search_reference(root, index: int, key):
    """The stored reference ``index`` of the search cases, or None when it was not written
    (or not finished, or stored for another ``key``)."""
    from mbstudy.pipeline.store.array_io import stored_reference

    if REFERENCE_GROUP not in root or f"r{index}" not in root[REFERENCE_GROUP]:
        return None
    g = root[REFERENCE_GROUP][f"r{index}"]
    attrs = dict(g.attrs)
    if any(attrs.get(k) != v for k, v in _key_attrs(key).items()):
        return None
    return stored_reference(g)


def _series_arrays(g, cap: int, samples: int, t_end: float, series: dict[str, int]) -> None:
    """The series arrays of a new block group (the grid's names, meanings and units,
    solvers/metrics.py) and ``t`` along ``sample``."""
    from mbstudy.solvers.api import SERIES_MEANINGS, SERIES_UNITS

    t = g.create_array("t", shape=(samples,), dtype="float64", fill_value=np.nan,
                       dimension_names=("sample",))  # fmt: skip
    t[:] = t_end * np.arange(samples) / max(1, samples - 1)
    t.attrs.update({"long_name": "time", "units": "s", "standard_name": "time"})
    for name, width in series.items():
        extra = ((width,), ("constraint" if name == "lam" else "coord",)) if width else ((), ())
        a = g.create_array(name, shape=(cap, samples, *extra[0]), chunks=(1, samples, *extra[0]),
                           dtype="float64", fill_value=np.nan,
                           dimension_names=("case", "sample", *extra[1]))  # fmt: skip
        a.attrs.update({"long_name": SERIES_MEANINGS[name], "units": SERIES_UNITS[name]})


def _jsonable(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        out.append({k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()})
    return out
