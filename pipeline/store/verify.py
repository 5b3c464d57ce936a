"""Integrity of a store: every chunk read and its checksum checked (``mbstudy verify``), and
the repair a launch makes before it resumes (damaged batches run again).

What is checked, per block (DESIGN of the store in zarr_store.py):

* the metadata (``zarr.json``) of the block group and of every array it lists;
* every chunk of the template arrays (``t``, ``case_id``, ``ref_index``, the grid axes):
  present and decodable;
* every batch-written array (metrics, counters, ``status``, ``done``, ``error``, series):
  the chunk of every finished batch is present, and every present chunk decodes (the
  CRC-32C codec of each array rejects a flipped bit or garbage bytes).

Batch-written arrays are chunked by batch along ``case`` (chunk index == batch index), so a
damaged chunk names the batch to run again. The references (``reference/rI``) are checked
the same way; a damaged reference is computed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mbstudy.pipeline.store.zarr_store import ResultStore


@dataclass
class BlockDamage:
    """What ``verify`` found wrong in one block."""

    block: str
    n_batches: int = 0
    missing: dict[int, list[str]] = field(default_factory=dict)  # batch -> arrays
    corrupt: dict[int, list[str]] = field(default_factory=dict)  # batch -> arrays
    template: list[str] = field(default_factory=list)  # "ARRAY: what" of template damage
    group_lost: bool = False  # the block group's own metadata is missing or unreadable

    @property
    def bad_batches(self) -> list[int]:
        return sorted(set(self.missing) | set(self.corrupt))

    @property
    def ok(self) -> bool:
        return not (self.missing or self.corrupt or self.template or self.group_lost)


@dataclass
class VerifyReport:
    store: str
    blocks: list[BlockDamage] = field(default_factory=list)
    references: dict[int, list[str]] = field(default_factory=dict)  # index -> what

    @property
    def ok(self) -> bool:
        return not self.references and all(b.ok for b in self.blocks)

    def as_dict(self) -> dict:
        return {
            "store": self.store,
            "ok": self.ok,
            "references": {str(k): v for k, v in self.references.items()},
            "blocks": {
                b.block: {
                    "batches": b.n_batches,
                    "missing": {str(k): v for k, v in b.missing.items()},
                    "corrupt": {str(k): v for k, v in b.corrupt.items()},
                    "template": b.template + (["group metadata lost"] if b.group_lost else []),
                }
                for b in self.blocks
            },
        }


def _open_array(group, name: str):
    try:
        return group[name]
    except Exception:  # KeyError for a lost zarr.json, a decode error for a mangled one
        return None


def _states(arr, n: int, full: bool) -> list[str]:
    """Chunk states along ``case``: decoded one by one (``full``), or from one listing and
    the raw checksums (store/chunkscan.py: the same detection, a fraction of the cost)."""
    from mbstudy.pipeline.store.chunkscan import chunk_states, decoded_state

    if full:
        return [decoded_state(arr, i) for i in range(n)]
    return chunk_states(arr, n)


def _done_per_batch(arr, states: list[str], n: int) -> np.ndarray:
    """Batch b is done when its ``done`` chunk is intact and all True."""
    from mbstudy.pipeline.store.zarr_store import read_whole

    done = np.zeros(n, dtype=bool)
    if n and all(s == "ok" for s in states):  # the usual case: one read of the array
        values = read_whole(arr)
        B = int(arr.chunks[0])
        padded = np.ones(n * B, dtype=bool)
        padded[: values.size] = values
        return padded.reshape(n, B).all(axis=1)
    for b, state in enumerate(states):
        if state == "ok":
            done[b] = bool(np.all(arr.get_block_selection((b,))))
    return done


def verify_block(store: ResultStore, block: str, full: bool = True) -> BlockDamage:
    """What is damaged in ``block``; ``full``: decode every chunk (``mbstudy verify``),
    else check the listing and the checksums only (a launch's resume)."""
    out = BlockDamage(block=block)
    try:
        g = store.group(block)
        attrs = dict(g.attrs)
        out.n_batches = int(attrs["n_batches"])
    except Exception:
        out.group_lost = True
        return out
    template = list(attrs.get("template_arrays", ["t", "case_id", "ref_index",
                                                  *attrs.get("axes", [])]))
    batch = list(attrs.get("batch_arrays", []))
    if not batch:  # a store written before the lists existed: every other array
        batch = sorted(n for n, _ in g.arrays() if n not in template)
    for name in template:
        arr = _open_array(g, name)
        if arr is None:
            out.template.append(f"{name}: metadata missing or unreadable")
            continue
        for i, state in enumerate(_states(arr, arr.cdata_shape[0], full)):
            if state != "ok":
                out.template.append(f"{name}: chunk {i} {state}")
    done = np.zeros(out.n_batches, dtype=bool)
    arrays = {}
    for name in batch:
        arr = _open_array(g, name)
        if arr is None:
            out.template.append(f"{name}: metadata missing or unreadable")
        else:
            arrays[name] = arr
    if "done" in arrays:
        states = _states(arrays["done"], out.n_batches, full)
        done = _done_per_batch(arrays["done"], states, out.n_batches)
        for b, state in enumerate(states):
            if state == "corrupt":
                out.corrupt.setdefault(b, []).append("done")
    for name, arr in arrays.items():
        if name == "done":
            continue
        for b, state in enumerate(_states(arr, out.n_batches, full)):
            if state == "corrupt":
                out.corrupt.setdefault(b, []).append(name)
            elif state == "missing" and done[b]:
                out.missing.setdefault(b, []).append(name)
    return out


def verify_references(store: ResultStore) -> dict[int, list[str]]:
    from mbstudy.pipeline.store.chunkscan import decoded_state


    out: dict[int, list[str]] = {}
    try:
        ref = store.group("reference")
        names = sorted((n for n, _ in ref.groups()), key=lambda n: int(n[1:]))
    except Exception:
        return {-1: ["reference group metadata missing or unreadable"]}
    for gname in names:
        i = int(gname[1:])
        try:
            g = ref[gname]
            done = bool(g.attrs.get("done"))
        except Exception:
            out[i] = ["group metadata missing or unreadable"]
            continue
        for name in ("t", "q", "v"):
            arr = _open_array(g, name)
            if arr is None:
                out.setdefault(i, []).append(f"{name}: metadata missing or unreadable")
                continue
            state = decoded_state(arr, 0)
            if state == "corrupt" or (state == "missing" and (done or name == "t")):
                out.setdefault(i, []).append(f"{name}: chunk {state}")
    return out


def verify_store(store: ResultStore, full: bool = True) -> VerifyReport:
    """Check every chunk of ``store``; report missing and corrupt ones per block and batch.

    ``full``: read and decode every chunk (``mbstudy verify``); else one listing per array
    and the CRC-32C of every chunk's raw bytes (``launch`` before a resume)."""
    report = VerifyReport(store=str(store.path))
    report.references = verify_references(store)
    for block in store.blocks():
        report.blocks.append(verify_block(store, block, full))
    return report


def repair_store(store: ResultStore, study, grid, report: VerifyReport) -> dict[str, int]:
    """Make a damaged store resumable: template arrays rebuilt from the study, damaged
    batches and references marked not done (a launch then runs exactly those again).
    Returns the number of batches reopened per block."""

    reopened: dict[str, int] = {}
    if report.references:
        ref = store.group("reference", "r+")
        for i in report.references:
            if i < 0:
                continue
            g = ref[f"r{i}"]
            if any("metadata" in w for w in report.references[i]):
                store.rebuild_reference(i, study, grid)
            else:
                g.attrs["done"] = False
    by_name = {b.name: b for b in grid.blocks}
    for dmg in report.blocks:
        block = by_name[dmg.block]
        if dmg.group_lost or any(w.startswith(("done:", "status:")) for w in dmg.template):
            store.rebuild_block(study, grid, block)
            reopened[dmg.block] = block.n_batches
            continue
        lost = {w.split(":")[0] for w in dmg.template}
        if lost:
            store.rebuild_arrays(study, grid, block, lost)
        batch_lost = lost - {"t", "case_id", "ref_index", *block.axis_names}
        batches = range(block.n_batches) if batch_lost else dmg.bad_batches
        n = 0
        for b in batches:
            store.reopen_batch(dmg.block, b)
            n += 1
        if n:
            reopened[dmg.block] = n
    if reopened or report.references:
        store.mark_complete(False)
    return reopened
