"""Where a study runs: an embedded LocalCluster (default, :mod:`.local`), an existing
scheduler (Dask's own configuration, ``distributed.comm.tls.*``), or SLURM/PBS batch
jobs through dask-jobqueue (:mod:`.jobqueue`); :func:`open_client` picks one and closes
what it started. Transport security is in :mod:`.security`.

The names of the backend modules are re-exported here for callers of this module.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from mbstudy.pipeline.cluster.jobqueue import (  # noqa: F401 (re-exported)
    JobKeeper,
    jobqueue_cluster,
    lifetime_args,
    site_interface,
)
from mbstudy.pipeline.cluster.local import (  # noqa: F401 (re-exported)
    FORKSERVER_ENV,
    WORKER_PRELOAD,
    ClusterStart,
    WorkerForkServer,
    attach_dashboard,
    close_cluster,
    default_workers,
    local_cluster,
    sigint_deferred,
)
from mbstudy.pipeline.cluster.security import LOOPBACK, launch_security  # noqa: F401


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
