"""A store's template written in one batch: every group and array document, the template
chunks, then the root with its consolidated metadata (docs/explanation/architecture.md#4-store).

Writing the template through zarr's object API costs one event-loop round trip, a
metadata object, codec validation and a JSON encoding per array and per attribute update
(an ``attrs.update`` of k keys rewrites the document k times), then
``zarr.consolidate_metadata`` reads every ``zarr.json`` back: ~700 round trips for the
218 arrays of ``studies/andrews.toml``. :class:`TemplateGroup` is a stand-in for a zarr
group that the store's builders (``ResultStore._create_reference``, ``_create_block``,
``cf.describe_block``) write into instead; it records the hierarchy in memory, and
:meth:`Template.write` writes it:

1. every group's and array's ``zarr.json`` and every recorded chunk write (the template's
   coordinates), concurrently, in one round trip to zarr's event loop;
2. then, only after all of step 1 has succeeded, the root ``zarr.json`` with its final
   attributes (the setup marker) and the consolidated metadata, computed from the
   documents just written instead of read back.

The documents are zarr's own: an array's is the ``metadata.to_dict()`` of an array zarr
creates (in memory, once per process and kind: data type, fill value, rank, codecs) with
the fields the Zarr v3 core specification defines per array replaced (``shape``, the
regular grid's ``chunk_shape``, ``dimension_names``, ``attributes``), serialised as zarr
serialises it; a group's is the v3 group document; the consolidated metadata follows
zarr-python's inline convention (what ``zarr.consolidate_metadata`` writes: every node by
path, sorted by depth then case-folded name, child groups with an empty inline
``consolidated_metadata``). Chunks are encoded by ``zarr.AsyncArray.setitem`` from the
array's document. ``tests/test_store_template.py`` checks that every document and chunk
file is byte for byte what zarr's own API writes for the same builders, on local and
object stores.

At the end of a launch, :func:`refresh_root` updates the root's attributes and the
consolidated documents of the references (the only ones a launch changes; a launch that
repaired arrays consolidates in full) in one write, instead of reading every document
back; :class:`OnlyGroup` lets verify's repair rebuild some arrays with the same builders.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from typing import Any

import numpy as np
from mbstudy.pipeline import private_api

ZARR_JSON = "zarr.json"
_EMPTY_CONSOLIDATED = {"kind": "inline", "must_understand": False, "metadata": {}}


class TemplateArray:
    """An array of the template: what ``create_array`` was given; ``a[selection] =
    values`` records a chunk write (made by :meth:`Template.write`, or as soon as the
    pending writes fill the template's buffer)."""

    def __init__(self, template: Template, path: str, spec: dict[str, Any]) -> None:
        self._template = template
        self.path = path
        self.spec = spec

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.spec["shape"])

    def __setitem__(self, selection, values) -> None:
        self._template._write(self, selection, np.asarray(values))


class _Attributes(dict):
    """A group's attributes (``update`` and item assignment, as zarr's)."""


class TemplateGroup:
    """A zarr group as the store's builders use it (``create_group``, ``create_array``,
    ``attrs``, ``arrays()``, ``[name]``), recording into a :class:`Template`."""

    def __init__(self, template: Template, path: str) -> None:
        self._template = template
        self.path = path
        self.attrs = _Attributes()

    def _child(self, name: str) -> str:
        return f"{self.path}/{name}" if self.path else name

    def create_group(self, name: str, overwrite: bool = False) -> TemplateGroup:
        return self._template._add(TemplateGroup(self._template, self._child(name)))

    def create_array(self, name: str, *, shape, dtype, fill_value, chunks=None,
                     dimension_names=None, compressors=None, config=None,
                     attributes=None) -> TemplateArray:  # fmt: skip
        spec = {"shape": tuple(int(n) for n in shape), "dtype": dtype,
                "fill_value": fill_value, "chunks": None if chunks is None else
                tuple(int(n) for n in chunks), "dimension_names": dimension_names,
                "compressors": compressors, "config": config,
                "attributes": dict(attributes or {})}  # fmt: skip
        return self._template._add(TemplateArray(self._template, self._child(name), spec))

    def arrays(self):
        """(name, array) of the arrays directly in this group."""
        prefix = f"{self.path}/" if self.path else ""
        for path, node in self._template.nodes.items():
            rest = path[len(prefix):]
            if isinstance(node, TemplateArray) and path.startswith(prefix) and "/" not in rest:
                yield rest, node

    def __getitem__(self, name: str):
        return self._template.nodes[self._child(name)]

    def __contains__(self, name: str) -> bool:
        return self._child(name) in self._template.nodes


class OnlyGroup:
    """A zarr group seen through a filter (verify's repair rebuilds some template arrays
    with the template's builders): ``create_array`` makes (over any remains) only
    the arrays named in ``only`` and hands back a sink for the others' template values."""

    def __init__(self, group, only: set[str]) -> None:
        self.group, self.only = group, only

    def create_array(self, name: str, **kwargs):
        if name not in self.only:
            return _Sink()
        return self.group.create_array(name, overwrite=True, **kwargs)

    @property
    def attrs(self):
        return self.group.attrs


