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
received, the handler ignores SIGINT, and from the exit on it is ignored outright (an
uncaught second ``KeyboardInterrupt`` ended the process by SIGINT, exit status -2, with a
traceback). The first one is never lost: a ``KeyboardInterrupt`` that Python swallows
(raised inside a garbage-collector callback or a ``__del__``) is raised again at the main
thread's next instruction (:func:`_unraisable`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

EXIT_INTERRUPTED = 130
_received = False
_resend = False  # a swallowed KeyboardInterrupt is to be raised again (_unraisable)
_reported = False  # the line is written once (guards nest: python -m mbstudy, app.main)
_previous_hook = sys.unraisablehook


# the launcher's libraries whose records about the stop are dropped once Ctrl-C is pressed
STOP_LOGGERS = ("distributed", "tornado", "asyncio")


def _on_sigint(signum, frame) -> None:
    """The first SIGINT: remembered, the libraries' loggers quieted
    (:func:`_quiet_libraries`), ``KeyboardInterrupt`` raised; later ones ignored, except
    the one sent again (:func:`_unraisable`, :func:`_in_import_system`)."""
    global _received, _resend
    if _received and not _resend:
        return  # a second Ctrl-C: the orderly stop of the first goes on
    if _inside_hook(frame):
        _send_again()  # still inside the hook, where it would be swallowed once more
        return
    if _in_import_system(frame):
        _received = _resend = True  # remembered; raised once out of the import system
        _send_again()
        return
    _received, _resend = True, False
    _quiet_libraries()
    raise KeyboardInterrupt


def _unraisable(unraisable) -> None:
    """``sys.unraisablehook`` while a command runs: a ``KeyboardInterrupt`` that Python
    had to swallow is raised again in the main thread, and nothing is printed.

    The handler's ``KeyboardInterrupt`` lands wherever the main thread is; in a garbage
    collector callback (distributed's ``GCDiagnosis`` in the LocalCluster's in-process
    scheduler), a ``__del__`` or a weakref callback, Python prints "Exception ignored in"
    and goes on, and the Ctrl-C was lost: the launch ran to its end and exited 0 (seen in
    CI, test_interrupt_anytime). :func:`_send_again` runs :func:`_on_sigint` again once
    the main thread is out of the callback."""
    global _resend
    if _received and isinstance(unraisable.exc_value, KeyboardInterrupt):
        _resend = True
        _send_again()
        return
    _previous_hook(unraisable)


def _in_import_system(frame) -> bool:
    """Whether the main thread stands in a frame of the import system itself
    (``importlib._bootstrap``, ``_bootstrap_external``).

    Those frames take the global import lock and the per-module locks outside any
    ``try`` (``_ImportLockContext.__enter__``, ``_ModuleLock.acquire``): a
    ``KeyboardInterrupt`` raised there, between the acquire and the ``with`` block that
    releases it, leaves the lock held by the main thread for good. The main thread does
    not notice (the lock is re-entrant for it), but the thread starting the cluster
    waits at its next import forever, and the launcher waits for that thread: a launch
    interrupted 3.4 s in hung until killed (caught with gdb in a stress run: the start
    thread in ``_PyImport_AcquireLock``, the main thread joining it). An interrupt that
    lands there is sent again 10 ms later (:func:`_send_again`); a module's own code is
    not such a frame, so an interrupt during a long import still arrives at once."""
    return frame is not None and frame.f_code.co_filename.startswith(
        "<frozen importlib._bootstrap")


def _inside_hook(frame) -> bool:
    """Whether ``frame`` runs inside :func:`_unraisable` (any caller up the stack)."""
    while frame is not None:
        if frame.f_code is _unraisable.__code__:
            return True
        frame = frame.f_back
    return False


def _send_again() -> None:
    """SIGINT's Python handler run again in the main thread (``_thread.interrupt_main``),
    asked from a helper thread a moment later, once the main thread has left the hook."""
    import threading

    threading.Thread(target=_interrupt_main_soon, name="mbstudy-interrupt",
                     daemon=True).start()  # fmt: skip


def _interrupt_main_soon() -> None:
    import _thread
    import time

    time.sleep(0.01)
    _thread.interrupt_main()


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
        if sys.unraisablehook is not _unraisable:
            global _previous_hook
            _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    try:
        run()
    except KeyboardInterrupt:
        _exit_interrupted()
    except SystemExit as exc:  # a command's own exit (130 once it reported the interrupt)
        # Typer turns a KeyboardInterrupt into a silent exit 130: unreported, then; an
        # exit 0 after a Ctrl-C is a command that never saw it (swallowed, sent too late)
        if _received and (_from_interrupt(exc) or exc.code != EXIT_INTERRUPTED):
            _exit_interrupted()
        if _received or exc.code == EXIT_INTERRUPTED:  # nothing may interrupt the exit
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise
    except BaseException:
        if _received:  # an error an interrupt caused (a half-imported module)
            _exit_interrupted()
        raise
    if _received:  # the command ended without seeing the interrupt (see above)
        _exit_interrupted()


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
