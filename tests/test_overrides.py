"""``--set KEY=VALUE`` overrides of a study file (pipeline/study/overrides.py): read like a
TOML value (commas make an axis), applied before validation so a study with overrides is
the study of the edited file (same hash, same errors, the override named), recorded in the
store, and a store made with other overrides is refused on resume with the reason;
``mbstudy run`` with an axis runs every case of its little grid."""

from __future__ import annotations

import json
import re

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.study.overrides import parse_value
from mbstudy.pipeline.study.parse import load_study, parse_study
from mbstudy.pipeline.study.spec import StudyError
from typer.testing import CliRunner

from tests.conftest import STUDIES

SMOKE = STUDIES / "smoke.toml"


def test_values_read_as_toml_and_commas_make_a_list():
    assert parse_value("0.005,0.0025") == [0.005, 0.0025]
    assert parse_value("2") == 2 and parse_value("1e-10") == 1e-10
    assert parse_value("rk4") == "rk4" and parse_value("phi_norm, energy") == ["phi_norm",
                                                                              "energy"]
    assert parse_value("[1, 2]") == [1, 2] and parse_value('"a,b"') == "a,b"
    assert parse_value("{ halving = 0.02, num = 3 }") == {"halving": 0.02, "num": 3}
    assert parse_value("true") is True


def _edited(text: str, block: str, old: str, new: str) -> str:
    """``text`` with the line ``old`` of the [[runs]] block named ``block`` replaced."""
    head, sep, rest = text.partition(f'name = "{block}"')
    assert sep and old in rest
    return head + sep + rest.replace(old, new, 1)


def test_an_override_is_the_edited_file():
    """The independent reference: the file edited by hand to say the same, parsed as a
    file. Its spec and hash equal the overridden study's; an override repeating the file's
    value changes nothing."""
    text = SMOKE.read_text()
    edited = _edited(text, "baumgarte", "h = [0.005, 0.0025]", "h = [0.005, 0.0025, 0.00125]")
    edited = edited.replace("t_end = 1.0", "t_end = 2", 1)
    by_hand = parse_study(edited, source=str(SMOKE), base_dir=SMOKE.parent)
    over = load_study(SMOKE, overrides=["runs.baumgarte.h=0.005,0.0025,0.00125",
                                        "study.t_end=2"])  # fmt: skip
    assert over.spec_hash == by_hand.spec_hash != load_study(SMOKE).spec_hash
    assert over.runs == by_hand.runs and over.t_end == 2.0
    assert over.overrides == ("runs.baumgarte.h=0.005,0.0025,0.00125", "study.t_end=2")
    # by position and by name are the same key; the file's own value is no change
    assert load_study(SMOKE, overrides=["runs[1].h=0.005,0.0025,0.00125", "study.t_end=2"]
                      ).spec_hash == by_hand.spec_hash  # fmt: skip
    assert load_study(SMOKE, overrides=["runs.none.h=0.005,0.0025"]).spec_hash == (
        load_study(SMOKE).spec_hash)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("runs.baumgarte.xi=-1", "runs[1].xi: expected a number >= 0"),
        ("runs.baumgarte.omega_m=1", "runs[1].omega_m: unknown parameter 'omega_m'; did you"
                                     " mean 'omega_n'?"),
        ("runs.baumgart.h=0.01", "--set runs.baumgart.h=0.01: no [[runs]] block named"
                                 " 'baumgart'; did you mean 'baumgarte'?"),
        ("study.t_end=abc", "study.t_end: expected a number > 0, found \"abc\""),
        ("stdy.t_end=1", "stdy: unknown section 'stdy'; did you mean 'study'?"),
        ("runs[7].h=0.01", "--set runs[7].h=0.01: no block runs[7] (the study has 2)"),
        ("t_end", "--set t_end: expected KEY=VALUE"),
    ],
)
def test_a_bad_override_is_one_line_naming_it(override, message, tmp_path):
    """The file's own one-line errors, the override named; exit 2 and nothing written
    (``plan`` and ``launch``: the store's folder is never made)."""
    with pytest.raises(StudyError) as err:
        load_study(SMOKE, overrides=[override])
    text = str(err.value)
    assert text.startswith(f"{SMOKE}: {message}") and "\n" not in text
    assert f"--set {override}" in text
    res = CliRunner().invoke(app, ["plan", str(SMOKE), "--set", override])
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        f"mbstudy: error: {text}"]


def test_a_bad_override_of_launch_writes_nothing(tmp_path):
    store = tmp_path / "s.zarr"
    res = CliRunner().invoke(app, ["launch", str(SMOKE), "--store", str(store), "--set",
                                   "runs.baumgarte.h=-0.01"])  # fmt: skip
    assert res.exit_code == 2 and not store.exists()
    assert res.output.strip().splitlines() == [
        f"mbstudy: error: {SMOKE}: runs[1].h: expected a number > 0 for h (step size (s)),"
        " found -0.01 (set by --set runs.baumgarte.h=-0.01)"]


