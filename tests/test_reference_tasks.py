"""The reference of a launch is two tasks, its run and its check run, that run at the same
time on two workers, and the stored reference is the one ``compute_reference``
gives in one process (bitwise), on a real 2-worker LocalCluster with a real Zarr store.

Interpreted engine (``--engine python``), so nothing is compiled here.
"""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.plan.purepy import pure_kernel
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.reference import compute_reference

from tests.conftest import fourbar_study_head

# rtol 1e-10 over 0.3 s: ~100-200 interpreted dopri5 steps per run (a fraction of a second)
STUDY = fourbar_study_head("reftasks", 0.3, 7) + """
[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = [0.01, 0.025]
"""


def test_reference_run_and_check_run_are_concurrent_tasks_with_the_same_numbers(tmp_path):
    from distributed import Client, LocalCluster
    from mbstudy.pipeline.run.graph import run_study

    spec = parse_study(STUDY)
    grid = expand_grid(spec)
    store = ResultStore.create(tmp_path / "s.zarr", spec, grid)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        client.get_task_stream()  # start recording (the scheduler's task-stream plugin)
        summary = run_study(spec, grid, store, client, engine="python")
        stream = client.get_task_stream()
    assert summary.ok == grid.n_cases == 2
    spans = {}
    for rec in stream:
        key = str(rec["key"])
        if key.startswith("reference-"):
            (compute,) = [s for s in rec["startstops"] if s["action"] == "compute"]
            spans[key.rsplit("-", 1)[0]] = (rec["worker"], compute["start"], compute["stop"])
    assert set(spans) == {"reference-run-0", "reference-check-0", "reference-0"}
    (w_run, a0, a1), (w_chk, b0, b1) = spans["reference-run-0"], spans["reference-check-0"]
    assert w_run != w_chk  # one worker each ...
    assert max(a0, b0) < min(a1, b1)  # ... at the same time
    # the stored reference is compute_reference's, bit for bit (run, check, estimate)
    ref = spec.reference
    key = grid.references[0]
    want = compute_reference(spec.model, dict(key.model_params), ref.integrator,
                             ref.formulation, dict(ref.params), key.t_end, key.samples,
                             kernel=pure_kernel(spec.model, ref.formulation,
                                                ref.integrator))  # fmt: skip
    got = ResultStore.open(store.path).read_reference(0)
    assert np.isfinite(want.error_estimate) and want.error_estimate > 0
    assert got.error_estimate == want.error_estimate
    assert np.array_equal(got.q, want.q) and np.array_equal(got.v, want.v)
    assert np.array_equal(got.t, want.t) and got.status == want.status == 0
