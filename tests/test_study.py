"""Study files: parsing, defaults, every validation error, the spec hash.

The tests run on a fake registry (``tests/property/fakes.py``) so that they do not depend
on which solvers exist; one test uses the real registry with the four-bar.
"""

from __future__ import annotations

import pickle
import textwrap
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from mbstudy.pipeline.study import (
    ClusterSpec,
    StudyError,
    StudySpec,
    check_study,
    load_study,
    parse_study,
)
from mbstudy.solvers import registry

from tests.conftest import load_fakes

fakes = load_fakes()


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    fakes.install(monkeypatch)


HEAD = """
[study]
name = "t"
model = "toy"
"""

STAB = """
[[runs]]
formulation = "stab"
integrator = "rk"
h = [0.01, 0.005]
omega_n = [5.0, 20.0]
xi = 1.0
"""


def study(*parts: str) -> str:
    return "\n".join(textwrap.dedent(p) for p in parts)


def error_of(text: str, force: bool = False) -> StudyError:
    with pytest.raises(StudyError) as info:
        parse_study(text, source="s.toml", force=force)
    err = info.value
    assert "\n" not in str(err)
    assert str(err) == f"s.toml: {err.key}: {err.message}"
    assert err.source == "s.toml"
    return err


def assert_error(text: str, key: str, *fragments: str, force: bool = False) -> StudyError:
    err = error_of(text, force=force)
    assert err.key == key, str(err)
    assert key in str(err)
    for fragment in fragments:
        assert fragment in err.message, str(err)
    return err


# --------------------------------------------------------------------------------------
# valid studies


def test_minimal_study_gets_defaults():
    spec = parse_study(study(HEAD, STAB))
    assert isinstance(spec, StudySpec)
    assert spec.name == "t"
    assert spec.description == ""
    assert spec.model == "toy"
    assert spec.t_end == 3.0  # the model's t_end
    assert spec.samples == 301
    assert spec.batch_size is None
    assert spec.max_cases == 10**7
    assert spec.model_dict == {"L": 1.0, "mass": 2.0, "n_links": 2, "label": "a", "damped": False}
    assert spec.output.store == "results/t.zarr"
    assert spec.output.series == ()
    assert spec.cluster is None
    assert spec.reference.integrator == "ode45"
    assert spec.reference.formulation == "plain"
    assert spec.reference.params_dict == {"rtol": 1e-10, "atol": 1e-9, "max_steps": 100000}
    (run,) = spec.runs
    assert run.name == "stab"
    assert (run.formulation, run.integrator) == ("stab", "rk")
    assert (run.t_end, run.samples) == (3.0, 301)
    assert run.axes == (("h", (0.01, 0.005)), ("omega_n", (5.0, 20.0)))
    assert run.fixed_dict == {"xi": 1.0}
    assert run.zip == ()
    assert run.n_cases == 4
    assert run.batch_size is None  # "auto": the planner decides (plan.batches)
    assert len(spec.spec_hash) == 64
    assert spec.text.startswith("\n[study]")
    assert spec.source == "<string>"
    assert Path(spec.base_dir).is_absolute()


