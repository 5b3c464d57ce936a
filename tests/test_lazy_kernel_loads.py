"""A worker loads a compiled kernel only when a task that runs it arrives (pipeline/run/
batch.py ``ensure_kernel``; pipeline/run/graph.py): no worker loads every kernel of the
study up front, and a worker that joins later has loaded none.

On a real 2-worker LocalCluster of spawned processes (no forkserver, so nothing is loaded
before a task asks for it), with a study of three compiled kernels (the reference's and one
per block). What each worker ran is read from the scheduler's task stream; what it loaded
from two independent records: the launcher's per-process record (``loaded_kernels``) and
the generated kernel modules imported into the worker's ``sys.modules``.
"""

from __future__ import annotations

import sys

import pytest
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import parse_study

from tests.conftest import fourbar_study_head

STUDY = fourbar_study_head("lazyloads", 0.2, 5) + """
[[runs]]
name = "baum"
formulation = "baumgarte"
integrator = "rk4"
h = 0.01
omega_n = 10.0
xi = 1.0

[[runs]]
name = "free"
formulation = "none"
integrator = "rk4"
h = [0.01, 0.025]
"""


def _kernel_modules() -> list[str]:
    """The generated kernel modules this process imported (``mbk_<model>_<f>_<i>_<key>``)."""
    return sorted(n.split(".", 1)[1] for n in sys.modules
                  if n.startswith("mbstudy_kernels.mbk_"))  # fmt: skip


def _task_kernel(key: str, spec, grid) -> str | None:
    """The kernel ("model/formulation/integrator") a task of the launch runs, by its key."""
    if key.startswith("compile-"):
        return "/".join(key[len("compile-"):].rsplit("-", 1)[0].split("-"))
    if key.startswith(("reference-run-", "reference-check-")):
        return f"{spec.model}/{spec.reference.formulation}/{spec.reference.integrator}"
    if key.startswith("batch-"):
        for block in grid.blocks:
            if key.startswith(f"batch-{block.name}-"):
                return f"{spec.model}/{block.formulation}/{block.integrator}"
    return None  # store_reference: no kernel


@pytest.mark.cluster
def test_a_worker_loads_only_the_kernels_of_the_tasks_it_ran(tmp_path):
    from distributed import Client, LocalCluster
    from mbstudy.pipeline.run.batch import loaded_kernels
    from mbstudy.pipeline.run.graph import run_study

    spec = parse_study(STUDY)
    grid = expand_grid(spec)
    store = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        client.get_task_stream()  # start recording
        summary = run_study(spec, grid, store, client, engine="compiled")
        stream = client.get_task_stream()
        loads = client.run(loaded_kernels)
        modules = client.run(_kernel_modules)
        # a worker that joins after the kernels were compiled loads none of them
        cluster.scale(3)
        client.wait_for_workers(3, timeout=120)
        (late,) = set(client.scheduler_info()["workers"]) - set(loads)
        late_loads = client.run(loaded_kernels, workers=[late])[late]
        late_modules = client.run(_kernel_modules, workers=[late])[late]
    assert summary.ok == grid.n_cases == 3
    assert set(summary.kernels) == {"fourbar/projection/dopri5", "fourbar/baumgarte/rk4",
                                    "fourbar/none/rk4"}  # fmt: skip
    ran: dict[str, set[str]] = {w: set() for w in loads}
    for rec in stream:
        kernel = _task_kernel(str(rec["key"]), spec, grid)
        if kernel is not None:
            ran[rec["worker"]].add(kernel)
    assert set().union(*ran.values()) == set(summary.kernels)
    for worker, kernels in ran.items():
        assert set(loads[worker]) == kernels, worker
        # the modules imported: exactly those kernels, none other composed or loaded
        assert sorted("/".join(m.split("_")[1:4]) for m in modules[worker]) == sorted(kernels)
    assert summary.kernels_per_worker == {w: len(k) for w, k in ran.items()}
    assert late_loads == {} and late_modules == []
