"""The command line through Typer's CliRunner, and once as a real subprocess."""

from __future__ import annotations

import json
import subprocess

from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import STUDIES, mbstudy_command

runner = CliRunner()


def test_help_is_instant_and_lists_commands():
    out = subprocess.run([*mbstudy_command(), "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    for cmd in ("launch", "plan", "status", "aggregate", "run", "list"):
        assert cmd in out.stdout


def test_list_shows_every_registry_entry_with_parameters():
    res = runner.invoke(app, ["list", "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert "fourbar" in info["models"]
    assert {"none", "baumgarte", "projection"} <= set(info["formulations"])
    assert {"rk4", "dopri5"} <= set(info["integrators"])
    names = [p["name"] for p in info["formulations"]["baumgarte"]["params"]]
    assert names == ["omega_n", "xi"]
    res = runner.invoke(app, ["list"])
    assert "omega_n" in res.output and "step size" in res.output


def test_plan_prints_blocks_axes_counts_and_json():
    res = runner.invoke(app, ["plan", str(STUDIES / "smoke.toml")])
    assert res.exit_code == 0, res.output
    assert "block baumgarte" in res.output and "6 cases" in res.output
    res = runner.invoke(app, ["plan", str(STUDIES / "smoke.toml"), "--json"])
    plan = json.loads(res.output)
    assert plan["n_cases"] == 6 and plan["rejected"] == []


def test_plan_of_a_broken_study_exits_2_naming_the_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((STUDIES / "smoke.toml").read_text().replace("omega_n =", "omega_m ="))
    res = runner.invoke(app, ["plan", str(bad)])
    assert res.exit_code == 2
    assert "runs[1].omega_m" in res.output and "omega_n" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_launch_of_a_broken_study_writes_nothing(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((STUDIES / "smoke.toml").read_text().replace('model = "fourbar"',
                                                                 'model = "fourbr"'))
    store = tmp_path / "s.zarr"
    res = runner.invoke(app, ["launch", str(bad), "--store", str(store)])
    assert res.exit_code == 2
    assert "fourbar" in res.output  # the suggestion
    assert not store.exists() and not (tmp_path / "s.zarr.lock").exists()


def test_impossible_assembly_is_bad_input(tmp_path):
    bad = tmp_path / "bad.toml"
    text = (STUDIES / "smoke.toml").read_text().replace("[reference]", "[model]\nL3 = 0.01\n\n"
                                                         "[reference]")
    bad.write_text(text)
    res = runner.invoke(app, ["plan", str(bad)])
    assert res.exit_code == 2
    assert "model.L3" in res.output and "cannot be assembled" in res.output


def test_run_rejects_unknown_names_and_bad_settings():
    res = runner.invoke(app, ["run", "--model", "fourbr", "--json"])
    assert res.exit_code == 2 and "fourbar" in res.output
    res = runner.invoke(app, ["run", "--model", "fourbar", "--set", "h=-1", "--json"])
    assert res.exit_code == 2 and "h" in res.output
    res = runner.invoke(app, ["status", "/nonexistent/store.zarr"])
    assert res.exit_code == 2


def test_run_qr_crosses_the_singular_position_at_rtol_1e_10():
    """The command, verbatim: qr through the parallelogram's singular position at
    rtol 1e-10 with dopri5 (before the E3 window: step_floor after ~350,000 steps)."""
    res = runner.invoke(app, ["run", "--model", "parallelogram", "--formulation", "qr",
                              "--integrator", "dopri5", "--t-end", "2", "--set", "rtol=1e-10",
                              "--set", "atol=1e-12", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["status"] == "ok"
    assert out["metrics"]["steps"] < 1000 and out["metrics"]["max_phi"] < 1e-13


def test_version_prints_the_package_version():
    from importlib.metadata import version

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"mbstudy {version('mbstudy')}"


def test_examples_lists_and_copies_the_shipped_studies(tmp_path):
    res = runner.invoke(app, ["examples"])
    assert res.exit_code == 0, res.output
    names = [line.split()[0] for line in res.output.splitlines()]
    assert "smoke.toml" in names and "spring_damper.toml" in names
    assert names == sorted(p.name for p in STUDIES.glob("*.toml"))
    target = tmp_path / "mine"
    res = runner.invoke(app, ["examples", "--copy", str(target)])
    assert res.exit_code == 0, res.output
    assert (target / "smoke.toml").read_text() == (STUDIES / "smoke.toml").read_text()
    assert (target / "networks" / "spring_damper.net").is_file()
    # a copied study that refers to a netlist still loads from its new folder
    res = runner.invoke(app, ["plan", str(target / "spring_damper.toml"), "--json"])
    assert res.exit_code == 0, res.output
    # refuses to overwrite: one line, exit 2, nothing changed
    (target / "smoke.toml").write_text("# mine\n")
    res = runner.invoke(app, ["examples", "--copy", str(target)])
    assert res.exit_code == 2
    assert "exists" in res.output and len(res.output.strip().splitlines()) == 1
    assert (target / "smoke.toml").read_text() == "# mine\n"
