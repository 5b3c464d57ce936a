"""Progress where stderr is no terminal (pipeline/run/progress.py, PlainProgress): plain
status lines with done / failed / pending, rate, ETA and phase, never cut; a real launch
to a pipe and to a file prints them and a final line."""

from __future__ import annotations

import io
import os
import re
import subprocess

from mbstudy.pipeline.run.progress import PlainProgress, console, progress_bar
from rich.console import Console

from tests.conftest import STUDIES, mbstudy_command

LINE = re.compile(r"^\[ *\d+\.\d s\] (starting|compiling \d+ of \d+ kernels|running|writing):"
                  r" done (\d+)/(\d+), failed (\d+), pending (\d+); (\d+\.\d) cases/s,"
                  r" ETA (-|\d+ s)$")  # fmt: skip
FINAL = re.compile(r"^\[ *\d+\.\d s\] cases finished: done (\d+)/(\d+), failed (\d+),"
                   r" pending 0; \d+\.\d cases/s$")  # fmt: skip


def test_the_line_follows_the_phases_and_counts():
    """Driven as the launch drives it, on a clock the test sets: the rate counts only the
    cases done since the kernels were ready (not the ones a resumed store had), and the
    ETA is pending / rate (by hand: 30 cases in 10 s, 60 pending -> 20 s)."""
    clock = [100.0]
    log = io.StringIO()
    bar = PlainProgress(Console(file=log, width=1000), every=1, clock=lambda: clock[0])
    k = bar.add_task("kernels", total=None, failed=0, role="kernels")
    c = bar.add_task("cases", total=100, failed=0, role="cases")
    bar.update(c, completed=10)  # done before (a resume)
    assert " starting: done 10/100, failed 0, pending 90; 0.0 cases/s, ETA -" in bar.line()
    bar.update(k, total=2, completed=1)
    assert "compiling 1 of 2 kernels: done 10/100" in bar.line()
    clock[0] = 105.0
    bar.update(k, total=2, completed=2, description="kernels ready: 2 compiled")
    clock[0] = 115.0
    bar.update(c, advance=30, failed=4)
    line = bar.line()
    assert LINE.match(line.strip()), line
    assert line.endswith("running: done 40/100, failed 4, pending 60; 3.0 cases/s, ETA 20 s")
    bar.update(c, advance=60)
    assert "writing: done 100/100, failed 4, pending 0" in bar.line()
    with bar:
        pass  # at exit, the kernels line and the last line
    assert log.getvalue().splitlines()[0] == "kernels ready: 2 compiled"
    assert bar.line(final=True).endswith("cases finished: done 100/100, failed 4, pending 0;"
                                         " 9.0 cases/s")  # fmt: skip


def test_a_console_that_is_no_terminal_gets_plain_lines_and_no_width_limit():
    out = console()  # under pytest stderr is captured: no terminal
    assert not out.is_terminal and out.width >= 1000
    assert isinstance(progress_bar(out), PlainProgress)
    assert not isinstance(progress_bar(out, disable=True), PlainProgress)
    term = Console(file=io.StringIO(), force_terminal=True)
    assert not isinstance(progress_bar(term), PlainProgress)


def _launch(tmp_path, name: str, **stdio) -> subprocess.CompletedProcess:
    # a store path longer than the width: its line must come out whole
    store = tmp_path / f"{name}-{'x' * 90}.zarr"
    cmd = [*mbstudy_command(), "launch", str(STUDIES / "smoke.toml"), "--store", str(store),
           "--workers", "2", "--progress-every", "1", "--engine", "python", "--set",
           "study.t_end=0.5", "--set", "study.samples=51"]
    env = dict(os.environ, COLUMNS="80")  # a width a console would cut to
    return subprocess.run(cmd, env=env, timeout=900, check=False, **stdio)


def _check(text: str) -> None:
    lines = text.splitlines()
    status = [m for m in map(LINE.match, lines) if m]
    final = [m for m in map(FINAL.match, lines) if m]
    # the interpreted dopri5 reference at rtol 1e-12 alone takes ~2.5 s of CPU (measured:
    # ~5 s over 1 s of the four-bar): the running phase lasts over 1 s on any machine
    assert status and {m.group(1) for m in status} >= {"running"}, text
    for m in status:
        done, total, failed, pending = (int(m.group(i)) for i in (2, 3, 4, 5))
        assert total == 6 and done + pending == total and failed <= done
    assert len(final) == 1 and final[0].group(1) == final[0].group(2) == "6", text
    assert lines.index(final[0].string) > lines.index(status[-1].string)
    store = [line for line in lines if line.startswith("store: ")]
    assert len(store) == 1 and len(store[0]) > 100 and store[0].endswith(".zarr"), text
    assert "Traceback" not in text and "\r" not in text and "\x1b[" not in text


def test_a_launch_to_a_pipe_prints_plain_lines(tmp_path):
    res = _launch(tmp_path, "pipe", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                  text=True)  # fmt: skip
    assert res.returncode == 0, res.stdout
    _check(res.stdout)


def test_a_launch_to_a_file_prints_plain_lines(tmp_path):
    log = tmp_path / "launch.log"
    with open(log, "w", encoding="utf-8") as fh:
        res = _launch(tmp_path, "file", stdout=fh, stderr=fh)
    text = log.read_text(encoding="utf-8")
    assert res.returncode == 0, text
    _check(text)
