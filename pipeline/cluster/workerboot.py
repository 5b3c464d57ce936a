"""Preloaded once by the forkserver that the LocalCluster's worker processes fork from.

Every worker process needs the same stack (distributed, numba, the solvers, zarr) and
numba's one-time initialisation (``load_additional_registries``) before it can load a
kernel from the cache. Spawned workers each paid that (about 0.8 s a worker on a quiet
machine, seconds under load, after the launcher had started them). The forkserver
(:class:`.local.WorkerForkServer`) is the first thing a launch starts, and imports this
module while the launcher reads the study, checks the assembly and writes the store
template; every worker forked from it starts with all of it done. Kernels that are not
in the caches are never loaded here (a cold cache would compile them all in one process
instead of one per worker): the workers compile them in the warm-up.

A launch can also have the server load the study's kernels that are in the caches already
(:meth:`.local.WorkerForkServer.preload`): the launcher, once it has read the study,
writes their names to the file named by ``MBSTUDY_PRELOAD_KERNELS`` (set only in the
server's environment), and the server loads them after its imports, once, for every
worker it forks, instead of every worker loading every kernel after it has started. Only
cached kernels are named (loading one is ~0.05 s; a compile would be seconds), none for
``--engine python``; a launch that names none writes an empty list.

Importing this module never raises: a failure only means the workers import (and load
their kernels) on demand.
"""

from __future__ import annotations

import os

PRELOAD_ENV = "MBSTUDY_PRELOAD_KERNELS"
# the launcher writes the file within a second of starting the server; the environment
# variable lets a test make the wait far longer than any launch, so that "did not wait" is
# decided without a timing bound near the machine's speed
PRELOAD_WAIT_ENV = "MBSTUDY_PRELOAD_WAIT_S"


def _preload_wait_s() -> float:
    try:
        return max(0.0, float(os.environ.get(PRELOAD_WAIT_ENV, "10")))
    except ValueError:
        return 10.0


PRELOAD_WAIT_S = _preload_wait_s()

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


def preload_kernels(path: str, wait_s: float = PRELOAD_WAIT_S) -> list[str]:
    """Load the kernels listed in the JSON file ``path`` (``[[model, formulation,
    integrator], ...]``), waiting up to ``wait_s`` for the launcher to write it; the names
    of the kernels loaded (none if the file never came)."""
    import json
    import time

    deadline = time.monotonic() + wait_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return []
        time.sleep(0.005)
    with open(path, encoding="utf-8") as fh:
        triples = [tuple(t) for t in json.load(fh)]
    from mbstudy.solvers.api import load_kernel

    for triple in triples:
        load_kernel(*triple)  # kept by the process: the forked workers find it loaded
    return ["/".join(t) for t in triples]


try:
    _boot()
except Exception:  # pragma: no cover - never break the forkserver
    pass
_path = os.environ.pop(PRELOAD_ENV, None)  # the forked workers need not see it
if _path:
    try:
        preload_kernels(_path)
    except Exception:  # pragma: no cover - the workers load them on demand then
        pass
