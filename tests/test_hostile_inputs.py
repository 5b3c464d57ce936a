"""Hostile inputs beyond the study file's keys: store locations that are URLs or
sit under a regular file, names too long for a file system, malformed ``run --set``,
non-finite numbers in ``run --json``; and a Hypothesis fuzzer of the study parser (any
mutation of a valid study is either a valid study or one StudyError line, never another
exception). Every refusal is one line, exit status 2, and nothing is written."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.pipeline.study.spec import StudyError
from typer.testing import CliRunner

from tests.conftest import STUDIES

SMOKE = (STUDIES / "smoke.toml").read_text()
# store locations that can never work, with what the one line must say (tests/test_s3.py
# runs real stores on an S3 server); s3:// here has no credentials and no server
URLS = {
    "memory://x.zarr": "not shared with the workers",
    "s3:/bucket/x.zarr": "did you mean s3://bucket/x.zarr",
    "nosuch://bucket/x.zarr": "no fsspec implementation",
    "gs://bucket/x.zarr": "not installed",
    "az://c/x.zarr": "not installed",
    "s3://bucket/x.zarr": "Unable to locate credentials",
}
# commands that only read: any reachable fsspec location; launch needs a writable one
READ_ONLY_URLS = {"http://127.0.0.1:1/x.zarr": "read-only",
                  "https://example.invalid/x.zarr": "read-only"}


def one_line_exit_2(res) -> str:
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    return lines[0]


def no_aws(monkeypatch, tmp_path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


COMMANDS = ["launch", "status", "verify", "aggregate", "plot"]


@pytest.mark.parametrize(("command", "url"), [
    *((c, u) for u in URLS for c in COMMANDS),
    *(("launch", u) for u in READ_ONLY_URLS),  # reading over http(s) is not refused
])  # fmt: skip
def test_a_store_url_is_refused_not_mapped_to_a_local_folder(tmp_path, monkeypatch, url,
                                                             command):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MBSTUDY_FORKSERVER", "0")
    no_aws(monkeypatch, tmp_path)
    study = tmp_path / "s.toml"
    study.write_text(SMOKE)
    args = ([command, str(study), "--store", url, "--scheduler", "tls://127.0.0.1:9"]
            if command == "launch" else [command, url])
    line = one_line_exit_2(CliRunner().invoke(app, args))
    assert {**URLS, **READ_ONLY_URLS}[url] in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]  # no "s3:" folder


@pytest.mark.parametrize("url", ["memory://x.zarr", "gs://bucket/x.zarr"])
def test_a_study_whose_output_store_is_an_unusable_url_is_refused(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MBSTUDY_FORKSERVER", "0")
    no_aws(monkeypatch, tmp_path)
    study = tmp_path / "s.toml"
    study.write_text(SMOKE.replace('store = "results/smoke.zarr"', f'store = "{url}"'))
    line = one_line_exit_2(CliRunner().invoke(app, ["launch", str(study), "--scheduler",
                                                    "tls://127.0.0.1:9"]))
    assert URLS[url] in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


@pytest.mark.parametrize("where", ["under-a-file", "under-a-file-deeper"])
def test_a_store_path_under_a_regular_file_is_one_line(tmp_path, monkeypatch, where):
    monkeypatch.setenv("MBSTUDY_FORKSERVER", "0")
    (tmp_path / "afile").write_text("x")
    store = tmp_path / "afile" / ("x.zarr" if where == "under-a-file" else "a/b/x.zarr")
    study = tmp_path / "s.toml"
    study.write_text(SMOKE)
    line = one_line_exit_2(CliRunner().invoke(app, ["launch", str(study), "--store",
                                                    str(store), "--workers", "1"]))
    assert "afile" in line
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize(("old", "new", "key"), [
    ('name = "baumgarte"', f'name = "{"b" * 300}"', "runs[1].name"),
    ('name = "baumgarte"', f'name = "{"b" * 101}"', "runs[1].name"),
    ('name = "smoke"', f'name = "{"s" * 300}"', "study.name"),
    ('name = "smoke"', 'name = "a\\u0000b"', "study.name"),
    ('name = "smoke"', 'name = "a\\nb"', "study.name"),
    ('name = "baumgarte"', 'name = "b\\nc"', "runs[1].name"),
    ('name = "baumgarte"', 'name = "../../etc"', "runs[1].name"),
])
def test_names_that_cannot_be_file_names_are_refused(tmp_path, old, new, key):
    study = tmp_path / "s.toml"
    study.write_text(SMOKE.replace(old, new, 1))
    store = tmp_path / "out.zarr"
    line = one_line_exit_2(CliRunner().invoke(app, ["launch", str(study), "--store",
                                                    str(store)]))
    assert key in line, line
    assert not store.exists()


@pytest.mark.parametrize("setting", ["=5", "=", "", "h", " = 1", "a b=1", "h;rm=1",
                                     "model.=1", "$(x)=1", "h\n=1"])
def test_a_malformed_run_set_is_one_line(setting):
    line = one_line_exit_2(CliRunner().invoke(app, ["run", "--model", "fourbar", "--set",
                                                    setting]))
    assert "--set" in line or "run" in line, line


def test_run_json_is_strict_json_with_null_for_nan():
    res = CliRunner().invoke(app, ["run", "--model", "fourbar", "--formulation", "baumgarte",
                                   "--integrator", "rk4", "--t-end", "1", "--samples", "11",
                                   "--set", "h=0.1", "--set", "omega_n=1000", "--json"])
    assert res.exit_code == 0, res.output

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    # stdout only: a note (e.g. that the case ran interpreted) goes to stderr
    out = json.loads(res.stdout, parse_constant=refuse)  # NaN / Infinity would raise
    assert out["status"] in ("diverged", "nan")
    assert out["metrics"]["rms_phi"] is None
    assert all(v is None or math.isfinite(v) for v in out["metrics"].values())


# ---------------------------------------------------------------------------- fuzzing
LINES = SMOKE.splitlines()
ASSIGNMENTS = [i for i, ln in enumerate(LINES) if "=" in ln and not ln.lstrip().startswith("#")]

toml_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(
        lambda x: "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        if math.isinf(x) else repr(x)),
    st.text(max_size=40).map(lambda s: json.dumps(s)),
    st.sampled_from(["true", "false", "[]", "{}", "[1, \"a\"]", "[[1.0]]", "{a = 1}",
                     "1979-05-27", "[nan]", "-0.0", "1e308", "1e-320", "0x10"]),
)
toml_values = st.one_of(toml_scalars, st.lists(toml_scalars, max_size=4).map(
    lambda xs: "[" + ", ".join(xs) + "]"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ASSIGNMENTS), toml_values), min_size=1,
                max_size=3))
def test_fuzzed_studies_parse_or_fail_with_one_study_error(edits):
    lines = list(LINES)
    for i, value in edits:
        key = lines[i].split("=", 1)[0]
        lines[i] = f"{key}= {value}"
    text = "\n".join(lines)
    try:
        parse_study(text)
    except StudyError as exc:
        msg = str(exc)
        assert msg and len(msg.splitlines()) == 1, msg


@pytest.mark.parametrize("address", ["tls://127.0.0.1:9", "garbage", "tcp://127.0.0.1",
                                     "inproc://x", "tcp://[::1:80", "tcp://127.0.0.1:99999"])
def test_a_bad_scheduler_address_is_one_line_before_anything_is_written(tmp_path, address):
    study = tmp_path / "s.toml"
    study.write_text(SMOKE)
    store = tmp_path / "out.zarr"
    line = one_line_exit_2(CliRunner().invoke(app, ["launch", str(study), "--store",
                                                    str(store), "--scheduler", address]))
    assert "--scheduler" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_references_count_toward_max_cases():
    base = SMOKE.replace('name = "smoke"', 'name = "smoke"\nmax_cases = {}', 1)
    base = base.replace("xi = 1.0", "xi = 1.0\nmodel.L3 = [1.9, 2.0, 2.1]", 1)
    cases = sum(r.n_cases for r in parse_study(base.format(10**6)).runs)
    # the cases alone fit; with the references (3 for the swept block, 1 for the other:
    # the bound counts per block) they do not
    with pytest.raises(StudyError, match="up to 4 references"):
        parse_study(base.format(cases))
    assert parse_study(base.format(cases + 4)).max_cases == cases + 4


def huge_study(per_axis: int) -> str:
    """smoke.toml plus a block of per_axis^3 cases (h divides the output interval 0.01)."""
    values = ", ".join(str(1.0 + k) for k in range(per_axis))
    steps = ", ".join(repr(0.01 / (k + 1)) for k in range(per_axis))
    return SMOKE.replace("[output]", "\n".join([
        "[[runs]]", 'name = "huge"', 'formulation = "baumgarte"', 'integrator = "rk4"',
        f"h = [{steps}]", f"omega_n = [{values}]", f"xi = [{values}]", "", "[output]"]))


def test_force_on_a_10e9_grid_is_refused_with_the_estimate(tmp_path):
    study = tmp_path / "huge.toml"
    study.write_text(huge_study(1000))
    store = tmp_path / "huge.zarr"
    for command in (["plan", str(study), "--force"],
                    ["launch", str(study), "--force", "--store", str(store)]):
        line = one_line_exit_2(CliRunner().invoke(app, command))
        assert "even with force" in line and "GiB" in line, line
    assert not store.exists()
    spec = parse_study(huge_study(100), force=True)  # 10^6: over the budget, allowed by force
    assert sum(r.n_cases for r in spec.runs) > 10**6
