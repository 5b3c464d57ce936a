"""Where a study runs: an embedded LocalCluster (default), an existing scheduler, or
SLURM/PBS batch jobs through dask-jobqueue.

Security defaults: the LocalCluster's scheduler, workers and dashboard bind to
127.0.0.1, and so do the scheduler, dashboard and workers of a SLURM/PBS cluster unless
the site names a network interface in Dask's configuration (``jobqueue.slurm.interface``,
e.g. ``DASK_JOBQUEUE__SLURM__INTERFACE=ib0``), which a multi-node site needs. Binding to
loopback does not keep out the machine's other users: every cluster mbstudy starts (the
LocalCluster and SLURM/PBS workers) speaks TLS with mutual authentication and ephemeral
credentials made for that launch (``distributed.security.Security.temporary()``: a fresh
CA, key and certificate in memory; for batch jobs, written once to files of mode 0600 in
``jobqueue.<kind>.shared_temp_directory``, default the working directory, which the jobs
must be able to read). A client without the launch's certificate cannot connect, so no
other process can submit code to the workers. An existing scheduler (``--scheduler``) uses
Dask's own configuration (``distributed.comm.tls.*``).

Batch jobs end (walltime, ``scancel``, a node failure, a worker that retires at its
``worker_lifetime``); :class:`JobKeeper` submits a new job for each one that ended, so a
study outlives any single job (dask-jobqueue documentation, "How to handle job queueing
system walltime killing workers").
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mbstudy.pipeline import private_api

LOOPBACK = "127.0.0.1"


def default_workers() -> int:
    """Worker processes for the LocalCluster: the number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def site_interface(kind: str) -> str | None:
    """The network interface the site configured for ``kind`` jobs (None: loopback)."""
    import dask

    return dask.config.get(f"jobqueue.{kind}.interface", None) or None


def lifetime_args(lifetime: str) -> list[str]:
    """``dask worker`` options that retire the worker gracefully after ``lifetime``.

    The stagger (a random +- offset so that the workers of simultaneous jobs do not all
    retire at once) is a tenth of the lifetime, at most 2 minutes. Without
    ``--lifetime-restart`` the worker's job ends when it retires and :class:`JobKeeper`
    submits a fresh job, which gets a full walltime.
    """
    from dask.utils import parse_timedelta

    seconds = float(parse_timedelta(lifetime))
    stagger = min(120.0, seconds / 10)
    return ["--lifetime", lifetime, "--lifetime-stagger", f"{stagger:g}s"]


def launch_security():
    """Ephemeral mutual-TLS credentials for one launch's cluster (see the module docstring).
    Every scheduler, worker and client of the launch gets the same CA-signed certificate;
    ``require_encryption`` makes the comms refuse plain TCP."""
    from distributed.security import Security

    return Security.temporary()


def jobqueue_cluster(kind: str, spec=None, job_name: str | None = None, **overrides):
    """A dask-jobqueue cluster (SLURMCluster / PBSCluster) from a ``[cluster]`` spec.

    ``job_name`` names every worker job (see :func:`pipeline.jobs.job_name`); ``overrides``
    are passed to the dask-jobqueue class and win over the spec.
    """
    import dask_jobqueue

    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]
    import dask

    opts: dict = {"cores": 1, "processes": 1, "memory": "2GB", "walltime": "01:00:00",
                  "security": launch_security(), "protocol": "tls://",
                  "shared_temp_directory": dask.config.get(
                      f"jobqueue.{kind}.shared_temp_directory", None) or os.getcwd()}
    worker_args: list[str] = []
    if site_interface(kind) is None:
        opts["scheduler_options"] = {"host": LOOPBACK, "dashboard_address": f"{LOOPBACK}:0"}
        worker_args += ["--host", LOOPBACK]
    if spec is not None:
        for key in ("queue", "account", "cores", "memory", "walltime", "processes"):
            val = getattr(spec, key, None)
            if val is not None:
                opts[key] = val
        if getattr(spec, "job_extra", None):
            opts["job_extra_directives"] = list(spec.job_extra)
        if getattr(spec, "worker_lifetime", None):
            worker_args += lifetime_args(spec.worker_lifetime)
    if worker_args:
        opts["worker_extra_args"] = worker_args
    if job_name:
        opts["job_name"] = job_name
    opts.update({k: v for k, v in overrides.items() if v is not None})
    return cls(**opts)


class JobKeeper:
    """Keep ``jobs`` worker jobs submitted: every ``interval`` seconds, ask the cluster to
    correct its state, which submits a new job for each one whose worker left (after
    Dask's ``distributed.deploy.lost-worker-timeout``)."""

    def __init__(self, cluster, jobs: int, interval: float = 2.0) -> None:
        self.cluster, self.jobs, self.interval = cluster, jobs, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mbstudy-jobkeeper", daemon=True)

    def start(self) -> JobKeeper:
        self.cluster.scale(jobs=self.jobs)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.cluster.scale(jobs=self.jobs)
            except Exception:  # the cluster is closing; the launcher will stop us
                logging.getLogger(__name__).debug("scale failed", exc_info=True)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


