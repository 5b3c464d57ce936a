"""Ctrl-C at any moment of a real ``python -m mbstudy launch``: while the interpreter and
the command line import, while the LocalCluster's forkserver and workers start, and once
the cases run (pressed once, or twice 0.2 s apart), the launch exits 130 with one line on
stderr and no traceback; launching again afterwards finishes the study
(pipeline/cli/interrupts.py, cluster/local.py, cluster/workerlogs.py). Each launch is a
terminal job: Ctrl-C is SIGINT to its whole process group (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.conftest import REPO, ctrl_c, mbstudy_command, terminal_job
from tests.e2e_testkit import RESUME_STUDY

pytestmark = pytest.mark.cluster

NOISE = ("Traceback", "Warning", "Error", "Exception", "not closed")
INTERRUPTED = ("mbstudy: interrupted", "interrupted: ")


def _args(study, store) -> list[str]:
    return ["launch", str(study), "--store", str(store), "--workers", "2",
            "--progress-every", "0.2"]  # fmt: skip


def _command(study, store) -> list[str]:
    return [sys.executable, "-m", "mbstudy", *_args(study, store)]


def _interrupt(proc: subprocess.Popen, delay: float | None, times: int = 1) -> tuple[str, str]:
    """Ctrl-C (``times`` presses) on the launch after ``delay`` seconds, or (None) once its
    progress lines say two of the 12 cases are done (the cases running)."""
    lines = []
    if delay is None:
        for line in proc.stderr:  # ends at EOF if the launch ended first
            lines.append(line)
            if " done " in line and not line.split(" done ", 1)[1].startswith(("0/", "1/")):
                break
    else:
        time.sleep(delay)
    ctrl_c(proc, times)
    out, err = proc.communicate(timeout=600)  # a hang guard, not a timing claim
    return out, "".join(lines) + err


def _one_line_and_130(proc: subprocess.Popen, out: str, err: str) -> list[str]:
    """Exit 130, nothing noisy, one line after whatever progress the launch printed."""
    assert proc.returncode == 130, err
    assert not any(word in err + out for word in NOISE), err
    lines = [ln for ln in err.splitlines() if ln]
    first = next(i for i, ln in enumerate(lines) if ln.startswith(INTERRUPTED))
    assert lines[first:] == lines[-1:], err
    return lines


def _finishes(study, store) -> None:
    again = subprocess.run(_command(study, store), cwd=REPO, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert again.returncode == 0, again.stderr
    rs = ResultStore.open(store)
    assert rs.root_attrs()["complete"] is True
    assert rs.read("baumgarte", "done").all() and (rs.read("baumgarte", "status") == 0).all()


@pytest.mark.parametrize(("delay", "times"),
                         [(0.3, 1), (1.0, 1), (2.0, 1), (4.0, 1), (None, 1), (None, 2)],
                         ids=["0.3s", "1s", "2s", "4s", "running", "running-twice"])  # fmt: skip
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130_then_a_launch_finishes(
    tmp_path, delay, times
):
    study, store = tmp_path / "resume.toml", tmp_path / "s.zarr"
    study.write_text(RESUME_STUDY)
    proc = terminal_job(_command(study, store), cwd=REPO)
    out, err = _interrupt(proc, delay, times)
    lines = _one_line_and_130(proc, out, err)
    if delay is None:
        assert lines[-1].startswith("interrupted: ") and " 0 pending" not in lines[-1], err
    _finishes(study, store)


def test_the_console_script_is_the_guarded_entry_and_ctrl_c_early_is_one_line(tmp_path):
    """The installed ``mbstudy`` script calls the target ``[project.scripts]`` names, as pip's
    wrapper does (``from M import F; sys.exit(F())``): Ctrl-C while it imports is one line,
    exit 130."""
    import tomllib

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["mbstudy"]
    module, func = target.split(":")
    assert module == "mbstudy.__main__", target  # the entry under the import-time guard
    study, store = tmp_path / "resume.toml", tmp_path / "s.zarr"
    study.write_text(RESUME_STUDY)
    command = [sys.executable, "-c", f"import sys; from {module} import {func}; sys.exit({func}())",
               *_args(study, store)]  # fmt: skip
    proc = terminal_job(command, cwd=REPO)
    out, err = _interrupt(proc, 0.3)
    lines = _one_line_and_130(proc, out, err)
    assert len(lines) == 1, err


def test_the_console_script_mid_run_is_one_line_exit_130_with_the_counts(tmp_path):
    """The console script as installed (``mbstudy_command``: the venv's ``mbstudy``) pressed
    Ctrl-C while the cases run: exit 130 and the one line with the store's counts."""
    study, store = tmp_path / "resume.toml", tmp_path / "s.zarr"
    study.write_text(RESUME_STUDY)
    proc = terminal_job([*mbstudy_command(), *_args(study, store)], cwd=REPO)
    out, err = _interrupt(proc, None)
    lines = _one_line_and_130(proc, out, err)
    assert lines[-1].startswith("interrupted: ") and " 0 pending" not in lines[-1], err
