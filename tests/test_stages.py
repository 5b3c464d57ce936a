"""The public stages ``mbstudy.plan``, ``mbstudy.warm`` and ``mbstudy.report``
(pipeline/stages.py): each returns a frozen dataclass, and the command of the same name
prints what the stage returned (the command line builds no chain of its own).

References are independent of the code under test: case counts come from the study file
itself (the product of each block's swept lists, read with tomllib), kernel names from its
methods; CLI and API are compared on two runs made inside the test."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.run.launch import LaunchError
from typer.testing import CliRunner

import mbstudy
from tests.conftest import STUDIES

SMOKE = STUDIES / "smoke.toml"
runner = CliRunner()


def _file() -> dict:
    return tomllib.loads(SMOKE.read_text())


def _cases_by_block(study: dict) -> dict[str, int]:
    """Cases of each block: the product of the lengths of its list-valued keys (smoke.toml
    has no zip groups and no ranges)."""
    return {r["name"]: math.prod(len(v) for v in r.values() if isinstance(v, list))
            for r in study["runs"]}  # fmt: skip


def test_the_stages_are_public_functions_of_mbstudy():
    from mbstudy.pipeline import stages
    from mbstudy.pipeline.run.launch import launch

    assert mbstudy.plan is stages.plan and mbstudy.warm is stages.warm
    assert mbstudy.report is stages.report and mbstudy.launch is launch
    assert {"plan", "warm", "launch", "report"} <= set(mbstudy.__all__)
    for cls in (mbstudy.PlanSummary, mbstudy.WarmSummary, mbstudy.ReportSummary,
                mbstudy.LaunchSummary):  # fmt: skip
        assert dataclasses.is_dataclass(cls), cls


def test_plan_counts_the_cases_the_study_file_sweeps_and_the_cli_prints_it():
    summary = mbstudy.plan(SMOKE)
    assert isinstance(summary, mbstudy.PlanSummary)
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.n_cases = 0  # type: ignore[misc]
    study = _file()
    per_block = _cases_by_block(study)
    assert summary.n_cases == sum(per_block.values()) == 6
    assert {b["name"]: b["n_cases"] for b in summary.as_dict()["blocks"]} == per_block
    assert summary.study == study["study"]["name"] and summary.model == study["study"]["model"]
    assert summary.job_script is None and summary.overrides == ()
    res = runner.invoke(app, ["plan", str(SMOKE), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == json.loads(json.dumps(summary.as_dict(), default=str))


def test_plan_applies_overrides_as_the_file_would():
    summary = mbstudy.plan(SMOKE, overrides=["runs.none.h=0.01,0.005,0.0025"])
    assert summary.overrides == ("runs.none.h=0.01,0.005,0.0025",)
    assert summary.n_cases == 3 + _cases_by_block(_file())["baumgarte"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"cluster": "lsf"}, "--cluster: expected slurm or pbs, got 'lsf'"),
     ({"study": STUDIES / "no_such.toml"}, "no_such.toml: no such study file")],
)  # fmt: skip
def test_plan_bad_input_raises_and_the_cli_prints_one_line(kwargs, message):
    kwargs = dict(kwargs)
    study = kwargs.pop("study", SMOKE)
    with pytest.raises(LaunchError, match=re.escape(message)):
        mbstudy.plan(study, **kwargs)
    args = ["plan", str(study)] + [f"--{k}={v}" for k, v in kwargs.items()]
    res = runner.invoke(app, args)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in res.output


def test_warm_returns_every_kernel_of_the_study_and_the_cli_prints_the_same():
    study = _file()
    ref = study["reference"]
    want = {f"{study['study']['model']}/{r['formulation']}/{r['integrator']}"
            for r in study["runs"]} | {
        f"{study['study']['model']}/{ref['formulation']}/{ref['integrator']}"}  # fmt: skip
    started = []
    summary = mbstudy.warm(SMOKE, workers=1, on_start=lambda n, d: started.append((n, d)))
    assert isinstance(summary, mbstudy.WarmSummary)
    assert set(summary.kernels) == want
    assert started == [(len(want), summary.kernel_dir)]
    assert summary.wall_s >= 0 and 0 <= summary.n_compiled <= len(want)
    # now every kernel is in the caches: the command finds them all there
    res = runner.invoke(app, ["warm", str(SMOKE), "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert f"loaded {len(want)} from cache" in res.output
    for k in want:
        assert f"{k}: from cache" in res.output


def test_report_writes_the_page_it_returns_and_the_cli_prints_its_path(tmp_path):
    store = tmp_path / "smoke.zarr"
    launched = mbstudy.launch(SMOKE, store=store, workers=1, quiet=True, echo=lambda s: None)
    assert launched.exit_code == 0
    summary = mbstudy.report(store, out=tmp_path / "api")
    assert isinstance(summary, mbstudy.ReportSummary)
    assert summary.path == tmp_path / "api" / "index.html" and summary.path.is_file()
    assert summary.stores == (str(store),)
    assert "<html" in summary.path.read_text(encoding="utf-8")
    res = runner.invoke(app, ["report", str(store), "--out", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1] == str(tmp_path / "cli" / "index.html")
