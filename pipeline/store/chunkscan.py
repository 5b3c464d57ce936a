"""The state of every chunk of an array, cheaply: one listing and the checksums, no decoding.

``verify`` (store/verify.py) asks, for every chunk along ``case``, whether it is there and
intact. Asking zarr chunk by chunk costs an existence check and a full decode (zstd, a
NumPy array) per chunk, one after the other: a round trip each on an object store. Here,
per array:

1. **one listing** of the array's chunk keys (``Store.list_prefix``) says which chunks
   exist;
2. the bytes of every present chunk are fetched **concurrently** (``Store.get`` on zarr's
   event loop, at most :data:`CONCURRENCY` in flight);
3. each chunk's **CRC-32C** is checked on the raw bytes, exactly as the ``crc32c`` codec
   checks it when a chunk is read (Zarr v3 codec spec: the last 4 bytes are the
   little-endian CRC-32C, RFC 3720 / Castagnoli, of the bytes before them), without
   decompressing.

A chunk whose checksum matches holds the bytes that were written (the codec runs last on
write, after zstd), so it decodes; this is the same detection as a full read for every
accidental fault (a lost, truncated, overwritten or bit-flipped chunk). Arrays whose codecs
do not end in ``crc32c`` (stores made before it) are decoded chunk by chunk instead.

On a local folder every chunk is first looked at with ``stat`` (following symbolic links):
a key that is a directory, a FIFO, a device or a link to one is damage, never read (zarr
would read a FIFO forever and a link to ``/dev/zero`` until memory runs out, and treat a
directory as an absent chunk). :func:`chunk_presence` answers the same question without
reading any chunk: what the readers of a store check before they decode an array.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import numpy as np

CONCURRENCY = 64  # chunk reads in flight per array


def has_crc(array) -> bool:
    """True if the array's last codec is Zarr v3's ``crc32c``."""
    codecs = getattr(array.metadata, "codecs", ())
    return bool(codecs) and type(codecs[-1]).__name__ == "Crc32cCodec"


def crc_ok(data: bytes) -> bool:
    """The trailing CRC-32C of a chunk matches its other bytes."""
    import google_crc32c

    if len(data) < 4:
        return False
    return np.uint32(google_crc32c.value(data[:-4])).tobytes() == data[-4:]


def chunk_states(array, n: int) -> list[str]:
    """``"ok"``, ``"missing"`` or ``"corrupt"`` for chunks ``0..n-1`` along the first axis
    of ``array`` (the others at index 0)."""
    from mbstudy.pipeline import private_api

    if not has_crc(array):
        return [decoded_state(array, i) for i in range(n)]
    return private_api.zarr_sync(_scan(array, n))


NOT_A_FILE = "not a regular file"


def _keys(array, n: int) -> tuple[object, str, list[str]]:
    """(zarr Store, array prefix, the keys of chunks ``0..n-1`` along the first axis)."""
    sp = array.store_path
    store, base = sp.store, sp.path.rstrip("/")
    prefix = f"{base}/" if base else ""
    encode = array.metadata.encode_chunk_key
    tail = (0,) * (array.ndim - 1)
    return store, prefix, [prefix + encode((i, *tail)) for i in range(n)]


def _local_root(store) -> Path | None:
    """The folder of a zarr LocalStore (None for any other store)."""
    from zarr.storage import LocalStore

    return Path(store.root) if isinstance(store, LocalStore) else None


def _local_state(root: Path, key: str) -> str:
    """``"ok"`` (a regular file), ``"missing"`` or :data:`NOT_A_FILE`, by ``stat``."""
    try:
        mode = os.stat(root / key).st_mode
    except FileNotFoundError:
        return NOT_A_FILE if os.path.lexists(root / key) else "missing"  # a dangling link
    except OSError:  # a looping link, a path through a regular file
        return NOT_A_FILE
    return "ok" if stat.S_ISREG(mode) else NOT_A_FILE


def chunk_presence(array, n: int | None = None) -> list[str]:
    """``"ok"`` (present), ``"missing"`` or :data:`NOT_A_FILE` for the chunks along the
    first axis of ``array``, without reading any: ``stat`` per chunk on a folder, one
    listing on an object store."""
    from mbstudy.pipeline import private_api

    n = int(array.cdata_shape[0]) if n is None else n
    store, prefix, keys = _keys(array, n)
    root = _local_root(store)
    if root is not None:
        return [_local_state(root, k) for k in keys]

    async def listing() -> set[str]:
        return {k async for k in store.list_prefix(prefix)}

    present = private_api.zarr_sync(listing())
    return ["ok" if k in present else "missing" for k in keys]


async def _scan(array, n: int) -> list[str]:
    from zarr.buffer import default_buffer_prototype

    store, prefix, keys = _keys(array, n)
    root = _local_root(store)
    if root is not None:
        local = {k: _local_state(root, k) for k in keys}
        present = {k for k, s in local.items() if s == "ok"}
    else:
        local = {}
        present = {k async for k in store.list_prefix(prefix)}
    proto = default_buffer_prototype()
    gate = asyncio.Semaphore(CONCURRENCY)

    async def state(key: str) -> str:
        if local.get(key) == NOT_A_FILE:
            return "corrupt"
        if key not in present:
            return "missing"
        async with gate:
            buf = await store.get(key, prototype=proto)
        if buf is None:  # deleted between the listing and the read
            return "missing"
        return "ok" if crc_ok(buf.to_bytes()) else "corrupt"

    return list(await asyncio.gather(*(state(k) for k in keys)))


def decoded_state(array, index: int) -> str:
    """The state of one chunk by zarr's own read: existence, then a full decode."""
    from mbstudy.pipeline import private_api

    aa = private_api.zarr_async_array(array)
    coords = (index,) + (0,) * (array.ndim - 1)
    key = aa.metadata.encode_chunk_key(coords)
    root = _local_root(aa.store_path.store)
    if root is not None:
        base = aa.store_path.path.rstrip("/")
        local = _local_state(root, f"{base}/{key}" if base else key)
        if local != "ok":
            return "corrupt" if local == NOT_A_FILE else "missing"
    elif not private_api.zarr_sync((aa.store_path / key).exists()):
        return "missing"
    try:
        array.get_block_selection(coords)
    except Exception:  # a checksum mismatch, a truncated chunk, a codec error: damage
        return "corrupt"
    return "ok"
