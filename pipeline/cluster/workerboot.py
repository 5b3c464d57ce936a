"""Preloaded once by the forkserver that the LocalCluster's worker processes fork from.

Every worker process needs the same stack (distributed, numba, the solvers, zarr) and
numba's one-time initialisation (``load_additional_registries``) before it can load a
kernel from the cache. Spawned workers each paid that (about 0.8 s a worker on a quiet
machine, seconds under load, after the launcher had started them). The forkserver
(:class:`.local.WorkerForkServer`) starts when the launcher has validated the
study and imports this module while the launcher checks the assembly and writes the store
template; every worker forked from it starts with all of it done. Kernels are not loaded
here (a cold cache would compile them all in one process instead of one per worker): the
workers load them in the warm-up, from numba's cache.

Importing this module never raises: a failure only means the workers import on demand.
"""

from __future__ import annotations

MODULES = (
    "distributed.nanny",
    "distributed.worker",
    "mbstudy.pipeline.run.batch",  # numba, the solvers, zarr
    "mbstudy.pipeline.run.warmup",
    # every worker runs the launcher's __main__ (the mbstudy script or ``-m mbstudy``)
    # as __mp_main__: its import of typer is done here; mbstudy.pipeline.cli itself is not imported
    # (runpy warns when the module it runs is in sys.modules already)
    "typer",
)


def _boot() -> None:
    import importlib

    for name in MODULES:
        importlib.import_module(name)
    from mbstudy.pipeline.private_api import numba_refresh_targets

    numba_refresh_targets()


try:
    _boot()
except Exception:  # pragma: no cover - never break the forkserver
    pass
