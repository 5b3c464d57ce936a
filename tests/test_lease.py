"""The lease lock of a store on S3 (pipeline/store/lease.py), against a real S3-compatible
server (moto's server mode): the server honours the conditional puts the lease is built on;
many processes racing for one lease (holders that die holding it included) never hold it
at the same time; an expired lease is taken over, a live one is refused with its holder
named, a renewal keeps it, and a lease taken over behind the holder's back is seen as lost."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import time
from pathlib import Path

import pytest
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.lease import LeaseLock
from mbstudy.pipeline.store.urls import store_location

from tests.s3_testkit import s3_server, s3fs_for

BUCKET = "mbstudy-test"


@pytest.fixture(scope="module")
def endpoint():
    with s3_server(BUCKET) as url:
        yield url


def lease_of(url: str) -> dict:
    fs = s3fs_for(os.environ["AWS_ENDPOINT_URL"])
    return json.loads(fs.cat(store_location(url).root + ".lock"))


def put_lease(url: str, **fields) -> None:
    fs = s3fs_for(os.environ["AWS_ENDPOINT_URL"])
    fs.pipe(store_location(url).root + ".lock", json.dumps(fields).encode())


def test_the_server_honours_conditional_puts(endpoint):
    fs = s3fs_for(endpoint)
    out = fs.call_s3("put_object", Bucket=BUCKET, Key="cond", Body=b"1", IfNoneMatch="*")
    with pytest.raises(Exception, match=r"(?i)pre-?condition"):
        fs.call_s3("put_object", Bucket=BUCKET, Key="cond", Body=b"2", IfNoneMatch="*")
    with pytest.raises(Exception, match=r"(?i)pre-?condition"):
        fs.call_s3("put_object", Bucket=BUCKET, Key="cond", Body=b"3", IfMatch='"0000"')
    fs.call_s3("put_object", Bucket=BUCKET, Key="cond", Body=b"4", IfMatch=out["ETag"])
    assert fs.cat(f"{BUCKET}/cond") == b"4"


def test_an_expired_lease_is_taken_over_and_a_live_one_is_refused(endpoint):
    url = f"s3://{BUCKET}/expired.zarr"
    put_lease(url, holder="gone", pid=1, host="elsewhere", expires=time.time() - 1)
    lock = LeaseLock(store_location(url), lease_s=30).acquire()
    try:
        lease = lease_of(url)
        assert lease["holder"] == lock.holder and lease["pid"] == os.getpid()
        assert lease["expires"] > time.time() + 20
        with pytest.raises(StoreError, match=rf"locked by another launch \(pid {os.getpid()}"
                                             rf" on {socket.gethostname()}"):
            LeaseLock(store_location(url), lease_s=30).acquire()
        before = lease["expires"]
        time.sleep(0.05)
        assert lock.renew() and lease_of(url)["expires"] > before
    finally:
        lock.release()
    assert lease_of(url)["expires"] < time.time()  # released: the next launch takes it
    LeaseLock(store_location(url), lease_s=30).acquire().release()


def test_the_heartbeat_renews_and_a_takeover_behind_the_holders_back_is_lost(endpoint):
    url = f"s3://{BUCKET}/heartbeat.zarr"
    lock = LeaseLock(store_location(url), lease_s=4.0).acquire()
    first = lease_of(url)["expires"]
    time.sleep(5.0)  # longer than the lease: only the heartbeat (every 1.33 s) keeps it
    assert lease_of(url)["expires"] > first
    with pytest.raises(StoreError, match="locked by another launch"):
        LeaseLock(store_location(url), lease_s=30).acquire()
    put_lease(url, holder="thief", pid=2, host="elsewhere", expires=time.time() + 60)
    assert not lock.renew() and lock.lost
    lock.release()
    assert lease_of(url)["holder"] == "thief"  # a lost lease is never overwritten


def _racer(endpoint: str, url: str, marker: str, rounds: int, seed: int, out) -> None:
    """Take the lease ``rounds`` times; while holding it, create ``marker`` exclusively (a
    second holder fails there). Every fifth success, die holding it: stop the heartbeat,
    remove the marker, never release (the 1 s lease then expires).

    The marker records when its holder began to acquire and its lease length. Finding it
    while holding the lease is an overlap, unless its holder had a 1 s lease that began
    more than 1 s ago: that holder was paused past its lease (a loaded machine can stall a
    process that long), which the protocol documents as the one way to lose a lease
    (pipeline/store/lease.py, "Limits"), and is counted apart."""
    import random

    os.environ["AWS_ENDPOINT_URL"] = endpoint
    rng = random.Random(seed)
    taken = overlaps = paused = 0
    while taken < rounds:
        live = taken % 5 != 4
        lease_s = 30 if live else 1.0
        lock = LeaseLock(store_location(url), lease_s=lease_s)
        started = time.time()
        try:
            lock.acquire()
        except StoreError:
            time.sleep(rng.uniform(0.0, 0.05))
            continue
        taken += 1
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, f"{started!r} {lease_s!r}".encode())
            os.close(fd)
        except FileExistsError:
            try:
                other_start, other_lease = map(float, Path(marker).read_text().split())
            except (OSError, ValueError):  # removed or half written in between: its
                other_start, other_lease = time.time(), 30.0  # holder held it just now
            if time.time() > other_start + other_lease:
                paused += 1
            else:
                overlaps += 1
            lock.release()
            continue
        time.sleep(rng.uniform(0.0, 0.02))
        os.unlink(marker)
        if live:
            lock.release()
        else:  # died holding it
            lock._stop.set()
    out.put((taken, overlaps))


def test_racing_takers_never_hold_the_lease_together(endpoint, tmp_path):
    url = f"s3://{BUCKET}/race.zarr"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(endpoint, url, str(tmp_path / "holder"), 10,
                                              i, out)) for i in range(6)]  # fmt: skip
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sum(t for t, _ in results) == 60
    assert sum(o for _, o in results) == 0, results


def test_a_launch_into_a_missing_bucket_is_one_line_and_writes_nothing(endpoint, tmp_path,
                                                                       monkeypatch):
    from mbstudy.pipeline.cli.app import app
    from typer.testing import CliRunner

    from tests.conftest import STUDIES

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MBSTUDY_FORKSERVER", "0")
    study = tmp_path / "s.toml"
    study.write_text((STUDIES / "smoke.toml").read_text())
    res = CliRunner().invoke(app, ["launch", str(study), "--store", "s3://no-such-bucket/x.zarr",
                                   "--scheduler", "tls://127.0.0.1:9"])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert len(line.splitlines()) == 1 and "bucket does not exist" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]
    assert "no-such-bucket" not in s3fs_for(endpoint).ls("")