class _Sink:
    def __setitem__(self, key, value) -> None:
        pass


class Template:
    """The hierarchy under the root of ``store`` (a zarr Store), recorded by
    :class:`TemplateGroup` builders; :meth:`write` writes it. ``root_attrs``: the
    attributes the root's ``zarr.json`` has on storage while the template is written.

    Chunk writes are held until :meth:`write`, or until they hold ``buffer_bytes`` (then
    they are written at once, concurrently): the launcher's memory stays bounded by that
    and one chunk, however many cases a block has (a chunk needs only its array's
    document to be encoded, not its ``zarr.json`` on storage; the marker comes last)."""

    def __init__(self, store, root_attrs: dict | None = None,
                 buffer_bytes: int = 64 << 20) -> None:  # fmt: skip
        self.store = store
        self.buffer_bytes = buffer_bytes
        self.nodes: dict[str, TemplateGroup | TemplateArray] = {}
        self.root = TemplateGroup(self, "")  # not in nodes: written by write(), last
        self.root.attrs.update(root_attrs or {})
        self._pending: list[tuple[TemplateArray, Any, np.ndarray]] = []
        self._pending_bytes = 0
        self._documents: dict[str, dict] = {}

    def _add(self, node):
        if node.path in self.nodes:
            raise ValueError(f"template: {node.path!r} is created twice")
        self.nodes[node.path] = node
        return node

    def _write(self, array: TemplateArray, selection, values: np.ndarray) -> None:
        self._pending.append((array, selection, values))
        self._pending_bytes += values.nbytes
        if self._pending_bytes >= self.buffer_bytes:
            private_api.zarr_sync(_gather(self._chunk_jobs()))

    def document(self, path: str) -> dict:
        """The ``zarr.json`` document of the node at ``path`` (below the root)."""
        node = self.nodes[path]
        if isinstance(node, TemplateGroup):  # its attributes may still change
            return group_document(dict(node.attrs))
        doc = self._documents.get(path)
        if doc is None:
            doc = self._documents[path] = array_document(node.spec)
        return doc

    def documents(self) -> dict[str, dict]:
        """The ``zarr.json`` document of every node below the root, by path."""
        return {path: self.document(path) for path in self.nodes}

    def _chunk_jobs(self) -> list:
        """Coroutines writing the pending chunk writes (the pending list is emptied)."""
        from zarr import AsyncArray
        from zarr.storage import StorePath

        jobs, arrays = [], {}
        for node, selection, values in self._pending:
            array = arrays.get(node.path)
            if array is None:
                array = arrays[node.path] = AsyncArray(
                    self.document(node.path), StorePath(self.store, node.path),
                    config=node.spec["config"],
                )  # fmt: skip
            jobs.append(array.setitem(selection, values))
        self._pending, self._pending_bytes = [], 0
        return jobs

    def write(self, marker: dict) -> None:
        """Every node's ``zarr.json`` and the pending chunks, concurrently; then, once all
        of them are written, the root's ``zarr.json``: its attributes updated with
        ``marker``, and the consolidated metadata. The root's ``zarr.json`` must exist
        already (with the setup attributes: a store whose template was not finished
        says so)."""
        from zarr.buffer import default_buffer_prototype

        documents = self.documents()
        buffer = default_buffer_prototype().buffer
        self.root.attrs.update(marker)
        root = encode(group_document(dict(self.root.attrs), consolidated_metadata(documents)))
        jobs = [self.store.set(f"{path}/{ZARR_JSON}", buffer.from_bytes(encode(doc)))
                for path, doc in documents.items()]  # fmt: skip
        jobs += self._chunk_jobs()

        async def write() -> None:
            await _gather(jobs)
            await self.store.set(ZARR_JSON, buffer.from_bytes(root))  # the marker, last

        private_api.zarr_sync(write())