def test_full_study_resolves_every_section():
    text = study(
        """
        [study]
        name = "full"
        model = "toy"
        t_end = 1
        samples = 101
        batch_size = 3
        max_cases = 1000
        description = "everything"

        [model]
        mass = 3
        label = "b"

        [reference]
        integrator = "rk"
        h = 0.001

        [[runs]]
        name = "obs-a"
        formulation = "obs"
        integrator = "rk"
        t_end = 0.5
        samples = 51
        h = [0.01, 0.005]
        omega_n = [5.0, 20.0, 5.0]
        xi = [1.0, 1.0, 2.0]
        omega_o = 100
        zip = [["omega_n", "xi"]]
        model.n_links = [1, 2]
        model.damped = true

        [output]
        store = "out/x.zarr"
        series = ["phi_norm", "q", "energy_balance"]

        [cluster]
        kind = "slurm"
        queue = "short"
        account = "proj"
        cores = 4
        memory = "8GB"
        walltime = "01:30:00"
        jobs = 2
        processes = 2
        job_extra = ["--exclusive"]
        worker_lifetime = "55m"
        """
    )
    spec = parse_study(text)
    assert spec.t_end == 1.0 and isinstance(spec.t_end, float)
    assert spec.samples == 101
    assert spec.batch_size == 3
    assert spec.max_cases == 1000
    assert spec.description == "everything"
    assert spec.model_dict["mass"] == 3.0 and isinstance(spec.model_dict["mass"], float)
    assert spec.model_dict["label"] == "b"
    # the default reference's rtol is dropped: rk does not take it
    assert spec.reference.integrator == "rk"
    assert spec.reference.formulation == "plain"
    assert spec.reference.params_dict == {"h": 0.001}
    (run,) = spec.runs
    assert run.name == "obs-a"
    assert (run.t_end, run.samples) == (0.5, 51)
    assert run.axis_names == ("h", "omega_n", "xi", "model.n_links")
    assert run.zip == (("omega_n", "xi"),)
    assert run.dim_groups() == (("h",), ("omega_n", "xi"), ("model.n_links",))
    assert run.shape == (2, 3, 2)
    assert run.n_cases == 12
    assert run.fixed_dict == {"omega_o": 100.0, "model.damped": True}
    assert run.batch_size == 3
    assert spec.output.store == "out/x.zarr"
    assert spec.output.series == ("phi_norm", "q", "energy_balance")
    assert spec.cluster == ClusterSpec(
        kind="slurm",
        queue="short",
        account="proj",
        cores=4,
        memory="8GB",
        walltime="01:30:00",
        jobs=2,
        processes=2,
        job_extra=("--exclusive",),
        worker_lifetime="55m",
    )


def test_batch_size_is_clamped_to_the_block():
    spec = parse_study(study(HEAD.replace('"toy"', '"toy"\nbatch_size = 100'), STAB))
    assert spec.batch_size == 100
    assert spec.runs[0].batch_size == 4


def test_default_run_name_and_method_defaults():
    spec = parse_study(
        study(
            HEAD,
            "[[runs]]\nformulation = 'obs'\nintegrator = 'ode45'\nomega_o = [10, 100]\nrtol = 1e-8",
        )
    )
    (run,) = spec.runs
    assert run.name == "obs"
    assert run.fixed_dict == {
        "omega_n": 5.0,
        "xi": 1.0,
        "rtol": 1e-8,
        "atol": 1e-9,
        "max_steps": 100000,
    }
    assert run.axes == (("omega_o", (10.0, 100.0)),)


def test_parameter_taken_by_both_methods_sets_both():
    spec = parse_study(
        study(HEAD, "[[runs]]\nformulation = 'proj'\nintegrator = 'implicit'\ntol = [1e-6, 1e-9]")
    )
    (run,) = spec.runs
    assert run.formulation_keys == ("tol",)
    assert run.integrator_keys == ("h0", "tol")
    assert run.axes == (("tol", (1e-6, 1e-9)),)


def test_model_axes_as_table_and_quoted_keys():
    text = study(
        HEAD,
        """
        [[runs]]
        formulation = "plain"
        integrator = "ode45"
        model = { L = [1.0, 2.0], label = ["a", "c"] }
        "model.mass" = 5
        """,
    )
    (run,) = parse_study(text).runs
    assert run.axes == (("model.L", (1.0, 2.0)), ("model.label", ("a", "c")))
    assert run.fixed_dict["model.mass"] == 5.0


def test_int_bool_str_axes_are_normalized():
    text = study(
        HEAD,
        "[[runs]]\nformulation='plain'\nintegrator='vi'\nh=0.01\norder=[2, 3.0]\n"
        "model.damped=[true, false]\nmodel.n_links=[1, 2.0]\n",
    )
    (run,) = parse_study(text).runs
    axes = run.axes_dict
    assert axes["order"] == (2, 3) and all(type(v) is int for v in axes["order"])
    assert axes["model.n_links"] == (1, 2)
    assert axes["model.damped"] == (True, False)


