"""`pipeline.jobs` and the jobs part of `mbstudy status` against a stand-in ``squeue`` on
PATH (no SLURM needed): the name filter, the parsing, the counts by state, and no jobs
section where ``squeue`` is missing or fails."""

from __future__ import annotations

import json
import os

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.cluster.jobs import count_states, job_name, list_slurm_jobs
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study
from typer.testing import CliRunner

from tests.conftest import STUDIES

FAKE_SQUEUE = """#!/usr/bin/env bash
# stand-in squeue: record the arguments, print three jobs in the requested -o format
echo "$@" >> "$SQUEUE_LOG"
[ -n "${SQUEUE_FAIL:-}" ] && { echo "squeue: error: no controller" >&2; exit 1; }
echo "101|RUNNING|$NAME|0:12|5:00|mbtest|vm"
echo "102|RUNNING|$NAME|0:11|5:00|mbtest|vm"
echo "103|PENDING|$NAME|0:00|5:00|mbtest|(Resources)"
"""


@pytest.fixture
def fake_squeue(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "squeue"
    exe.write_text(FAKE_SQUEUE)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SQUEUE_LOG", str(tmp_path / "squeue.log"))
    return tmp_path / "squeue.log"


def test_job_name_depends_on_the_store_path_only(tmp_path):
    a = job_name(tmp_path / "a.zarr")
    assert a == job_name(str(tmp_path / "x" / ".." / "a.zarr"))
    assert a != job_name(tmp_path / "b.zarr")
    assert a.startswith("mbs-") and len(a) <= 15  # PBS limits job names to 15 characters


def test_list_and_count_jobs(fake_squeue, monkeypatch):
    monkeypatch.setenv("NAME", "mbs-0123456789")
    jobs = list_slurm_jobs("mbs-0123456789")
    assert "--name mbs-0123456789" in fake_squeue.read_text()
    assert [j.id for j in jobs] == ["101", "102", "103"]
    assert jobs[2].reason == "(Resources)" and jobs[0].time_limit == "5:00"
    assert count_states(jobs) == {"running": 2, "pending": 1}


def test_no_jobs_where_squeue_fails_or_is_missing(fake_squeue, monkeypatch, tmp_path):
    monkeypatch.setenv("SQUEUE_FAIL", "1")
    assert list_slurm_jobs("x") is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert list_slurm_jobs("x") is None


def test_status_shows_the_jobs_of_a_running_store(fake_squeue, monkeypatch, tmp_path):
    spec = load_study(STUDIES / "smoke.toml")
    store = tmp_path / "s.zarr"
    ResultStore.create(store, spec, expand_grid(spec))  # created, nothing run yet
    monkeypatch.setenv("NAME", job_name(store))
    runner = CliRunner()
    res = runner.invoke(app, ["status", str(store), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["jobs"]["name"] == job_name(store)
    assert out["jobs"]["states"] == {"running": 2, "pending": 1}
    assert out["blocks"]["baumgarte"] == {**out["blocks"]["baumgarte"], "done": 0, "pending": 4}
    res = runner.invoke(app, ["status", str(store)])
    assert f"slurm jobs {job_name(store)}: 1 pending, 2 running" in res.output, res.output
    assert "103 pending mbtest elapsed 0:00 of 5:00 ((Resources))" in res.output
    monkeypatch.setenv("SQUEUE_FAIL", "1")
    res = runner.invoke(app, ["status", str(store)])
    assert res.exit_code == 0 and "slurm jobs" not in res.output
