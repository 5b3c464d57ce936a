"""The store template written in one batch (pipeline/store/template.py) against zarr's own
API: the same builders run once into a zarr Group (zarr's ``create_array``, attribute
updates, chunk writes, then ``zarr.consolidate_metadata``) and once into the batch writer;
every file must be byte for byte the same, on a folder and on a real S3-compatible server.
Then: the consolidated metadata is what ``zarr.consolidate_metadata`` writes, the store
opens in zarr and xarray, its checksums verify, the marker comes last."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store import zarr_store
from mbstudy.pipeline.store.cf import consolidate
from mbstudy.pipeline.store.location import location
from mbstudy.pipeline.store.template import Template
from mbstudy.pipeline.store.verify import verify_store
from mbstudy.pipeline.store.zarr_store import (
    STORE_FORMAT,
    ResultStore,
    template_attrs,
)
from mbstudy.pipeline.study.parse import load_study, parse_study

from tests.conftest import REPO, fourbar_labelled_study

# the label arrays (lam, q), a swept model parameter (series widths), vector series
LABELLED = fourbar_labelled_study("template", '"phi_norm", "energy", "lam", "q", "v"')


def _fixed_attrs(monkeypatch, spec, grid) -> dict:
    """The root attributes, frozen (their ``created`` time would differ between runs)."""
    attrs = template_attrs(spec, grid)
    monkeypatch.setattr(zarr_store, "template_attrs", lambda s, g: dict(attrs))
    return attrs


def _with_zarr_api(where, spec, grid, attrs: dict) -> None:
    """The template as zarr's own API writes it: the same builders into a zarr Group."""
    root = location(where).open_group("w", zarr_format=3, attributes=attrs)
    ResultStore(where).build_template(root, spec, grid)
    root.attrs.update({"format": STORE_FORMAT, "spec_hash": spec.spec_hash})
    consolidate(where)