def test_load_study_reads_a_file_and_writes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "studies" / "s.toml"
    path.parent.mkdir()
    path.write_text(study(HEAD, STAB))
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    spec = load_study(path)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert spec.source == str(path)
    assert spec.base_dir == str(path.parent.resolve())
    assert spec.text == path.read_text()
    assert load_study(str(path)) == spec


def test_specs_are_frozen_and_picklable():
    spec = parse_study(study(HEAD, STAB, '[cluster]\nkind = "pbs"\n'))
    assert pickle.loads(pickle.dumps(spec)) == spec
    with pytest.raises(FrozenInstanceError):
        spec.name = "x"  # type: ignore[misc]
    err = error_of(study(HEAD))
    again = pickle.loads(pickle.dumps(err))
    assert (again.source, again.key, again.message) == (err.source, err.key, err.message)


# --------------------------------------------------------------------------------------
# the hash


def test_spec_hash_ignores_comments_whitespace_key_order_store_and_cluster():
    a = parse_study(study(HEAD, STAB))
    b = parse_study(
        study(
            """
            # a comment
            [[runs]]
            xi   =   1.0        # fixed
            integrator = "rk"
            h = [0.01, 0.005]
            formulation = "stab"
            omega_n = [5, 20]   # ints are the same floats

            [output]
            store = "elsewhere.zarr"

            [cluster]
            kind = "pbs"

            [study]
            model = "toy"
            name = "another-name"
            description = "not part of the hash"
            """
        )
    )
    assert a.spec_hash == b.spec_hash


def test_spec_hash_ignores_defaults_written_out_and_block_order():
    a = parse_study(study(HEAD, STAB, "[[runs]]\nformulation='plain'\nintegrator='ode45'\n"))
    b = parse_study(
        study(HEAD, "[[runs]]\nformulation='plain'\nintegrator='ode45'\nrtol=1e-6\n", STAB)
    )
    assert a.spec_hash == b.spec_hash


@pytest.mark.parametrize(
    "change",
    [
        ("omega_n = [5.0, 20.0]", "omega_n = [5.0, 21.0]"),
        ("xi = 1.0", "xi = 1.5"),
        ('name = "t"\nmodel = "toy"', 'name = "t"\nmodel = "toy"\nsamples = 151'),
        ('name = "t"\nmodel = "toy"', 'name = "t"\nmodel = "toy"\nt_end = 6.0'),
        ('name = "t"\nmodel = "toy"', 'name = "t"\nmodel = "toy"\nbatch_size = 1'),
        ('name = "t"\nmodel = "toy"', 'name = "t"\nmodel = "toy"\n[model]\nmass = 3.0'),
        ("xi = 1.0", "xi = 1.0\nname = 'renamed'"),
        # the order of two axes decides which case sits where in the store
        ("h = [0.01, 0.005]\nomega_n = [5.0, 20.0]", "omega_n = [5.0, 20.0]\nh = [0.01, 0.005]"),
    ],
)
def test_spec_hash_changes_with_what_affects_results(change):
    base = study(HEAD, STAB)
    old, new = change
    assert old in base
    assert parse_study(base).spec_hash != parse_study(base.replace(old, new)).spec_hash


def test_spec_hash_changes_with_series_and_reference():
    base = parse_study(study(HEAD, STAB)).spec_hash
    assert parse_study(study(HEAD, STAB, "[output]\nseries=['q']")).spec_hash != base
    assert parse_study(study(HEAD, STAB, "[reference]\nrtol=1e-12")).spec_hash != base


# --------------------------------------------------------------------------------------
# errors: structure and names


def test_malformed_toml():
    text = study(HEAD, "[[runs]]\nformulation = = 'stab'\nintegrator = 'rk'\n")
    err = assert_error(text, "(toml)", "line 7", "column")
    assert "malformed TOML" in err.message


def test_missing_file(tmp_path):
    with pytest.raises(StudyError) as info:
        load_study(tmp_path / "nope.toml")
    assert info.value.key == "(file)"
    assert "cannot read" in str(info.value)


def test_unknown_section_suggests():
    assert_error(study(HEAD, STAB, "[outptu]\nstore='x'"), "outptu", "did you mean 'output'?")


