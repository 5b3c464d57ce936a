"""The exceptions of the store layer: a store that cannot be used as asked (bad input, exit
status 2), and a store that failed under a running launch (exit status 1, resumable)."""

from __future__ import annotations

import errno


class StoreError(Exception):
    """A store that cannot be used as asked (another study's, locked, missing, corrupt)."""


class StoreFault(Exception):
    """The store failed while a launch was writing it: a full or read-only file system, a
    directory or FIFO where a chunk goes, an object store that stopped answering. Not bad
    input: one line and exit status 1; every batch written before is kept and the next
    launch on the store resumes (verify finds what the fault left half-written)."""


# errno values that are faults of the storage, not of a task's code
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EISDIR,
                            errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EFBIG,
                            errno.ENAMETOOLONG, errno.ESTALE})  # fmt: skip


OBJECT_STORE_LIBRARIES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec")


def storage_fault(exc: BaseException) -> bool:
    """True if ``exc`` is a failure of the storage, not of a task's code: a file-system
    error (ENOSPC, EROFS, EISDIR, ...), a StoreError (a store that became unreachable or
    unusable), or an exception of the object-store stack (botocore, aiohttp, s3fs,
    fsspec). A lost connection to a Dask worker (``CommClosedError`` is an OSError too)
    is not."""
    if isinstance(exc, StoreError | StoreFault):
        return True
    library = type(exc).__module__.split(".")[0]
    if library in OBJECT_STORE_LIBRARIES:
        return True
    return (isinstance(exc, OSError) and getattr(exc, "errno", None) in STORAGE_ERRNOS
            and library != "distributed")  # fmt: skip


def storage_fault_text(path, exc: BaseException) -> str:
    """One line for a storage fault ``exc`` while writing the store at ``path``: the cause
    (the OS's words, else the exception's first line) and the file it names."""
    what = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:200] or type(exc)
    where = getattr(exc, "filename", None)
    return f"{path}: the store could not be written ({what}" + (f": {where}" if where else "") + ")"
