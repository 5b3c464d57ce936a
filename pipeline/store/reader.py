"""Reading a store: one block as an xarray Dataset with the grid axes unstacked, or as a
flat table (pandas) of cases.

``open_results(store, group)`` is the contract with aggregation and plots
(docs/architecture.md#8-analysis): ``ds.sel(omega_n=5, xi=1)`` works. Each product
dimension of the grid becomes
a dimension of the Dataset; the members of a ``zip`` group after the first become
coordinates along the first member's dimension (the zipped values vary together, so they
are not independent dimensions).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.zarr_store import ResultStore, read_whole
from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS
from mbstudy.solvers.status import STATUS_NAMES

CASE_FIELDS = ("case_id", "ref_index", "status", "done", "error")


def _dataset(store: ResultStore, group: str):
    import xarray as xr
    import zarr

    g = zarr.open_group(str(store.path / group), mode="r")
    attrs = dict(g.attrs)
    data_vars = {}
    coords = {"t": ("t", read_whole(g["t"]))}
    axes = list(attrs.get("axes", []))
    for name, arr in g.arrays():
        if name == "t":
            continue
        dims = tuple(arr.metadata.dimension_names or ())
        values = read_whole(arr)
        if name in axes:
            coords[name] = (dims, values)
        else:
            data_vars[name] = (dims, values)
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    ds.attrs["group"] = group
    return ds


def open_results(store: str | Path | ResultStore, group: str | None = None, stacked: bool = False):
    """Return block ``group`` of ``store`` as an xarray Dataset.

    Parameters
    ----------
    store : path of the store (or an open ResultStore).
    group : block name; default the only block (error if several).
    stacked : keep the ``case`` dimension instead of unstacking the grid axes.
    """
    rs = store if isinstance(store, ResultStore) else ResultStore.open(store)
    blocks = rs.blocks()
    if group is None:
        if len(blocks) != 1:
            raise KeyError(f"the store has blocks {blocks}: name one with group=")
        group = blocks[0]
    if group not in blocks:
        from mbstudy.solvers.registry import closest

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
        ds = ds.swap_dims({"case": leaders[0]}).drop_vars("case", errors="ignore")
    else:
        ds = ds.set_index(case=leaders).unstack("case")
    for name, (lead, order) in extra.items():
        ds = ds.assign_coords({name: (lead, [order[v] for v in ds[lead].values.tolist()])})
    return ds.transpose(*leaders, ...)


def case_table(store: str | Path | ResultStore, group: str):
    """One row per case of a block: grid axes, status name, every metric (pandas)."""
    import pandas as pd

    rs = store if isinstance(store, ResultStore) else ResultStore.open(store)
    attrs = rs.block_attrs(group)
    cols = {}
    for name in attrs.get("axes", []):
        cols[name] = rs.read(group, name)
    status = rs.read(group, "status")
    cols["status"] = [STATUS_NAMES.get(int(s), str(s)) for s in status]
    cols["done"] = rs.read(group, "done")
    present = set(rs.array_names(group))
    for name in FLOAT_METRICS + tuple(COUNTER_METRICS):
        # a store written before a metric existed has no array for it: NaN, not a crash
        cols[name] = rs.read(group, name) if name in present else np.full(status.size, np.nan)
    df = pd.DataFrame(cols)
    df.insert(0, "group", group)
    return df