def test_runs_as_single_table():
    assert_error(study(HEAD, "[runs]\nformulation='stab'"), "runs", "[[runs]]")


def test_no_runs():
    assert_error(study(HEAD), "runs", "at least one [[runs]]")


def test_missing_study_section_and_keys():
    assert_error(STAB, "study", "required")
    assert_error(study('[study]\nmodel = "toy"', STAB), "study.name", "required")
    assert_error(study('[study]\nname = "t"', STAB), "study.model", "required", "toy")


@pytest.mark.parametrize(
    ("section", "key", "path", "hint"),
    [
        ("study", "t_ned = 1.0", "study.t_ned", "did you mean 't_end'?"),
        ("study", "sample = 3", "study.sample", "did you mean 'samples'?"),
        ("output", "seires = []", "output.seires", "did you mean 'series'?"),
        ("cluster", "kind = 'slurm'\nqueu = 'x'", "cluster.queu", "did you mean 'queue'?"),
    ],
)
def test_unknown_keys_suggest(section, key, path, hint):
    if section == "study":
        text = study(HEAD + key, STAB)
    else:
        text = study(HEAD, STAB, f"[{section}]\n{key}")
    assert_error(text, path, hint)


def test_unknown_model():
    assert_error(
        study(HEAD.replace('"toy"', '"tyo"'), STAB),
        "study.model",
        "unknown model 'tyo'",
        "did you mean 'toy'?",
        "valid: bare, toy",
    )


def test_unknown_formulation_and_integrator():
    assert_error(
        study(HEAD, STAB.replace('"stab"', '"stabb"')),
        "runs[0].formulation",
        "unknown formulation 'stabb'",
        "did you mean 'stab'?",
    )
    assert_error(
        study(HEAD, STAB.replace('"rk"', '"rk5"')),
        "runs[0].integrator",
        "unknown integrator 'rk5'",
        "did you mean 'rk'?",
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nintegrator='od45'"),
        "reference.integrator",
        "did you mean 'ode45'?",
    )


def test_unknown_default_reference_method_names_its_origin(monkeypatch):
    tables = fakes.fake_entries()
    del tables["integrator"]["ode45"]
    monkeypatch.setattr(registry, "entries", lambda kind: tables[kind])
    assert_error(
        study(HEAD, STAB),
        "reference.integrator",
        "unknown integrator 'ode45'",
        "default reference of model 'toy'",
    )


def test_missing_run_methods():
    assert_error(
        study(HEAD, "[[runs]]\nintegrator='rk'\nh=0.01"), "runs[0].formulation", "required", "stab"
    )
    assert_error(study(HEAD, "[[runs]]\nformulation='stab'"), "runs[0].integrator", "required")


def test_unknown_run_parameter_suggests_closest():
    assert_error(
        study(HEAD, STAB, "omega_m = 3.0"),
        "runs[0].omega_m",
        "did you mean 'omega_n'?",
        "formulation 'stab' takes omega_n, xi",
        "integrator 'rk' takes h",
    )
    err = assert_error(
        study(HEAD, STAB, "[[runs]]\nformulation='obs'\nintegrator='rk'\nh=0.01\nomega_p=[1.0]"),
        "runs[1].omega_p",
        "did you mean 'omega_o'?",
    )
    assert "runs[1]" in str(err)


def test_unknown_model_parameter():
    assert_error(study(HEAD, STAB, "[model]\nmas = 1.0"), "model.mas", "did you mean 'mass'?")
    assert_error(
        study(HEAD, STAB, "model.mas = [1.0, 2.0]"), "runs[0].model.mas", "did you mean 'mass'?"
    )


def test_model_table_in_run_must_be_a_table():
    assert_error(study(HEAD, STAB, "model = 'toy'"), "runs[0].model", "expected a table", "[study]")


def test_model_section_takes_single_values():
    assert_error(
        study(HEAD, STAB, "[model]\nmass = [1.0, 2.0]"),
        "model.mass",
        "single value",
        "model.mass = [...]",
    )


