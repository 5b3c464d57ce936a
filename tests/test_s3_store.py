"""The store layer on a real S3-compatible server (moto's server mode), without a cluster
(the fake registry of tests/property/fakes.py: no kernels): the location's operations
(exists, holds other files, remove, the identity of a key), a template and batch writes
on ``s3://``, ``verify`` finding deleted and garbage chunk objects identically with a full
read and with the checksum scan, the repair reopening exactly those batches, and a lost
root ``zarr.json`` rebuilt in the bucket."""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.pipeline.store.location import FsspecLocation, location
from mbstudy.pipeline.store.recover import lost_root, recover_root
from mbstudy.pipeline.store.urls import store_location
from mbstudy.pipeline.store.verify import repair_store, verify_store
from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError

from tests.conftest import load_fakes
from tests.integrity_testkit import finished_store, write_batches
from tests.s3_testkit import s3_server, s3fs_for

BUCKET = "mbstudy-store"


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    load_fakes().install(monkeypatch)


@pytest.fixture(scope="module")
def endpoint():
    with s3_server(BUCKET) as url:
        yield url


def key_of(rs, name: str, batch: int) -> str:
    arr = rs.group("a")[name]
    key = arr.metadata.encode_chunk_key((batch,) + (0,) * (arr.ndim - 1))
    return f"{(rs.path / 'a').root}/{name}/{key}"


def test_a_url_is_an_object_store_location_with_the_environments_endpoint(endpoint):
    loc = store_location(f"s3://{BUCKET}/x.zarr/")
    assert isinstance(loc, FsspecLocation) and loc.url == f"s3://{BUCKET}/x.zarr"
    assert loc.options["endpoint_url"] == endpoint and loc.name == "x.zarr"
    assert str(loc / "a") == f"s3://{BUCKET}/x.zarr/a"


def test_location_operations_on_the_bucket(endpoint):
    fs = s3fs_for(endpoint)
    loc = location(store_location(f"s3://{BUCKET}/ops.zarr"))
    assert not loc.exists() and not loc.holds_other_files()
    fs.pipe(f"{BUCKET}/ops.zarr/zarr.json", b"{}")
    fs.pipe(f"{BUCKET}/ops.zarr/a/c/0", b"x")
    assert loc.exists("zarr.json") and loc.holds_other_files()
    first = loc.stamp("zarr.json")
    fs.pipe(f"{BUCKET}/ops.zarr/zarr.json", b'{"a": 1}')
    assert loc.stamp("zarr.json") != first  # a rewritten store reopens cached handles
    loc.remove()
    assert not loc.holds_other_files() and fs.find(f"{BUCKET}/ops.zarr") == []


def test_an_unknown_bucket_is_one_line(endpoint):
    with pytest.raises(StoreError, match="no mbstudy store"):
        ResultStore.open("s3://no-such-bucket/x.zarr")


@pytest.mark.parametrize(("damage", "array", "batch", "kind"), [
    ("delete", "rms_phi", 1, "missing"),
    ("garbage", "status", 2, "corrupt"),
    ("garbage", "q", 0, "corrupt"),
])  # fmt: skip
def test_damage_in_the_bucket_is_found_and_repaired(endpoint, damage, array, batch, kind):
    url = f"s3://{BUCKET}/{damage}-{array}.zarr"
    spec, grid, rs = finished_store(url)
    before = {n: rs.read("a", n) for n in ("rms_phi", "status", "q")}
    fs = s3fs_for(endpoint)
    key = key_of(rs, array, batch)
    if damage == "delete":
        fs.rm(key)
    else:
        fs.pipe(key, np.random.default_rng(1).bytes(len(fs.cat(key))))
    report = verify_store(rs)
    assert verify_store(rs, full=False).as_dict() == report.as_dict()
    (dmg,) = report.blocks
    assert dmg.bad_batches == [batch] and array in getattr(dmg, kind)[batch]
    assert repair_store(rs, spec, grid, report) == {"a": 1}
    assert list(np.flatnonzero(~rs.done_batches("a"))) == [batch]
    write_batches(rs, grid, only=batch)
    assert verify_store(rs, full=False).ok
    for name, old in before.items():
        np.testing.assert_array_equal(rs.read("a", name), old)


def test_a_lost_root_in_the_bucket_is_rebuilt(endpoint):
    url = f"s3://{BUCKET}/rootless.zarr"
    spec, grid, rs = finished_store(url)
    s3fs_for(endpoint).rm(f"{BUCKET}/rootless.zarr/zarr.json")
    with pytest.raises(StoreError, match=r"root zarr\.json is missing"):
        ResultStore.open(url)
    assert lost_root(rs.path)
    recover_root(rs.path, spec, grid)
    again = ResultStore.open(url)
    assert again.spec_hash() == spec.spec_hash and again.done_batches("a").all()
    assert verify_store(again).ok

