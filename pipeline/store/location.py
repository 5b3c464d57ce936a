"""A store's location: every file-system operation the store layer needs, in one of two
forms, so that nothing else asks whether a store is a folder or an object-store prefix.

=====================  ==============================  =====================================
operation              :class:`LocalLocation` (path)   :class:`FsspecLocation` (URL)
=====================  ==============================  =====================================
open a zarr group      ``zarr.open_group(PATH)``       zarr 3's ``FsspecStore`` of the URL
does a key exist       ``Path.exists``                 ``fs.exists`` (a HEAD request)
holds something else   a non-empty folder / a file     any object under the prefix
remove (--overwrite)   ``shutil.rmtree``               ``fs.rm(recursive=True)``
identity of a key      (inode, mtime, size)            (ETag, size)
launch lock            ``flock`` (store/lock.py)       a lease object (store/lease.py)
=====================  ==============================  =====================================

A :class:`ResultStore` keeps its ``path`` as given (a :class:`~pathlib.Path`, or an
:class:`FsspecLocation`, which supports ``/``, ``name``, ``stem`` and ``str`` like a path)
and asks :func:`location` for the operations.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from pathlib import Path

from mbstudy.pipeline.store.errors import StoreError

# protocols with a lease lock (a conditional put: S3's If-None-Match / If-Match)
LEASE_PROTOCOLS = ("s3", "s3a")
READ_ONLY_PROTOCOLS = ("http", "https")


class LocalLocation:
    """A store in a folder of a local or network-mounted file system."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def __truediv__(self, part: str) -> LocalLocation:
        return LocalLocation(self.path / part)

    def open_group(self, mode: str = "r", **kwargs):
        import zarr

        doc = self.path / "zarr.json"
        if os.path.lexists(doc) and not doc.is_file():  # zarr would block on a FIFO
            from mbstudy.pipeline.store.errors import StoreError

            raise StoreError(f"{doc}: not a regular file")
        return zarr.open_group(str(self.path), mode=mode, **kwargs)

    def zarr_store(self, read_only: bool = False) -> str:
        return str(self.path)

    def zarr_store_object(self, read_only: bool = False):
        """zarr's Store of the folder (for the Store API: ``set``, ``get``)."""
        from zarr.storage import LocalStore

        return LocalStore(str(self.path), read_only=read_only)

    def exists(self, key: str = "") -> bool:
        return (self.path / key).exists() if key else self.path.exists()

    def holds_other_files(self) -> bool:
        """True if something other than an empty folder is at the location."""
        if not self.path.exists():
            return False
        return any(self.path.iterdir()) if self.path.is_dir() else True

    def remove(self, key: str = "") -> None:
        """Remove the folder (or file, link, FIFO) ``key`` of the store, or the store."""
        target = self.path / key if key else self.path
        if not key or (target.is_dir() and not target.is_symlink()):
            shutil.rmtree(target, ignore_errors=True)
        elif os.path.lexists(target):
            target.unlink()

    def irregular_documents(self) -> list[Path]:
        """Metadata documents (``zarr.json`` of the root, a group or an array, down to the
        references' arrays) that are not regular files: a FIFO (reading it blocks
        forever), a device, a directory or a dangling link. Chunk folders (``c``) are not
        walked."""
        out = []

        def walk(folder: Path, depth: int) -> None:
            doc = folder / "zarr.json"
            if os.path.lexists(doc) and not (doc.is_file() and os.access(doc, os.R_OK)):
                out.append(doc)
            if depth == 0:
                return
            try:
                entries = [e for e in os.scandir(folder)
                           if e.name not in ("c", "zarr.json") and e.is_dir()]  # fmt: skip
            except OSError:
                return
            for e in entries:
                walk(Path(e.path), depth - 1)

        if self.path.is_dir():
            walk(self.path, 3)  # root / group / array or reference rI / its arrays
        return out

    def stamp(self, key: str) -> tuple:
        st = os.stat(self.path / key)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def lock(self):
        from mbstudy.pipeline.store.lock import StoreLock

        return StoreLock(self.path)


