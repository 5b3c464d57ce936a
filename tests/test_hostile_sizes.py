"""Hostile sizes are refused at plan time, in one line and fast: [sizes] and [[repeat]]
counts, mechanism expressions (length, depth, exponent, magnitude, non-finite or complex
constants), the study file read under the referenced-file rules, a per-case memory
estimate against the worker's memory, and the low items of the second adversarial pass
(store paths, --out folders, the job script's quoting, plan --cluster, the dashboard's
sitemap, a mechanism summary's control characters). Every refusal goes through the real
CLI: exit status 2, one line naming the file and the key, nothing written."""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
import urllib.request

import pytest
import sympy as sp
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.study.parse import load_study
from mbstudy.pipeline.study.references import changed_model_file, model_file_record
from mbstudy.solvers.elements.netlist import NetlistError, parse_netlist
from mbstudy.solvers.mechanisms.expressions import to_sympy
from typer.testing import CliRunner

from tests.conftest import STUDIES

NFOURBAR = (STUDIES / "mechanisms" / "nfourbar.toml").read_text()
SMOKE = (STUDIES / "smoke.toml").read_text()
INERTIA = 'inertia = "m*L**2/12"'


def one_line_exit_2(res) -> str:
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert "Traceback" not in res.output
    return lines[0]


def inertia(expr: str) -> str:
    return NFOURBAR.replace(INERTIA, f'inertia = "{expr}"', 1)


# a mechanism file's hostile sizes and expressions: (file text, key, words of the message)
MECHANISMS = {
    "huge size": (NFOURBAR.replace("N = 2", "N = 1000000000"), "sizes.N", "10000"),
    "count over the items": (NFOURBAR.replace("N = 2", "N = 600"), "repeat", "2,000"),
    "count expression": (NFOURBAR.replace('count = "N"', 'count = "N*10000*10000 - 1"'),
                         "repeat[0].count", "larger than"),
    "text of the copies": (NFOURBAR.replace("N = 2", "N = 300").replace(
        '[repeat.bodies."crank{i}"]\nmass = "m"',
        '[repeat.bodies."crank{i}"]\nmass = "m' + "+0*{i}" * 10000 + '"', 1),
        "repeat", "characters"),
    "tower of powers": (inertia("m*9**9**9"), "bodies.crank0.inertia", "exponent"),
    "2**(10**10)": (inertia("m*2**(10**10)"), "bodies.crank0.inertia", "exponent"),
    "power out of range": (inertia("m*10.0**400"), "bodies.crank0.inertia", "out of the range"),
    "1e400": (inertia("m*1e400"), "bodies.crank0.inertia", "infinite"),
    "inf-inf": (inertia("1e400-1e400"), "bodies.crank0.inertia", "infinite"),
    "m/0": (inertia("m/0"), "bodies.crank0.inertia", "infinite"),
    "exp overflow": (inertia("m*exp(1000)"), "bodies.crank0.inertia", "finite real"),
    "sqrt(-1)": (inertia("m*sqrt(-1)"), "bodies.crank0.inertia", "imaginary"),
    "cube root of -8": (inertia("m*(-8)**(1/3)"), "bodies.crank0.inertia", "finite real"),
    "exp(10**300)": (inertia("m*exp(10**300)"), "bodies.crank0.inertia", "cannot be evaluated"),
    "tan(pi/2)": (inertia("m*tan(pi/2)"), "bodies.crank0.inertia", "infinite"),
    "atan2(0, 0)": (inertia("m*atan2(0, 0)"), "bodies.crank0.inertia", "nan"),
    "deep unary minus": (inertia("-" * 1900 + "m"), "bodies.crank0.inertia", "deeper"),
    "deep unary minus 5000": (inertia("-" * 5000 + "m")[:-1], "bodies.crank0.inertia",
                              "longer than"),
    "deep calls": (inertia("sin(" * 60 + "m" + ")" * 60), "bodies.crank0.inertia", "deeper"),
    "deep repeat braces": (NFOURBAR.replace('"crank{i}"', '"crank{' + "(" * 300 + "i"
                                            + ")" * 300 + '}"', 1), "repeat[0].bodies",
                           "not an integer expression"),
    "deep repeat minus": (NFOURBAR.replace('"crank{i}"', '"crank{' + "-" * 400 + 'i}"', 1),
                          "repeat[0].bodies", "deeper"),
    "5000-deep TOML array": (NFOURBAR + "\nx = " + "[" * 5000 + "]" * 5000 + "\n", "file",
                             "nested too deeply"),
    "over 4 MiB": (NFOURBAR + "#" + "x" * (4 << 20) + "\n", "file", "limit"),
}


