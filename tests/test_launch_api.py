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


# hashes of the shipped studies computed by mbstudy before the automatic batch sizes left
# the hash (commit 3f1a3b0), with the batch sizes those stores recorded
LEGACY = {
    "smoke.toml": (
        "c818516e33b0be657aed314f8034ac2042c2fb2ef3387be61c6342f5f8aa504b",
        {"none": 2, "baumgarte": 4},
    ),
    "fourbar_baumgarte.toml": (
        "781842109fbfda9dfb1bf18a9315285c3ce8dae64cc87ed973eb270d03ff8d1f",
        {"none": 3, "baumgarte": 36},
    ),
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_stores_made_before_the_batch_plan_left_the_hash_still_resume(name):
    from mbstudy.pipeline.study import load_study
    from mbstudy.pipeline.study.hashing import store_hash_matches

    spec = load_study(STUDIES / name)
    legacy, sizes = LEGACY[name]
    assert spec.spec_hash != legacy  # the hash no longer holds the automatic batch sizes
    assert store_hash_matches(spec, spec.spec_hash, sizes)
    assert store_hash_matches(spec, legacy, sizes)
    other = {k: v + 1 for k, v in sizes.items()}
    assert not store_hash_matches(spec, legacy, other)  # not this study's old hash
    assert not store_hash_matches(spec, "0" * 64, sizes)
