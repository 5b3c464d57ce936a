"""Bad input, table-driven: every row is a study (or command) that must exit with status 2,
print one line naming the key (or line), and leave no store created or changed."""

from __future__ import annotations

import shutil

import pytest
from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import STUDIES

SMOKE = (STUDIES / "smoke.toml").read_text()


def edit(old: str, new: str, count: int = 1) -> str:
    assert old in SMOKE, old
    return SMOKE.replace(old, new, count)


# (id, study text, text that the one-line message must contain)
CASES = [
    ("malformed-toml", SMOKE.replace("[[runs]]", "[[runs]", 1), "(toml)"),
    ("unknown-section", SMOKE + "\n[outputs]\nx = 1\n", "outputs"),
    ("unknown-study-key", edit('t_end = 1.0', 't_end = 1.0\nt_ned = 2.0'), "study.t_ned"),
    ("unknown-model", edit('model = "fourbar"', 'model = "fourbr"'), "fourbar"),
    ("unknown-formulation", edit('formulation = "baumgarte"\nintegrator',
                                 'formulation = "baumgarte2"\nintegrator'), "baumgarte"),
    ("unknown-integrator", edit('integrator = "rk4"', 'integrator = "rk5"'), "rk4"),
    ("unknown-reference-integrator", edit('integrator = "dopri5"', 'integrator = "dopri"'),
     "reference.integrator"),
    ("unknown-parameter", edit("omega_n =", "omega_m ="), "runs[1].omega_m"),
    ("parameter-of-other-method", edit("xi = 1.0", "xi = 1.0\nrtol = 1e-6"), "runs[1].rtol"),
    ("unknown-run-key", edit('name = "none"', 'name = "none"\nintegrater = "rk4"'),
     "runs[0].integrater"),
    ("wrong-type-t_end", edit("t_end = 1.0", 't_end = "one"'), "study.t_end"),
    ("wrong-type-axis-value", edit("omega_n = [5.0, 20.0]", 'omega_n = [5.0, "x"]'),
     "runs[1].omega_n"),
    ("negative-h", edit("h = [0.005, 0.0025]", "h = [0.005, -0.0025]"), "runs[0].h"),
    ("zero-h", edit("h = [0.005, 0.0025]", "h = 0.0"), "runs[0].h"),
    ("negative-t_end", edit("t_end = 1.0", "t_end = -1.0"), "study.t_end"),
    ("samples-too-few", edit("samples = 101", "samples = 1"), "study.samples"),
    ("empty-axis", edit("omega_n = [5.0, 20.0]", "omega_n = []"), "runs[1].omega_n"),
    ("zip-unequal", edit("xi = 1.0", 'xi = [1.0, 2.0, 3.0]\nzip = [["omega_n", "xi"]]'),
     "runs[1].zip"),
    ("zip-not-an-axis", edit("xi = 1.0", 'xi = 1.0\nzip = [["omega_n", "xi"]]'),
     "runs[1].zip"),
    ("incompatible-pair", edit('integrator = "rk4"\nh = [0.005, 0.0025]\nomega_n',
                               'integrator = "hermite"\nh = [0.005, 0.0025]\nomega_n'),
     "does not take formulation 'baumgarte'"),
    ("h-does-not-divide-output", edit("h = [0.005, 0.0025]", "h = [0.003]"), "runs[0].h"),
    ("too-many-cases", edit('name = "smoke"', 'name = "smoke"\nmax_cases = 3'), "max_cases"),
    ("bad-series", edit('series = ["phi_norm", "energy", "lam"]', 'series = ["phi_nrm"]'),
     "output.series"),
    ("duplicate-run-name", edit('name = "baumgarte"', 'name = "none"'), "runs[1].name"),
    ("unknown-model-parameter", edit("[reference]", "[model]\nL5 = 1.0\n\n[reference]"),
     "model.L5"),
    ("model-parameter-wrong-type", edit("[reference]", '[model]\nL3 = "long"\n\n[reference]'),
     "model.L3"),
    ("cannot-assemble", edit("[reference]", "[model]\nL3 = 0.01\n\n[reference]"), "model.L3"),
    ("negative-gain", edit("omega_n = [5.0, 20.0]", "omega_n = [-5.0, 20.0]"),
     "runs[1].omega_n"),
]


@pytest.mark.parametrize(("case", "text", "needle"), CASES, ids=[c[0] for c in CASES])
def test_bad_study_exits_2_naming_the_key_and_writes_nothing(tmp_path, case, text, needle):
    study = tmp_path / "study.toml"
    study.write_text(text)
    store = tmp_path / "out.zarr"
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert needle in lines[0], lines[0]
    assert not store.exists() and not (tmp_path / "out.zarr.lock").exists()


def test_cli_level_bad_input(tmp_path):
    runner = CliRunner()
    cases = [
        (["launch", str(tmp_path / "missing.toml")], "no such study file"),
        (["launch", str(STUDIES / "smoke.toml"), "--resume", "--store", str(tmp_path / "n.zarr")],
         "no store to resume"),
        (["launch", str(STUDIES / "smoke.toml"), "--cluster", "lsf"], "--cluster"),
        (["aggregate", str(tmp_path / "none.zarr")], "no mbstudy store"),
        (["run", "--model", "fourbar", "--formulation", "baumgrte"], "baumgarte"),
        (["run", "--model", "fourbar", "--set", "omega=5"], "omega"),
    ]
    for args, needle in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert needle in res.output, (args, res.output)
    assert not (tmp_path / "n.zarr").exists()


def test_a_directory_that_is_not_a_store_is_never_overwritten(tmp_path):
    target = tmp_path / "data"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    res = CliRunner().invoke(app, ["launch", str(STUDIES / "smoke.toml"), "--store", str(target)])
    assert res.exit_code == 2 and "not an mbstudy store" in res.output
    assert (target / "precious.txt").read_text() == "keep me"
    shutil.rmtree(target)