@pytest.mark.parametrize("case", sorted(MECHANISMS))
def test_a_hostile_mechanism_file_is_one_line(tmp_path, case):
    text, key, words = MECHANISMS[case]
    path = tmp_path / "m.toml"
    path.write_text(text)
    line = one_line_exit_2(CliRunner().invoke(app, ["check-model", str(path)]))
    assert f"{path}: {key}: " in line, line
    assert words in line, line
    assert len(line) < 600, line  # the message quotes a bounded part of the text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.toml"]


def test_long_sums_and_bounded_powers_are_still_exact():
    """A 900-term sum (translated without recursion) and powers inside the bounds are the
    exact sympy values (compared with expressions sympy builds itself)."""
    m, L = sp.symbols("m L")
    names = {"m": m, "L": L}
    assert to_sympy("+".join(["m"] * 900), names) == 900 * m
    assert to_sympy("-".join(["m"] * 900), names) == -898 * m
    assert to_sympy("*".join(["L"] * 40) + "/L", names) == L**39
    assert to_sympy("2**10 + 10**300*m", names) == 1024 + sp.Integer(10) ** 300 * m
    assert to_sympy("(" * 150 + "m" + ")" * 150, names) == m  # brackets are no depth


def test_the_shipped_n_four_bar_still_expands(tmp_path):
    res = CliRunner().invoke(app, ["check-model", str(STUDIES / "mechanisms" / "nfourbar.toml")])
    assert res.exit_code == 0, res.output


def study_with(tmp_path, text: str, name: str = "s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# study files: (text edit, key, words)
STUDIES_BAD = {
    "halving underflow": (lambda s: s.replace("h = [0.005, 0.0025]\n\n[[runs]]",
                                              "h = {halving = 0.02, num = 2000}\n\n[[runs]]", 1),
                          "runs[0].h", "smallest normal float"),
    "memory 0GB": (lambda s: s + '\n[cluster]\nkind = "slurm"\nmemory = "0GB"\n',
                   "cluster.memory", "256MiB"),
    "store /": (lambda s: s.replace('store = "results/smoke.zarr"', 'store = "/"'),
                "output.store", "root"),
    "store with NUL": (lambda s: s.replace('store = "results/smoke.zarr"',
                                           'store = "a\\u0000b.zarr"'), "output.store", "NUL"),
    "store too long": (lambda s: s.replace('store = "results/smoke.zarr"',
                                           f'store = "{"a" * 300}/x.zarr"'),
                       "output.store", "255 bytes"),
    "deep TOML array": (lambda s: s + "\nx = " + "[" * 5000 + "]" * 5000 + "\n", "(toml)",
                        "nested too deeply"),
    "samples 20000001 with q, v, lam": (
        lambda s: s.replace("samples = 101", "samples = 20000001")
        .replace("h = [0.005, 0.0025]", "h = [5e-8]")
        .replace('series = ["phi_norm", "energy", "lam"]', 'series = ["q", "v", "lam"]'),
        "study.samples", "GB"),
    "steps without end": (lambda s: s.replace("h = [0.005, 0.0025]", "h = [1e-300]", 1),
                          "runs[0].h[0]", "steps"),
}


@pytest.mark.parametrize("case", sorted(STUDIES_BAD))
def test_a_hostile_study_is_one_line_at_plan_time(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    edit, key, words = STUDIES_BAD[case]
    path = study_with(tmp_path, edit(SMOKE))
    line = one_line_exit_2(CliRunner().invoke(app, ["plan", str(path)]))
    assert f"{path}: {key}: " in line, line
    assert words in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_model_too_large_for_a_worker_is_refused_before_its_matrices(tmp_path):
    """nfourbar with n = 1e5 (600,003 coordinates): the dense matrices alone are ~3e13
    bytes; refused naming the figure instead of an ArrayMemoryError in the assembly."""
    text = (STUDIES / "nfourbar.toml").read_text().replace("n = 2", "n = 100000")
    line = one_line_exit_2(CliRunner().invoke(app, ["plan", str(study_with(tmp_path, text))]))
    assert ": model: " in line and "n = 600003" in line and "GB" in line, line


def test_the_memory_estimate_lets_the_shipped_studies_plan():
    for name in ("smoke", "nfourbar", "spring_damper", "mech_nfourbar"):
        res = CliRunner().invoke(app, ["plan", str(STUDIES / f"{name}.toml")])
        assert res.exit_code == 0, (name, res.output)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "directory", "binary", "big"])
