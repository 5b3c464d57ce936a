"""``mbstudy run`` picks a number of output samples that a fixed step fits, and says so;
help texts render what they say (Rich markup does not eat ``[output]``)."""

from __future__ import annotations

import re

import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.run.single import DEFAULT_SAMPLES, default_samples, resolve_samples
from typer.testing import CliRunner


@pytest.mark.parametrize("t_end, h, want", [
    (1.0, 0.0025, 201),   # 400 steps: 300 does not divide 400, 200 does
    (1.0, 0.01, 101),     # 100 steps: every step an output time
    (1.0, 0.001, 251),    # 1000 steps: the largest divisor <= 300 is 250
    (0.03, 1e-4, 301),    # 300 steps: the default fits
    (1.0, 0.003, DEFAULT_SAMPLES),  # h does not divide t_end: the study check reports it
])  # fmt: skip
def test_default_samples_is_the_most_output_times_the_step_fits(t_end, h, want):
    n = default_samples(t_end, h)
    assert n == want
    steps = round(t_end / h)
    if steps * h == pytest.approx(t_end):
        assert steps % (n - 1) == 0  # h divides the output interval t_end / (n - 1)
        assert all(steps % (m - 1) for m in range(n + 1, DEFAULT_SAMPLES + 1))


def test_resolve_samples_keeps_a_given_count_and_explains_a_chosen_one():
    assert resolve_samples("fourbar", "rk4", 1.0, 51, ["h=0.0025"]) == (51, "")
    n, note = resolve_samples("fourbar", "rk4", 1.0, None, ["h=0.0025", "omega_n=5"])
    assert n == 201 and "201" in note and "--samples" in note
    assert resolve_samples("fourbar", "dopri5", 1.0, None, ["rtol=1e-6"]) == (DEFAULT_SAMPLES, "")


def test_help_texts_render_brackets_and_show_an_example():
    runner = CliRunner()
    launch = runner.invoke(app, ["launch", "--help"], env={"COLUMNS": "200"})
    assert launch.exit_code == 0 and "[output] store" in launch.output
    run = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "Example: mbstudy run --model fourbar" in run.output


def test_aggregate_states_its_reduction_and_what_it_pools():
    import pandas as pd
    from mbstudy.pipeline.analysis.aggregate import reduce_cases, reduction_title

    df = pd.DataFrame({"group": ["b"] * 4, "h": [0.01, 0.01, 0.02, 0.02],
                       "omega_n": [5.0, 20.0, 5.0, 20.0], "xi": [1.0] * 4,
                       "status": ["ok", "ok", "ok", "diverged"],
                       "rms_phi": [1.0, 3.0, 10.0, 99.0]})  # fmt: skip
    title = reduction_title(df, ["h"])
    assert title == "median over the ok cases of each block and h (pooling omega_n)"
    table = reduce_cases(df, ["h"], ["rms_phi"])
    assert table["rms_phi"].tolist() == [2.0, 10.0]  # the diverged case is not reduced
    assert table["failed"].tolist() == [0, 1]


def _commands() -> dict:
    import typer.main

    return typer.main.get_command(app).commands


def _flat(text: str) -> str:
    """Whitespace normalised; a word Click's wrapper broke after its hyphen
    ("work-" / "precision") joined again (on both sides of a comparison)."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def test_the_help_test_covers_every_command():
    assert set(_commands()) == set(COMMANDS)


COMMANDS = ["list", "examples", "plan", "launch", "reproduce", "run", "status", "aggregate",
            "verify", "plot", "report", "check-model", "certify", "warm", "cache",
            "boundary"]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_shows_an_example_and_renders_as_written(command):
    """Every option's help text appears verbatim (Rich markup would eat "[output]"), flags
    carry no "<bool>" placeholder, arguments are named like Click's (STUDY, not {study})."""
    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    out = res.output
    assert f"Example: mbstudy {command}" in out
    assert "<bool>" not in out and "list[" not in out
    assert "{" not in out.splitlines()[0]  # the usage line
    cmd = _commands()[command]
    for param in cmd.params:
        if param.help:
            assert _flat(param.help) in _flat(out), (command, param.name)
        if getattr(param, "is_flag", False) and param.name != "help":
            # a flag is "--json" (or "--x / --no-x"), never followed by a value placeholder
            flag = param.opts[0]
            line = next(ln for ln in out.splitlines() if ln.strip().startswith(flag))
            assert "<" not in line.split(param.help.split()[0])[0], line


def test_root_help_lists_every_command_with_its_whole_summary():
    res = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0 and "<bool>" not in res.output
    for name, cmd in _commands().items():
        summary = _flat(cmd.help.split("\n\n")[0])
        assert _flat(summary) in _flat(res.output), name  # not cut at 45 characters
