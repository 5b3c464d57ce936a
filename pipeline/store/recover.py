"""A store whose root ``zarr.json`` was lost while its arrays survived: recognise it, prove
that the arrays are the study's, and write the root again (``launch`` does, under the lock).

The root ``zarr.json`` holds the study text, its hash and the completion marker; without
it zarr sees no group and every command would call the folder "not a store". What is left
still identifies the study exactly: every block's ``case_id`` array holds the stable
64-bit hash of each fully resolved case (pipeline/plan/grid.py), so a block whose
``case_id`` equals, case by case, the ids the study's grid computes holds this study's
cases in this order. When every block of the grid matches, the root attributes are written
from the study (:func:`~mbstudy.pipeline.store.zarr_store.template_attrs`, then the marker
and the hash), and the launch resumes: ``verify`` then checks every chunk as on any resume.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.location import location
from mbstudy.pipeline.store.zarr_store import (
    STORE_FORMAT,
    ResultStore,
    read_whole,
    template_attrs,
)


def lost_root(path) -> bool:
    """True if ``path`` looks like a store whose root ``zarr.json`` is gone or unreadable
    (not a JSON group document), while a group of a store (``reference``, or a block: a
    group with ``case_id``) is there."""
    loc = location(path)
    if loc.exists("zarr.json") and _readable_root(path):
        return False
    return loc.exists("reference/zarr.json") or bool(_block_groups(path))


def _readable_root(path) -> bool:
    try:
        ResultStore(path).root_attrs()
    except Exception:
        return False
    return True


def _block_groups(path) -> list[str]:
    """Names of the folders/prefixes directly under ``path`` that hold a ``case_id``
    array (the blocks of a store)."""
    from mbstudy.pipeline import private_api

    store = location(path).zarr_store_object(read_only=True)

    async def names() -> list[str]:
        return [k async for k in store.list_dir("")]

    try:
        entries = private_api.zarr_sync(names())
    except Exception:
        return []
    loc = location(path)
    return [e for e in entries if loc.exists(f"{e}/case_id/zarr.json")]


def recover_root(path, study, grid) -> ResultStore:
    """Write the root of a store whose root ``zarr.json`` was lost, after checking that
    every block of ``grid`` is there with exactly the study's case ids; StoreError (one
    line) otherwise."""
    rs = ResultStore(path)
    for block in grid.blocks:
        why = _mismatch(rs, block)
        if why:
            raise StoreError(
                f"{path}: the store's root zarr.json is missing and block {block.name!r}"
                f" {why}; it cannot be rebuilt for this study (use --overwrite to start again)"
            )
    import zarr

    if location(path).exists("zarr.json") and not _readable_root(path):
        location(path).remove("zarr.json")  # not JSON: written again below
    if not location(path).exists("reference/zarr.json"):  # the reference group lost too
        zarr.open_group(location(path / "reference").zarr_store(), mode="a", zarr_format=3)
    root = zarr.open_group(location(path).zarr_store(), mode="a", zarr_format=3)
    attrs = template_attrs(study, grid)
    attrs["root_rebuilt"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    root.attrs.update(attrs)
    root.attrs.update({"format": STORE_FORMAT, "spec_hash": study.spec_hash})  # marker last
    rs.reconsolidate()
    return rs


def _mismatch(rs: ResultStore, block) -> str:
    """Why the stored block does not hold ``block``'s cases ("" if it does)."""
    try:
        ids = rs.group(block.name, use_consolidated=False)["case_id"]
    except Exception:
        return "is missing or unreadable"
    if tuple(ids.shape) != (block.n_cases,):
        return f"has {ids.shape[0]} cases, the study {block.n_cases}"
    step = int(ids.chunks[0])
    for s in range(0, block.n_cases, step):
        e = min(s + step, block.n_cases)
        try:
            stored = read_whole(ids, slice(s, e))
        except StoreError:
            return f"has a damaged case_id chunk at case {s}"
        if not np.array_equal(stored, np.asarray(block.case_ids(s, e), dtype=stored.dtype)):
            return "holds other cases (its case ids differ from the study's)"
    return ""
