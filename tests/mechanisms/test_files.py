"""Mechanism files as input: the expression whitelist, one-line errors naming file and key
(exit status 2, nothing written), studies naming a file relative to themselves, the study
hash covering the file's content, check-model's findings, and plugin kernel keys."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mechanisms_testkit as kit
import numpy as np
import pytest
import sympy as sp
from mbstudy.solvers.mechanisms import MechanismError
from mbstudy.solvers.mechanisms.expressions import ExpressionError, to_sympy
from mbstudy.solvers.mechanisms.schema import read

from tests.conftest import mbstudy_command

FOURBAR = (kit.MECHANISMS / "fourbar.toml").read_text()


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "open('x')",
        "L1.__class__",
        "[1, 2]",
        "lambda: 1",
        "L1 if L1 else 2",
        "sin(x=1)",
        "t",  # time is not allowed where allow_t is False
        "unknown_name * 2",
        "'a string'",
    ],
)
def test_expressions_outside_the_whitelist_are_refused(text: str) -> None:
    with pytest.raises(ExpressionError):
        to_sympy(text, {"L1": sp.Symbol("L1")})


def test_whitelisted_expressions_translate() -> None:
    L = sp.Symbol("L")
    e = to_sympy("-L/2*cos(pi/3) + sqrt(4)**2 + atan2(0, 1) + exp(0) + t", {"L": L}, allow_t=True)
    assert sp.simplify(e - (-L / 4 + 5 + sp.Symbol("t", real=True))) == 0


def _write(tmp_path: Path, old: str, new: str) -> Path:
    assert old in FOURBAR
    path = tmp_path / "bad.toml"
    path.write_text(FOURBAR.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ('at = ["crank.B", "coupler.B"]', 'at = ["crank.B", "couplr.B"]', "joints[1].at[1]",
         "did you mean 'coupler'"),
        ('at = ["crank.B", "coupler.B"]', 'at = ["crank.B", "coupler.X"]', "joints[1].at[1]",
         "unknown point 'X'"),
        ('type = "revolute"', 'type = "revolut"', "joints[0].type", "did you mean 'revolute'"),
        ('mass = "m2"', 'mass = "__import__(1)"', "bodies.crank.mass", "not an allowed function"),
        ('mass = "m2"', 'mass = "m22"', "bodies.crank.mass", "unknown name 'm22'"),
        ('dimension = 2', 'dimension = 4', "mechanism.dimension", "2 (planar) or 3"),
        ('branch = "coupler.C.y > 0"', 'branch = "coupler.C.y"', "initial.branch", "comparison"),
        ('fix = { "crank.theta"', 'fix = { "crank.phi"', "initial.fix.crank.phi",
         "unknown coordinate"),
        ("[ground]", "[grund]", "grund", "did you mean 'ground'"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_line_naming_file_and_key(tmp_path, old, new, key, words) -> None:
    path = _write(tmp_path, old, new)
    with pytest.raises(MechanismError) as exc:
        from mbstudy.solvers.mechanisms.derive import derive

        derive(read(path))
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: {key}: "), msg
    assert words in msg


def test_check_model_cli_bad_file_exit_2_one_line(tmp_path) -> None:
    path = _write(tmp_path, '"crank.B", "coupler.B"', '"crank.B", "couplr.B"')
    out = subprocess.run([*mbstudy_command(), "check-model", str(path)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "joints[1].at[1]" in lines[0] and "coupler" in lines[0]
    assert "Traceback" not in out.stderr


def test_check_model_reports_redundant_constraints(tmp_path) -> None:
    """A duplicated revolute joint: rank(phi_q) < m, pointing to the formulation qr."""
    text = FOURBAR + '\n[[joints]]\ntype = "revolute"\nat = ["rocker.D", "ground.D"]\n'
    path = tmp_path / "redundant.toml"
    path.write_text(text)
    out = subprocess.run([*mbstudy_command(), "check-model", str(path)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "10 constraint equations, rank(phi_q) = 8, 1 degree(s) of freedom" in out.stdout
    assert "2 redundant equation(s): use formulation 'qr'" in out.stdout


def test_check_model_finds_an_assembly_that_misses_the_branch(tmp_path) -> None:
    path = _write(tmp_path, 'branch = "coupler.C.y > 0"', 'branch = "coupler.C.y < 0"')
    out = subprocess.run([*mbstudy_command(), "check-model", str(path)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 1
    assert "FAIL assembly" in out.stdout and "coupler.C.y < 0 does not hold" in out.stdout


STUDY = """
[study]
name = "filemodel"
model = "mech/fourbar.toml"
t_end = 0.1
samples = 11

