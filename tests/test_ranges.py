"""Axes written as ranges: linear and logarithmic by count, linear by step,
halving step sequences; expanded to the exact values that run (12 significant digits,
checked against numpy's own linspace / geomspace), validated like written lists, and a
malformed range is one line naming the file and key."""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.pipeline.study.ranges import RangeError, expand, is_range
from mbstudy.pipeline.study.spec import StudyError

from tests.conftest import fourbar_study_head


def study(axes: str) -> str:
    return fourbar_study_head("ranges", 1.0, 11) + f"""
[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
{axes}
"""


def test_linear_by_count_is_numpys_linspace_to_12_digits_with_exact_ends():
    vals = expand({"start": 1.0, "stop": 100.0, "num": 100})
    np.testing.assert_allclose(vals, np.linspace(1.0, 100.0, 100), rtol=1e-12)
    assert vals[0] == 1.0 and vals[-1] == 100.0 and len(vals) == 100
    assert expand({"start": 0.0, "stop": 1.0, "num": 11})[3] == 0.3  # not 0.30000000000000004


def test_by_step_and_log_and_halving():
    assert expand({"start": 0.1, "stop": 0.5, "step": 0.1}) == [0.1, 0.2, 0.3, 0.4, 0.5]
    logs = expand({"log": [1.0, 1000.0], "num": 13})
    np.testing.assert_allclose(logs, np.geomspace(1.0, 1000.0, 13), rtol=1e-12)
    assert logs[0] == 1.0 and logs[4] == 10.0 and logs[-1] == 1000.0
    assert expand({"halving": 0.02, "num": 6}) == [0.02, 0.01, 0.005, 0.0025, 0.00125, 0.000625]


@pytest.mark.parametrize("table, words", [
    ({"start": 1.0, "stop": 2.0}, "a range is one of"),
    ({"start": 1.0, "stop": 2.0, "num": 0}, "num"),
    ({"start": 1.0, "stop": 2.0, "num": 2.5}, "num"),
    ({"start": 0.0, "stop": 1.0, "step": 0.3}, "whole number of steps"),
    ({"start": 1.0, "stop": 0.0, "step": 0.5}, "does not lead"),
    ({"log": [0.0, 10.0], "num": 3}, "> 0"),
    ({"halving": -0.1, "num": 3}, "> 0"),
    ({"start": 1.0, "stop": 2.0, "nmu": 3}, "unknown key 'nmu'"),
])  # fmt: skip
def test_malformed_ranges_say_what_is_wrong(table, words):
    with pytest.raises(RangeError, match=words):
        expand(table)


def test_a_study_axis_written_as_a_range_runs_its_expanded_values():
    spec = parse_study(study('h = { halving = 0.02, num = 3 }\n'
                             'omega_n = { log = [1.0, 100.0], num = 5 }\nxi = 1.0\n'
                             '"model.L3" = { start = 0.38, stop = 0.42, step = 0.01 }'))
    block = expand_grid(spec).blocks[0]
    assert sorted(set(block.axis_values("h").tolist()), reverse=True) == [0.02, 0.01, 0.005]
    assert sorted(set(block.axis_values("omega_n").tolist())) == [1.0, 3.16227766017, 10.0,
                                                                 31.6227766017, 100.0]
    assert sorted(set(block.axis_values("model.L3").tolist())) == [0.38, 0.39, 0.4, 0.41, 0.42]
    # the same study written as lists is the same grid
    listed = parse_study(study("h = [0.02, 0.01, 0.005]\n"
                               "omega_n = [1.0, 3.16227766017, 10.0, 31.6227766017, 100.0]\n"
                               'xi = 1.0\n"model.L3" = [0.38, 0.39, 0.4, 0.41, 0.42]'))
    other = expand_grid(listed).blocks[0]
    assert other.n_cases == block.n_cases == 75
    for name in ("h", "omega_n", "model.L3"):
        assert other.axis_values(name).tolist() == block.axis_values(name).tolist()


def test_a_bad_range_in_a_study_is_one_line_naming_the_key():
    with pytest.raises(StudyError) as err:
        parse_study(study("h = 0.01\nomega_n = { start = 1.0, stop = 5.0 }\nxi = 1.0"))
    assert "runs[0].omega_n" in str(err.value) and "range" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(StudyError) as err:  # expanded values are validated like a list
        parse_study(study("h = 0.01\nomega_n = { start = -1.0, stop = 5.0, num = 3 }\n"
                          "xi = 1.0"))
    assert "runs[0].omega_n[0]" in str(err.value)


def test_is_range_only_for_range_tables():
    assert is_range({"start": 1, "stop": 2, "num": 3})
    assert not is_range({"k": 1.0}) and not is_range([1, 2]) and not is_range({})
