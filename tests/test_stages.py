"""The public stages ``mbstudy.plan``, ``mbstudy.warm`` and ``mbstudy.report``
(pipeline/stages.py): each returns a frozen dataclass, and the command of the same name
prints what the stage returned (the command line builds no chain of its own).

References are independent of the code under test: case counts come from the study file
itself (the product of each block's swept lists, read with tomllib), kernel names from its
methods; CLI and API are compared on two runs made inside the test."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import math
import re
import tomllib

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.run.launch import LaunchError
from typer.testing import CliRunner

import mbstudy
from tests.conftest import REPO, STUDIES

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


# ---------------------------------------------------------------- the CLI calls the stages
CLI = REPO / "pipeline" / "cli"
#: command -> (module, the stage it must call as (module, name))
COMMANDS = {
    "plan": ("planning.py", ("mbstudy.pipeline.stages", "plan")),
    "warm": ("caching.py", ("mbstudy.pipeline.stages", "warm")),
    "launch": ("running.py", ("mbstudy.pipeline.run.launch", "launch")),
    "report": ("figures.py", ("mbstudy.pipeline.stages", "report")),
}
#: imports of mbstudy a command may make besides its stage: the command line's own helpers
#: and the display of what a stage returned (no step of the chain)
DISPLAY = {("mbstudy.pipeline.cli.common", n) for n in ("SET_OPTION", "BadInput", "guard",
                                                        "load")}  # fmt: skip
DISPLAY |= {("mbstudy.pipeline.run.progress", "kernel_line")}


def _mbstudy_imports(tree: ast.AST) -> set[tuple[str, str]]:
    return {(node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mbstudy")
            for alias in node.names}  # fmt: skip


def _calls(tree: ast.AST) -> set[str]:
    return {node.func.id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_calls_its_public_stage_and_nothing_else_of_the_chain(command):
    """Read from the source (AST): the command's function imports its stage, calls it,
    and imports nothing else of mbstudy but the command line's helpers and a formatter;
    the module itself imports only the command line's helpers at its top."""
    filename, stage = COMMANDS[command]
    module = ast.parse((CLI / filename).read_text(encoding="utf-8"))
    top = {(n.module, a.name) for n in module.body if isinstance(n, ast.ImportFrom)
           and (n.module or "").startswith("mbstudy") for a in n.names}  # fmt: skip
    assert top <= DISPLAY, top - DISPLAY
    func = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == command)
    imports = _mbstudy_imports(func)
    assert stage in imports, (command, imports)
    assert imports - {stage} <= DISPLAY, imports - {stage} - DISPLAY
    local = next(a.asname or a.name for n in ast.walk(func) if isinstance(n, ast.ImportFrom)
                 and n.module == stage[0] for a in n.names if a.name == stage[1])  # fmt: skip
    assert local in _calls(func)
    # and the stage so imported is the public function of mbstudy
    assert getattr(mbstudy, command) is getattr(importlib.import_module(stage[0]), stage[1])


def test_warm_takes_overrides_like_launch():
    """``--set`` reaches the warm stage: an override that makes the block ``none`` a second
    Baumgarte block leaves two kernels (reference + Baumgarte), counted before any compile;
    a bad one is one line naming the key, exit 2."""
    seen = []

    class Stop(Exception):
        pass

    def stop(n, where):
        seen.append(n)
        raise Stop

    with pytest.raises(Stop):
        mbstudy.warm(SMOKE, workers=1, overrides=["runs.none.formulation=baumgarte"],
                     on_start=stop)  # fmt: skip
    study = _file()
    blocks = {(r["formulation"], r["integrator"]) for r in study["runs"]}
    ref = (study["reference"]["formulation"], study["reference"]["integrator"])
    assert len(blocks | {ref}) == 3 and seen == [2]
    res = runner.invoke(app, ["warm", str(SMOKE), "--set", "runs.nne.h=1"])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "runs.nne.h=1" in lines[0] and "Traceback" not in res.output