def test_required_model_parameter():
    text = study(
        '[study]\nname="t"\nmodel="bare"\n[reference]\nintegrator="ode45"\nformulation="plain"',
        "[[runs]]\nformulation='plain'\nintegrator='ode45'",
    )
    assert_error(text, "model.k", "required")
    assert parse_study(text.replace('formulation="plain"', 'formulation="plain"\n[model]\nk=2'))


def test_reference_required_without_model_default():
    text = study(
        '[study]\nname="t"\nmodel="bare"\n[model]\nk=1',
        "[[runs]]\nformulation='plain'\nintegrator='ode45'",
    )
    assert_error(text, "reference.integrator", "required", "no default reference")


def test_reference_errors():
    assert_error(
        study(HEAD, STAB, "[reference]\nrtoll = 1e-9"), "reference.rtoll", "did you mean 'rtol'?"
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nrtol = [1e-9, 1e-10]"), "reference.rtol", "single value"
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nrtol = -1.0"), "reference.rtol", "a number > 0", "-1.0"
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nintegrator = 'rk'"), "reference.h", "required", "step size"
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nintegrator = 'rk'\nh = 0.003"),
        "reference.h",
        "divide",
        "samples",
    )
    assert_error(
        study(HEAD, STAB, "[reference]\nintegrator = 'vi'\nformulation='stab'\nh=0.001"),
        "reference.integrator",
        "incompatible",
        "allowed: plain",
    )


def test_run_name_rules():
    assert_error(study(HEAD, STAB, "name = 'a b'"), "runs[0].name", "letters, digits")
    assert_error(study(HEAD, STAB, "name = 'reference'"), "runs[0].name", "reserved")
    assert_error(study(HEAD, STAB, STAB), "runs[1].name", "duplicate run name 'stab'", "runs[0]")


# --------------------------------------------------------------------------------------
# errors: values


@pytest.mark.parametrize(
    ("extra", "path", "fragments"),
    [
        ('t_end = "5"', "study.t_end", ("a number > 0", '"5"')),
        ("t_end = 0", "study.t_end", ("a number > 0", "found 0")),
        ("t_end = -1.5", "study.t_end", ("a number > 0", "-1.5")),
        ("t_end = inf", "study.t_end", ("a number > 0", "inf")),
        ("samples = 1", "study.samples", ("an integer >= 2", "found 1")),
        ("samples = 301.5", "study.samples", ("an integer >= 2", "301.5")),
        ("samples = true", "study.samples", ("an integer >= 2", "true")),
        ('batch_size = "big"', "study.batch_size", ('"auto"', '"big"')),
        ("batch_size = 0", "study.batch_size", (">= 1",)),
        ("max_cases = 0", "study.max_cases", (">= 1",)),
        ("description = 3", "study.description", ("a string",)),
    ],
)
def test_study_value_errors(extra, path, fragments):
    assert_error(study(HEAD + extra, STAB), path, *fragments)


def test_study_name_type():
    assert_error(study('[study]\nname = 3\nmodel = "toy"', STAB), "study.name", "string")
    assert_error(
        study('[study]\nname = "a/b"\nmodel = "toy"', STAB), "study.name", "path separators"
    )


@pytest.mark.parametrize(
    ("extra", "path", "fragments"),
    [
        ("xi = true", "runs[0].xi", ("a number", "true")),
        ('xi = "fast"', "runs[0].xi", ("a number", '"fast"')),
        ("xi = -5.0", "runs[0].xi", ("a number > 0", "-5.0")),
        ("xi = {a = 1}", "runs[0].xi", ("a number", "table")),
        ("xi = [1.0, [2.0]]", "runs[0].xi[1]", ("a number", "[2.0]")),
        ("model.mass = 'heavy'", "runs[0].model.mass", ("a number", '"heavy"')),
        ("model.n_links = 1.5", "runs[0].model.n_links", ("an integer", "1.5")),
        ("model.label = 'z'", "runs[0].model.label", ("one of 'a', 'b', 'c'", '"z"')),
        ("model.damped = [1, 0]", "runs[0].model.damped[0]", ("a boolean", "1")),
        ("t_end = [1.0, 2.0]", "runs[0].t_end", ("one t_end per block",)),
        ("t_end = 0", "runs[0].t_end", ("a number > 0",)),
        ("samples = 1", "runs[0].samples", (">= 2",)),
        ("samples = [11, 21]", "runs[0].samples", ("one value per block",)),
        ("formulation = 3", "runs[0].formulation", ("a formulation name",)),
    ],
)
def test_run_value_errors(extra, path, fragments):
    body = STAB.replace("xi = 1.0\n", "")
    if extra.startswith("formulation"):
        body = body.replace('formulation = "stab"\n', "")
    assert_error(study(HEAD, body, extra), path, *fragments)