WORKER_PRELOAD = "mbstudy.pipeline.cluster.workerboot"
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

    @staticmethod
    def available() -> bool:
        import multiprocessing

        if os.environ.get(FORKSERVER_ENV, "1") == "0":
            return False
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return False
        return private_api.forkserver() is not None

    def start(self) -> WorkerForkServer:
        if not self.available():
            return self
        server = private_api.forkserver()
        # one left by an earlier launch in this process has a stale environment
        private_api.forkserver_stop(server)
        env = _pre_spawn_environ()
        self._saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        self._saved_preload = private_api.forkserver_preload_modules(server)
        self._config = None
        self.active = True
        private_api.forkserver_set_preload(server, [WORKER_PRELOAD])
        try:
            # spawns the server; its preload runs in the background
            private_api.forkserver_ensure_running(server)
        except Exception:  # pragma: no cover - then workers are spawned as usual
            logging.getLogger(__name__).debug("no forkserver", exc_info=True)
            self.stop(unused=True)
        return self

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

        ``unused``: no worker was forked (the launch stopped on bad input); the server is
        terminated at once instead of being asked to stop after its preload.
        """
        if not self.active:
            return
        self.active = False
        import signal

        server = private_api.forkserver()
        try:
            pid = private_api.forkserver_pid(server)
            if unused and pid is not None:
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

    The scheduler's HTTP server (and so the dashboard address) starts with the cluster,
    but the bokeh dashboard itself is attached by :func:`attach_dashboard` once the kernel
    compile tasks are submitted: importing bokeh and building the dashboard costs the
    launcher 0.3-0.6 s (more under load) before the first worker process would otherwise
    be spawned.

    ``forkserver``: the :class:`WorkerForkServer` started for it (one is started if None);
    the cluster owns it (:func:`close_cluster` stops it).
    """
    if forkserver is None:
        forkserver = WorkerForkServer().start()
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
        forkserver.stop()
        raise
    cluster.mbstudy_dashboard_pending = True
    cluster.mbstudy_forkserver = forkserver
    return cluster


def close_cluster(cluster) -> None:
    """Close a cluster; for one of :func:`local_cluster`, then stop its forkserver."""
    try:
        cluster.close()
    finally:
        forkserver = getattr(cluster, "mbstudy_forkserver", None)
        if forkserver is not None:
            forkserver.stop()


def attach_dashboard(client) -> bool:
    """Attach the bokeh dashboard to a LocalCluster of :func:`local_cluster` (its address,
    printed at start, then serves ``/status``). Once; a no-op for other clusters; never
    raises (the dashboard is a convenience). Returns whether it was attached now."""
    cluster = getattr(client, "cluster", None)
    scheduler = getattr(cluster, "scheduler", None)
    if scheduler is None or not getattr(cluster, "mbstudy_dashboard_pending", False):
        return False
    cluster.mbstudy_dashboard_pending = False
    try:
        import distributed.dashboard.scheduler as dashboard  # imports bokeh
    except ImportError:  # pragma: no cover - bokeh is a dependency
        return False

    async def connect() -> None:  # on the scheduler's event loop (IOLoop.current())
        dashboard.connect(scheduler.http_application, scheduler.http_server, scheduler,
                          prefix="/")  # fmt: skip

    try:
        cluster.sync(connect)
    except Exception:
        logging.getLogger(__name__).debug("dashboard not attached", exc_info=True)
        return False
    return True


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
        from distributed.gc import enable_gc_diagnosis

        enable_gc_diagnosis()
        self._gc_diagnosis = True
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
        after the handed-over cluster was closed too (it ends the gc diagnosis)."""
        self._thread.join()
        if self._cluster is not None and not self._taken:
            self._taken = True
            close_cluster(self._cluster)
        if self._gc_diagnosis:
            from distributed.gc import disable_gc_diagnosis

            self._gc_diagnosis = False
            disable_gc_diagnosis()


@contextmanager
def open_client(
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_kind: str | None = None,
    cluster_spec=None,
    jobs: int | None = None,
    job_name: str | None = None,
    started: ClusterStart | None = None,
) -> Iterator:
    """Yield a connected ``distributed.Client``; close what was started on exit.

    With ``cluster_kind`` and ``job_name`` on SLURM, jobs of that name still queued are
    first cancelled: they were left by a launcher of the same store that was killed (the
    caller holds the store's lock, so no live launch owns them). ``started``: the
    LocalCluster already being started (used when neither ``scheduler`` nor
    ``cluster_kind`` is given).
    """
    from distributed import Client

    if scheduler:
        client = Client(scheduler, timeout="30s")
        try:
            yield client
        finally:
            client.close()
        return
    if cluster_kind:
        if job_name and cluster_kind == "slurm":
            from mbstudy.pipeline.cluster.jobs import cancel_slurm_jobs

            stale = cancel_slurm_jobs(job_name)
            if stale:
                print(f"cancelled {len(stale)} worker job(s) left by an earlier launch on this"
                      f" store: {' '.join(stale)}", file=sys.stderr)  # fmt: skip
        cluster = jobqueue_cluster(cluster_kind, cluster_spec, job_name=job_name)
        n_jobs = jobs or (getattr(cluster_spec, "jobs", None) if cluster_spec else None) or 1
        keeper = JobKeeper(cluster, n_jobs).start()
        client = Client(cluster)
        try:
            yield client
        finally:
            keeper.stop()
            client.close()
            cluster.close()
        return
    cluster = started.result() if started is not None else local_cluster(workers)
    try:
        client = Client(cluster)
    except BaseException:
        close_cluster(cluster)
        raise
    try:
        yield client
    finally:
        client.close()
        close_cluster(cluster)
