"""A study's Zarr store (docs/explanation/architecture.md#4-store): template, then chunk writes.

Layout (Zarr format 3)::

    STORE/                   root attrs: study text, spec hash, versions, provenance
      reference/rI/          q, v (samples x n) of reference I; attrs: status, done, ...
      BLOCK/                 one group per [[runs]] block, dimension `case` chunked by batch
        t                    output times (dimension t)
        case_id, ref_index   per case
        AXIS ...             one coordinate array per swept axis
        METRIC ...           float64 metrics, int64 counters
        status (int8), done (bool), error (str), engine (int8: 0 compiled, 1 python)
        SERIES ...           (case, t) or (case, t, coord)

Every batch task writes whole chunks that no other task writes (the chunk length along
``case`` is the batch size), and ``done`` after everything else, so an interrupted batch
is recomputed on resume. Two launches cannot write one store at once: a lock (``flock`` on
``STORE.lock`` beside a folder, a lease object ``STORE.lock`` beside an ``s3://`` store;
outside the store so that ``--overwrite`` cannot delete it) is held for the duration of a
launch. ``STORE`` is a folder or an object-store prefix (store/location.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from mbstudy.pipeline import private_api
from mbstudy.pipeline.store.array_io import (
    _HANDLES,
    COORD_CHUNK,
    LABEL_ARRAYS,
    OPTIONAL_ARRAYS,
    REPAIR_HINT,
    _absent_metrics,
    _async_arrays,
    _fit,
    coord_chunk,
    label_arrays,
    read_whole,
    stored_reference,
)
from mbstudy.pipeline.store.codecs import WRITE_EVERY_CHUNK, checksum_codecs
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.location import location
from mbstudy.pipeline.store.lock import LOCK_SUFFIX, StoreLock
from mbstudy.pipeline.store.provenance import SETUP_FORMAT, _git_revision, _versions, template_attrs
from mbstudy.pipeline.store.referenced import changed_files
from mbstudy.pipeline.store.urls import resolved
from mbstudy.solvers.api import COUNTER_METRICS, FLOAT_METRICS, VECTOR_SERIES, Reference

if TYPE_CHECKING:
    from mbstudy.solvers.api import Entry

__all__ = ["COORD_CHUNK", "LOCK_SUFFIX", "OPTIONAL_ARRAYS", "SETUP_FORMAT", "STORE_FORMAT",
           "ResultStore", "StoreError", "StoreLock", "_git_revision", "_versions",
           "changed_files", "coord_chunk", "label_arrays", "read_whole", "stored_reference",
           "template_attrs"]

STORE_FORMAT = "mbstudy-store-1"
def model_sizes(model: str | Entry, model_params: dict) -> tuple[int, int]:
    """(n coordinates, m constraint equations) of the model with these parameters (as plain
    Python: the launcher does not initialise numba for the store template)."""
    from mbstudy.pipeline.plan.purepy import model_sizes as sizes

    return sizes(model, model_params)


SERIES_PADDING = (
    "q, v and lam have the block's largest number of coordinates / constraints; a case"
    " with fewer has NaN in the columns beyond its own size"
)


def block_sizes(study, grid, block) -> tuple[int, int]:
    """The largest (n, m) over the references of ``block``: the width of its q/v and lam
    series (a swept model parameter may change the sizes; smaller cases are NaN-padded)."""
    indices = sorted(set(block.ref_table)) or [0]
    sizes = [model_sizes(study.model_entry, grid.references[i].model_dict) for i in indices]
    return max(n for n, _ in sizes), max(m for _, m in sizes)


def series_width(model: str | Entry, model_params: dict) -> int:
    """Number of coordinates n of the model with these parameters (width of q/v series)."""
    return model_sizes(model, model_params)[0]


@dataclass
class ResultStore:
    """A study's Zarr store: ``path`` is a local Path or an object-store location
    (store/location.py gives both the same operations)."""

    path: Path  # or FsspecLocation
    # arrays or groups re-created through this object (verify's repairs): the root's
    # consolidated metadata is then rebuilt in full, not only for the references
    _rebuilt: bool = field(default=False, init=False, repr=False, compare=False)

    @classmethod
    def at(cls, where) -> ResultStore:
        """The store at a path or URL as written (urls.store_location)."""
        return cls(resolved(where))

    def group(self, sub: str = "", mode: str = "r", **kwargs):
        """The zarr group ``sub`` of the store (the root for ""); a group whose metadata is
        lost or unreadable is a :class:`StoreError` (one line), never a zarr traceback."""
        try:
            return location(self.path / sub if sub else self.path).open_group(mode, **kwargs)
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as exc:
            what = f"group {sub}" if sub else "the root group"
            raise StoreError(f"{self.path}: {what} is missing or its zarr.json unreadable"
                             f" ({type(exc).__name__}); {REPAIR_HINT}") from None

    # ------------------------------------------------------------------ opening
    @staticmethod
    def exists(path: str | Path) -> bool:
        """True if ``path`` holds an mbstudy store."""
        return location(resolved(path)).exists("zarr.json")

    @staticmethod
    def setup_incomplete(path: str | Path) -> bool:
        """True if ``path`` holds an mbstudy store whose template was not finished (a setup
        killed or out of space before the marker was written): nothing ran in it."""
        if not ResultStore.exists(path):
            return False
        try:
            return ResultStore.at(path).root_attrs().get("format") == SETUP_FORMAT
        except Exception:  # an unreadable root: ours only if nothing else was written
            return ResultStore._only_root(path)

    @staticmethod
    def _only_root(path) -> bool:
        """True if the root ``zarr.json`` is all the store at ``path`` holds (a setup
        stopped before the template was written: the template writes every other
        document at once, the root's final attributes after them)."""
        store = location(resolved(path)).zarr_store_object(read_only=True)

        async def entries() -> list[str]:
            return [k async for k in store.list_dir("")]

        try:
            return private_api.zarr_sync(entries()) == ["zarr.json"]
        except Exception:
            return False

    @classmethod
    def open(cls, path: str | Path) -> ResultStore:
        """Open an existing store (raises StoreError if it is not an mbstudy store)."""
        path = resolved(path)
        store = cls(path)
        odd = location(path).irregular_documents()
        if odd:
            raise StoreError(f"{odd[0]}: not a regular file (a FIFO, device or directory in"
                             " place of a zarr.json); mbstudy launch STUDY --store on the"
                             " store removes it and rebuilds what it described")
        if not cls.exists(path):
            if location(path).exists("reference/zarr.json"):  # the root's zarr.json lost
                raise StoreError(f"{path}: the store's root zarr.json is missing; mbstudy launch"
                                 f" STUDY --store {path} rebuilds it if the arrays are intact")
            raise StoreError(f"{path}: no mbstudy store here")
        try:
            attrs = store.root_attrs()
        except StoreError:
            raise StoreError(f"{path}: the store's root zarr.json is unreadable; mbstudy launch"
                             f" STUDY --store {path} rebuilds it if the arrays are intact"
                             ) from None
        if attrs.get("format") == SETUP_FORMAT:
            raise StoreError(f"{path}: the store's setup did not finish (launch it again)")
        if attrs.get("format") != STORE_FORMAT:
            raise StoreError(f"{path}: not an mbstudy store (format {attrs.get('format')!r})")
        return store

    def _root(self, mode: str = "r"):
        return self.group("", mode)

    def root_attrs(self) -> dict:
        """The root attributes (study text, hash, provenance, completion)."""
        return dict(self._root().attrs)

    def spec_hash(self) -> str:
        return str(self.root_attrs().get("spec_hash", ""))

    # ------------------------------------------------------------------ creating
    @classmethod
    def create(cls, path: str | Path, study, grid) -> ResultStore:
        """Write the template of a fresh store: every array, filled with its fill value.

        The root's ``zarr.json`` is written first, saying SETUP_FORMAT; the groups, arrays
        and template chunks next, in one batch (store/template.py); the marker (root
        ``format`` = STORE_FORMAT and the spec hash, with the consolidated metadata) last,
        once everything else is written: until then a launch rebuilds the template."""
        from mbstudy.pipeline.store.template import Template

        store = cls.at(path)
        attrs = template_attrs(study, grid)
        loc = location(store.path)
        loc.open_group("w", zarr_format=3, attributes=attrs)  # clears what was there
        template = Template(loc.zarr_store_object(), root_attrs=attrs)
        store.build_template(template.root, study, grid)
        template.write({"format": STORE_FORMAT, "spec_hash": study.spec_hash})  # last
        return store

    def build_template(self, root, study, grid) -> None:
        """Create every group and array of the template in ``root`` (a zarr Group, or the
        :class:`~mbstudy.pipeline.store.template.TemplateGroup` that ``create`` writes in
        one batch), with their CF attributes and label arrays (store/cf.py)."""
        from mbstudy.pipeline.store.cf import describe_block

        ref = root.create_group("reference")
        for i, key in enumerate(grid.references):
            self._create_reference(ref, i, key, study)
        for block in grid.blocks:
            self._create_block(root, study, grid, block)
        for block in grid.blocks:
            describe_block(root[block.name], block, study.model_entry)

    def reconsolidate(self) -> None:
        """Refresh the root's consolidated metadata (the references' attributes change
        during a launch); called when a launch ends."""
        from mbstudy.pipeline.store.cf import consolidate

        consolidate(self.path)

    def _create_reference(self, ref, i: int, key, study, overwrite: bool = False) -> None:
        g = ref.create_group(f"r{i}", overwrite=overwrite)
        mp = dict(key.model_params)
        n = series_width(study.model_entry, mp)
        g.attrs.update(
            {"model_params": mp, "t_end": key.t_end, "samples": key.samples, "done": False}
        )
        for name in ("q", "v"):
            g.create_array(
                name,
                shape=(key.samples, n),
                chunks=(key.samples, n),
                dtype="f8",
                fill_value=np.nan,
                dimension_names=("t", "coord"),
                compressors=checksum_codecs(),
                config=WRITE_EVERY_CHUNK,
            )
        tarr = g.create_array(
            "t", shape=(key.samples,), dtype="f8", fill_value=np.nan, dimension_names=("t",),
            compressors=checksum_codecs(), config=WRITE_EVERY_CHUNK,
        )
        tarr[:] = key.t_end * np.arange(key.samples) / (key.samples - 1)

    def _create_block(self, root, study, grid, block, only: set[str] | None = None) -> None:
        """Create block ``block``'s group and arrays (``only``: re-create just these arrays
        of an existing group, over whatever is left of them; see store/verify.py)."""
        B = block.batch_size
        K = block.samples
        if only is not None:
            from mbstudy.pipeline.store.template import OnlyGroup

            g = OnlyGroup(root[block.name], only)
            self._create_block_arrays(g, study, grid, block)
            return
        g = root.create_group(block.name)
        dims = [list(d.names) for d in block.dims]
        g.attrs.update(
            {
                "absent_metrics": _absent_metrics(study, block),
                "formulation": block.formulation,
                "integrator": block.integrator,
                "t_end": block.t_end,
                "samples": K,
                "batch_size": B,
                "n_batches": block.n_batches,
                "axes": list(block.axis_names),
                "dims": dims,
                "series": list(study.output.series),
                "template_arrays": ["t", "case_id", "ref_index", *block.axis_names],
                "batch_arrays": [*FLOAT_METRICS, *COUNTER_METRICS, "status", "done", "error",
                                 "engine", *study.output.series],
            }
        )
        self._create_block_arrays(g, study, grid, block)

    def _create_block_arrays(self, g, study, grid, block) -> None:
        from mbstudy.pipeline.store.cf import array_attributes

        B = block.batch_size
        N = block.n_cases
        K = block.samples

        def arr(name, dtype, fill, extra_shape=(), extra_dims=(), chunk=B):
            return g.create_array(
                name,
                shape=(N, *extra_shape),
                chunks=(chunk, *extra_shape),
                dtype=dtype,
                fill_value=fill,
                dimension_names=("case", *extra_dims),
                compressors=checksum_codecs(),
                config=WRITE_EVERY_CHUNK,
                attributes=array_attributes(name, block),
            )

        tarr = g.create_array(
            "t", shape=(K,), dtype="f8", fill_value=np.nan, dimension_names=("t",),
            compressors=checksum_codecs(), config=WRITE_EVERY_CHUNK,
            attributes=array_attributes("t", block),
        )
        tarr[:] = block.t_end * np.arange(K) / (K - 1)
        # Coordinates are written here, once, and never by a batch task: they get chunks of
        # a whole number of batches (coord_chunk), so a 10^6-case block writes a handful of
        # chunk files instead of one per batch and array. Batch-written arrays keep B.
        # Written one chunk at a time, so the launcher's memory is bounded by a chunk
        # (COORD_CHUNK cases), not by the block: 10^9 cases would need 8 GB for case_id.
        C = coord_chunk(B, N)
        spans = [(s, min(s + C, N)) for s in range(0, N, C)]
        a = arr("case_id", "u8", 0, chunk=C)
        for s, e in spans:
            a[s:e] = block.case_ids(s, e)
        a = arr("ref_index", "i4", -1, chunk=C)
        for s, e in spans:
            a[s:e] = block.ref_index(s, e)
        for name in block.axis_names:
            first = np.asarray(block.axis_values(name, 0, 1))
            if first.dtype.kind in "US":
                a = arr(name, str, "", chunk=C)
            else:
                a = arr(name, first.dtype, first.dtype.type(0), chunk=C)
            for s, e in spans:
                a[s:e] = np.asarray(block.axis_values(name, s, e))
        for name in FLOAT_METRICS:
            arr(name, "f8", np.nan)
        for name in COUNTER_METRICS:
            arr(name, "i8", 0)
        arr("status", "i1", -1)
        arr("done", "bool", False)
        arr("error", str, "")
        arr("engine", "i1", 0)  # 0 compiled, 1 python (plan/engines.py)
        sizes = None
        for name in study.output.series:
            if name in VECTOR_SERIES:
                if sizes is None:
                    sizes = block_sizes(study, grid, block)
                    g.attrs.update({"series_padding": SERIES_PADDING})
                if name == "lam":  # one column per constraint equation
                    arr(name, "f8", np.nan, (K, sizes[1]), ("t", "constraint"))
                else:
                    arr(name, "f8", np.nan, (K, sizes[0]), ("t", "coord"))
            else:
                arr(name, "f8", np.nan, (K,), ("t",))

    # ------------------------------------------------------------------ writing
    def write_batch(self, block: str, start: int, stop: int, columns: dict[str, np.ndarray]):
        """Write one batch's rows [start, stop) of every batch-written array; ``done`` last.

        Arrays of the block's ``batch_arrays`` missing from ``columns`` are written with
        their fill value, and columns narrower than their array (a case with fewer
        coordinates than the block's widest) are padded with it, so every finished batch
        has every one of its chunks (``verify`` can tell a lost chunk from a fill value).
        The arrays' chunks are written concurrently (one round trip to zarr's event loop
        instead of one per array) through array handles cached per process; ``done`` is
        written only after every other write has finished, so an interrupted batch is
        recomputed on resume.
        """
        n = stop - start
        done = columns.get("done", np.ones(n, dtype=bool))
        arrays = _async_arrays(self.path / block, (*columns, "done"), OPTIONAL_ARRAYS)
        names = [name for name in arrays if name != "done"]
        sel = slice(start, stop)
        data = {name: _fit(arrays[name], columns.get(name), n) for name in names}

        async def write() -> None:
            await asyncio.gather(*(arrays[name].setitem(sel, data[name]) for name in names))
            await arrays["done"].setitem(sel, done)

        private_api.zarr_sync(write())

    def write_reference(self, index: int, ref: Reference) -> None:
        """Store reference ``index`` (q, v, status, error estimate), then mark it done."""
        g = self.group(f"reference/r{index}", "r+")
        g["q"][:] = ref.q
        g["v"][:] = ref.v
        g.attrs.update({"status": int(ref.status), "error_estimate": float(ref.error_estimate)})
        g.attrs["done"] = True

    def read_reference(self, index: int) -> Reference | None:
        """The stored reference ``index``, or None if it was not written yet."""
        return stored_reference(self.group(f"reference/r{index}"))

    def mark_complete(self, complete: bool = True, summary: dict | None = None) -> None:
        """Set the root's completion flag (and the last launch's summary)."""
        update: dict = {"complete": bool(complete)}
        if summary is not None:
            update["last_launch"] = json.loads(json.dumps(summary, default=str))
        if not self._rebuilt:  # only the references' documents changed since the template
            from mbstudy.pipeline.store.template import refresh_root

            if refresh_root(location(self.path).zarr_store_object(), update):
                return
        self._root("r+").update_attributes(update)  # one write of the root's zarr.json
        self.reconsolidate()

    # ------------------------------------------------------------------ repairing
    def reopen_batch(self, block: str, batch: int) -> None:
        """Mark batch ``batch`` of ``block`` not done (its whole ``done`` chunk rewritten)."""
        done = self.group(block, "r+")["done"]
        B = int(done.chunks[0])
        start, stop = batch * B, min((batch + 1) * B, done.shape[0])
        done.with_config(WRITE_EVERY_CHUNK)[start:stop] = np.zeros(stop - start, dtype=bool)

    def rebuild_arrays(self, study, grid, block, names: set[str]) -> None:
        """Re-create the arrays ``names`` of ``block`` as the template has them (label
        arrays through store/cf.py, which writes them)."""
        from mbstudy.pipeline.store.cf import describe_block

        self._rebuilt = True
        labels = set(names) & set(LABEL_ARRAYS)
        if set(names) - labels:
            self._create_block(self._root("r+"), study, grid, block, only=set(names) - labels)
        if labels:
            for name in labels:
                location(self.path / block.name).remove(name)
            describe_block(self.group(block.name, "r+"), block, study.model_entry)
        _HANDLES.pop(str(self.path / block.name), None)

    def rebuild_block(self, study, grid, block) -> None:
        """Re-create ``block``'s group and every array, label arrays and CF attributes
        included (all its batches pending)."""
        from mbstudy.pipeline.store.cf import describe_block

        self._rebuilt = True
        location(self.path).remove(block.name)
        self._create_block(self._root("r+"), study, grid, block)
        describe_block(self.group(block.name, "r+"), block, study.model_entry)
        _HANDLES.pop(str(self.path / block.name), None)

    def rebuild_reference_group(self) -> None:
        """Re-create the ``reference`` group (lost); its references are rebuilt next."""
        self._rebuilt = True
        location(self.path).remove("reference")
        self._root("r+").create_group("reference")

    def remove_chunk(self, group: str, name: str, index: int) -> None:
        """Remove whatever is stored at the key of chunk ``index`` (along the first axis)
        of array ``group/name``: a damaged chunk, or a directory, FIFO or link in its
        place, which zarr could not write over (nothing if the array's metadata is lost:
        the array is re-created instead)."""
        try:
            arr = self.group(group)[name]
        except Exception:
            return
        key = arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))
        location(self.path / group / name).remove(key)

    def rebuild_reference(self, index: int, study, grid) -> None:
        """Re-create reference ``index`` (not done: the next launch computes it again)."""
        self._rebuilt = True
        ref = self.group("reference", "r+")
        self._create_reference(ref, index, grid.references[index], study, overwrite=True)

    # ------------------------------------------------------------------ reading
    def blocks(self) -> list[str]:
        return list(self.root_attrs().get("blocks", []))

    def batch_sizes(self) -> dict[str, int]:
        """The batch plan the store was made with: cases per batch (= chunk length along
        ``case``) of every block; a resumed launch keeps it."""
        return {b: int(self.block_attrs(b)["batch_size"]) for b in self.blocks()}

    def block_attrs(self, block: str) -> dict:
        return dict(self.group(block).attrs)

    def array(self, block: str, name: str, g=None):
        """The zarr array ``name`` of group ``block`` (``g``: that group, if open already;
        StoreError if the array's metadata is lost)."""
        g = self.group(block) if g is None else g
        try:
            return g[name]
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception:  # KeyError for a lost zarr.json, a decode error for a mangled one
            raise StoreError(f"{self.path}: array {block}/{name} is missing or its zarr.json"
                             f" unreadable; {REPAIR_HINT}") from None

    def read(self, block: str, name: str, done: np.ndarray | None = None) -> np.ndarray:
        """One whole array of a block, never a damaged one: a chunk that is not a regular
        file, a missing chunk of a template array or of a finished batch, or a chunk that
        fails its checksum is a StoreError naming the array and the batch (a missing chunk
        of a batch not done holds no result yet: its fill value is read). ``done``: the
        block's :meth:`done_batches`, for a caller reading many arrays (read once)."""
        arr = self.array(block, name)
        self.check_chunks(block, name, arr, done)
        batch = name in self.block_attrs(block).get("batch_arrays", ())
        return read_whole(arr, unit="batch" if batch else "chunk")

    def read_row(self, block: str, name: str, row: int) -> np.ndarray:
        """Row ``row`` (one case) of array ``name`` of a block, checked as :meth:`read`
        checks a whole array."""
        arr = self.array(block, name)
        self.check_chunks(block, name, arr)
        return read_whole(arr, row, unit="batch")

    def check_chunks(self, group: str, name: str, arr, done: np.ndarray | None = None) -> None:
        """Raise StoreError if array ``name`` of ``group`` has a chunk that is not a regular
        file, or a missing chunk that should be there: any of a template array, a batch
        array's where its batch is done (``done``: per batch; read when needed), the
        whole reference of a reference marked done (``group`` ``reference/rI``)."""
        from mbstudy.pipeline.store.chunkscan import NOT_A_FILE, chunk_presence

        states = chunk_presence(arr)
        bad = [i for i, s in enumerate(states) if s != "ok"]
        if not bad:
            return
        for i in bad:
            if states[i] == NOT_A_FILE:
                raise self._damaged(group, name, i, "is not a regular file")
        if name == "done":  # a lost done chunk: that batch is pending, not damaged
            return
        if group.startswith("reference/"):
            if name == "t" or self.group(group).attrs.get("done"):
                raise self._damaged(group, name, bad[0], "is missing")
            return
        attrs = self.block_attrs(group)
        if name not in attrs.get("batch_arrays", ()):  # written with the template
            raise self._damaged(group, name, bad[0], "is missing", batch=False)
        if done is None:
            done = self.done_batches(group)
        lost = [b for b in bad if b < done.size and done[b]]
        if lost:
            raise self._damaged(group, name, lost[0], "is missing")

    def check_block(self, block: str) -> None:
        """:meth:`check_chunks` for every array block ``block`` lists, without reading a
        chunk (``stat`` per chunk, or one listing per array on an object store): what
        ``status`` checks before it counts a block's cases as done."""
        attrs = self.block_attrs(block)
        g = self.group(block)
        done = self.done_batches(block)
        names = [*attrs.get("template_arrays", ()), *attrs.get("batch_arrays", ()),
                 *label_arrays(attrs.get("series", ()))]  # fmt: skip
        for name in dict.fromkeys(names):
            self.check_chunks(block, name, self.array(block, name, g), done)

    def _damaged(self, group: str, name: str, index: int, what: str,
                 batch: bool = True) -> StoreError:  # fmt: skip
        where = ("" if group.startswith("reference/") else
                 f", batch {index}" if batch else f", chunk {index}")  # fmt: skip
        return StoreError(f"{self.path}: array {group}/{name}{where}: the chunk {what};"
                          f" {REPAIR_HINT}")

    def array_names(self, block: str) -> list[str]:
        g = self.group(block)
        return sorted(name for name, _ in g.arrays())

    def reopen_failed_batches(self, block: str) -> int:
        """Mark not done every batch holding a case with status ``error`` (an exception, a
        lost task: not a solver outcome, which is deterministic data); return how many.

        Only ``done`` is written, batch by batch (whole chunks), so a launch that dies
        right after leaves those batches pending, as an interrupted one would.
        """
        from mbstudy.solvers.api import ERROR

        attrs = self.block_attrs(block)
        B = int(attrs["batch_size"])
        status = self.read(block, "status")
        done = self.group(block, "r+")["done"]
        n = 0
        for b in np.unique(np.flatnonzero(status == ERROR) // B):
            start, stop = int(b) * B, min((int(b) + 1) * B, status.size)
            done[start:stop] = np.zeros(stop - start, dtype=bool)
            n += 1
        return n

    def done_batches(self, block: str) -> np.ndarray:
        """Boolean per batch: every case of the batch is done (read a window of batches at
        a time: memory bounded by the window, not by the block)."""
        attrs = self.block_attrs(block)
        B = int(attrs["batch_size"])
        nb = int(attrs["n_batches"])
        arr = self.array(block, "done")
        self.check_chunks(block, "done", arr)  # a lost chunk: pending; a FIFO: refused
        out = np.zeros(nb, dtype=bool)
        step = max(1, COORD_CHUNK // B)  # batches per window
        for b0 in range(0, nb, step):
            b1 = min(b0 + step, nb)
            done = read_whole(arr, slice(b0 * B, min(b1 * B, arr.shape[0])))
            padded = np.ones((b1 - b0) * B, dtype=bool)  # the last batch may be short
            padded[: done.size] = done
            out[b0:b1] = padded.reshape(b1 - b0, B).all(axis=1)
        return out