SMALL = ["--set", "study.t_end=0.1", "--set", "study.samples=11", "--set",
         "runs.none.h=0.01"]  # fmt: skip


def test_launch_records_the_overrides_and_refuses_other_ones_on_resume(tmp_path):
    """A real LocalCluster launch with overrides: the store holds the overridden grid and
    the overrides as typed; resuming it without them, or with others, is refused with the
    reason (exit 2, the store unchanged); with the same ones it resumes."""
    import xarray as xr
    from mbstudy.pipeline.store.zarr_store import ResultStore

    store = tmp_path / "s.zarr"
    sweep = ["--set", "runs.baumgarte.h=0.01,0.005"]
    base = ["launch", str(SMOKE), "--store", str(store), "--workers", "1", "--quiet"]
    res = CliRunner().invoke(app, [*base, *SMALL, *sweep])
    assert res.exit_code == 0, res.output
    attrs = ResultStore.open(store).root_attrs()
    assert attrs["study_overrides"] == [*SMALL[1::2], sweep[1]]
    assert attrs["study_text"] == SMOKE.read_text()  # the file as it is, beside the overrides
    ds = xr.open_zarr(store, group="baumgarte")
    assert sorted(set(ds["h"].values.tolist())) == [0.005, 0.01]
    assert bool(ds["done"].all()) and ds.sizes["case"] == 4
    hash_before = attrs["spec_hash"]

    for other in (SMALL, [*SMALL, "--set", "runs.baumgarte.h=0.01"]):
        res = CliRunner().invoke(app, [*base, "--resume", *other])
        assert res.exit_code == 2
        line = res.output.strip().splitlines()
        assert len(line) == 1 and "made from the same study file with other overrides" in line[0]
        assert "--set runs.baumgarte.h=0.01,0.005" in line[0]
        assert ResultStore.open(store).root_attrs()["spec_hash"] == hash_before
    res = CliRunner().invoke(app, [*base, "--resume", *SMALL, *sweep])
    assert res.exit_code == 0 and "resuming" in res.output


def test_run_with_an_axis_runs_each_case_as_a_single_run_would():
    """``mbstudy run --set omega_n=5,20,80``: one JSON object per case in grid order, each
    equal (bit for bit, timings aside) to a separate one-case run of its value; the table
    has a row per case."""
    args = ["run", "--model", "fourbar", "--formulation", "baumgarte", "--t-end", "0.2",
            "--samples", "11", "--set", "h=0.01", "--engine", "python"]  # fmt: skip
    res = CliRunner().invoke(app, [*args, "--set", "omega_n=5,20,80", "--json"])
    assert res.exit_code == 0, res.output
    grid = json.loads(res.stdout)
    assert [r["params"] for r in grid] == [{"omega_n": w} for w in (5.0, 20.0, 80.0)]
    for row in grid:
        one = CliRunner().invoke(app, [*args, "--set", f"omega_n={row['params']['omega_n']}",
                                       "--json"])  # fmt: skip
        single = json.loads(one.stdout)
        assert single["final"] == row["final"]
        for name, value in single["metrics"].items():
            if name not in ("wall_s", "compile_s"):
                assert row["metrics"][name] == value, name
    table = CliRunner().invoke(app, [*args, "--set", "omega_n=5,20,80"]).stdout.splitlines()
    assert re.split(r"\s+", table[0].strip())[:3] == ["omega_n", "status", "rms_phi"]
    assert [re.split(r"\s+", line.strip())[:2] for line in table[1:]] == [
        ["5", "ok"], ["20", "ok"], ["80", "ok"]]


def test_run_sweeps_a_model_parameter_with_one_reference_each():
    """``--set model.m2=1,2``: a model axis of the run's block, two cases; m2 = 2 is the
    one-case run of ``--set model.m2=2`` (its own reference)."""
    args = ["run", "--model", "fourbar", "--t-end", "0.1", "--samples", "11", "--set",
            "h=0.01", "--engine", "python", "--json"]  # fmt: skip
    grid = json.loads(CliRunner().invoke(app, [*args, "--set", "model.m2=1,2"]).stdout)
    one = json.loads(CliRunner().invoke(app, [*args, "--set", "model.m2=2"]).stdout)
    assert [r["params"] for r in grid] == [{"model.m2": 1.0}, {"model.m2": 2.0}]
    assert grid[1]["metrics"]["e_r"] == one["metrics"]["e_r"]
    assert grid[0]["metrics"]["e_r"] != one["metrics"]["e_r"]
