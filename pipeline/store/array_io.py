"""Array reads and writes of the store (pipeline/store/zarr_store.py): whole arrays with
their checks, the chunking of the write-once coordinate arrays, rows fitted to an array's
shape, the asynchronous handles of one batch's writes, the block attribute of the
metrics a model cannot have, and the reader of a stored reference trajectory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from mbstudy.pipeline import private_api
from mbstudy.pipeline.store.codecs import WRITE_EVERY_CHUNK
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.location import location

if TYPE_CHECKING:
    from mbstudy.solvers.api import Reference

LABEL_ARRAYS = ("constraint", "coord")  # the label arrays of vector series (store/cf.py)


def label_arrays(series) -> list[str]:
    """The label arrays a block with these ``series`` has (``lam``: ``constraint``;
    ``q``, ``v``: ``coord``; store/cf.py writes them)."""
    series = set(series)
    return [dim for dim, of in (("constraint", {"lam"}), ("coord", {"q", "v"}))
            if series & of]  # fmt: skip


# what every message about a damaged store points to
REPAIR_HINT = ("run mbstudy verify on the store; mbstudy launch STUDY --store on it repairs"
               " it and runs the damaged batches again")


def read_whole(array, where=slice(None), unit: str = "chunk") -> np.ndarray:
    """Every value of a zarr array (or of ``where``); a chunk that fails its checksum (or
    cannot be decoded) raises :class:`StoreError` naming the array and the first damaged
    chunk along ``case`` (``unit`` "batch": a batch array's chunk is its batch), never
    garbage or a codec traceback."""
    try:
        return np.asarray(array[where])
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        where_bad = ""
        try:
            from mbstudy.pipeline.store.chunkscan import chunk_states

            states = chunk_states(array, int(array.cdata_shape[0]))
            bad = [i for i, s in enumerate(states) if s == "corrupt"]
            where_bad = f", {unit} {bad[0]}" if bad else ""
        except Exception:  # the message without the chunk, then
            pass
        raise StoreError(f"{array.store_path}{where_bad}: corrupt chunk"
                         f" ({type(exc).__name__}); {REPAIR_HINT}") from None


COORD_CHUNK = 1 << 20  # target cases per chunk of the write-once coordinate arrays


def coord_chunk(batch_size: int, n_cases: int) -> int:
    """Chunk length of the coordinate arrays (``case_id``, ``ref_index``, grid axes): the
    largest whole number of batches not above ``COORD_CHUNK`` cases (at least one batch),
    capped at the block's length. Whole batches keep every chunk boundary a batch boundary.
    """
    k = max(1, COORD_CHUNK // max(1, batch_size))
    return max(1, min(k * batch_size, n_cases))


_HANDLES: dict[str, tuple[tuple[int, int, int], dict[str, object]]] = {}


def _fit(array, column: np.ndarray | None, n: int) -> np.ndarray:
    """``column`` as ``n`` rows of ``array``'s row shape: absent -> the fill value, narrower
    trailing dimensions -> padded with the fill value (SERIES_PADDING)."""
    shape = (n, *array.shape[1:])
    fill = array.metadata.fill_value
    if column is not None and column.shape == shape:
        return column
    if array.dtype.kind in "OTU":  # zarr's variable-length strings (numpy StringDType)
        out = np.full(shape, "" if fill is None else str(fill), dtype=object).astype(str)
    else:
        out = np.full(shape, fill, dtype=array.dtype)
    if column is not None:
        out[tuple(slice(0, k) for k in column.shape)] = column
    return out


OPTIONAL_ARRAYS = ("engine",)  # batch arrays a store made by an older version may lack


def _async_arrays(where, names: tuple[str, ...], optional=()) -> dict[str, object]:
    """zarr AsyncArray handles of ``names`` and of every array the block lists in its
    ``batch_arrays`` attribute, in the group at ``where`` (a Path or FsspecLocation),
    opened once per process, so a batch task reads no metadata. The cache is keyed on the
    identity of the group's ``zarr.json`` (local: inode, mtime, size; object store: ETag,
    size): a store replaced by ``--overwrite`` is reopened. Names the group has no array
    for (a metric added after the store was created) are left out, so a resumed launch of
    an older store writes the metrics it has."""
    loc = location(where)
    group_path = str(where)
    stamp = loc.stamp("zarr.json")
    cached = _HANDLES.get(group_path)
    if cached is None or cached[0] != stamp:
        g = loc.open_group("r+")
        listed = tuple(g.attrs.get("batch_arrays", ()))
        handles = {n: private_api.zarr_async_array(g[n]).with_config(WRITE_EVERY_CHUNK)
                   for n in listed}
        cached = (stamp, handles)
        _HANDLES[group_path] = cached
    handles = cached[1]
    missing = [n for n in names if n not in handles and n not in optional]
    if missing:
        g = loc.open_group("r+")
        for n in missing:
            if n in g:  # a store written before a metric existed lacks its array
                handles[n] = private_api.zarr_async_array(g[n]).with_config(WRITE_EVERY_CHUNK)
    return dict(handles)


def _absent_metrics(study, block) -> dict[str, str]:
    """The block's metrics its model cannot have, with the reason (a block attribute:
    declared, never a silent NaN; pipeline/plan/purepy.declared_absent_metrics)."""
    from mbstudy.pipeline.plan.purepy import declared_absent_metrics

    params = dict(block.case_params(0).model_params) if block.n_cases else {}
    return declared_absent_metrics(study.model_entry, params)


def stored_reference(g) -> Reference | None:
    """The reference held by the zarr group ``g`` (``t``, ``q``, ``v``, the attributes
    ``status`` and ``error_estimate``), or None until its ``done`` attribute is set: the
    one reader of a grid store's ``reference/rI`` and a search store's."""
    from mbstudy.solvers.api import Reference

    attrs = dict(g.attrs)
    if not attrs.get("done"):
        return None
    return Reference(
        t=np.asarray(g["t"][:]),
        q=np.asarray(g["q"][:]),
        v=np.asarray(g["v"][:]),
        status=int(attrs["status"]),
        error_estimate=float(attrs.get("error_estimate", np.nan)),
    )
