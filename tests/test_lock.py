"""The launch lock (store/lock.py): many processes racing for one store through symlinked
aliases, with holders that die holding it, never see two holders at once."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest
from mbstudy.pipeline.store.lock import StoreLock, lock_path
from mbstudy.pipeline.store.zarr_store import StoreError


def _racer(aliases: list[str], marker: str, rounds: int, seed: int, out) -> None:
    """Take the lock ``rounds`` times through the aliases in turn; while holding it, create
    ``marker`` exclusively (an existing marker = a second holder). Every fifth round the
    process forks a child that takes the lock and dies holding it (a SIGKILLed launcher)."""
    held = violations = 0
    for k in range(rounds):
        alias = aliases[(seed + k) % len(aliases)]
        if k % 5 == 4:
            pid = os.fork()
            if pid == 0:
                try:
                    StoreLock(alias).acquire()
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    os.close(fd)
                    os.unlink(marker)
                except (StoreError, FileExistsError):
                    pass
                os._exit(0)  # dies holding the lock: no release, the lock file stays
            os.waitpid(pid, 0)
            continue
        try:
            lock = StoreLock(alias).acquire()
        except StoreError:
            continue
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            violations += 1
        else:
            os.close(fd)
            held += 1
            time.sleep(0.0005)
            os.unlink(marker)
        finally:
            lock.release()
    out.put((held, violations))


def test_racing_takeovers_through_symlinked_aliases_never_give_two_holders(tmp_path):
    real_parent = tmp_path / "real"
    real_parent.mkdir()
    store = real_parent / "s.zarr"
    store.mkdir()
    (tmp_path / "alias.zarr").symlink_to(store)  # the store through a symlink
    (tmp_path / "linkdir").symlink_to(real_parent)  # through a symlinked parent
    aliases = [str(store), str(tmp_path / "alias.zarr"), str(tmp_path / "linkdir" / "s.zarr"),
               str(real_parent / "." / "s.zarr")]
    assert len({lock_path(a) for a in aliases}) == 1
    marker = str(tmp_path / "holder")
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(aliases, marker, 60, i, out)) for i in range(8)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    held = sum(r[0] for r in results)
    assert sum(r[1] for r in results) == 0
    assert held > 50  # the race really happened (and dead holders were taken over)


def test_a_live_holder_is_named_and_a_dead_one_is_taken_over(tmp_path):
    store = tmp_path / "s.zarr"
    (tmp_path / "alias").symlink_to(store, target_is_directory=True)
    lock = StoreLock(store).acquire()
    with pytest.raises(StoreError, match=f"locked by another launch \\(pid {os.getpid()}"):
        _try_in_child(str(tmp_path / "alias"))
    lock.release()
    assert not lock_path(store).exists()
    pid = os.fork()
    if pid == 0:
        StoreLock(store).acquire()
        os._exit(0)  # dies holding it
    os.waitpid(pid, 0)
    assert lock_path(store).exists()  # the stale file stays ...
    with StoreLock(tmp_path / "alias"):  # ... and is simply locked again
        pass


def test_a_lock_file_of_the_old_format_does_not_block(tmp_path):
    store = tmp_path / "s.zarr"
    lock_path(store).write_text('{"pid": 1, "host": "elsewhere"}')
    with StoreLock(store) as lock:
        assert lock.held


def _try_in_child(alias: str) -> None:
    """Try the lock from another process (flock is per open file description: the same
    process could not observe its own lock). Re-raise its StoreError here."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def body():
        try:
            StoreLock(alias).acquire()
            q.put("")
        except StoreError as exc:
            q.put(str(exc))

    p = ctx.Process(target=body)
    p.start()
    msg = q.get(timeout=30)
    p.join(timeout=30)
    if msg:
        raise StoreError(msg)
