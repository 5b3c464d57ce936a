"""Files a study refers to: the study hash covers a netlist's content, not its
path; the store keeps the texts and a resume on a changed file is refused naming it; only
regular files of bounded size are read (a FIFO is refused at once instead of hanging)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore, changed_files
from mbstudy.pipeline.study.parse import load_study
from mbstudy.pipeline.study.references import (
    MAX_FILE_BYTES,
    FileRefused,
    read_regular_file,
    referenced_files,
)
from typer.testing import CliRunner

from tests.conftest import STUDIES


def copy_study(dest):
    dest.mkdir(parents=True)
    shutil.copy(STUDIES / "spring_damper.toml", dest / "study.toml")
    shutil.copytree(STUDIES / "networks", dest / "networks")
    return dest / "study.toml"


def test_moving_an_unchanged_study_folder_keeps_the_hash_and_an_edit_changes_it(tmp_path):
    a = load_study(copy_study(tmp_path / "a"))
    moved = copy_study(tmp_path / "elsewhere" / "b")
    b = load_study(moved)
    assert dict(a.model_params)["netlist"] != dict(b.model_params)["netlist"]  # two paths
    assert a.spec_hash == b.spec_hash
    net = moved.parent / "networks" / "spring_damper.net"
    net.write_text(net.read_text().replace("(2; 0.1)", "(2; 0.2)"))
    assert load_study(moved).spec_hash != a.spec_hash
    assert referenced_files(load_study(moved))["model.netlist"] == net.read_text()


def test_the_store_keeps_the_texts_and_a_changed_file_is_named(tmp_path):
    path = copy_study(tmp_path / "s")
    spec = load_study(path)
    rs = ResultStore.create(tmp_path / "s.zarr", spec, expand_grid(spec))
    net = path.parent / "networks" / "spring_damper.net"
    stored = rs.root_attrs()["referenced_files"]
    assert stored["model.netlist"]["text"] == net.read_text()
    assert changed_files(stored, spec) == []
    net.write_text(net.read_text() + "\n! edited\n")
    changed = changed_files(stored, load_study(path))
    assert len(changed) == 1 and "model.netlist" in changed[0] and "spring_damper.net" in changed[0]


def test_a_resume_after_the_netlist_changed_is_refused_naming_it(tmp_path, monkeypatch):
    path = copy_study(tmp_path / "s")
    spec = load_study(path)
    store = tmp_path / "s.zarr"
    ResultStore.create(store, spec, expand_grid(spec))
    net = path.parent / "networks" / "spring_damper.net"
    net.write_text(net.read_text().replace("(2; 0.1)", "(2; 0.2)"))
    monkeypatch.setenv("MBSTUDY_FORKSERVER", "0")
    res = CliRunner().invoke(app, ["launch", str(path), "--store", str(store),
                                   "--scheduler", "tls://127.0.0.1:9"])  # never reached
    assert res.exit_code == 2, res.output
    line = res.output.strip().splitlines()[-1]
    assert "model.netlist" in line and "changed since the store was made" in line


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge", "binary", "missing"])
def test_only_regular_text_files_of_bounded_size_are_read(tmp_path, kind):
    p = tmp_path / "x.net"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "directory":
        p.mkdir()
    elif kind == "huge":
        with open(p, "wb") as fh:
            fh.truncate(MAX_FILE_BYTES + 1)
    elif kind == "binary":
        p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(FileRefused):
        read_regular_file(p)


def test_a_fifo_as_netlist_is_refused_by_plan_without_hanging(tmp_path):
    path = copy_study(tmp_path / "s")
    net = path.parent / "networks" / "spring_damper.net"
    net.unlink()
    os.mkfifo(net)
    out = subprocess.run([sys.executable, "-m", "mbstudy.pipeline.cli.app", "plan", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1 and "model.netlist" in lines[0] and "regular file" in lines[0]


def test_one_record_serves_netlists_and_mechanism_files(tmp_path):
    """The store's record of a netlist (referenced_files) and of a mechanism file given as
    the model (model_file_text / model_file_sha256) come from the same file_record: the
    same text gives the same digest, and a FIFO named as the model is refused at once."""
    import hashlib

    from mbstudy.pipeline.store.referenced import referenced_files_attr
    from mbstudy.pipeline.study.references import model_file_record

    study = load_study(copy_study(tmp_path / "s"))
    net = referenced_files_attr(study)["model.netlist"]
    mech = tmp_path / "same.toml"
    mech.write_text(net["text"])
    rec = model_file_record(str(mech))
    assert rec == {"model_file_text": net["text"], "model_file_sha256": net["sha256"]}
    assert rec["model_file_sha256"] == hashlib.sha256(mech.read_bytes()).hexdigest()
    assert model_file_record("fourbar") == {}  # a registry name records nothing
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert model_file_record(str(fifo)) == {"model_file_text": None, "model_file_sha256": None}