def _files(path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def _spec(which: str):
    if which == "labelled":
        spec = parse_study(LABELLED)
    else:
        spec = load_study(REPO / "studies" / which)
    return spec, expand_grid(spec)


@pytest.mark.parametrize("which", ["andrews.toml", "fourbar_baumgarte.toml", "labelled"])
def test_the_batch_template_is_byte_for_byte_what_zarr_writes(tmp_path, monkeypatch, which):
    spec, grid = _spec(which)
    attrs = _fixed_attrs(monkeypatch, spec, grid)
    ResultStore.create(tmp_path / "batch.zarr", spec, grid)
    _with_zarr_api(tmp_path / "zarr.zarr", spec, grid, attrs)
    ours, theirs = _files(tmp_path / "batch.zarr"), _files(tmp_path / "zarr.zarr")
    assert sorted(ours) == sorted(theirs)
    assert [k for k in ours if ours[k] != theirs[k]] == []
    root = json.loads(ours["zarr.json"])
    assert root["attributes"]["format"] == STORE_FORMAT
    assert len(root["consolidated_metadata"]["metadata"]) == sum(
        1 for k in ours if k.endswith("zarr.json") and k != "zarr.json")


def test_chunks_flushed_early_are_the_same_bytes(tmp_path, monkeypatch):
    """A write buffer of one byte writes every chunk when it is recorded (the memory bound
    of a block with 10^9 cases): the same store."""
    spec, grid = _spec("labelled")
    attrs = _fixed_attrs(monkeypatch, spec, grid)
    ResultStore.create(tmp_path / "a.zarr", spec, grid)
    flushes = []
    real = Template._chunk_jobs

    def counted(self):
        flushes.append(len(self._pending))
        return real(self)

    monkeypatch.setattr(Template, "__init__", _tiny_buffer(Template.__init__))
    monkeypatch.setattr(Template, "_chunk_jobs", counted)
    ResultStore.create(tmp_path / "b.zarr", spec, grid)
    assert len(flushes) > 5 and max(flushes) == 1  # one write per flush, then an empty one
    assert _files(tmp_path / "a.zarr") == _files(tmp_path / "b.zarr")
    assert json.loads((tmp_path / "b.zarr" / "zarr.json").read_bytes())["attributes"] == {
        **attrs, "format": STORE_FORMAT, "spec_hash": spec.spec_hash}


def _tiny_buffer(init):
    def wrapped(self, store, root_attrs=None, buffer_bytes=0):
        init(self, store, root_attrs=root_attrs, buffer_bytes=1)
    return wrapped


def test_consolidated_metadata_is_zarrs_and_the_store_opens_everywhere(tmp_path):
    spec, grid = _spec("labelled")
    path = tmp_path / "s.zarr"
    rs = ResultStore.create(path, spec, grid)
    written = (path / "zarr.json").read_bytes()
    consolidate(path)  # zarr.consolidate_metadata reading every document back
    assert (path / "zarr.json").read_bytes() == written
    assert verify_store(rs).ok  # every template chunk passes its CRC-32C
    g = zarr.open_group(str(path), mode="r", use_consolidated=True)
    assert g.metadata.consolidated_metadata is not None
    np.testing.assert_array_equal(g["baumgarte/case_id"][:], grid.blocks[0].case_ids())
    # the four-bar's documented coordinate names (checked against docs by test_builtin_labels)
    from mbstudy.solvers.models import fourbar

    assert g["baumgarte/q"].shape[-1] == len(fourbar.SPEC.coordinate_labels)
    assert list(g["baumgarte/coord"][:]) == list(fourbar.SPEC.coordinate_labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "consolidated metadata missing" warning
        ds = xr.open_zarr(path, group="baumgarte")
    np.testing.assert_allclose(ds["t"].values, np.linspace(0.0, 1.0, 11), rtol=0, atol=1e-15)
    assert ds["status"].attrs["flag_meanings"].split()[0] == "pending"
    assert int(ds["status"].values.min()) == -1  # the fill value: nothing ran


def test_a_failed_write_leaves_the_setup_marker_and_nothing_running(tmp_path, monkeypatch):
    """An error in the batch (a full disk, a refused object) raises once every write of
    the batch has finished, and the root still says the setup did not finish."""
    spec, grid = _spec("fourbar_baumgarte.toml")
    path = tmp_path / "s.zarr"
    store_cls = type(location(path).zarr_store_object())
    real_set = store_cls.set
    started, finished = [], []

    async def failing(self, key, value, *args, **kwargs):
        started.append(key)
        if key == "baumgarte/status/zarr.json":
            raise OSError(28, "No space left on device")
        await real_set(self, key, value, *args, **kwargs)
        finished.append(key)

    monkeypatch.setattr(store_cls, "set", failing)
    with pytest.raises(OSError, match="No space"):
        ResultStore.create(path, spec, grid)
    assert started.count("zarr.json") == 1  # the root's setup document only: no marker
    assert len(finished) == len(started) - 1  # every other write had finished
    monkeypatch.setattr(store_cls, "set", real_set)
    assert ResultStore.setup_incomplete(path)


def test_the_template_on_an_object_store_is_zarrs_too(monkeypatch):
    """The same comparison on moto's S3 server (zarr's FsspecStore)."""
    from mbstudy.pipeline.store.urls import store_location

    from tests.s3_testkit import s3_server, s3fs_for

    spec, grid = _spec("labelled")
    attrs = _fixed_attrs(monkeypatch, spec, grid)
    with s3_server("template") as endpoint:
        ResultStore.create("s3://template/batch.zarr", spec, grid)
        _with_zarr_api(store_location("s3://template/zarr.zarr"), spec, grid, attrs)
        fs = s3fs_for(endpoint)
        ours = {k[len("template/batch.zarr/"):]: fs.cat(k)
                for k in fs.find("template/batch.zarr")}  # fmt: skip
        theirs = {k[len("template/zarr.zarr/"):]: fs.cat(k)
                  for k in fs.find("template/zarr.zarr")}  # fmt: skip
        assert sorted(ours) == sorted(theirs) and len(ours) > 50
        assert [k for k in ours if ours[k] != theirs[k]] == []
        rs = ResultStore.open("s3://template/batch.zarr")
        assert rs.root_attrs()["spec_hash"] == spec.spec_hash
        assert verify_store(rs).ok


def _reference_written(rs) -> None:
    from mbstudy.solvers.metrics import Reference

    g = rs.group("reference/r0")
    k, n = g["q"].shape
    rs.write_reference(0, Reference(t=np.linspace(0, 1, k), q=np.ones((k, n)),
                                    v=np.zeros((k, n)), status=0, error_estimate=1e-9))


def test_the_launchs_last_root_write_is_zarrs_consolidation(tmp_path, monkeypatch):
    """mark_complete refreshes only the references' documents (what a launch changes)
    and the root's attributes: the root is byte for byte what zarr's consolidation of
    the whole store then writes; zarr's consolidation is not run."""
    from mbstudy.pipeline.store import cf

    spec, grid = _spec("fourbar_baumgarte.toml")
    path = tmp_path / "s.zarr"
    rs = ResultStore.create(path, spec, grid)
    _reference_written(rs)

    def refused(*args, **kwargs):
        raise AssertionError("full consolidation on a launch that repaired nothing")

    monkeypatch.setattr(cf, "consolidate", refused)
    rs.mark_complete(True, {"cases_run": 39, "kernels": {"a/b/c": {"s": 0.5}}})
    ours = (path / "zarr.json").read_bytes()
    monkeypatch.undo()
    consolidate(path)
    assert (path / "zarr.json").read_bytes() == ours
    root = json.loads(ours)
    assert root["attributes"]["complete"] is True
    assert root["attributes"]["last_launch"]["cases_run"] == 39
    ref = root["consolidated_metadata"]["metadata"]["reference/r0"]
    assert ref["attributes"]["done"] is True and ref["attributes"]["status"] == 0


def test_a_root_without_consolidated_metadata_or_a_repair_is_consolidated_in_full(tmp_path):
    spec, grid = _spec("fourbar_baumgarte.toml")
    path = tmp_path / "s.zarr"
    rs = ResultStore.create(path, spec, grid)
    doc = json.loads((path / "zarr.json").read_bytes())
    del doc["consolidated_metadata"]  # a store written without it
    (path / "zarr.json").write_text(json.dumps(doc))
    rs.mark_complete(False)
    written = (path / "zarr.json").read_bytes()
    consolidate(path)
    assert (path / "zarr.json").read_bytes() == written
    assert "consolidated_metadata" in json.loads(written)
    rs.rebuild_reference(0, spec, grid)  # a repair: every document may have changed
    assert rs._rebuilt
    rs.mark_complete(True)
    written = (path / "zarr.json").read_bytes()
    consolidate(path)
    assert (path / "zarr.json").read_bytes() == written