def test_h_must_be_positive():
    assert_error(
        study(HEAD, STAB.replace("h = [0.01, 0.005]", "h = 0")),
        "runs[0].h",
        "a number > 0",
        "found 0",
    )
    assert_error(
        study(HEAD, STAB.replace("h = [0.01, 0.005]", "h = [0.01, -0.01]")),
        "runs[0].h[1]",
        "a number > 0",
        "-0.01",
    )


def test_required_method_parameter():
    assert_error(
        study(HEAD, STAB.replace("h = [0.01, 0.005]\n", "")),
        "runs[0].h",
        "required parameter of integrator 'rk'",
        "step size",
    )
    assert_error(
        study(HEAD, "[[runs]]\nformulation='obs'\nintegrator='ode45'"),
        "runs[0].omega_o",
        "required parameter of formulation 'obs'",
    )


def test_empty_axis():
    assert_error(
        study(HEAD, STAB.replace("omega_n = [5.0, 20.0]", "omega_n = []")),
        "runs[0].omega_n",
        "non-empty list",
        "found []",
    )


def test_duplicate_axis_value():
    assert_error(
        study(HEAD, STAB.replace("omega_n = [5.0, 20.0]", "omega_n = [5.0, 20, 5]")),
        "runs[0].omega_n[2]",
        "duplicate value 5.0",
        "index 0",
    )
    assert_error(
        study(HEAD, STAB, "model.label = ['a', 'a']"), "runs[0].model.label[1]", "duplicate"
    )


def test_zip_unequal_lengths():
    text = study(
        HEAD, STAB.replace("xi = 1.0", "xi = [1.0, 2.0, 3.0]"), 'zip = [["omega_n", "xi"]]'
    )
    assert_error(text, "runs[0].zip[0]", "equal lengths", "omega_n: 2", "xi: 3")


def test_zip_name_not_an_axis():
    assert_error(
        study(HEAD, STAB, 'zip = [["omega_n", "hh"]]'),
        "runs[0].zip[0][1]",
        "not an axis",
        "did you mean 'h'?",
    )
    assert_error(
        study(HEAD, STAB, 'zip = [["omega_n", "xi"]]'),
        "runs[0].zip[0][1]",
        "'xi' is not an axis",
        "single value",
    )


def test_zip_structure_errors():
    assert_error(study(HEAD, STAB, 'zip = ["omega_n", "h"]'), "runs[0].zip", "flat list")
    assert_error(study(HEAD, STAB, "zip = 3"), "runs[0].zip", "list of lists")
    assert_error(study(HEAD, STAB, "zip = [[]]"), "runs[0].zip[0]", "non-empty")
    assert_error(
        study(HEAD, STAB, 'zip = [["h", "omega_n"], ["omega_n"]]'),
        "runs[0].zip[1][0]",
        "already in zip group 0",
    )
    assert_error(study(HEAD, STAB, 'zip = [["h", 3]]'), "runs[0].zip[0][1]", "a string")


def test_zip_rows_must_be_distinct_but_members_may_repeat():
    ok = study(HEAD, STAB.replace("xi = 1.0", "xi = [1.0, 1.0]"), 'zip = [["omega_n", "xi"]]')
    assert parse_study(ok).runs[0].n_cases == 4  # h (2) x the zipped pairs (2)
    bad = study(
        HEAD,
        STAB.replace("omega_n = [5.0, 20.0]", "omega_n = [5.0, 5.0]").replace(
            "xi = 1.0", "xi = [1.0, 1.0]"
        ),
        'zip = [["omega_n", "xi"]]',
    )
    assert_error(bad, "runs[0].zip[0]", "duplicate combination", "positions 0 and 1")


