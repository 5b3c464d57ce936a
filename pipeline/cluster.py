"""Where a study runs: an embedded LocalCluster (default), an existing scheduler, or
SLURM/PBS batch jobs through dask-jobqueue.

Security defaults: the LocalCluster's scheduler, workers and dashboard bind to
127.0.0.1. TLS and other security settings of an existing cluster come from Dask's own
configuration (``distributed.comm.tls.*``), which Client picks up unchanged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager


def default_workers() -> int:
    """Worker processes for the LocalCluster: the number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def jobqueue_cluster(kind: str, spec=None, **overrides):
    """A dask-jobqueue cluster (SLURMCluster / PBSCluster) from a ``[cluster]`` spec."""
    import dask_jobqueue

    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]
    opts: dict = {
        "cores": 1,
        "processes": 1,
        "memory": "2GB",
        "walltime": "01:00:00",
        "scheduler_options": {"host": "127.0.0.1"} if kind == "slurm" else {},
    }
    if spec is not None:
        for key in ("queue", "account", "cores", "memory", "walltime", "processes"):
            val = getattr(spec, key, None)
            if val is not None:
                opts[key] = val
        if getattr(spec, "job_extra", None):
            opts["job_extra_directives"] = list(spec.job_extra)
        if getattr(spec, "worker_lifetime", None):
            opts["worker_extra_args"] = [
                "--lifetime", spec.worker_lifetime, "--lifetime-stagger", "30s",
                "--lifetime-restart",
            ]  # fmt: skip
    opts.update({k: v for k, v in overrides.items() if v is not None})
    return cls(**opts)


@contextmanager
def open_client(
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_kind: str | None = None,
    cluster_spec=None,
    jobs: int | None = None,
) -> Iterator:
    """Yield a connected ``distributed.Client``; close what was started on exit."""
    from distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler, timeout="30s")
        try:
            yield client
        finally:
            client.close()
        return
    if cluster_kind:
        cluster = jobqueue_cluster(cluster_kind, cluster_spec)
        n_jobs = jobs or (getattr(cluster_spec, "jobs", None) if cluster_spec else None) or 1
        cluster.scale(jobs=n_jobs)
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    cluster = LocalCluster(
        n_workers=workers or default_workers(),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
