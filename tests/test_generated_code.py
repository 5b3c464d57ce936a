"""No text from a user file ever becomes code, and generated code runs only from one loader.

A mechanism file is a data file people share: reading it (``check-model``, ``plan``,
``run``, ``launch``) must never run code. The probes kept here: a ``[mechanism] name``
that closed the generated module's docstring and ran the rest as code, a name with a
newline that left a broken module (SyntaxError traceback), a planted ``mbm_<key>.py`` in
the kernel directory (the key is computable from the public file), a kernel directory of
another user. Every generated module (each shipped mechanism, hostile names, summaries,
branch conditions, and composed kernels) is parsed and checked against an independent
whitelist of statements (tests/generated_testkit.py), and a Hypothesis property test
feeds arbitrary Unicode into every string field of a mechanism file and of a study file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mbstudy.pipeline.cli.app import app
from mbstudy.solvers import compose, registry
from mbstudy.solvers.mechanisms import codegen
from mbstudy.solvers.mechanisms.derive import derive
from mbstudy.solvers.mechanisms.schema import read
from typer.testing import CliRunner

from tests.generated_testkit import (
    HOSTILE,
    MECHANISMS,
    Rejected,
    check_kernel_module,
    check_model_module,
    pendulum_file,
    toml_string,
)

RUNNER = CliRunner()
# the kernel directory fixture is shared by the examples (they never depend on its state)
FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@pytest.fixture
def kdir(tmp_path, monkeypatch) -> Path:
    """An empty kernel directory of this test (numba's cache stays the shared one)."""
    path = tmp_path / "kernels"
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(path))
    return path


def _payload(value: str, marker: Path) -> str:
    return value.replace("MARKER", repr(str(marker)))


def _source(path: Path, mode: str | None = None) -> str:
    mech = read(path, normalization=mode)
    return codegen.generate_source(derive(mech), codegen.module_key(mech.sha256.encode(),
                                                                    mech.normalization))