def test_incompatible_pairs():
    assert_error(
        study(HEAD, "[[runs]]\nformulation='stab'\nintegrator='vi'\nh=0.01"),
        "runs[0].integrator",
        "incompatible",
        "does not take formulation 'stab'",
        "allowed: plain",
    )


def test_incompatible_by_the_form_a_formulation_needs(monkeypatch):
    """A formulation whose declared DAE form needs a DAE integrator is refused by one that
    does not declare that form, naming the integrators that do (solvers/forms.py)."""
    tables = fakes.fake_entries()
    obs, implicit = tables["formulation"]["obs"], tables["integrator"]["implicit"]
    from dataclasses import replace

    tables["formulation"]["obs"] = replace(obs, spec=replace(obs.spec, form="index3-dae"))
    tables["integrator"]["implicit"] = replace(
        implicit, spec=replace(implicit.spec, forms=("index3-dae",))
    )
    monkeypatch.setattr(registry, "entries", lambda kind: tables[kind])
    text = study(HEAD, "[[runs]]\nformulation='obs'\nintegrator='rk'\nh=0.01\nomega_o=1.0")
    assert_error(text, "runs[0].integrator", "needs an implicit DAE integrator",
                 "'rk' is not one", "allowed: implicit")  # fmt: skip


def test_h_must_divide_the_output_interval():
    # t_end 3, samples 301: interval 0.01
    text = study(HEAD, STAB.replace("h = [0.01, 0.005]", "h = [0.005, 0.003]"))
    err = assert_error(text, "runs[0].h[1]", "divide", "samples", "0.003")
    assert "runs[0].h" in str(err)
    assert_error(
        study(HEAD, STAB.replace("h = [0.01, 0.005]", "h = 0.02")),
        "runs[0].h",
        "divide",
        "t_end/(samples-1)",
    )
    # with samples = 151 the interval is 0.02 and h = 0.02 divides it
    fine = study(HEAD + "samples = 151", STAB.replace("h = [0.01, 0.005]", "h = 0.02"))
    assert parse_study(fine).runs[0].n_cases == 2


def test_h_rounding_tolerance():
    # 1/300 written to 17 digits divides the interval 0.01 to 1e-9 relative
    text = study(HEAD, STAB.replace("h = [0.01, 0.005]", "h = [0.0033333333333333335]"))
    assert parse_study(text)


def test_too_many_cases_needs_force():
    text = study(HEAD + "max_cases = 3", STAB)
    assert_error(text, "study.max_cases", "4 cases", "max_cases = 3", "force")
    assert parse_study(text, force=True).n_cases == 4


def test_output_errors():
    assert_error(
        study(HEAD, STAB, "[output]\nseries = ['q', 'phi_nrom']"),
        "output.series[1]",
        "unknown series 'phi_nrom'",
        "did you mean 'phi_norm'?",
    )
    assert_error(study(HEAD, STAB, "[output]\nseries = ['q', 'q']"), "output.series[1]", "twice")
    assert_error(study(HEAD, STAB, "[output]\nseries = 'q'"), "output.series", "a list")
    assert_error(study(HEAD, STAB, "[output]\nstore = 3"), "output.store", "a string")
    assert_error("output = 3\n" + study(HEAD, STAB), "output", "expected a table")


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ("queue = 'x'", "cluster.kind", "required"),
        ("kind = 'slrum'", "cluster.kind", "did you mean 'slurm'?"),
        ("kind = 'pbs'\ncores = '4'", "cluster.cores", "an integer >= 1"),
        ("kind = 'pbs'\nmemory = '4 gigs'", "cluster.memory", '"4GB"'),
        ("kind = 'pbs'\nmemory = 4", "cluster.memory", '"4GB"'),
        ("kind = 'pbs'\nwalltime = '1:5'", "cluster.walltime", "HH:MM:SS"),
        ("kind = 'pbs'\njob_extra = '--x'", "cluster.job_extra", "list of strings"),
        ("kind = 'pbs'\nworker_lifetime = 'soon'", "cluster.worker_lifetime", "duration"),
        ("kind = 'pbs'\ncores = 2\nprocesses = 4", "cluster.processes", "at most cores = 2"),
        ("kind = 'pbs'\njobs = 0", "cluster.jobs", ">= 1"),
    ],
)
def test_cluster_errors(body, path, fragment):
    assert_error(study(HEAD, STAB, "[cluster]\n" + body), path, fragment)


