"""Does the root's consolidated metadata describe the store as it is?

Plain ``xr.open_zarr(STORE, group=BLOCK)`` (and zarr's ``open_group`` by default) reads
the *consolidated* metadata in the root ``zarr.json`` instead of each node's own
``zarr.json`` (zarr-python's inline convention: ``consolidated_metadata.metadata`` maps
every node's path to its document). A stale or damaged copy there makes such a reader
see arrays that are gone, miss arrays that are there, or decode chunks with the wrong
codecs, though every node's own metadata is intact. :func:`consolidated_damage` compares
the two: every node's document on storage against its consolidated copy.

The references' group attributes (``done``, ``status``, the error estimate) change while
a launch runs and are refreshed in the consolidated copy when the launch ends
(store/template.py ``refresh_root``); an interrupted launch leaves them behind, which is
not damage, so they are not compared. ``launch`` rewrites the consolidated metadata in
full after a repair.
"""

from __future__ import annotations

import json

ZARR_JSON = "zarr.json"


def _canonical(doc: dict) -> str:
    """A node's document as compared: without its own consolidated metadata (a child
    group's copy carries an empty one), keys sorted (NaN spelled as JSON's ``NaN``)."""
    doc = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
    return json.dumps(doc, sort_keys=True, allow_nan=True)


def _reference_group(path: str, doc: dict) -> bool:
    return (doc.get("node_type") == "group" and path.startswith("reference/")
            and "/" not in path[len("reference/"):])  # fmt: skip


def _root_document(store) -> bytes | None:
    """The raw root ``zarr.json`` of a zarr Store (None if there is none)."""
    from mbstudy.pipeline import private_api
    from zarr.buffer import default_buffer_prototype

    buf = private_api.zarr_sync(store.get(ZARR_JSON, default_buffer_prototype()))
    return None if buf is None else buf.to_bytes()


def listed_nodes(path) -> set[str]:
    """The node paths the root's consolidated metadata lists (empty if it has none)."""
    from mbstudy.pipeline.store.location import location

    try:
        root = _root_document(location(path).zarr_store_object(read_only=True))
        return set(json.loads(root)["consolidated_metadata"]["metadata"])
    except Exception:  # no root, not JSON, no consolidated copy: verify reports each
        return set()


def consolidated_damage(path) -> list[str]:
    """What is wrong with the consolidated metadata of the store at ``path`` (a Path or
    an FsspecLocation): an empty list when it matches every node's ``zarr.json``."""
    from mbstudy.pipeline import private_api
    from mbstudy.pipeline.store.location import location
    from zarr.buffer import default_buffer_prototype

    store = location(path).zarr_store_object(read_only=True)
    proto = default_buffer_prototype()

    async def read() -> tuple[bytes | None, dict[str, bytes | None]]:
        root = await store.get(ZARR_JSON, proto)
        keys = [k async for k in store.list_prefix("")
                if k.endswith(f"/{ZARR_JSON}")]  # fmt: skip
        docs = {}
        for key in keys:
            buf = await store.get(key, proto)
            docs[key[: -len(ZARR_JSON) - 1]] = None if buf is None else buf.to_bytes()
        return (None if root is None else root.to_bytes()), docs

    root_raw, raw = private_api.zarr_sync(read())
    try:
        consolidated = json.loads(root_raw)["consolidated_metadata"]
        listed = consolidated["metadata"]
        if consolidated.get("kind") != "inline" or not isinstance(listed, dict):
            raise TypeError
    except Exception:  # no root document (verify reports it), or no consolidated copy
        return ["the root's consolidated metadata is missing or unreadable"]
    from mbstudy.pipeline.store.search_block import SEARCH_GROUP

    out = []
    for node in sorted(raw):
        if node == SEARCH_GROUP or node.startswith(f"{SEARCH_GROUP}/"):
            continue  # the study's search blocks: their own hierarchy, appended per round
        try:
            doc = json.loads(raw[node])
        except Exception:  # an unreadable node: reported with its group or array
            continue
        copy = listed.get(node)
        if copy is None:
            out.append(f"{node}: missing from the consolidated metadata")
            continue
        if _reference_group(node, doc):
            doc, copy = dict(doc, attributes={}), dict(copy, attributes={})
        if _canonical(doc) != _canonical(copy):
            out.append(f"{node}: its consolidated copy differs from its zarr.json")
    out += [f"{node}: in the consolidated metadata but not in the store"
            for node in sorted(set(listed) - set(raw))]
    return out
