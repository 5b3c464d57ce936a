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
the same way (one listed in the consolidated metadata but gone is damage too); a damaged
reference is computed again. The label arrays of vector series (``constraint``, ``coord``)
must be there, and the root's consolidated metadata must match every node's own
``zarr.json`` (store/consolidated.py). A chunk that is a directory, a FIFO, a device or a
link to one is corrupt (never read; the repair removes it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from mbstudy.pipeline.store.zarr_store import ResultStore, label_arrays


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
    consolidated: list[str] = field(default_factory=list)  # the root's consolidated copy

    @property
    def ok(self) -> bool:
        return not (self.references or self.consolidated) and all(b.ok for b in self.blocks)

    def as_dict(self) -> dict:
        return {
            "store": self.store,
            "ok": self.ok,
            "references": {str(k): v for k, v in self.references.items()},
            "consolidated": list(self.consolidated),
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
    template += label_arrays(attrs.get("series", ()))  # written with the template too
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


def _listed_references(store: ResultStore) -> set[int]:
    """The indices of the references the root's consolidated metadata lists."""
    from mbstudy.pipeline.store.consolidated import listed_nodes

    listed = listed_nodes(store.path)
    return {int(p[len("reference/r"):]) for p in listed
            if re.fullmatch(r"reference/r\d+", p)}  # fmt: skip


def verify_references(store: ResultStore) -> dict[int, list[str]]:
    """Damage per reference index (-1: the ``reference`` group itself)."""
    from mbstudy.pipeline.store.chunkscan import decoded_state

    out: dict[int, list[str]] = {}
    try:
        ref = store.group("reference", use_consolidated=False)
        names = [n for n, _ in ref.groups() if re.fullmatch(r"r\d+", n)]
    except Exception:
        return {-1: ["reference group metadata missing or unreadable"]}
    indices = sorted({int(n[1:]) for n in names} | _listed_references(store))
    for i in indices:
        try:
            g = ref[f"r{i}"]
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
    from mbstudy.pipeline.store.consolidated import consolidated_damage

    report = VerifyReport(store=str(store.path))
    report.references = verify_references(store)
    for block in store.blocks():
        report.blocks.append(verify_block(store, block, full))
    report.consolidated = consolidated_damage(store.path)
    return report


def repair_store(store: ResultStore, study, grid, report: VerifyReport) -> dict[str, int]:
    """Make a damaged store resumable: template arrays (label arrays included) and lost
    groups rebuilt from the study, damaged chunk entries removed, damaged batches and
    references marked not done (a launch then runs exactly those again), the consolidated
    metadata marked for a full rewrite. Returns the number of batches reopened per block."""

    reopened: dict[str, int] = {}
    refs = dict(report.references)
    if -1 in refs:  # the reference group itself: every reference again
        refs = {i: ["group metadata missing or unreadable"] for i in range(len(grid.references))}
        store.rebuild_reference_group()
    for i, what in refs.items():
        if i < 0 or i >= len(grid.references):
            continue
        # its group or an array lost, or its times (written with the template, never by
        # the reference task): the reference is built again
        if any("metadata" in w or w.startswith("t:") for w in what):
            store.rebuild_reference(i, study, grid)
        else:
            for w in what:
                store.remove_chunk(f"reference/r{i}", w.split(":")[0], 0)
            store.group("reference", "r+")[f"r{i}"].attrs["done"] = False
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
        for b in dmg.bad_batches:  # a directory or FIFO in place of a chunk: gone
            for name in [*dmg.missing.get(b, ()), *dmg.corrupt.get(b, ())]:
                store.remove_chunk(dmg.block, name, b)
        batch_lost = lost - {"t", "case_id", "ref_index", *block.axis_names,
                             *label_arrays(study.output.series)}  # fmt: skip
        batches = range(block.n_batches) if batch_lost else dmg.bad_batches
        n = 0
        for b in batches:
            store.reopen_batch(dmg.block, b)
            n += 1
        if n:
            reopened[dmg.block] = n
    if report.consolidated:
        store._rebuilt = True  # the consolidated metadata is written in full
    if reopened or report.references or report.consolidated:
        store.mark_complete(False)
    return reopened