# --------------------------------------------------------------------------------------
# check_study


def test_check_study_lists_every_error(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        study(
            """
            [study]
            name = "bad"
            model = "toy"
            t_ned = 3
            samples = 1

            [[runs]]
            formulation = "stab"
            integrator = "rk"
            h = 0.01
            omega_m = 3.0

            [[runs]]
            formulation = "stabb"
            integrator = "rk"

            [output]
            series = ["phi_nrom"]
            """
        )
    )
    errors = check_study(path)
    keys = [e.split(": ")[1] for e in errors]
    assert "study.t_ned" in keys
    assert "study.samples" in keys
    assert "output.series[0]" in keys
    assert all(e.startswith(str(path)) and "\n" not in e for e in errors)
    good = tmp_path / "good.toml"
    good.write_text(study(HEAD, STAB))
    assert check_study(good) == []
    broken = tmp_path / "broken.toml"
    broken.write_text("[study\n")
    (only,) = check_study(broken)
    assert ": (toml): " in only


def test_check_study_reports_run_errors_once_study_is_valid(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        study(
            HEAD,
            STAB.replace("xi = 1.0\n", ""),
            "omega_m = 3.0\nxi = []",
            "[[runs]]\nformulation='stabb'\nintegrator='rk'\n",
            "[output]\nseries=['nope']",
        )
    )
    keys = [e.split(": ")[1] for e in check_study(path)]
    assert "runs[0].omega_m" in keys
    assert "runs[0].xi" in keys
    assert "runs[1].formulation" in keys
    assert "output.series[0]" in keys


# --------------------------------------------------------------------------------------
# the real registry


def test_real_registry_fourbar(monkeypatch):
    monkeypatch.undo()  # the real registry
    forms = registry.entries("formulation")
    integs = registry.entries("integrator")
    assert "baumgarte" in forms and "rk4" in integs
    names_f = {p.name for p in forms["baumgarte"].params}
    names_i = {p.name for p in integs["rk4"].params}
    text = study(
        """
        [study]
        name = "fourbar-baumgarte"
        model = "fourbar"
        t_end = 1.0
        samples = 101

        [reference]
        integrator = "rk4"
        formulation = "baumgarte"
        h = 1e-4

        [[runs]]
        formulation = "baumgarte"
        integrator = "rk4"
        h = [0.01, 0.005]
        """
    )
    if {"omega_n", "xi"} <= names_f:
        text += "omega_n = [5.0, 20.0]\nxi = 1.0\n"
    assert "h" in names_i
    spec = parse_study(text)
    assert spec.model == "fourbar"
    assert spec.runs[0].integrator == "rk4"
    assert spec.runs[0].n_cases in (2, 4)
    with pytest.raises(StudyError) as info:
        parse_study(text.replace("h = [0.01, 0.005]", "h = [0.01, 0.003]"))
    assert info.value.key == "runs[0].h[1]"


def test_spec_hash_does_not_depend_on_the_cost_model(monkeypatch):
    """Retuning the automatic batch size changes the batch plan, never the study hash."""
    from mbstudy.pipeline.plan import batches
    from mbstudy.pipeline.plan.grid import expand_grid

    text = study(HEAD, STAB)
    before = parse_study(text)
    sizes = expand_grid(before).batch_sizes
    assert sizes == {"stab": 4}  # 4 cheap cases: one batch
    monkeypatch.setattr(batches, "MAX_BATCH", 1)  # a retuned cost model
    after = parse_study(text)
    assert after.spec_hash == before.spec_hash
    assert expand_grid(after).batch_sizes == {"stab": 1}
