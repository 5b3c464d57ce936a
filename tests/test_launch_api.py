"""The public ``launch()``: one function behind ``mbstudy.launch``,
``mbstudy.pipeline.launch`` and the CLI; keyword-only options; bad input raises before
anything is written. (A real launch through it: tests/test_pipeline_e2e.py.)"""

from __future__ import annotations

import inspect

import pytest
from mbstudy.pipeline.run.launch import LaunchError, LaunchSummary, launch

import mbstudy
from mbstudy import pipeline
from tests.conftest import STUDIES


def test_one_launch_function_with_keyword_only_options():
    assert mbstudy.launch is pipeline.launch is launch
    params = list(inspect.signature(launch).parameters.values())
    assert params[0].name == "study"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert {p.name for p in params[1:]} >= {"store", "cluster", "workers", "scheduler",
                                            "resume", "overwrite"}  # fmt: skip
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert inspect.signature(launch).return_annotation in (LaunchSummary, "LaunchSummary")


def test_the_summary_names_statuses_and_carries_the_exit_code():
    s = LaunchSummary(store="x.zarr", cases_total=3, cases_run=3, ok=2,
                      status_counts={0: 2, 3: 1}, exit_code=0)  # fmt: skip
    from mbstudy.solvers.status import STATUS_NAMES

    assert s.status_names == {"ok": 2, STATUS_NAMES[3]: 1}
    assert s.failed == 1 and s.exit_code == 0 and s.store == "x.zarr"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"resume": True, "overwrite": True}, ("--resume", "--overwrite")),
        ({"retry_failed": True, "overwrite": True}, ("--retry-failed", "--overwrite")),
        ({"cluster": "k8s"}, ("slurm or pbs", "k8s")),
    ],
)
def test_exclusive_or_unknown_options_raise_before_anything_starts(tmp_path, options, words):
    store = tmp_path / "s.zarr"
    with pytest.raises(LaunchError) as err:
        launch(STUDIES / "smoke.toml", store=store, **options)
    assert all(w in str(err.value) for w in words)
    assert not store.exists()


def test_a_missing_study_file_raises_and_writes_nothing(tmp_path):
    with pytest.raises(LaunchError, match="no such study file"):
        launch(tmp_path / "nope.toml", store=tmp_path / "s.zarr", workers=1)
    assert list(tmp_path.iterdir()) == []
