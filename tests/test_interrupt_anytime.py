"""Ctrl-C at any moment of a real ``python -m mbstudy launch``: while the interpreter and
the command line import, while the LocalCluster's forkserver and workers start, and once
the cases run, the launch exits 130 with one line on stderr and no traceback; launching
again afterwards finishes the study (pipeline/cli/interrupts.py, cluster/local.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.conftest import REPO
from tests.e2e_testkit import RESUME_STUDY

pytestmark = pytest.mark.cluster

NOISE = ("Traceback", "Warning", "Error", "Exception", "not closed")
INTERRUPTED = ("mbstudy: interrupted", "interrupted: ")


def _command(study, store) -> list[str]:
    return [sys.executable, "-m", "mbstudy", "launch", str(study), "--store", str(store),
            "--workers", "2", "--progress-every", "0.2"]  # fmt: skip


def _launch(study, store) -> subprocess.Popen:
    """The launch as a terminal runs it: its own process group, which Ctrl-C signals."""
    return subprocess.Popen(_command(study, store), cwd=REPO, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _interrupt(proc: subprocess.Popen, delay: float | None) -> tuple[str, str]:
    """SIGINT to the launch's group after ``delay`` seconds, or (None) once its progress
    lines say two of the 12 cases are done (the cases running)."""
    lines = []
    if delay is None:
        for line in proc.stderr:  # ends at EOF if the launch ended first
            lines.append(line)
            if " done " in line and not line.split(" done ", 1)[1].startswith(("0/", "1/")):
                break
    else:
        time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=600)  # a hang guard, not a timing claim
    return out, "".join(lines) + err


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0, 4.0, None],
                         ids=["0.3s", "1s", "2s", "4s", "running"])  # fmt: skip
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130_then_a_launch_finishes(tmp_path, delay):
    study, store = tmp_path / "resume.toml", tmp_path / "s.zarr"
    study.write_text(RESUME_STUDY)
    proc = _launch(study, store)
    out, err = _interrupt(proc, delay)
    assert proc.returncode == 130, err
    assert not any(word in err + out for word in NOISE), err
    # one line after whatever progress the launch printed before the interrupt
    lines = [ln for ln in err.splitlines() if ln]
    first = next(i for i, ln in enumerate(lines) if ln.startswith(INTERRUPTED))
    assert lines[first:] == lines[-1:], err
    if delay is None:
        assert lines[-1].startswith("interrupted: ") and " 0 pending" not in lines[-1], err
    again = subprocess.run(_command(study, store), cwd=REPO, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert again.returncode == 0, again.stderr
    rs = ResultStore.open(store)
    assert rs.root_attrs()["complete"] is True
    assert rs.read("baumgarte", "done").all() and (rs.read("baumgarte", "status") == 0).all()


def test_the_console_script_is_the_guarded_entry_and_ctrl_c_early_is_one_line(tmp_path):
    """The installed ``mbstudy`` script calls the target ``[project.scripts]`` names, as pip's
    wrapper does (``from M import F; F()``): Ctrl-C while it imports is one line, exit 130."""
    import tomllib

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["mbstudy"]
    module, func = target.split(":")
    assert module == "mbstudy.__main__", target  # the entry under the import-time guard
    study, store = tmp_path / "resume.toml", tmp_path / "s.zarr"
    study.write_text(RESUME_STUDY)
    command = [sys.executable, "-c", f"from {module} import {func}; {func}()",
               *_command(study, store)[3:]]  # fmt: skip
    proc = subprocess.Popen(command, cwd=REPO, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    out, err = _interrupt(proc, 0.3)
    assert proc.returncode == 130, err
    assert not any(word in err + out for word in NOISE), err
    lines = [ln for ln in err.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith(INTERRUPTED), err