class FsspecLocation:
    """A store under an object-store URL (``s3://bucket/prefix.zarr``), reached through
    fsspec (zarr 3's ``FsspecStore`` for the arrays, a synchronous file system for the
    rest). ``options``: the storage options (urls.storage_options)."""

    def __init__(self, url: str, options: dict | None = None) -> None:
        self.url = url.rstrip("/")
        self.options = dict(options or {})
        self.protocol, self.root = self.url.split("://", 1)
        self._fs = None

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"FsspecLocation({self.url!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, FsspecLocation) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __truediv__(self, part: str) -> FsspecLocation:
        return FsspecLocation(f"{self.url}/{part}", self.options)

    @property
    def name(self) -> str:
        return posixpath.basename(self.root)

    @property
    def stem(self) -> str:
        return posixpath.splitext(self.name)[0]

    @property
    def fs(self):
        """The synchronous fsspec file system of the location (made once)."""
        if self._fs is None:
            import fsspec

            self._fs = fsspec.filesystem(self.protocol, **self.options)
        return self._fs

    def key(self, key: str = "") -> str:
        return f"{self.root}/{key}" if key else self.root

    def zarr_store(self, read_only: bool = False):
        from zarr.storage import FsspecStore

        return FsspecStore.from_url(self.url, storage_options=dict(self.options),
                                    read_only=read_only)  # fmt: skip

    def zarr_store_object(self, read_only: bool = False):
        """zarr's Store of the prefix (for the Store API: ``set``, ``get``)."""
        return self.zarr_store(read_only)

    def open_group(self, mode: str = "r", **kwargs):
        """A zarr group at the location (format 3: every store of mbstudy is, and naming it
        saves the requests that look for format 2 metadata)."""
        import zarr

        kwargs.setdefault("zarr_format", 3)
        return zarr.open_group(self.zarr_store(read_only=mode == "r"), mode=mode, **kwargs)

    def exists(self, key: str = "") -> bool:
        return self._call(self.fs.exists, self.key(key))

    def holds_other_files(self) -> bool:
        try:
            return bool(self._call(self.fs.find, self.root, maxdepth=1, withdirs=True))
        except FileNotFoundError:
            return False

    def remove(self, key: str = "") -> None:
        try:
            self._call(self.fs.rm, self.key(key), recursive=True)
        except FileNotFoundError:
            pass

    def irregular_documents(self) -> list:
        """Nothing: an object store holds objects only (no FIFOs or devices)."""
        return []

    def stamp(self, key: str) -> tuple:
        info = self._call(self.fs.info, self.key(key))
        return (info.get("ETag") or info.get("etag") or info.get("mtime"), info.get("size"))

    def lock(self):
        """The lease lock of the store (store/lease.py); :class:`StoreError` where the
        protocol cannot be written or has no conditional put."""
        if self.protocol in READ_ONLY_PROTOCOLS:
            raise StoreError(f"{self.url}: {self.protocol}:// is read-only; a launch needs a"
                             " store it can write (a local path or s3://)")
        if self.protocol not in LEASE_PROTOCOLS:
            raise StoreError(
                f"{self.url}: launch on {self.protocol}:// is not supported (no conditional-"
                "put lease lock for it); launch into s3:// or a local path, then copy the"
                " store; status, verify, aggregate and plot can read it"
            )
        from mbstudy.pipeline.store.lease import LeaseLock

        return LeaseLock(self)

    def _call(self, fn, *args, **kwargs):
        """An fsspec call; missing credentials, a refused one, an unknown bucket or an
        unreachable server is one line (StoreError), whatever the library raised."""
        try:
            return fn(*args, **kwargs)
        except FileNotFoundError:
            raise
        except PermissionError as exc:
            raise StoreError(f"{self.url}: access denied ({exc})") from None
        except Exception as exc:  # botocore, aiohttp, ... errors: not ours to list
            text = str(getattr(exc, "strerror", None) or exc).splitlines()[0][:300]
            raise StoreError(f"{self.url}: cannot reach the store ({type(exc).__name__}:"
                             f" {text})") from None


def location(path) -> LocalLocation | FsspecLocation:
    """The operations of a store at ``path`` (a Path or an FsspecLocation)."""
    if isinstance(path, FsspecLocation):
        return path
    return LocalLocation(path)
