"""``mbstudy run`` picks a number of output samples that a fixed step fits, and says so
(issue 20); help texts render what they say (Rich markup does not eat ``[output]``)."""

from __future__ import annotations

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


@pytest.mark.parametrize("command", ["list", "examples", "plan", "launch", "reproduce", "run",
                                     "status", "aggregate", "plot", "report"])  # fmt: skip
def test_every_command_help_shows_an_example(command):
    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert f"Example: mbstudy {command}" in res.output