async def _gather(jobs) -> None:
    """Run ``jobs`` concurrently; every one has finished (none is left writing) when the
    first error is raised."""
    results = await asyncio.gather(*jobs, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


def group_document(attributes: dict, consolidated: dict | None = None) -> dict:
    """A Zarr v3 group's ``zarr.json`` (key order as zarr-python writes it)."""
    doc: dict[str, Any] = {"attributes": attributes, "zarr_format": 3}
    if consolidated is not None:
        doc["consolidated_metadata"] = consolidated
    doc["node_type"] = "group"
    return doc


def consolidated_metadata(documents: dict[str, dict]) -> dict:
    """zarr-python's inline consolidated metadata of a root whose nodes below it have
    these ``documents`` (path -> ``zarr.json``): sorted by depth, then by NFKC case-folded
    path; each child group with an empty inline ``consolidated_metadata`` of its own."""
    def order(path: str) -> tuple[int, str]:
        return path.count("/"), unicodedata.normalize("NFKC", path).casefold()

    flat = {}
    for path in sorted(documents, key=order):
        doc = documents[path]
        if doc.get("node_type") == "group" and "consolidated_metadata" not in doc:
            doc = group_document(doc["attributes"], dict(_EMPTY_CONSOLIDATED, metadata={}))
        flat[path] = doc
    return {"kind": "inline", "must_understand": False, "metadata": flat}


_PROTOTYPES: dict[str, dict] = {}


def array_document(spec: dict[str, Any]) -> dict:
    """The ``zarr.json`` zarr writes for an array created with ``spec`` (the keyword
    arguments of ``create_array``): the document of a prototype array of the same kind,
    made by zarr in memory once per process, with its per-array fields replaced."""
    ndim = len(spec["shape"])
    auto_chunks = spec["chunks"] is None  # zarr's chunk guess depends on the shape
    key = repr((spec["dtype"], spec["fill_value"], ndim, spec["compressors"],
                sorted((spec["config"] or {}).items()), spec["dimension_names"] is None,
                spec["shape"] if auto_chunks else None))  # fmt: skip
    proto = _PROTOTYPES.get(key)
    if proto is None:
        proto = _PROTOTYPES[key] = _prototype(spec, auto_chunks)
    doc = json.loads(json.dumps(proto))  # a deep copy, JSON types only
    doc["shape"] = list(spec["shape"])
    if not auto_chunks:
        grid = doc["chunk_grid"]
        if grid.get("name") != "regular":  # pragma: no cover - zarr's only v3 grid
            raise ValueError(f"template: unexpected chunk grid {grid!r}")
        grid["configuration"]["chunk_shape"] = list(spec["chunks"])
    if spec["dimension_names"] is not None:
        doc["dimension_names"] = list(spec["dimension_names"])
    doc["attributes"] = json.loads(json.dumps(spec["attributes"], allow_nan=True))
    return doc


def _prototype(spec: dict[str, Any], auto_chunks: bool) -> dict:
    import zarr
    from zarr.storage import MemoryStore

    ndim = len(spec["shape"])
    shape = spec["shape"] if auto_chunks else (1,) * ndim
    dims = None if spec["dimension_names"] is None else tuple(f"d{i}" for i in range(ndim))
    kwargs = {} if auto_chunks else {"chunks": (1,) * ndim}
    array = zarr.create_array(
        MemoryStore(), shape=shape, dtype=spec["dtype"], fill_value=spec["fill_value"],
        dimension_names=dims, compressors=spec["compressors"], config=spec["config"],
        zarr_format=3, **kwargs,
    )  # fmt: skip
    return array.metadata.to_dict()


def encode(document: dict) -> bytes:
    """A ``zarr.json`` document as zarr-python serialises it (its ``json_indent``)."""
    import zarr

    return json.dumps(document, indent=zarr.config.get("json_indent"), allow_nan=True).encode()


def refresh_root(store, update: dict, prefix: str = "reference/") -> bool:
    """Update the root's attributes with ``update`` and refresh, in its consolidated
    metadata, the documents of the groups directly under ``prefix`` (the references:
    the only documents a launch changes besides the root's), in one write of the root
    after reading those few documents; what ``zarr.consolidate_metadata`` would write
    after the same changes (it reads every document back: 235 for the Andrews study).

    Returns False, having written nothing, when the root has no inline consolidated
    metadata or a listed document is missing: the caller consolidates in full then.
    """
    from zarr.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()

    async def refresh() -> bool:
        raw = await store.get(ZARR_JSON, prototype)
        if raw is None:
            return False
        root = json.loads(raw.to_bytes())
        consolidated = root.get("consolidated_metadata")
        if not isinstance(consolidated, dict) or consolidated.get("kind") != "inline":
            return False
        metadata = consolidated.get("metadata")
        if not isinstance(metadata, dict):
            return False
        paths = [p for p, doc in metadata.items()
                 if p.startswith(prefix) and "/" not in p[len(prefix):]
                 and isinstance(doc, dict) and doc.get("node_type") == "group"]  # fmt: skip
        found = await asyncio.gather(*(store.get(f"{p}/{ZARR_JSON}", prototype)
                                       for p in paths))  # fmt: skip
        if any(doc is None for doc in found):
            return False
        for path, doc in zip(paths, found, strict=True):  # in place: the order is kept
            attributes = json.loads(doc.to_bytes())["attributes"]
            metadata[path] = group_document(attributes, dict(_EMPTY_CONSOLIDATED, metadata={}))
        root["attributes"].update(update)
        doc = group_document(root["attributes"], consolidated)
        await store.set(ZARR_JSON, prototype.buffer.from_bytes(encode(doc)))
        return True

    return private_api.zarr_sync(refresh())
