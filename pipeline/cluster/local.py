"""The embedded LocalCluster (the default backend): worker processes forked from a
preloaded forkserver, started in a background thread while the launcher checks the
study, with the dashboard attached once the first tasks are submitted.

Its scheduler, workers and dashboard bind to 127.0.0.1 and speak mutual TLS with the
launch's ephemeral credentials (:mod:`.security`). Every use of a private API of
multiprocessing or distributed goes through :mod:`mbstudy.pipeline.private_api`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mbstudy.pipeline import private_api
from mbstudy.pipeline.cluster import workerlogs
from mbstudy.pipeline.cluster.security import LOOPBACK, launch_security


def default_workers() -> int:
    """Worker processes for the LocalCluster: the number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


WORKER_PRELOAD = "mbstudy.pipeline.cluster.workerboot"
WORKER_MAIN = "mbstudy.pipeline.cluster.workermain"  # the workers' __main__ (not the user's)
PRELOAD_ENV = "MBSTUDY_PRELOAD_KERNELS"  # workerboot.PRELOAD_ENV (not imported: it boots)
FORKSERVER_ENV = "MBSTUDY_FORKSERVER"  # "0": spawn every worker (distributed's default)


class WorkerForkServer:
    """The LocalCluster's worker processes fork from one forkserver that has imported the
    worker stack and initialised numba once (:mod:`.workerboot`), instead of being
    spawned as fresh interpreters that each import it all.

    Started per launch, before the cluster, so that its preload runs while the launcher is
    still checking the study; stopped when the cluster is closed. A forked worker sees the
    environment of the moment the server started (not of the moment it is forked), so the
    server is never reused across launches, and Dask's ``distributed.nanny.pre-spawn-environ``
    (one BLAS thread, ``MALLOC_TRIM_THRESHOLD_``) and its fixed ``PYTHONHASHSEED`` are put
    into the environment before the server starts, as the Nanny does before it spawns a
    worker. The working directory, ``sys.path`` and ``__main__`` are set in each worker by
    multiprocessing as for spawned ones. Not used where the platform has no forkserver, or
    with ``MBSTUDY_FORKSERVER=0``.
    """

    def __init__(self) -> None:
        self.active = False
        self._preload_dir: str | None = None

    @staticmethod
    def available() -> bool:
        import multiprocessing

        if os.environ.get(FORKSERVER_ENV, "1") == "0":
            return False
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return False
        return private_api.forkserver() is not None

    def start(self, kernels: bool = False) -> WorkerForkServer:
        """Start the server (its imports run in the background). ``kernels``: it also
        loads the kernels :meth:`preload` names, after its imports; the caller must then
        call :meth:`preload` (or stop the server), or the server waits for it up to
        ``workerboot.PRELOAD_WAIT_S`` before forking a worker."""
        if not self.available():
            return self
        server = private_api.forkserver()
        workerlogs.arm()  # the workers forked from it know when the cluster closes
        # one left by an earlier launch in this process has a stale environment
        private_api.forkserver_stop(server)
        env = _pre_spawn_environ()
        self._saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        self._saved_preload = private_api.forkserver_preload_modules(server)
        self._config = None
        self.active = True
        private_api.forkserver_set_preload(server, [WORKER_PRELOAD])
        saved = os.environ.get(PRELOAD_ENV)
        if kernels:
            import tempfile

            self._preload_dir = tempfile.mkdtemp(prefix="mbstudy-preload-")  # private (0700)
            os.environ[PRELOAD_ENV] = os.path.join(self._preload_dir, "kernels.json")
        else:
            os.environ.pop(PRELOAD_ENV, None)
        try:
            # spawns the server; its preload runs in the background. It is spawned with
            # SIGINT ignored, which it and the workers it forks keep: Ctrl-C reaches the
            # launcher alone (a server interrupted in its preload printed a traceback),
            # which closes them
            with sigint_ignored():
                private_api.forkserver_ensure_running(server)
        except Exception:  # pragma: no cover - then workers are spawned as usual
            logging.getLogger(__name__).debug("no forkserver", exc_info=True)
            self.stop(unused=True)
        finally:  # the server has its environment; the launcher's is left as it was
            if saved is None:
                os.environ.pop(PRELOAD_ENV, None)
            else:
                os.environ[PRELOAD_ENV] = saved
        return self

    def preload(self, triples: list[tuple[str, str, str]]) -> None:
        """Name the kernels the server loads before it forks the workers (cached ones
        only: see :mod:`.workerboot`); an empty list lets it go on at once."""
        if not self.active or self._preload_dir is None:
            return
        import json

        path = os.path.join(self._preload_dir, "kernels.json")
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump([list(t) for t in triples], fh)
        os.replace(path + ".tmp", path)  # the server sees the whole list or none

    def configure(self) -> None:
        """Make the Nannies fork their workers from this server (until :meth:`stop`)."""
        if not self.active or self._config is not None:
            return
        import dask

        self._config = dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
        # distributed sets its own preload list (importing every optional package into the
        # launcher) the first time it sees "forkserver"; the server is running already
        self._saved_flag = private_api.distributed_forkserver_flag()
        if self._saved_flag is not None:
            private_api.set_distributed_forkserver_flag(True)

    def stop(self, unused: bool = False) -> None:
        """Stop the server (after the workers are gone) and restore what start changed.

        ``unused``: no worker was forked (the launch stopped on bad input): the launcher's
        environment is restored too.

        The server is terminated (SIGTERM, then reaped) rather than asked to exit: it has
        nothing to flush, and the interpreter teardown of a process that has imported the
        worker stack (and loaded kernels) took ~0.2 s at the end of every launch.
        """
        if self._preload_dir is not None:
            import shutil

            shutil.rmtree(self._preload_dir, ignore_errors=True)
            self._preload_dir = None
        if not self.active:
            return
        self.active = False
        import signal

        server = private_api.forkserver()
        try:
            pid = private_api.forkserver_pid(server)
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            private_api.forkserver_stop(server)
        finally:
            private_api.forkserver_set_preload(server, self._saved_preload)
            if unused:  # no Nanny has put these into the environment
                for k, v in self._saved_env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            if self._config is not None:
                if self._saved_flag is not None:
                    private_api.set_distributed_forkserver_flag(self._saved_flag)
                self._config.__exit__(None, None, None)
                self._config = None
            workerlogs.disarm()  # its workers are gone


