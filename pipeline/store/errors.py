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


def storage_fault(exc: BaseException) -> bool:
    """True if ``exc`` is a file-system error of the storage (ENOSPC, EROFS, EISDIR, ...);
    a lost connection to a Dask worker (``CommClosedError`` is an OSError too) is not."""
    return (isinstance(exc, OSError) and getattr(exc, "errno", None) in STORAGE_ERRNOS
            and not type(exc).__module__.startswith("distributed"))  # fmt: skip