def test_the_study_file_gets_the_referenced_file_rules(tmp_path, special):
    """Run in a subprocess with a timeout: a FIFO used to block plan forever and
    /dev/zero to be read until memory ran out."""
    path = tmp_path / "s.toml"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "directory":
        path.mkdir()
    elif special == "binary":
        path.write_bytes(SMOKE.encode() + b"\n# \xff\xfe\n")
    elif special == "big":
        path.write_text(SMOKE + "#" + "x" * (4 << 20) + "\n")
    else:
        path = "/dev/zero"
    for command in ("plan", "launch"):
        res = subprocess.run([sys.executable, "-m", "mbstudy", command, str(path)],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path,
                             env={**os.environ, "MBSTUDY_FORKSERVER": "0"})  # fmt: skip
        assert res.returncode == 2, res.stderr
        lines = (res.stdout + res.stderr).strip().splitlines()
        assert len(lines) == 1 and f"{path}: (file): cannot read the study file" in lines[0]


def test_a_tilde_store_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    path = study_with(tmp_path, SMOKE.replace('store = "results/smoke.zarr"',
                                              'store = "~/x.zarr"'))
    assert load_study(path).output.store == str(tmp_path / "home" / "x.zarr")
    res = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert json.loads(res.output)["store"] == str(tmp_path / "home" / "x.zarr")


@pytest.mark.parametrize("setting", ["h=5e-324", "h=1e-300"])
def test_run_with_a_step_that_never_ends_is_one_line(setting):
    line = one_line_exit_2(CliRunner().invoke(app, ["run", "--model", "fourbar", "--set",
                                                    setting]))
    assert "runs[0].h" in line


def test_run_with_more_samples_than_memory_is_one_line():
    line = one_line_exit_2(CliRunner().invoke(app, [
        "run", "--model", "fourbar", "--samples", "100000001", "--set", "h=1e-8"]))
    assert "study.samples" in line and "GB" in line, line


@pytest.mark.parametrize("command", ["plot", "report"])
@pytest.mark.parametrize("where", ["under-a-file", "is-a-file"])
def test_an_unwritable_out_folder_is_one_line(tmp_path, command, where):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    out = blocker / "figs" if where == "under-a-file" else blocker
    line = one_line_exit_2(CliRunner().invoke(app, [command, str(tmp_path / "none.zarr"),
                                                    "--out", str(out)]))
    assert line.startswith(f"mbstudy: error: --out {out}: cannot write there"), line


