"""The Ctrl-C handler of the command line (pipeline/cli/interrupts.py) and the workers'
shutdown log filter (pipeline/cluster/workerlogs.py), without a cluster: real SIGINTs sent
to this process, real log records."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest
from mbstudy.pipeline.cli import interrupts
from mbstudy.pipeline.cluster import workerlogs


@pytest.fixture
def handler_state(monkeypatch):
    """The module's flags fresh, the default SIGINT handler in place, both restored."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(interrupts, "_received", False)
    monkeypatch.setattr(interrupts, "_resend", False)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # guard installs its own
    monkeypatch.setattr(interrupts, "_reported", False)
    monkeypatch.setattr(interrupts, "_leave", _leave)  # never os._exit the test process
    monkeypatch.delenv(workerlogs.CLOSING_ENV, raising=False)
    import distributed  # noqa: F401  its logging configuration, as in a launch

    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}  # fmt: skip
    levels.update({n: logging.getLogger(n).level for n in interrupts.STOP_LOGGERS})
    yield
    signal.signal(signal.SIGINT, previous)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def _leave(code: int) -> None:
    raise SystemExit(code)


def _press_twice() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)  # the second must change nothing


def test_two_sigints_are_one_line_and_exit_130_then_sigint_is_ignored(handler_state, capsys):
    with pytest.raises(SystemExit) as exc:
        interrupts.guard(_press_twice)
    assert exc.value.code == 130
    assert capsys.readouterr().err == "mbstudy: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)  # ignored: nothing is raised
    # what distributed logs about the stop is dropped from the interrupt on
    assert not logging.getLogger("distributed.scheduler").isEnabledFor(logging.ERROR)
    # and tornado.application, which distributed's configuration gives a level of its own
    # (sync's cancel callback logged a NameError there after a Ctrl-C under load)
    assert logging.getLogger("tornado.application").level != logging.NOTSET
    assert not logging.getLogger("tornado.application").isEnabledFor(logging.ERROR)


def test_an_interrupt_swallowed_in_a_gc_callback_is_raised_again(handler_state, capsys):
    """Ctrl-C landing in a garbage-collector callback (distributed's GCDiagnosis runs one
    in the launcher): Python swallows the KeyboardInterrupt there; it must reach the
    command all the same (it was lost: the launch ran to its end and exited 0)."""
    import gc

    seen: list[str] = []

    def callback(phase, info) -> None:
        if phase == "start" and not seen:
            seen.append(phase)
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, in the callback
            sum(range(100))  # an instruction boundary inside the callback

    def command() -> None:
        gc.callbacks.append(callback)
        try:
            gc.collect()
            deadline = time.monotonic() + 30  # a hang guard: the interrupt arrives here
            while time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            gc.callbacks.remove(callback)
        seen.append("ran to its end")

    with pytest.raises(SystemExit) as exc:
        interrupts.guard(command)
    assert seen == ["start"]
    assert exc.value.code == 130
    err = capsys.readouterr().err
    assert err == "mbstudy: interrupted\n", err  # no "Exception ignored in"


def _sigint_inside_the_import_lock(frame, event, arg):
    """A trace function: SIGINT's handler run in the frame of
    ``_ImportLockContext.__enter__`` as it returns, the global import lock just taken and
    the ``with`` block that releases it not yet entered (the window where a launch hung
    in CI). Called here with that frame, as Python calls it when the signal lands there
    (``os.kill`` would run it at once, in this trace function's own frame)."""
    code = frame.f_code
    if event != "call" or code.co_qualname != "_ImportLockContext.__enter__":
        return None

    def local(frame, event, arg):
        if event == "return":
            sys.settrace(None)  # once
            signal.getsignal(signal.SIGINT)(signal.SIGINT, frame)
        return local

    return local