def kill_process_tree(pid: int | None) -> None:
    """SIGKILL to ``pid`` and every process below it (its forked workers): for processes
    whose orderly stop cannot come (:meth:`ClusterStart.close`)."""
    if pid is None:
        return
    import psutil  # a dependency of distributed

    try:
        root = psutil.Process(pid)
        procs = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()


@contextmanager
def sigint_ignored():
    """SIGINT ignored for the block when this is the main thread (only it sets handlers).

    A process started meanwhile inherits the ignored disposition across exec (a blocked
    mask it would not: multiprocessing resets it), and Python then installs no handler of
    its own; the forkserver keeps it for the workers it forks. A Ctrl-C pressed within the
    block (the spawn, milliseconds) is lost."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _pre_spawn_environ() -> dict[str, str]:
    """The variables a Nanny puts into ``os.environ`` before it spawns a worker
    (``distributed.nanny.pre-spawn-environ``, environment values winning, and
    ``PYTHONHASHSEED`` 6640 unless that configuration sets it), as in
    ``distributed.Nanny.__init__``."""
    import dask

    cfg = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    env = {k: os.environ.get(k, str(v)) for k, v in cfg.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"
    return env


def local_cluster(workers: int | None = None, forkserver: WorkerForkServer | None = None):
    """The embedded LocalCluster: ``workers`` processes of one thread, bound to loopback.

    The scheduler's HTTP server (and so the dashboard address) starts with the cluster
    and serves a page that says the launch is in progress (:func:`_serve_pending_page`);
    the bokeh dashboard itself is attached by :func:`attach_dashboard` later
    (:class:`DelayedDashboard`: a few seconds after the launch's tasks are submitted):
    importing bokeh and building the dashboard costs the launcher 0.7-1 s of CPU.

    ``forkserver``: the :class:`WorkerForkServer` started for it (one is started if None);
    the cluster owns it (:func:`close_cluster` stops it).

    Its worker processes run :mod:`.workermain` as their main module, not the launcher's
    ``__main__`` (a user's script without a ``__main__`` guard, or stdin, works), and
    ignore SIGINT (the launcher handles Ctrl-C).
    """
    workerlogs.arm()  # spawned workers inherit it too
    if forkserver is None:
        forkserver = WorkerForkServer().start()
    private_api.set_child_main(WORKER_MAIN)  # until close_cluster: see .workermain
    try:
        forkserver.configure()
        from distributed import LocalCluster

        cluster = LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            security=launch_security(),
            protocol="tls://",
            host=LOOPBACK,
            dashboard_address=f"{LOOPBACK}:0",
            scheduler_kwargs={"dashboard": False},
            silence_logs=logging.ERROR,
        )
    except BaseException:
        private_api.set_child_main(None)
        forkserver.stop()
        workerlogs.disarm()
        raise
    cluster.mbstudy_dashboard_pending = True
    cluster.mbstudy_dashboard_attached = False
    cluster.mbstudy_forkserver = forkserver
    _serve_pending_page(cluster)
    return cluster


PENDING_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="2"><title>mbstudy launch</title></head>
<body><h1>mbstudy: launch in progress</h1>
<p>The live Dask dashboard is attached once the launch has run a few seconds after its
tasks were submitted (a launch that is over by then never loads it). This page reloads
itself and turns into the dashboard then.</p></body></html>
"""


def _serve_pending_page(cluster) -> None:
    """Serve the dashboard's address from the cluster's start: until the bokeh dashboard is
    attached, ``/`` and ``/status`` answer with :data:`PENDING_PAGE` (status 200, reloads
    every 2 s); from then on this application gives way (a 404 from it makes distributed's
    ``RoutingApplication`` ask the next application, the dashboard). Never raises."""
    try:
        from tornado import web

        class Page(web.RequestHandler):
            def get(self, *_args) -> None:
                self.set_header("Cache-Control", "no-store")
                self.write(PENDING_PAGE)

        class Pending(web.Application):
            def find_handler(self, request, **kwargs):
                if getattr(cluster, "mbstudy_dashboard_attached", True):
                    return self.get_handler_delegate(request, web.ErrorHandler,
                                                     {"status_code": 404})  # fmt: skip
                return super().find_handler(request, **kwargs)

        private_api.add_http_application(cluster.scheduler, Pending([(r"/(?:status/?)?", Page)]))
        private_api.make_sitemap_safe(cluster.scheduler)
    except Exception:
        logging.getLogger(__name__).debug("no pending page", exc_info=True)


# what a closing cluster logs about connections it is closing itself (CommClosedError
# tracebacks from comms, batched streams and heartbeats caught mid-message): not an error
SHUTDOWN_LOGGERS = ("distributed", "tornado", "asyncio")


@contextmanager
def quiet_shutdown() -> Iterator[None]:
    """Raise the launcher's distributed, tornado and asyncio loggers (and their
    descendants: :func:`.workerlogs.quiet_loggers`) to CRITICAL for the body (a cluster's
    orderly close), then restore their levels."""
    previous = workerlogs.quiet_loggers(SHUTDOWN_LOGGERS)
    try:
        yield
    finally:
        workerlogs.restore_loggers(previous)


def close_cluster(cluster) -> None:
    """Close a cluster (its own closing of connections not logged: :func:`quiet_shutdown`,
    nor its workers': :mod:`.workerlogs`); for one of :func:`local_cluster`, then stop its
    forkserver."""
    workerlogs.mark_closing()
    try:
        with quiet_shutdown():
            cluster.close()
    finally:
        forkserver = getattr(cluster, "mbstudy_forkserver", None)
        if forkserver is not None:
            private_api.set_child_main(None)  # local_cluster's
            forkserver.stop()
            workerlogs.disarm()


def attach_dashboard(client) -> bool:
    """Attach the bokeh dashboard to a LocalCluster of :func:`local_cluster` (its address,
    printed at start, then serves ``/status``). Once; a no-op for other clusters; never
    raises (the dashboard is a convenience). Returns whether it was attached now."""
    cluster = getattr(client, "cluster", None)
    scheduler = getattr(cluster, "scheduler", None)
    if scheduler is None or not getattr(cluster, "mbstudy_dashboard_pending", False):
        return False
    cluster.mbstudy_dashboard_pending = False
    with sigint_deferred():  # bokeh's import must not swallow a Ctrl-C
        try:
            connect_dashboard = private_api.dashboard_connector()  # imports bokeh
        except ImportError:  # pragma: no cover - bokeh is a dependency
            return False

        async def connect() -> None:  # on the scheduler's event loop (IOLoop.current())
            connect_dashboard(scheduler)

        try:
            cluster.sync(connect)
        except Exception:
            logging.getLogger(__name__).debug("dashboard not attached", exc_info=True)
            return False
    cluster.mbstudy_dashboard_attached = True  # the pending page gives way
    return True


DASHBOARD_AFTER_S = 5.0  # a launch still running this long after its tasks were submitted


class DelayedDashboard:
    """Attach the dashboard (:func:`attach_dashboard`) ``after`` seconds from
    :meth:`start`, in a timer thread, unless :meth:`cancel` came first.

    Importing bokeh and building the dashboard costs the launcher ~0.7-1 s of CPU (more
    under load), in the process that also runs the scheduler; a warm launch is over in
    ~1-2 s once its tasks are submitted, so it never pays it, while a launch that runs
    longer gets its dashboard a few seconds in (its address is printed at start).
    """

    def __init__(self, client, after: float = DASHBOARD_AFTER_S) -> None:
        self.client = client
        self._timer = threading.Timer(after, attach_dashboard, (client,))
        self._timer.name = "mbstudy-dashboard"
        self._timer.daemon = True

    def start(self) -> DelayedDashboard:
        """Start the countdown (once; later calls do nothing)."""
        if not self._timer.is_alive() and not self._timer.finished.is_set():
            self._timer.start()
        return self

    def cancel(self) -> None:
        """No dashboard if it was not attached yet; waits for one being attached (call
        it before the cluster is closed)."""
        self._timer.cancel()
        if self._timer.is_alive():
            self._timer.join()


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold back SIGINT during the body, then raise KeyboardInterrupt if one arrived.

    Third-party code run inside (an import with an optional dependency guarded by a bare
    ``except:``) could otherwise catch the KeyboardInterrupt and go on, and the launch
    would finish as if Ctrl-C had not been pressed. Only in the main thread (where Python
    delivers signals); elsewhere the body runs as it is."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and previous is not signal.SIG_IGN:  # handled as it would have been (the
        if callable(previous):  # command line's handler: cli/interrupts.py)
            previous(signal.SIGINT, None)
        raise KeyboardInterrupt


START_WAIT_S = 120.0  # ClusterStart.close: a start not ended by then never will


class ClusterStart:
    """Start the embedded LocalCluster in a background thread (its worker processes start
    while the launcher checks the study and writes the store template).

    :meth:`result` waits for it and hands it over (to :func:`open_client`, which closes
    it); :meth:`close` waits for the start to finish and closes a cluster that was not
    handed over, so every error path of the launcher shuts the cluster down.
    """

    def __init__(
        self, workers: int | None = None, forkserver: WorkerForkServer | None = None
    ) -> None:
        # The scheduler adds (and at close removes) distributed's gc callback. Done from
        # the start thread while this thread runs (and collects garbage), that can race with
        # a collection in progress ("Exception ignored in GCDiagnosis._gc_callback" on
        # stderr); registered here first, the scheduler only counts one more user.
        private_api.gc_diagnosis(True)
        self._gc_diagnosis = True
        self._forkserver = forkserver
        self._cluster = None
        self._error: BaseException | None = None
        self._taken = False
        self._thread = threading.Thread(
            target=self._start, args=(workers, forkserver), name="mbstudy-cluster-start",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def _start(self, workers, forkserver) -> None:
        try:
            self._cluster = local_cluster(workers, forkserver)
        except BaseException as exc:  # re-raised by result()
            self._error = exc

    def result(self):
        """The started LocalCluster (the caller closes it); re-raises a failed start."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        self._taken = True
        return self._cluster

    def close(self) -> None:
        """Close the cluster unless :meth:`result` handed it over (idempotent); call it
        after the handed-over cluster was closed too (it ends the gc diagnosis).

        A start still not ended after :data:`START_WAIT_S` is stuck for good (a start
        takes seconds; an interrupt once left the import lock held and the start thread
        waited on it forever, pipeline/cli/interrupts.py): its forkserver and workers are
        killed and the thread is left behind (a daemon), so that an interrupted launch
        always ends."""
        self._thread.join(START_WAIT_S)
        if self._thread.is_alive():
            server = self._forkserver
            if server is not None and server.active:
                kill_process_tree(private_api.forkserver_pid(private_api.forkserver()))
                server.stop()  # reaps it, restores what its start changed
            return
        if self._cluster is not None and not self._taken:
            self._taken = True
            close_cluster(self._cluster)
        if self._gc_diagnosis:
            self._gc_diagnosis = False
            private_api.gc_diagnosis(False)