[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.01
omega_n = 5.0
xi = 1.0
model.L3 = [0.40, 0.41]

[output]
store = "out.zarr"
"""


def test_study_names_a_file_relative_to_itself_and_hashes_its_content(tmp_path) -> None:
    from mbstudy.pipeline.study.parse import load_study

    (tmp_path / "mech").mkdir()
    mech = tmp_path / "mech" / "fourbar.toml"
    mech.write_text(FOURBAR)
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    a = load_study(study)
    assert a.model == str(mech.resolve())
    mech.write_text(FOURBAR.replace("g = 9.81", "g = 9.80"))
    b = load_study(study)
    assert a.spec_hash != b.spec_hash
    mech.write_text(FOURBAR + "\n# a comment changes the file, so the study\n")
    assert load_study(study).spec_hash not in (a.spec_hash, b.spec_hash)


def test_plan_with_a_broken_mechanism_file_exit_2_nothing_written(tmp_path) -> None:
    (tmp_path / "mech").mkdir()
    (tmp_path / "mech" / "fourbar.toml").write_text(FOURBAR.replace('mass = "m3"', 'mass = "m3 +"'))
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    for cmd in (["plan", str(study)], ["launch", str(study)]):
        out = subprocess.run([*mbstudy_command(), *cmd], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)  # fmt: skip
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "s.toml: study.model:" in lines[0] and "bodies.coupler.mass" in lines[0]
    assert not (tmp_path / "out.zarr").exists()


def test_plugin_models_key_their_kernels_by_source_hash(tmp_path, monkeypatch) -> None:
    """A model registered under the entry-point group mbstudy.models is a registry model;
    its kernel key carries its source's hash, so an edited plugin gets a new kernel."""
    import importlib.metadata as md

    from mbstudy.solvers import model_entry, registry

    src = (Path(registry.__file__).parent / "models" / "pendulum.py").read_text()
    src = src.replace('name="pendulum"', 'name="plugpend"')
    assert 'name="plugpend"' in src
    (tmp_path / "plugpend_mod.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = md.EntryPoint(name="plugpend", value="plugpend_mod", group="mbstudy.models")

    def fake(group=None, **_):
        return [ep] if group == "mbstudy.models" else []

    monkeypatch.setattr(md, "entry_points", fake)
    registry.entries.cache_clear()
    try:
        entry = model_entry.model("plugpend")
        assert entry.module.__name__ == "plugpend_mod"
        key1 = model_entry.kernel_key("plugpend")
        assert key1.startswith("plg_plugpend_")
        (tmp_path / "plugpend_mod.py").write_text(src + "\n# edited\n")
        assert model_entry.kernel_key("plugpend") != key1
        assert model_entry.kernel_key("fourbar") == "fourbar"
    finally:
        registry.entries.cache_clear()
        sys.modules.pop("plugpend_mod", None)


@pytest.mark.parametrize(
    ("driver", "rate"),
    [
        ('coordinate = "crank.theta"\nvalue = "theta2_0 + 2*t + 0.1*sin(3*t)"', 2.3),
        ('relative = ["crank", "ground"]\nvalue = "theta2_0 + 2*t + 0.1*t**2"', 2.0),
    ],
)
def test_a_driver_gives_a_rheonomic_model_whose_derivatives_check(
    tmp_path, driver: str, rate: float
) -> None:
    """Phi_t != 0 and gamma's -2 Phi_qt v - Phi_tt terms: the finite-difference checks in
    time (and along (v, 1) for gamma) pass, the driven four-bar has 0 degrees of freedom,
    and the assembled crank angle is the driver's value at t = 0."""
    from mbstudy.solvers.mechanisms.checks import run_checks

    text = FOURBAR.replace('fix = { "crank.theta" = "theta2_0" }\n', "")
    text = text.replace('speed = { "crank.theta" = "omega2_0" }\n', "")
    text = text.replace("[initial]", f"[[drivers]]\n{driver}\n\n[initial]")
    path = tmp_path / "driven.toml"
    path.write_text(text)
    mod, p = kit.model(str(path))
    assert not mod.SPEC.conservative
    checks = {c.name: c for c in run_checks(mod, p)}
    assert all(c.ok for c in checks.values()), checks
    assert "0 degree(s) of freedom" in checks["degrees of freedom"].detail
    q, v = mod.initial_state(p)
    assert abs(q[2] - p[8]) <= 1e-12  # theta2_0
    assert abs(v[2] - rate) <= 1e-12
    pt = np.zeros(9)
    mod.phi_t(q, 0.5, p, pt)
    assert pt[8] != 0.0


def test_only_regular_utf8_files_are_read(tmp_path) -> None:
    """A mechanism file is read as the store records it: strict UTF-8, a regular file (a
    FIFO is refused at once instead of blocking)."""
    import os

    bad = tmp_path / "latin1.toml"
    raw = (kit.MECHANISMS / "nfourbar.toml").read_bytes()
    bad.write_bytes(raw.replace(b"# The built-in", b"# \xe9 The built-in"))
    with pytest.raises(MechanismError, match="not UTF-8") as info:
        read(bad)
    assert info.value.key == "file"
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(MechanismError, match="not a regular file"):
        read(fifo)