def test_control_characters_of_a_summary_never_reach_the_terminal(tmp_path):
    text = (STUDIES / "mechanisms" / "fourbar.toml").read_text()
    path = tmp_path / "m.toml"
    path.write_text(re.sub(r"(?m)^summary = .*$",
                           r'summary = "red \\u001b[31m bell \\u0007 \\u202e rtl"', text))
    res = CliRunner().invoke(app, ["check-model", str(path)])
    assert res.exit_code == 0, res.output
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e]", res.output), repr(res.output)
    assert "red \\x1b[31m bell \\x07 \\u202e rtl" in res.output


def test_an_edited_mechanism_file_is_named(tmp_path):
    mech = tmp_path / "m.toml"
    mech.write_text((STUDIES / "mechanisms" / "fourbar.toml").read_text())
    study = study_with(tmp_path, SMOKE.replace('model = "fourbar"', 'model = "m.toml"'))
    spec = load_study(study)
    attrs = dict(model_file_record(spec.model))  # what the store's root attributes record
    assert changed_model_file(attrs, spec) == []
    mech.write_text(mech.read_text() + "# edited\n")
    assert changed_model_file(attrs, load_study(study)) == [f"study.model ({mech})"]


def test_netlist_checks_hold_on_a_large_netlist():
    """The dictionary checks find the same duplicates as before, at any size."""
    lines = ["# BASE: 0", "# STRUCTURE:"]
    lines += [f"s{i} ' K ({i} {i + 1}; 20000)\nm{i} ' M ({i + 1}; 0.1)" for i in range(5000)]
    net = parse_netlist("\n".join(lines) + "\n")
    assert len(net.elements) == 10_000 and len(net.free_nodes) == 5000
    with pytest.raises(NetlistError, match=r"duplicate element name 's7' \(first on line 17\)"):
        parse_netlist("\n".join([*lines, "s7 ' K (1 2; 1)"]) + "\n")
    init = "\n# INITIAL:\n1 (x = 0.5)\n2 (v = 1)\n1 (v = 2)\n"
    with pytest.raises(NetlistError, match=r"node '1' given twice \(line 10004\)"):
        parse_netlist("\n".join(lines) + init)


# ---------------------------------------------------------------------------- job scripts
def _worker_line(script: str) -> str:
    return next(line for line in script.splitlines() if "distributed.cli.dask_worker" in line)


@pytest.mark.parametrize("python", ["/opt/my env/bin/python", "/opt/x;touch pwned/python"])
def test_the_job_script_quotes_the_interpreter(monkeypatch, tmp_path, python):
    from mbstudy.pipeline.cluster.jobqueue import render_job_script

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", python)
    line = _worker_line(render_job_script("slurm", None, "mbs-0123456789"))
    words = shlex.split(line)
    assert words[0] == python and words[1:3] == ["-m", "distributed.cli.dask_worker"]
    assert list(tmp_path.iterdir()) == []  # rendering writes no TLS files


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_plan_renders_the_script_launch_submits(tmp_path, monkeypatch, kind):
    """The same script (the scheduler's address and the TLS files' random names aside)
    as the dask-jobqueue cluster launch starts, with the job name launch gives the store."""
    from mbstudy.pipeline.cluster.jobqueue import jobqueue_cluster
    from mbstudy.pipeline.cluster.jobs import job_name

    monkeypatch.chdir(tmp_path)
    study = study_with(tmp_path, SMOKE + f'\n[cluster]\nkind = "{kind}"\nqueue = "short"\n'
                       'cores = 2\nmemory = "4GB"\nwalltime = "00:30:00"\n')
    res = CliRunner().invoke(app, ["plan", str(study), "--cluster", kind, "--json"])
    assert res.exit_code == 0, res.output
    planned = json.loads(res.output)["job_script"]
    assert list(tmp_path.iterdir()) == [study]
    spec = load_study(study)
    jc = jobqueue_cluster(kind, spec.cluster, job_name=job_name(tmp_path / "results"
                                                                / "smoke.zarr"))
    try:
        submitted = jc.job_script()
    finally:
        jc.close()

    def plain(script: str) -> str:
        script = re.sub(r"tls://[^ ]+:\d+", "tls://SCHEDULER", script, count=1)
        return re.sub(r"(\.dask-jobqueue\.worker\.\w+\.)\w+", r"\1X", script)

    assert plain(planned) == plain(submitted)
    assert job_name(tmp_path / "results" / "smoke.zarr") in planned