def _import_fresh(directory, name: str) -> None:
    (directory / f"{name}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(directory))
    try:
        __import__(name)
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(name, None)


def test_an_interrupt_inside_the_import_system_leaves_no_lock_held(
    handler_state, capsys, tmp_path
):
    """Ctrl-C landing in the import system's own frames is raised 10 ms later, out of
    them: the global import lock is not left held, so another thread's import (the
    cluster's start thread) goes on, and the command still ends with the one line."""
    import _imp
    import threading

    other: list[bool] = []

    def command() -> None:
        sys.settrace(_sigint_inside_the_import_lock)
        try:
            _import_fresh(tmp_path, "mbstudy_fresh_a")  # the handler runs inside it
        finally:
            sys.settrace(None)
        worker = threading.Thread(target=_import_fresh, args=(tmp_path, "mbstudy_fresh_b"),
                                  daemon=True)  # fmt: skip
        worker.start()
        worker.join(10)  # a hang guard: a held lock blocks it for good
        other.append(worker.is_alive())
        deadline = time.monotonic() + 30  # the interrupt arrives here
        while time.monotonic() < deadline:
            time.sleep(0.01)
        other.append("ran to its end")

    try:
        with pytest.raises(SystemExit) as exc:
            interrupts.guard(command)
    finally:
        held = _imp.lock_held()
        while _imp.lock_held():  # a leak must not hang the rest of this test process
            _imp.release_lock()
    assert not held
    assert other == [False]  # the other thread imported; the command never ran to its end
    assert exc.value.code == 130
    assert capsys.readouterr().err == "mbstudy: interrupted\n"


def test_a_command_that_reported_its_interrupt_exits_130_without_a_second_line(
    handler_state, capsys
):
    def launch() -> None:  # what mbstudy launch does: catches it, prints its line, exits 130
        try:
            _press_twice()
        except KeyboardInterrupt:
            print("interrupted: 2/12 cases done", file=sys.stderr)
        raise SystemExit(130)

    with pytest.raises(SystemExit) as exc:
        interrupts.guard(launch)
    assert exc.value.code == 130
    assert capsys.readouterr().err == "interrupted: 2/12 cases done\n"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_an_error_caused_by_the_interrupt_is_reported_as_the_interrupt(handler_state, capsys):
    def half_import() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            raise AttributeError("partially initialized module") from None

    with pytest.raises(SystemExit) as exc:
        interrupts.guard(half_import)
    assert exc.value.code == 130
    assert capsys.readouterr().err == "mbstudy: interrupted\n"


def test_without_an_interrupt_the_guard_changes_nothing(handler_state, capsys):
    with pytest.raises(SystemExit) as exc:
        interrupts.guard(lambda: sys.exit(0))
    assert exc.value.code == 0
    with pytest.raises(ValueError):
        interrupts.guard(lambda: int("x"))
    assert capsys.readouterr().err == ""
    assert signal.getsignal(signal.SIGINT) is interrupts._on_sigint


def test_import_mbstudy_loads_only_os():
    code = ("import json, sys; before = set(sys.modules); import mbstudy;"
            " print(json.dumps(sorted(set(sys.modules) - before)))")  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    new = set(json.loads(res.stdout))
    assert new <= {"mbstudy"}, new  # os is loaded by the interpreter itself


def _record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, msg, (), info)


class CommClosedError(OSError):
    """Named as distributed's (the filter matches exception types by name)."""


def test_the_worker_filter_drops_closing_records_only_once_the_cluster_closes(
    monkeypatch, tmp_path
):
    monkeypatch.setenv(workerlogs.CLOSING_ENV, str(tmp_path / "closing"))
    monkeypatch.setenv(workerlogs.LAUNCHER_ENV, str(os.getpid()))
    flt = workerlogs.ShutdownFilter(str(tmp_path / "closing"), str(os.getpid()))
    heartbeat = _record("Failed to communicate with scheduler during heartbeat.",
                        CommClosedError("ConnectionPool closing."))  # fmt: skip
    other = _record("Compute Failed", ZeroDivisionError("division by zero"))
    assert flt.filter(heartbeat) and flt.filter(other)  # running: every record shown
    workerlogs.mark_closing()
    assert (tmp_path / "closing").exists()
    assert not flt.filter(heartbeat) and flt.filter(other)  # closing: the expected dropped


def test_the_worker_filter_treats_a_gone_launcher_as_closing(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    flt = workerlogs.ShutdownFilter(str(tmp_path / "never"), str(gone.pid))
    assert not flt.filter(_record("Failed to communicate with scheduler during heartbeat."))
    alive = workerlogs.ShutdownFilter(str(tmp_path / "never"), str(os.getpid()))
    assert alive.filter(_record("Failed to communicate with scheduler during heartbeat."))


def test_arm_and_disarm_leave_the_environment_as_it_was(monkeypatch):
    monkeypatch.delenv(workerlogs.CLOSING_ENV, raising=False)
    monkeypatch.delenv(workerlogs.LAUNCHER_ENV, raising=False)
    workerlogs.arm()
    path = os.environ[workerlogs.CLOSING_ENV]
    workerlogs.mark_closing()
    assert os.path.exists(path)
    workerlogs.disarm()
    assert workerlogs.CLOSING_ENV not in os.environ and not os.path.exists(path)
