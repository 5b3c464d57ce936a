"""Quiet, consistent launches, with real processes: a worker killed mid-launch (Dask
restarts it) leaves no traceback or warning on stderr; Ctrl-C prints one line and exits
130 with the counts ``mbstudy status`` then reports; ``mbstudy.launch()`` works from a
plain script and from stdin without a ``__main__`` guard (the README's snippet, run both
ways: pipeline/cluster/workermain.py); the summary's wall time is the whole launch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.conftest import REPO, ctrl_c, mbstudy_command, terminal_job
from tests.e2e_testkit import RESUME_STUDY

pytestmark = pytest.mark.cluster

NOISE = ("Traceback", "Warning", "CommClosedError", "not closed")


def _launch_until(tmp_path: Path, name: str, cases: int) -> tuple[subprocess.Popen, list[str]]:
    """A launch of the 12-batch study as a terminal job (its own process group), read until
    its progress lines say ``cases`` are done; returns it and the lines read."""
    study = tmp_path / "resume.toml"
    study.write_text(RESUME_STUDY)
    proc = terminal_job([*mbstudy_command(), "launch", str(study), "--store",
                         str(tmp_path / f"{name}.zarr"), "--workers", "2",
                         "--progress-every", "0.2"])  # fmt: skip
    lines = []
    for line in proc.stderr:  # ends at EOF if the launch ended first
        lines.append(line)
        m = re.search(r" done (\d+)/12,", line)
        if m and int(m.group(1)) >= cases:
            break
    return proc, lines


def _workers(launcher: int) -> list[psutil.Process]:
    """The worker processes of a launch: the children of its forkserver."""
    kids = psutil.Process(launcher).children(recursive=True)
    servers = [p for p in kids if "forkserver" in " ".join(p.cmdline())]
    assert servers, [p.cmdline() for p in kids]
    return servers[0].children()


def test_a_worker_killed_mid_launch_leaves_stderr_clean(tmp_path):
    """Dask restarts the worker and reruns its batch; the launch ends complete, status 0,
    and stderr holds progress and the summary only."""
    proc, lines = _launch_until(tmp_path, "killed", 2)
    workers = _workers(proc.pid)
    assert len(workers) == 2
    workers[0].kill()
    _out, err = proc.communicate(timeout=600)  # a hang guard, not a timing claim
    err = "".join(lines) + err
    assert proc.returncode == 0, err
    assert not any(word in err for word in NOISE), err
    attrs = ResultStore.open(tmp_path / "killed.zarr").root_attrs()
    last = attrs["last_launch"]
    assert attrs["complete"] is True and last["status_counts"] == {"0": 12}
    # the wall time is the whole launch; the part that ran the cases is inside it
    assert 0 < last["run_s"] <= last["wall_s"]
    assert f"wall {last['wall_s']:.2f} s (running the cases {last['run_s']:.2f} s)" in err


def test_ctrl_c_is_one_line_exit_130_and_the_counts_status_reports(tmp_path):
    proc, lines = _launch_until(tmp_path, "intr", 2)
    ctrl_c(proc)  # what a terminal's Ctrl-C does: SIGINT to the whole group
    out, err = proc.communicate(timeout=600)
    err = "".join(lines) + err
    assert proc.returncode == 130, err
    assert not any(word in err + out for word in NOISE), err
    # after the last progress line, exactly one line
    lines = [ln for ln in err.splitlines() if ln]
    last = max(i for i, ln in enumerate(lines) if ln.startswith("["))
    after = lines[last + 1:]
    assert len(after) == 1, err
    m = re.fullmatch(r"interrupted: (\d+)/12 cases done \((\d+) ok, (\d+) failed\), (\d+)"
                     r" pending; the store is resumable, launch again: .*intr\.zarr",
                     after[0])  # fmt: skip
    assert m, after[0]
    done, ok, failed, pending = map(int, m.groups())
    assert done >= 2 and ok + failed == done and done + pending == 12
    status = subprocess.run([*mbstudy_command(), "status", str(tmp_path / "intr.zarr")],
                            capture_output=True, text=True, timeout=300, check=True)
    assert f"baumgarte: {done}/12 done, {ok} ok, {pending} pending" in status.stdout


def _readme_snippet() -> str:
    """The README's Python block that calls ``mbstudy.launch`` (no ``__main__`` guard)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    snippet = next(b for b in blocks if "mbstudy.launch(" in b)
    assert "__main__" not in snippet
    return snippet


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_the_readme_snippet_runs_as_a_script_and_on_stdin(tmp_path, how):
    """Without the fix a worker re-ran the script (a second launch, a bootstrapping
    RuntimeError) or could not find ``<stdin>``; now the workers never import it."""
    shutil.copytree(REPO / "studies", tmp_path / "studies")
    script = tmp_path / "snippet.py"
    script.write_text(_readme_snippet() + "\nprint('exit', summary.exit_code)\n")
    env = dict(os.environ, MPLBACKEND="Agg")
    if how == "file":
        res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=900)  # fmt: skip
    else:
        res = subprocess.run([sys.executable, "-"], cwd=tmp_path, env=env,
                             input=script.read_text(), capture_output=True, text=True,
                             timeout=900)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "exit 0" in res.stdout
    assert not any(word in res.stderr for word in NOISE), res.stderr