def test_the_sitemap_answers_without_a_traceback(caplog):
    from distributed import Client
    from mbstudy.pipeline.cluster.local import attach_dashboard, close_cluster, local_cluster

    cluster = local_cluster(1)
    try:
        with Client(cluster) as client:
            assert attach_dashboard(client)
            base = cluster.dashboard_link.rsplit("/", 1)[0]
            with caplog.at_level(logging.ERROR, logger="tornado"):
                with urllib.request.urlopen(base + "/sitemap.json", timeout=30) as r:
                    assert r.status == 200 and "paths" in json.loads(r.read())
            assert not [r for r in caplog.records if r.name.startswith("tornado")]
    finally:
        close_cluster(cluster)


def test_the_memory_estimate_is_at_least_what_a_case_holds():
    """The estimate's parts against the arrays a real (interpreted) case returns: the
    sampled series a batch keeps per case are exactly ``S * sum(width) * 8`` bytes, and
    the case's trajectory (q, v, lam over S samples) fits the trajectory allowance."""
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.plan.memory import batch_bytes
    from mbstudy.pipeline.run.batch import engine_kernel, run_one

    text = (SMOKE.replace("samples = 101", "samples = 11").replace("t_end = 1.0", "t_end = 0.05")
            .replace('series = ["phi_norm", "energy", "lam"]', 'series = ["q", "v", "lam"]'))
    from mbstudy.pipeline.study.parse import parse_study

    spec = parse_study(text)
    block = expand_grid(spec).blocks[0]
    cp = block.case_params(0)
    kernel = engine_kernel("python", cp.model, cp.formulation, cp.integrator)
    status, _metrics, ser, err = run_one(cp, None, spec.output.series, kernel)
    assert err == "" or status == 0, err
    n, m = ser["q"].shape[-1], ser["lam"].shape[-1]
    held = sum(v.nbytes for v in ser.values())
    with_series, _ = batch_bytes(cp.samples, spec.output.series, n, m, 1)
    without, _ = batch_bytes(cp.samples, spec.output.series, n, m, 0)
    assert with_series - without == held  # the batch's copy of one case's series
    assert without >= 2 * held  # the case's own trajectory and its reference's


@pytest.mark.parametrize("special", ["fifo", "big", "binary"])
def test_load_netlist_reads_under_the_same_rules(tmp_path, special):
    from mbstudy.solvers.elements.netlist import load_netlist

    path = tmp_path / "n.net"
    good = (STUDIES / "networks" / "spring_damper.net").read_bytes()
    if special == "fifo":
        os.mkfifo(path)  # opened without blocking: refused at once, no writer needed
    elif special == "big":
        path.write_bytes(good + b"!" + b"x" * (4 << 20) + b"\n")
    else:
        path.write_bytes(good + b"! \xff\n")
    with pytest.raises(OSError, match="cannot read the netlist"):
        load_netlist(path)


def test_control_characters_of_a_mechanism_name_never_reach_the_terminal(tmp_path):
    """The name is shown by plan and recorded in the store's attributes, like the
    summary: escaped, one line of what the file says; check-model still assembles it."""
    from mbstudy.solvers.mechanisms import schema

    text = (STUDIES / "mechanisms" / "fourbar.toml").read_text()
    path = tmp_path / "m.toml"
    path.write_text(re.sub(r'(?m)^name = .*$', r'name = "bar \\u001b[2J \\u0007 end"', text,
                           count=1))
    assert schema.read(path).name == "bar \\x1b[2J \\x07 end"
    res = CliRunner().invoke(app, ["check-model", str(path)])
    assert res.exit_code == 0, res.output
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", res.output), repr(res.output)
