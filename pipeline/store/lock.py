"""The launch lock of a store on a POSIX file system: one holder at a time, keyed by the
store's resolved real path, taken atomically, released by the kernel when its holder dies.

The lock is ``flock(2)`` on a file ``REAL.lock`` beside the store's real path ``REAL``
(``os.path.realpath``: every symlinked alias of one store names one lock file; the file
lives beside the store so that ``--overwrite`` cannot delete it). Taking it:

1. ``open(REAL.lock, O_CREAT | O_RDWR)`` and ``flock(LOCK_EX | LOCK_NB)`` (refused at once
   while another process holds it);
2. check that the path still names the inode just locked (``fstat`` of the descriptor ==
   ``stat`` of the path); if not, a releasing holder unlinked it in between: start again.

Releasing unlinks the file while still holding the lock, then closes it. Because of step 2
nobody can hold a lock on an unlinked inode, so at any moment at most one process holds the
lock on the inode the path names. A holder that dies (SIGKILL, power loss of a client of a
local file system) releases the flock with its last descriptor: a stale lock file is simply
locked again by the next launch; there is no read-unlink-create takeover window.

Limits (docs/explanation/reliability.md): ``flock`` is advisory (it stops other mbstudy launches,
not other programs); on NFS, Linux emulates it with POSIX byte-range locks, which need a working
lock manager on client and server.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path

from mbstudy.pipeline.store.errors import StoreError, StoreFault, storage_fault

LOCK_SUFFIX = ".lock"


def lock_path(store: str | Path) -> Path:
    """The lock file of ``store``: ``realpath(store) + '.lock'`` (symlinks resolved, also
    those of the store's parents; the store itself need not exist yet)."""
    real = Path(os.path.realpath(os.fspath(store)))
    return real.with_name(real.name + LOCK_SUFFIX)


class StoreLock:
    """An exclusive ``flock`` on ``lock_path(store)``, held for the duration of a launch.

    :meth:`acquire` raises :class:`StoreError` naming the holder when another live process
    holds it.
    """

    def __init__(self, path: str | Path) -> None:
        self.file = lock_path(path)
        self.held = False
        self._fd: int | None = None

    def acquire(self) -> StoreLock:
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.file.parent}: cannot create the folder of the store"
                             f" ({exc.strerror or exc})") from None
        for _ in range(100):  # each retry means a holder released in between: bounded
            try:
                fd = os.open(self.file, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise self._cannot_write(exc, "cannot create the store's lock") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                other = _read_holder(fd)
                os.close(fd)
                raise StoreError(
                    f"{self.file.with_suffix('')}: locked by another launch (pid"
                    f" {other.get('pid')} on {other.get('host')}); wait for it to finish"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"{self.file}: cannot lock ({exc.strerror})") from None
            try:
                same = os.stat(self.file).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # locked an inode its holder unlinked while releasing: again
                os.close(fd)
                continue
            me = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, me, 0)
            except OSError as exc:  # a full file system
                os.close(fd)
                raise self._cannot_write(exc, "cannot write the store's lock") from None
            self._fd = fd
            self.held = True
            return self
        raise StoreError(f"{self.file}: could not take the lock")

    def _cannot_write(self, exc: OSError, what: str) -> Exception:
        """A lock that cannot be written: bad input (StoreError) for a new store; for an
        existing store a fault of its file system (StoreFault: full, read-only), which
        leaves it resumable."""
        message = f"{self.file}: {what} ({exc.strerror or exc})"
        store = self.file.with_suffix("")
        if storage_fault(exc) and (store / "zarr.json").exists():
            return StoreFault(f"{message}; the store is unchanged and resumable: launch again"
                              " once its file system is writable")
        return StoreError(message)

    def release(self) -> None:
        if self.held and self._fd is not None:
            try:
                os.unlink(self.file)  # while still holding it (see the module docstring)
            except FileNotFoundError:
                pass
            os.close(self._fd)
            self._fd = None
            self.held = False

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_holder(fd: int) -> dict:
    """The holder's {"pid", "host"} as it wrote them (empty while it is still writing)."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