def _one_line(res, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    return lines[0]


SHIPPED = [(p.name, None) for p in sorted(MECHANISMS.glob("*.toml"))] + [
    (p.name, "element") for p in sorted(MECHANISMS.glob("*.toml"))
    if "dimension = 3" in p.read_text()
]


@pytest.mark.parametrize(("name", "mode"), SHIPPED)
def test_every_shipped_mechanism_module_holds_only_expected_statements(name, mode):
    mech = read(MECHANISMS / name, normalization=mode)
    data = check_model_module(_source(MECHANISMS / name, mode))
    assert data["name"] == mech.name and data["sha256"] == mech.sha256
    assert data["coord_names"] == [f"{b.name}.{c}" for b in mech.bodies for c in b.coords]


def test_the_whitelist_rejects_code_smuggled_into_a_module():
    """The check can fail: the old generator's docstring with a hostile name, a string
    constant outside the data, a call of something else, an import."""
    text = _source(MECHANISMS / "fourbar.toml")
    first, rest = text.split("\n", 1)
    old = f'"""Generated from mechanism file {HOSTILE[0]!r}. Do not edit."""'
    with pytest.raises((Rejected, SyntaxError)):
        check_model_module(old + "\n" + rest)
    smuggled = ('import os; os.system("true")', "EXTRA = 'user text'",
                "print(_DATA)", "from os import system", "def evil():\n    return 1")
    for extra in smuggled:
        with pytest.raises(Rejected):
            check_model_module(f"{first}\n{extra}\n{rest}")
    kernel = compose.generate_source("pendulum", "baumgarte", "rk4")
    check_kernel_module(kernel)
    for extra in ("NAME = 'user text'", "import os", "print(1)"):
        with pytest.raises(Rejected):
            check_kernel_module(kernel + "\n" + extra + "\n")


@pytest.mark.parametrize("field", ["name", "summary"])
@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_names_and_summaries_are_data(tmp_path, kdir, field, value):
    """Quotes, triple quotes, backslashes, every line end Python knows, NUL: the module and
    the composed kernel parse to the expected statements, the string comes back from the
    module's data exactly as the file reader keeps it (control and line-separator
    characters escaped, schema.printable: a name or summary is shown on terminals), and
    nothing in them runs."""
    from mbstudy.solvers.mechanisms.schema import printable

    marker = tmp_path / "pwned"
    value = _payload(value, marker)
    path = tmp_path / "m.toml"
    path.write_text(pendulum_file(**{field: value}), encoding="utf-8")
    data = check_model_module(_source(path))
    assert data[field] == printable(value)
    module = codegen.generate(str(path))
    assert getattr(module.SPEC, field) == printable(value)
    assert module.BRANCH == ((">", "bar.x > -1"),)
    kernel = compose.generate_source(str(path), "baumgarte", "rk4")
    check_kernel_module(kernel)
    assert value not in kernel
    assert not marker.exists()


def test_a_hostile_branch_condition_is_refused_or_data(tmp_path, kdir):
    marker = tmp_path / "pwned"
    for k, value in enumerate(HOSTILE):
        path = tmp_path / f"b{k}.toml"
        path.write_text(pendulum_file(branch=f"bar.x > -1 # {_payload(value, marker)}"))
        res = RUNNER.invoke(app, ["check-model", str(path)])
        assert res.exit_code in (0, 2), res.output
        if res.exit_code == 2:
            assert "initial.branch" in _one_line(res)
    assert not marker.exists()


@pytest.mark.parametrize("field", ["body", "point", "param", "fix_key"])
def test_hostile_keys_are_refused_in_one_line_naming_the_key(tmp_path, kdir, field):
    """Names that become identifiers or references are validated against a strict
    pattern; a trailing newline (which ``$`` of a regular expression lets through) too."""
    marker = tmp_path / "pwned"
    base = {"body": "bar", "point": "P", "param": "m", "fix_key": "bar.theta"}[field]
    for value in (*HOSTILE, base + "\n", base + "\u2028", base + "\x00"):
        path = tmp_path / "k.toml"
        path.write_text(pendulum_file(**{field: _payload(value, marker)}), encoding="utf-8")
        line = _one_line(RUNNER.invoke(app, ["check-model", str(path)]))
        assert line.startswith(f"mbstudy: error: {path}: "), line
    assert not marker.exists()


def test_a_newline_in_the_name_is_a_result_not_a_syntax_error(tmp_path, kdir):
    path = tmp_path / "nl.toml"
    path.write_text(pendulum_file(name="two\nlines"))
    res = RUNNER.invoke(app, ["check-model", str(path)])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and "ok   assembly" in res.output


def _study(model: str, store: Path) -> str:
    return f"""
[study]
name = "hostile"
model = {toml_string(model)}
t_end = 0.1
samples = 3

[reference]
integrator = "rk4"
formulation = "baumgarte"
h = 0.01

[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.01

[output]
store = {toml_string(str(store))}
series = ["energy"]
"""


def test_the_probe_name_runs_nothing_in_check_model_plan_and_run(tmp_path, kdir):
    """The issue's probe: a name that closes the old docstring and writes a marker file."""
    marker = tmp_path / "pwned"
    path = tmp_path / "probe.toml"
    path.write_text(pendulum_file(name=_payload(HOSTILE[0], marker)))
    study = tmp_path / "study.toml"
    study.write_text(_study(str(path), tmp_path / "s.zarr"))
    res = RUNNER.invoke(app, ["check-model", str(path)])
    assert res.exit_code == 0, res.output
    res = RUNNER.invoke(app, ["plan", str(study)])
    assert res.exit_code == 0, res.output
    res = RUNNER.invoke(app, ["run", "--model", str(path), "--formulation", "baumgarte",
                              "--t-end", "0.05", "--set", "h=0.01", "--engine", "python"])
    assert res.exit_code == 0, res.output
    assert not marker.exists()
    assert not (tmp_path / "s.zarr").exists()  # plan writes nothing


@pytest.mark.cluster
def test_the_probe_name_runs_nothing_in_a_launch(tmp_path, kdir):
    """``launch`` generates the model on the launcher and on every worker (a real
    LocalCluster): the name is data in all of them and the cases run."""
    marker = tmp_path / "pwned"
    path = tmp_path / "probe.toml"
    path.write_text(pendulum_file(name=_payload(HOSTILE[0], marker), summary=HOSTILE[5]))
    study = tmp_path / "study.toml"
    store = tmp_path / "s.zarr"
    study.write_text(_study(str(path), store))
    res = RUNNER.invoke(app, ["launch", str(study), "--workers", "1", "--engine", "python",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    assert not marker.exists()
    from mbstudy import pipeline

    ds = pipeline.open_results(store, "b")
    assert (ds.status.values == 0).all() and ds.status.size == 1


def _planted_key(path: Path) -> str:
    mech = read(path)
    return codegen.module_key(mech.sha256.encode(), mech.normalization)


def test_a_planted_mechanism_module_is_never_executed(tmp_path, kdir):
    """The module key is computable from the public file: a module planted under it (in a
    directory that passes the owner check) is replaced by the generated text, not run."""
    marker = tmp_path / "pwned"
    path = tmp_path / "planted.toml"
    path.write_text(pendulum_file(name=f"planted {tmp_path.name}"))
    key = _planted_key(path)
    kdir.mkdir(mode=0o700)
    planted = kdir / f"{key}.py"
    planted.write_text(f"open({str(marker)!r}, 'w').write('x')\nfrom math import *\n")
    study = tmp_path / "study.toml"
    study.write_text(_study(str(path), tmp_path / "s.zarr"))
    assert RUNNER.invoke(app, ["plan", str(study)]).exit_code == 0
    assert RUNNER.invoke(app, ["check-model", str(path)]).exit_code == 0
    assert not marker.exists()
    assert planted.read_text() == _source(path)
    # a symlink planted under the name is replaced, its target left alone
    path2 = tmp_path / "planted2.toml"
    path2.write_text(pendulum_file(name=f"planted2 {tmp_path.name}"))
    target = tmp_path / "evil.py"
    target.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    link = kdir / f"{_planted_key(path2)}.py"
    link.symlink_to(target)
    assert RUNNER.invoke(app, ["check-model", str(path2)]).exit_code == 0
    assert not marker.exists() and not link.is_symlink()
    assert target.read_text().startswith("open(")


def test_a_composed_kernel_never_imports_a_mechanism_module_from_disk(tmp_path, kdir):
    """The kernel's text refers to its model by key; the loader hands out only modules
    generated in this process, whatever lies in the kernel directory under that key."""
    marker = tmp_path / "pwned"
    kdir.mkdir(mode=0o700)
    key = "mbm_" + "0" * 20
    (kdir / f"{key}.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    with pytest.raises(RuntimeError, match="not generated in this process"):
        codegen.load_generated(key)
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_kernel_directory_of_another_user_is_refused_in_one_line(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir(mode=0o755)
    os.chown(other, 65534, 65534)  # nobody
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(other))
    path = tmp_path / "o.toml"
    path.write_text(pendulum_file(name=f"other {tmp_path.name}"))
    line = _one_line(RUNNER.invoke(app, ["check-model", str(path)]))
    assert "not by this user" in line and str(other) in line
    study = tmp_path / "study.toml"
    study.write_text(_study(str(path), tmp_path / "s.zarr"))
    assert "not by this user" in _one_line(RUNNER.invoke(app, ["plan", str(study)]))
    # launch refuses before anything starts: no worker, no store, no case marked 'error'
    line = _one_line(RUNNER.invoke(app, ["launch", str(study), "--workers", "1"]))
    assert "not by this user" in line and str(other) in line
    assert not (tmp_path / "s.zarr").exists()
    assert list(other.iterdir()) == []


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_kernel_directory_that_cannot_be_made_is_refused_in_one_line(tmp_path, monkeypatch,
                                                                        where):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    kdir = blocker if where == "a file" else blocker / "kernels"
    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(kdir))
    path = tmp_path / "f.toml"
    path.write_text(pendulum_file(name=f"file {tmp_path.name}"))
    line = _one_line(RUNNER.invoke(app, ["check-model", str(path)]))
    assert str(kdir) in line and "MBSTUDY_KERNEL_DIR" in line
    assert blocker.read_text() == "x"


def _kernel_triples() -> list[tuple[str, str, str]]:
    """One compatible triple for every formulation and every integrator (each template
    module composed at least once), on the built-in models."""
    out: dict[tuple[str, str, str], None] = {}
    models = ("fourbar", "andrews", "top", "oscillator", "pendulum", "nfourbar")
    forms = sorted(registry.entries("formulation"))
    integs = sorted(registry.entries("integrator"))
    for kind, names in (("f", forms), ("i", integs)):
        for name in names:
            for model in models:
                done = False
                for other in integs if kind == "f" else forms:
                    triple = (model, name, other) if kind == "f" else (model, other, name)
                    if registry.compatibility(*triple) is None:
                        out[triple] = None
                        done = True
                        break
                if done:
                    break
    return list(out)


@pytest.mark.parametrize("triple", _kernel_triples(), ids="/".join)
def test_composed_kernels_hold_only_expected_statements(triple):
    check_kernel_module(compose.generate_source(*triple))


# -- Hypothesis: any Unicode in any string field --------------------------------------------
MECHANISM_FIELDS = ("name", "summary", "body", "point", "param", "branch", "mass",
                    "joint_type", "fix_key", "inertia", "gravity", "at", "normalization",
                    "speed_key")  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(field=st.sampled_from(MECHANISM_FIELDS), value=st.text(max_size=40))
@example(field="name", value=HOSTILE[0])
@example(field="summary", value=HOSTILE[1])
@example(field="body", value=HOSTILE[0])
@example(field="branch", value="bar.x > -1 " + HOSTILE[0])
@example(field="mass", value="__import__('os').system('touch MARKER')")
def test_any_string_in_a_mechanism_file_is_a_result_or_one_line(tmp_path, kdir, field, value):
    marker = tmp_path / "pwned"
    path = tmp_path / "fuzz.toml"
    path.write_text(pendulum_file(**{field: _payload(value, marker)}), encoding="utf-8")
    res = RUNNER.invoke(app, ["check-model", str(path)])
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        _one_line(res)
    else:  # the checks' report: exit 0, or 1 if a check fails (e.g. a zero mass)
        assert res.exit_code in (0, 1), res.output
        assert res.output.startswith(f"model {path}"), res.output
    assert not marker.exists()


STUDY_FIELDS = ("study.name", "study.description", "study.model", "reference.integrator",
                "reference.formulation", "runs.name", "runs.formulation", "runs.integrator",
                "output.store", "output.series", "study.key", "model.key")  # fmt: skip


def _fuzzed_study(field: str, value: str, store: Path) -> str:
    values = {"study.name": "fuzz", "study.description": "d", "study.model": "pendulum",
              "reference.integrator": "rk4", "reference.formulation": "baumgarte",
              "runs.name": "b", "runs.formulation": "baumgarte", "runs.integrator": "rk4",
              "output.store": str(store), "output.series": "energy", "study.key": "max_cases",
              "model.key": "L"}  # fmt: skip
    values[field] = value
    s = {k: toml_string(v) for k, v in values.items()}
    return f"""
[model]
{s["model.key"]} = 1.0

[study]
{s["study.key"]} = 1000
name = {s["study.name"]}
description = {s["study.description"]}
model = {s["study.model"]}
t_end = 0.1
samples = 3

[reference]
integrator = {s["reference.integrator"]}
formulation = {s["reference.formulation"]}
h = 0.01

[[runs]]
name = {s["runs.name"]}
formulation = {s["runs.formulation"]}
integrator = {s["runs.integrator"]}
h = 0.01

[output]
store = {s["output.store"]}
series = [{s["output.series"]}]
"""


def test_the_files_the_fuzzers_start_from_are_valid(tmp_path, kdir):
    """Unchanged, both files give a result: a refusal by a fuzzed field is that field's."""
    path = tmp_path / "m.toml"
    path.write_text(pendulum_file())
    assert RUNNER.invoke(app, ["check-model", str(path)]).exit_code == 0
    study = tmp_path / "s.toml"
    study.write_text(_fuzzed_study("study.name", "fuzz", tmp_path / "s.zarr"))
    res = RUNNER.invoke(app, ["plan", str(study)])
    assert res.exit_code == 0 and "1 cases" in res.output, res.output


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(field=st.sampled_from(STUDY_FIELDS), value=st.text(max_size=40))
@example(field="study.name", value=HOSTILE[0])
@example(field="study.model", value=HOSTILE[0] + ".toml")
@example(field="runs.formulation", value=HOSTILE[0])
@example(field="study.description", value=HOSTILE[5])
def test_any_string_in_a_study_file_is_a_result_or_one_line(tmp_path, kdir, field, value):
    marker = tmp_path / "pwned"
    study = tmp_path / "fuzz.toml"
    study.write_text(_fuzzed_study(field, _payload(value, marker), tmp_path / "s.zarr"),
                     encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    res = RUNNER.invoke(app, ["plan", str(study)])
    assert "Traceback" not in res.output
    if res.exit_code != 0:
        _one_line(res)
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "kernels") == [
        n for n in before if n != "kernels"
    ]  # plan writes nothing
