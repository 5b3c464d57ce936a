"""The LocalCluster's worker processes stay quiet while the cluster closes.

When a launch ends (or is interrupted with Ctrl-C) the launcher closes the cluster: the
scheduler goes away while a worker may be in the middle of a heartbeat or a message, and
distributed logs that at ERROR with a traceback (``Failed to communicate with scheduler
during heartbeat``, ``CommClosedError: ConnectionPool closing``) on the stderr the worker
shares with the launcher. Those records are expected at that moment and say nothing to the
user; the same records while the cluster runs are real errors and are shown.

The launcher *arms* a closing flag before it starts the workers (:func:`arm`: a file path
and the launcher's pid in the environment the workers inherit), *marks* it when it starts
to close the cluster or exits on an interrupt (:func:`mark_closing`), and removes it once
the workers are gone (:func:`disarm`). Each worker process installs :class:`ShutdownFilter`
(:func:`install`, from :mod:`.workermain`), which drops the records of a closing
connection once the flag is marked, the launcher is gone, or the worker itself is closing.

Imports only ``os`` and ``logging`` (the command line's interrupt path calls
:func:`mark_closing`).
"""

from __future__ import annotations

import logging
import os

CLOSING_ENV = "MBSTUDY_CLUSTER_CLOSING"  # the flag file (exists: the cluster is closing)
LAUNCHER_ENV = "MBSTUDY_LAUNCHER_PID"  # the launcher's pid (gone: the cluster is closing)

# the loggers a worker's closing connections are reported on (module loggers; a filter on
# a logger sees only its own records, so each is named, and the handlers get it too)
LOGGERS = (
    "distributed",
    "distributed.worker",
    "distributed.core",
    "distributed.comm",
    "distributed.comm.core",
    "distributed.comm.tcp",
    "distributed.batched",
    "distributed.utils",
    "distributed.utils_comm",
    "distributed.nanny",
    "distributed.worker_memory",
    "distributed.process",
    "tornado.application",
    "tornado.general",
    "asyncio",
)
# what a record of a closing connection says or carries
CLOSING_TEXT = ("heartbeat", "Failed to communicate", "CommClosedError", "Stream is closed",
                "ConnectionPool closing", "not closed")  # fmt: skip
CLOSING_EXC = ("CommClosedError", "StreamClosedError", "CancelledError", "TimeoutError")
_WORKER_CLOSING = ("closing", "closed", "closing_gracefully", "failed")


def quiet_loggers(prefixes: tuple[str, ...]) -> dict[str, int]:
    """Raise every logger named by ``prefixes`` *and each of its existing descendants* to
    CRITICAL; return their previous levels (for :func:`restore_loggers`).

    The descendants matter: distributed's logging configuration gives some of them levels
    of their own (``tornado.application`` at ERROR under ``tornado`` at CRITICAL), and a
    logger with a level of its own ignores its parent's; raising ``tornado`` alone let
    the ``NameError`` of distributed's ``sync`` cancel callback through after a Ctrl-C.
    Loggers created later inherit the raised level from their parent."""
    names = set(prefixes) | {
        name for name in list(logging.root.manager.loggerDict)
        if any(name.startswith(prefix + ".") for prefix in prefixes)
    }  # fmt: skip
    previous = {}
    for name in sorted(names):
        logger = logging.getLogger(name)
        previous[name] = logger.level
        logger.setLevel(logging.CRITICAL)
    return previous


def restore_loggers(previous: dict[str, int]) -> None:
    """Give the loggers :func:`quiet_loggers` raised their previous levels back."""
    for name, level in previous.items():
        logging.getLogger(name).setLevel(level)


def arm() -> None:
    """In the launcher, before its worker processes start: a fresh flag path (not yet
    created) and this pid in the environment they inherit. Idempotent until :func:`disarm`."""
    if os.environ.get(CLOSING_ENV):
        return
    import tempfile

    folder = tempfile.mkdtemp(prefix="mbstudy-closing-")  # private (0700)
    os.environ[CLOSING_ENV] = os.path.join(folder, "closing")
    os.environ[LAUNCHER_ENV] = str(os.getpid())


def mark_closing() -> None:
    """In the launcher: the cluster is closing from now on (never raises)."""
    path = os.environ.get(CLOSING_ENV)
    if path and os.environ.get(LAUNCHER_ENV) == str(os.getpid()):
        try:
            open(path, "a").close()
        except OSError:
            pass


def disarm() -> None:
    """In the launcher, once its workers are gone: remove the flag (idempotent)."""
    path = os.environ.get(CLOSING_ENV)
    if not path or os.environ.get(LAUNCHER_ENV) != str(os.getpid()):
        return
    import shutil

    os.environ.pop(CLOSING_ENV, None)
    os.environ.pop(LAUNCHER_ENV, None)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def cluster_closing(path: str | None, launcher: str | None) -> bool:
    """True once the launcher marked the flag ``path``, or its pid ``launcher`` is gone, or
    a worker of this process is closing."""
    if path and os.path.exists(path):
        return True
    if launcher:
        try:
            os.kill(int(launcher), 0)
        except ProcessLookupError:
            return True
        except (OSError, ValueError):
            pass
    try:
        import sys

        worker = sys.modules.get("distributed.worker")
        instances = list(worker.Worker._instances) if worker else []
        return any(getattr(w.status, "name", "") in _WORKER_CLOSING for w in instances)
    except Exception:
        return False


def is_closing_record(record: logging.LogRecord) -> bool:
    """True for a record about a connection closing (what a worker logs when its
    scheduler goes away); other records are never dropped."""
    exc = record.exc_info[1] if record.exc_info else None
    seen = 0
    while exc is not None and seen < 10:  # the exception or one of its causes
        if type(exc).__name__ in CLOSING_EXC:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    try:
        text = record.getMessage()
    except Exception:
        return False
    return any(t in text for t in CLOSING_TEXT)


class ShutdownFilter(logging.Filter):
    """Drop a worker's records of closing connections once the cluster is closing
    (:func:`cluster_closing`); every other record passes."""

    def __init__(self, path: str | None, launcher: str | None) -> None:
        super().__init__()
        self.path, self.launcher = path, launcher

    def filter(self, record: logging.LogRecord) -> bool:
        if not is_closing_record(record):
            return True
        return not cluster_closing(self.path, self.launcher)


def install() -> ShutdownFilter | None:
    """In a worker process of a launch's LocalCluster: put :class:`ShutdownFilter` on the
    :data:`LOGGERS` and on the handlers of ``distributed`` and of the root logger. A
    process without an armed flag (not a launch's worker) is left as it is."""
    path = os.environ.get(CLOSING_ENV)
    if not path:
        return None
    flt = ShutdownFilter(path, os.environ.get(LAUNCHER_ENV))
    for name in LOGGERS:
        logging.getLogger(name).addFilter(flt)
    for name in ("distributed", ""):
        for handler in logging.getLogger(name).handlers:
            handler.addFilter(flt)
    return flt
