"""SLURM/PBS batch jobs as Dask workers, through dask-jobqueue.

The scheduler, dashboard and workers bind to 127.0.0.1 unless the site names a network
interface in Dask's configuration (``jobqueue.slurm.interface``, e.g.
``DASK_JOBQUEUE__SLURM__INTERFACE=ib0``), which a multi-node site needs. The launch's
TLS credentials (:mod:`.security`) are written once to files of mode 0600 in
``jobqueue.<kind>.shared_temp_directory`` (default the working directory), which the jobs
must be able to read.

Batch jobs end (walltime, ``scancel``, a node failure, a worker that retires at its
``worker_lifetime``); :class:`JobKeeper` submits a new job for each one that ended, so a
study outlives any single job (dask-jobqueue documentation, "How to handle job queueing
system walltime killing workers").
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import threading

from mbstudy.pipeline.cluster.security import LOOPBACK, launch_security


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


def job_options(kind: str, spec=None, job_name: str | None = None, **overrides) -> dict:
    """The dask-jobqueue keyword arguments of a ``[cluster]`` spec (see
    :func:`jobqueue_cluster`); the interpreter path is quoted for the job script's shell
    (``shlex.quote``) unless the site configured ``jobqueue.<kind>.python`` itself."""
    import dask

    opts: dict = {"cores": 1, "processes": 1, "memory": "2GB", "walltime": "01:00:00",
                  "security": launch_security(), "protocol": "tls://",
                  "shared_temp_directory": _shared_directory(kind)}
    if dask.config.get(f"jobqueue.{kind}.python", None) is None:
        opts["python"] = shlex.quote(sys.executable)
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
    return opts


def _shared_directory(kind: str) -> str:
    """``jobqueue.<kind>.shared_temp_directory`` (default the working directory), where the
    TLS files go: dask-jobqueue writes their paths into the job script unquoted, so a
    directory whose name the shell would split or interpret is refused."""
    import dask

    path = dask.config.get(f"jobqueue.{kind}.shared_temp_directory", None) or os.getcwd()
    if shlex.quote(path) != path:
        from mbstudy.pipeline.study.spec import StudyError

        raise StudyError(repr(path), f"jobqueue.{kind}.shared_temp_directory",
                         "the job scripts name the TLS files of this folder, whose name holds"
                         " characters a shell would interpret; configure a plain path")
    return path


def jobqueue_cluster(kind: str, spec=None, job_name: str | None = None, **overrides):
    """A dask-jobqueue cluster (SLURMCluster / PBSCluster) from a ``[cluster]`` spec.

    ``job_name`` names every worker job (see :func:`pipeline.jobs.job_name`); ``overrides``
    are passed to the dask-jobqueue class and win over the spec.
    """
    import dask_jobqueue

    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]
    return cls(**job_options(kind, spec, job_name, **overrides))


def render_job_script(kind: str, spec=None, job_name: str | None = None) -> str:
    """The job script :func:`jobqueue_cluster` submits, rendered without starting a
    scheduler or writing the TLS files: the scheduler's address and the files' random
    names are placeholders (``<scheduler>``, ``XXXXXXXX``)."""
    import dask_jobqueue
    from distributed.security import Security

    job_cls = {"slurm": dask_jobqueue.slurm.SLURMJob, "pbs": dask_jobqueue.pbs.PBSJob}[kind]
    opts = job_options(kind, spec, job_name)
    folder = opts.pop("shared_temp_directory")
    opts.pop("scheduler_options", None)
    opts["security"] = Security(**{
        f"tls_{name}": os.path.join(folder, f".dask-jobqueue.worker.{part}.XXXXXXXX")
        for name, part in (("ca_file", "ca_file"), ("worker_cert", "cert"),
                           ("worker_key", "key"))
    }, require_encryption=True)  # fmt: skip
    job = job_cls("tls://<scheduler>:0", name="dummy-name", config_name=kind,
                  interface=site_interface(kind), **opts)  # fmt: skip
    return job.job_script()


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
