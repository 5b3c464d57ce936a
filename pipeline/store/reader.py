"""Reading a store: one block as an xarray Dataset with the grid axes unstacked, or as a
flat table (pandas) of cases.

``open_results(store, group)`` is the contract with aggregation and plots
(docs/explanation/architecture.md#8-analysis): ``ds.sel(omega_n=5, xi=1)`` works. Each product
dimension of the grid becomes
a dimension of the Dataset; the members of a ``zip`` group after the first become
coordinates along the first member's dimension (the zipped values vary together, so they
are not independent dimensions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.zarr_store import (
    LABEL_ARRAYS,
    ResultStore,
    label_arrays,
    read_whole,
)
from mbstudy.solvers.api import COUNTER_METRICS, FLOAT_METRICS, STATUS_NAMES

CASE_FIELDS = ("case_id", "ref_index", "status", "done", "error")


def variable_order(names, series=()) -> list[str]:
    """The order of a block's variables: metrics as in ``solvers.metrics`` (accuracy,
    time, counters), then status, done, error, then the sampled series in the study's
    order; anything else last, by name."""
    lead = [*FLOAT_METRICS, *COUNTER_METRICS, "status", "done", "error", *series]
    names = list(names)
    ordered = [n for n in dict.fromkeys(lead) if n in names]
    return ordered + sorted(n for n in names if n not in ordered)


def block_arrays(store: ResultStore, group: str, attrs: dict) -> dict:
    """Every array of block ``group`` (``attrs``: its attributes): the ones its attributes
    list (template, batch and label arrays) must be there, so a lost ``zarr.json`` is a
    StoreError naming the array, never a column left out or read as NaN."""
    g = store.group(group)
    try:
        names = [name for name, _ in g.arrays()]
    except Exception:  # a mangled zarr.json among them: each is opened by name below
        names = []
    required = [*attrs.get("template_arrays", ()), *attrs.get("batch_arrays", ()),
                *label_arrays(attrs.get("series", ()))]  # fmt: skip
    return {name: store.array(group, name, g) for name in dict.fromkeys([*required, *names])}


def checked_values(store: ResultStore, group: str, name: str, arr, done) -> np.ndarray:
    """The values of one array after :meth:`ResultStore.check_chunks` (``done``: the
    block's finished batches)."""
    store.check_chunks(group, name, arr, done)
    return read_whole(arr)


def _dataset(store: ResultStore, group: str):
    import xarray as xr

    attrs = store.block_attrs(group)
    arrays = block_arrays(store, group, attrs)
    attrs.pop("coordinates", None)  # the CF hint for plain xr.open_zarr; applied here
    done = store.done_batches(group)
    axes = list(attrs.get("axes", []))
    coord_names = {"t", "case_id", "ref_index", *LABEL_ARRAYS, *axes}
    coords, data_vars = {}, {}
    for name in ["t", "case_id", "ref_index", *axes, *LABEL_ARRAYS]:
        if name in arrays:
            arr = arrays[name]
            dims = tuple(arr.metadata.dimension_names or ())
            values = checked_values(store, group, name, arr, done)
            coords[name] = (dims, values, dict(arr.attrs))
    others = [n for n in arrays if n not in coord_names]
    for name in variable_order(others, attrs.get("series", ())):
        arr = arrays[name]
        dims = tuple(arr.metadata.dimension_names or ())
        data_vars[name] = (dims, checked_values(store, group, name, arr, done), dict(arr.attrs))
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    ds.attrs["group"] = group
    return ds


def open_results(store: str | Path | ResultStore, group: str | None = None, stacked: bool = False):
    """Return block ``group`` of ``store`` as an xarray Dataset, or without ``group`` the
    whole store as an ``xarray.DataTree`` (one node per block, the store's attributes on
    the root, ``reference/rI`` nodes with the reference trajectories).

    Parameters
    ----------
    store : path of the store (or an open ResultStore).
    group : block name; None: the whole store as a DataTree.
    stacked : keep the ``case`` dimension instead of unstacking the grid axes.

    Every grid axis is sorted (ascending), in every block; the stacked form keeps the
    case order, which is the study file's.

    A search store (``[[search]]`` blocks) is read by :mod:`.search_reader`: a block's
    cases along ``case`` and its answer along ``point`` (``stacked`` does not apply), an
    unknown block a StoreError. A study of grid and search blocks keeps its search blocks
    in the store's ``search`` group: ``group="search"`` gives them as a DataTree,
    ``group="search/NAME"`` one of them.
    """
    from mbstudy.pipeline.store.search_block import SEARCH_GROUP
    from mbstudy.pipeline.store.search_reader import (
        is_search_store,
        search_dataset,
        search_part,
        search_tree,
    )

    if not isinstance(store, ResultStore) and is_search_store(store):
        return search_tree(store) if group is None else search_dataset(store, group)
    if group is not None and group.split("/")[0] == SEARCH_GROUP:
        nested = search_part(store.path if isinstance(store, ResultStore) else store)
        if nested is not None:  # a study of grid and search blocks: its search group
            inner = group.partition("/")[2]
            return search_dataset(nested, inner) if inner else search_tree(nested)
    rs = store if isinstance(store, ResultStore) else ResultStore.open(store)
    blocks = rs.blocks()
    if group is None:
        return open_tree(rs, stacked=stacked)
    if group not in blocks:
        from mbstudy.solvers.api import closest

        hint = closest(group, blocks)
        raise KeyError(
            f"no block {group!r} in the store" + (f"; did you mean {hint!r}?" if hint else "")
            + f" (blocks: {', '.join(blocks)})"
        )
    ds = _dataset(rs, group)
    dims = [list(d) for d in ds.attrs.get("dims", [])]
    if stacked or not dims:
        return ds
    leaders = [d[0] for d in dims]
    followers = {d[0]: d[1:] for d in dims}
    extra = {}
    for lead, rest in followers.items():
        for name in rest:
            # value of the follower for each distinct leader value (they vary together)
            lead_vals = ds[lead].values
            vals = ds[name].values
            order = {}
            for lv, fv in zip(lead_vals.tolist(), vals.tolist(), strict=True):
                order.setdefault(lv, fv)
            extra[name] = (lead, order)
    ds = ds.drop_vars([n for rest in followers.values() for n in rest])
    if len(leaders) == 1:
        # sorted, as unstacking several axes sorts each (xarray's slices want monotonic axes)
        ds = ds.swap_dims({"case": leaders[0]}).drop_vars("case", errors="ignore")
        ds = ds.sortby(leaders[0])
    else:
        ds = ds.set_index(case=leaders).unstack("case")
    for name, (lead, order) in extra.items():
        ds = ds.assign_coords({name: (lead, [order[v] for v in ds[lead].values.tolist()])})
    return ds.transpose(*leaders, ...)


def open_tree(store: str | Path | ResultStore, stacked: bool = False):
    """The whole store as an ``xarray.DataTree``: root attributes (study, provenance), one
    child per block (as :func:`open_results`), ``reference/rI`` children (q, v on t)."""
    import xarray as xr

    rs = store if isinstance(store, ResultStore) else ResultStore.open(store)
    root_attrs = rs.root_attrs()
    nodes = {"/": xr.Dataset(attrs=root_attrs)}
    for name in rs.blocks():
        nodes[f"/{name}"] = open_results(rs, name, stacked=stacked)
    refs = rs.group("reference", use_consolidated=False)
    for rname, rg in sorted(refs.groups()):
        arrays = {k: rs.array(f"reference/{rname}", k) for k in ("t", "q", "v")}
        values = {k: checked_values(rs, f"reference/{rname}", k, a, None)
                  for k, a in arrays.items()}  # fmt: skip
        nodes[f"/reference/{rname}"] = xr.Dataset(
            {k: (tuple(a.metadata.dimension_names), values[k])
             for k, a in arrays.items() if k != "t"},
            coords={"t": ("t", values["t"])},
            attrs=dict(rg.attrs),
        )  # fmt: skip
    return xr.DataTree.from_dict(nodes)


def case_table(store: str | Path | ResultStore, group: str):
    """One row per case of a block: grid axes, status name, every metric, the engine
    (``compiled`` / ``python``; pandas). ``wall_s`` is NaN for interpreted cases."""
    import pandas as pd

    rs = store if isinstance(store, ResultStore) else ResultStore.open(store)
    attrs = rs.block_attrs(group)
    done = rs.done_batches(group)  # once: every read below checks its chunks against it
    cols = {}
    for name in attrs.get("axes", []):
        cols[name] = rs.read(group, name, done)
    status = rs.read(group, "status", done)
    cols["status"] = [STATUS_NAMES.get(int(s), str(s)) for s in status]
    cols["done"] = rs.read(group, "done")
    # an array the block lists must be there (a lost one is a StoreError, not NaN); one it
    # does not list is a metric added after the store was made
    present = set(rs.array_names(group)) | set(attrs.get("batch_arrays", ()))
    for name in FLOAT_METRICS + tuple(COUNTER_METRICS):
        # a store written before a metric existed has no array for it: NaN, not a crash
        cols[name] = (rs.read(group, name, done) if name in present
                      else np.full(status.size, np.nan))  # fmt: skip
    # tiered execution (plan/engines.py): an interpreted case's wall_s is no kernel
    # timing, so the table leaves it out (NaN) and says which engine ran each case
    interpreted = (rs.read(group, "engine", done) == 1 if "engine" in present
                   else np.zeros(0, bool))  # fmt: skip
    if interpreted.any():
        cols["wall_s"] = np.where(interpreted, np.nan, cols["wall_s"])
    cols["engine"] = np.where(interpreted, "python", "compiled") if interpreted.size else (
        np.full(status.size, "compiled"))
    df = pd.DataFrame(cols)
    df.insert(0, "group", group)
    return df


def interpreted_note(df) -> str:
    """A note for time comparisons of a case table ('' if every case ran compiled)."""
    n = int((df["engine"] == "python").sum()) if "engine" in df.columns else 0
    if not n:
        return ""
    return (f"note: {n} cases ran on interpreted kernels (engine = python); their wall_s is"
            " left out of time comparisons (launch --engine compiled, or mbstudy warm"
            " first, for timings)")
