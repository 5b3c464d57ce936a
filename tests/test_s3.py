"""Stores on an object store, end to end: a real S3-compatible server (moto's
server mode) and a real LocalCluster whose worker processes write their chunks straight to
the bucket. One study (the kernels of tests/test_integrity_e2e.py) is launched into
``s3://BUCKET/study.zarr``; then status, verify (a deleted chunk object is reported
missing, one overwritten with garbage corrupt), a relaunch that runs exactly those batches
and ends equal to the undisturbed run, a resume that runs nothing, aggregate and a plot.
Nothing is created in the local working directory."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.urls import store_location
from typer.testing import CliRunner

from tests.e2e_testkit import arrays_but_timings as arrays
from tests.e2e_testkit import six_case_study
from tests.s3_testkit import s3_server, s3fs_for

pytestmark = pytest.mark.cluster

BUCKET = "mbstudy-e2e"
URL = f"s3://{BUCKET}/study.zarr"
STUDY = six_case_study("s3-e2e")


def chunk_key(url: str, block: str, name: str, index: int) -> str:
    loc = store_location(url) / block
    arr = loc.open_group("r", use_consolidated=False)[name]
    key = arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))
    return f"{loc.root}/{name}/{key}"


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s3")
    study = tmp / "study.toml"
    study.write_text(STUDY)
    with s3_server(BUCKET) as endpoint:
        res = launch(study, URL)
        assert res.exit_code == 0, res.output
        yield study, endpoint, arrays(URL)


def launch(study, url: str, *extra: str):
    return CliRunner().invoke(app, ["launch", str(study), "--store", url, "--workers", "1",
                                    "--quiet", *extra])


def test_a_launch_writes_every_chunk_to_the_bucket(launched, tmp_path, monkeypatch):
    _, endpoint, undisturbed = launched
    monkeypatch.chdir(tmp_path)
    fs = s3fs_for(endpoint)
    keys = fs.find(BUCKET)
    assert f"{BUCKET}/study.zarr/zarr.json" in keys
    assert f"{BUCKET}/study.zarr.lock" in keys  # the released lease, beside the store
    assert json.loads(fs.cat(f"{BUCKET}/study.zarr.lock"))["expires"] == 0
    assert len([k for k in keys if "/baumgarte/rms_phi/c/" in k]) == 6  # one per batch
    runner = CliRunner()
    res = runner.invoke(app, ["status", URL, "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["complete"] is True
    assert info["blocks"]["baumgarte"]["done"] == 6 and info["blocks"]["baumgarte"]["ok"] == 6
    assert list(tmp_path.iterdir()) == []  # nothing local: no "s3:" folder
    rms = undisturbed["baumgarte/rms_phi"]
    assert np.all(np.isfinite(rms)) and np.all(rms > 0)
    # the phase error of Baumgarte falls as omega_n grows at this step (a real result,
    # not a fill value): rms_phi differs between the gains
    assert len(set(rms.tolist())) == 6


def test_damage_in_the_bucket_is_found_and_exactly_its_batches_run_again(launched):
    study, endpoint, undisturbed = launched
    fs = s3fs_for(endpoint)
    fs.rm(chunk_key(URL, "baumgarte", "rms_phi", 1))
    garbage = chunk_key(URL, "baumgarte", "q", 4)
    fs.pipe(garbage, np.random.default_rng(3).bytes(len(fs.cat(garbage))))
    runner = CliRunner()
    res = runner.invoke(app, ["verify", URL, "--json"])
    assert res.exit_code == 1, res.output
    info = json.loads(res.output)["blocks"]["baumgarte"]
    assert info["missing"] == {"1": ["rms_phi"]}
    assert info["corrupt"] == {"4": ["q"]}
    res = launch(study, URL)
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "running again: baumgarte: 2 batches" in out, out
    assert "ran 2 cases in 2 batches (4 batches already done)" in out, out
    assert runner.invoke(app, ["verify", URL]).exit_code == 0
    after = arrays(URL)
    assert sorted(after) == sorted(undisturbed)
    for name, values in undisturbed.items():
        np.testing.assert_array_equal(values, after[name], err_msg=name)


def test_aggregate_plot_and_report_read_the_bucket(launched, tmp_path):
    _, _, undisturbed = launched
    runner = CliRunner()
    res = runner.invoke(app, ["aggregate", URL, "--by", "omega_n", "--metric", "rms_phi",
                              "--format", "json"])
    assert res.exit_code == 0, res.output
    table = next(iter(json.loads(res.output).values()))
    got = {float(r["omega_n"]): float(r["rms_phi"]) for r in table}
    omega = undisturbed["baumgarte/omega_n"]
    want = dict(zip(omega.tolist(), undisturbed["baumgarte/rms_phi"].tolist(), strict=True))
    assert got.keys() == want.keys()
    for k in want:  # one case per omega_n: the median is the stored value
        assert got[k] == pytest.approx(want[k], rel=1e-12)
    res = runner.invoke(app, ["plot", URL, "--kind", "convergence", "--axis", "omega_n",
                              "--metric", "rms_phi", "--out", str(tmp_path / "fig")])
    assert res.exit_code == 0, res.output
    pngs = sorted((tmp_path / "fig").glob("*.png"))
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    res = runner.invoke(app, ["report", URL, "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    assert URL in (tmp_path / "report" / "index.html").read_text()


def test_a_second_launch_while_the_lease_is_held_is_refused(launched, tmp_path, monkeypatch):
    from mbstudy.pipeline.store.lease import LeaseLock

    study, _, _ = launched
    monkeypatch.chdir(tmp_path)
    lock = LeaseLock(store_location(URL), lease_s=60).acquire()
    try:
        res = launch(study, URL)
    finally:
        lock.release()
    assert res.exit_code == 2, res.output
    assert "locked by another launch" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_zarr_reads_the_bucket_store_with_plain_zarr(launched):
    _, endpoint, undisturbed = launched
    g = zarr.open_group(URL, mode="r", storage_options={"endpoint_url": endpoint})
    np.testing.assert_array_equal(np.asarray(g["baumgarte"]["rms_phi"][:]),
                                  undisturbed["baumgarte/rms_phi"])
