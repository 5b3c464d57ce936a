"""Ctrl-C at any moment of a command: one line and exit status 130, never a traceback.

:func:`guard` installs a SIGINT handler before the command line's modules are imported,
so that an interrupt arriving during an import (which can leave a module half-initialized
and surface as an unrelated ``AttributeError``) or during the cluster's start is still
reported as the interrupt it is. A launch interrupted once it runs prints its own line
with the store's counts (pipeline/run/launch.py) and returns 130 itself; only an interrupt
that reaches :func:`guard` prints ``mbstudy: interrupted``. The LocalCluster's forkserver
and workers are started with SIGINT blocked (pipeline/cluster/local.py): the launcher
alone handles Ctrl-C and closes them, and their loggers drop what they report about the
closing connections (pipeline/cluster/workerlogs.py).

A second Ctrl-C (a user pressing it twice) must not break that orderly stop: once one was
received, SIGINT is ignored until the process exits (an uncaught second
``KeyboardInterrupt`` ended the process by SIGINT, exit status -2, with a traceback).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

EXIT_INTERRUPTED = 130
_received = False
_reported = False  # the line is written once (guards nest: python -m mbstudy, app.main)


# the launcher's libraries whose records about the stop are dropped once Ctrl-C is pressed
STOP_LOGGERS = ("distributed", "tornado", "asyncio")


def _on_sigint(signum, frame) -> None:
    """The first SIGINT: remembered, later ones ignored, the libraries' loggers quieted
    (:func:`_quiet_libraries`), ``KeyboardInterrupt`` raised."""
    global _received
    _received = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _quiet_libraries()
    raise KeyboardInterrupt


def _quiet_libraries() -> None:
    """Raise the launcher's :data:`STOP_LOGGERS` to CRITICAL for the rest of the process.

    The interrupt lands wherever the launcher waits, often inside distributed's ``sync``
    or a gather; what the scheduler and the event loop then log about the cancelled wait
    (``Couldn't gather keys ... forgotten``, a ``NameError`` in ``sync``'s cancel
    callback) describes the stop the user asked for. Set here, in the handler, before the
    ``KeyboardInterrupt`` unwinds, so that no such record comes first; the descendants
    with levels of their own too (``tornado.application``)."""
    from mbstudy.pipeline.cluster.workerlogs import quiet_loggers  # os and logging only

    quiet_loggers(STOP_LOGGERS)


def guard(run: Callable[[], object]) -> None:
    """Run ``run()`` (the command line); Ctrl-C at any moment is one line on stderr and
    exit status 130."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        # imported now, not in the handler (an interrupt may land inside an import)
        from mbstudy.pipeline.cluster import workerlogs  # noqa: F401  os and logging only

        signal.signal(signal.SIGINT, _on_sigint)
    try:
        run()
    except KeyboardInterrupt:
        _exit_interrupted()
    except SystemExit as exc:  # a command's own exit (130 once it reported the interrupt)
        # Typer turns a KeyboardInterrupt into a silent exit 130: unreported, then
        if _received and (_from_interrupt(exc) or exc.code not in (0, EXIT_INTERRUPTED)):
            _exit_interrupted()
        if _received or exc.code == EXIT_INTERRUPTED:  # nothing may interrupt the exit
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise
    except BaseException:
        if _received:  # an error an interrupt caused (a half-imported module)
            _exit_interrupted()
        raise


def _from_interrupt(exc: BaseException) -> bool:
    """True if a KeyboardInterrupt is in the chain of causes and contexts of ``exc``."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _exit_interrupted() -> None:
    """Write the line (once) and leave with status 130 at once (:func:`_leave`)."""
    global _reported
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C cannot break the line
    try:
        from mbstudy.pipeline.cluster.workerlogs import mark_closing

        mark_closing()  # workers of a cluster still starting end quietly (cluster/workerlogs.py)
    except Exception:  # a package the interrupt left half-imported
        pass
    try:
        sys.stdout.flush()
        if not _reported:
            sys.stderr.write("mbstudy: interrupted\n")
            sys.stderr.flush()
    except Exception:  # a closed stderr: the exit status says it
        pass
    _reported = True
    _leave(EXIT_INTERRUPTED)


def _leave(code: int) -> None:
    """End the process with ``code`` now, without the interpreter's shutdown: reached only
    when an interrupt cut the command short (an import, the cluster's start), the shutdown
    would wait for threads and run exit handlers of half-started parts, which printed what
    they raised or, under load, ended the process by SIGINT (exit status -2) after the
    line was written. What the command holds (the store's lock, the cluster) was released
    on the way here by its ``finally`` blocks."""
    os._exit(code)
