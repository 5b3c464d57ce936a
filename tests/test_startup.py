"""Launch start-up: the launcher never runs numba, the workers fork from a
forkserver with their stack preloaded (and still see the launcher's environment and
directory), the dashboard is attached later, and every error path shuts the cluster down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import REPO, STUDIES, fourbar_study_head


def _study_references():
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.study.parse import load_study
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.spec import pack_params

    out = []
    for path in sorted(STUDIES.glob("*.toml")):
        spec = load_study(path)
        entry = model_entry.model(spec.model)
        for key in expand_grid(spec).references:
            out.append((path.stem, entry, pack_params(entry.params, dict(key.model_params))))
    return out


def test_pure_python_assembly_matches_the_jitted_functions_bit_for_bit():
    from mbstudy.pipeline.plan.purepy import pure_python
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.assembly import AssemblyError
    from mbstudy.solvers.spec import pack_params

    cases = _study_references()
    assert len({name for name, _, _ in cases}) >= 10
    for name, entry, p in cases:
        q_py, v_py = pure_python(entry.module.initial_state)(p)
        q, v = entry.module.initial_state(p)
        assert np.array_equal(q_py, q) and np.array_equal(v_py, v), name
        n, m = entry.module.sizes(p)
        assert pure_python(entry.module.sizes)(p) == (n, m), name
    fourbar = model_entry.model("fourbar")
    p = pack_params(fourbar.params, {"L3": 0.01})
    with pytest.raises(AssemblyError) as jitted:
        fourbar.module.initial_state(p)
    with pytest.raises(AssemblyError) as python:
        pure_python(fourbar.module.initial_state)(p)
    assert str(python.value) == str(jitted.value)


LAUNCH_IN_PROCESS = """
import json, sys
from numba.core.dispatcher import Dispatcher
from mbstudy.pipeline.cli.app import main
sys.argv = ["mbstudy", "launch", sys.argv[1], "--store", sys.argv[2], "--workers", "1",
            "--quiet"]
try:
    main()
except SystemExit as exc:
    code = exc.code
compiled = sorted(
    f"{name}.{attr}" for name, mod in list(sys.modules.items())
    if name.startswith(("mbstudy.solvers", "mbstudy_kernels"))
    for attr, obj in list(vars(mod).items())
    if isinstance(obj, Dispatcher) and obj.overloads
)
kernels = sorted(n for n in sys.modules if n.startswith("mbstudy_kernels"))
print(json.dumps({"code": code, "compiled": compiled, "kernels": kernels}))
"""


@pytest.mark.cluster
def test_the_launcher_process_never_compiles_or_loads_a_numba_function(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(fourbar_study_head("nojit", 0.2, 5) + """
[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.001
omega_n = [5.0, 10.0]
xi = 1.0

[output]
series = ["q"]
""")
    store = tmp_path / "s.zarr"
    out = subprocess.run([sys.executable, "-c", LAUNCH_IN_PROCESS, str(study), str(store)],
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["code"] == 0, out.stderr[-3000:]
    assert info["compiled"] == [] and info["kernels"] == []
    from mbstudy.pipeline.store.zarr_store import ResultStore

    rs = ResultStore.open(store)
    assert rs.read("b", "done").all()
    assert rs.root_attrs()["last_launch"]["cases_run"] == 2


def _worker_view():
    import multiprocessing

    return {
        "cwd": os.getcwd(),
        "flag": os.environ.get("MBSTUDY_TEST_FLAG"),
        "hashseed": os.environ.get("PYTHONHASHSEED"),
        "openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
        "preloaded": "mbstudy.pipeline.run.batch" in sys.modules,
        "parent": multiprocessing.parent_process() is not None,
    }


@pytest.mark.cluster
def test_workers_fork_preloaded_and_see_each_launch_environment(tmp_path, monkeypatch):
    from distributed import Client
    from mbstudy.pipeline.cluster.local import WorkerForkServer, close_cluster, local_cluster

    if not WorkerForkServer.available():
        pytest.skip("no forkserver on this platform")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MBSTUDY_TEST_FLAG", "one")
    views = []
    for _ in range(2):
        cluster = local_cluster(1)
        try:
            with Client(cluster) as client:
                views.append(next(iter(client.run(_worker_view).values())))
        finally:
            close_cluster(cluster)
        monkeypatch.delenv("MBSTUDY_TEST_FLAG", raising=False)
    from multiprocessing import forkserver

    assert forkserver._forkserver._forkserver_pid is None  # stopped with its cluster
    first, second = views
    assert first["preloaded"] and second["preloaded"]  # imported before any task ran
    assert first["flag"] == "one" and second["flag"] is None  # no stale environment
    assert first["cwd"] == str(tmp_path) == second["cwd"]
    assert first["hashseed"] == "6640" and first["openblas"] == "1"  # as a Nanny spawns


@pytest.mark.cluster
def test_the_dashboard_is_attached_once_computing_starts():
    from distributed import Client
    from mbstudy.pipeline.cluster.local import attach_dashboard, close_cluster, local_cluster

    cluster = local_cluster(1)
    try:
        with Client(cluster) as client:
            link = client.dashboard_link
            assert attach_dashboard(client) is True
            assert attach_dashboard(client) is False  # once
            with urllib.request.urlopen(link, timeout=30) as resp:
                assert resp.status == 200
    finally:
        close_cluster(cluster)


def _preloaded_view():
    return {"kernels": sorted(n for n in sys.modules if n.startswith("mbstudy_kernels.")),
            "env": os.environ.get("MBSTUDY_PRELOAD_KERNELS")}


@pytest.mark.cluster
def test_the_forkserver_loads_the_named_cached_kernels_before_it_forks():
    from distributed import Client
    from mbstudy.pipeline.cluster.local import WorkerForkServer, close_cluster, local_cluster
    from mbstudy.pipeline.run.batch import compile_kernel

    if not WorkerForkServer.available():
        pytest.skip("no forkserver on this platform")
    triple = ("fourbar", "baumgarte", "rk4")
    compile_kernel(triple)  # in the caches (compiled here if no other test did)
    views = []
    for named in ([triple], []):
        server = WorkerForkServer().start(kernels=True)
        assert "MBSTUDY_PRELOAD_KERNELS" not in os.environ  # the server's environment only
        server.preload(named)
        cluster = local_cluster(1, server)
        try:
            with Client(cluster) as client:
                views.append(next(iter(client.run(_preloaded_view).values())))
        finally:
            close_cluster(cluster)
    loaded, none = views
    assert [n for n in loaded["kernels"] if "mbk_fourbar_baumgarte_rk4_" in n]  # before any task
    assert none["kernels"] == [] and loaded["env"] is None and none["env"] is None


def test_the_forkserver_waits_for_the_list_a_bounded_time(tmp_path):
    import time

    from mbstudy.pipeline.cluster.workerboot import preload_kernels

    t0 = time.monotonic()
    assert preload_kernels(str(tmp_path / "never.json"), wait_s=0.2) == []
    assert 0.2 <= time.monotonic() - t0 < 5
    (tmp_path / "empty.json").write_text("[]")
    assert preload_kernels(str(tmp_path / "empty.json"), wait_s=60) == []


@pytest.mark.cluster
def test_the_delayed_dashboard_attaches_only_a_launch_that_lasts():
    import time

    from distributed import Client
    from mbstudy.pipeline.cluster.local import DelayedDashboard, close_cluster, local_cluster

    cluster = local_cluster(1)
    try:
        with Client(cluster) as client:
            # the address serves from the start: a page saying the launch is in progress
            with urllib.request.urlopen(client.dashboard_link, timeout=30) as resp:
                assert resp.status == 200
                assert "mbstudy: launch in progress" in resp.read().decode()
            early = DelayedDashboard(client, after=30.0).start()
            early.cancel()  # the launch ended first: nothing imported, nothing attached
            assert cluster.mbstudy_dashboard_pending is True
            late = DelayedDashboard(client, after=0.2).start()
            deadline = time.monotonic() + 60
            while cluster.mbstudy_dashboard_pending and time.monotonic() < deadline:
                time.sleep(0.05)
            late.cancel()  # waits for an attach in progress
            assert cluster.mbstudy_dashboard_pending is False
            with urllib.request.urlopen(client.dashboard_link, timeout=30) as resp:
                assert resp.status == 200
                page = resp.read().decode()
            assert "launch in progress" not in page and "bokeh" in page.lower()  # the dashboard
    finally:
        close_cluster(cluster)


def _children() -> set[int]:
    """Live child processes, but multiprocessing's resource tracker (one per process,
    started with the first worker process and kept, whatever the start method)."""
    import psutil

    out = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(
                p.cmdline()
            ):
                out.add(p.pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.cluster
@pytest.mark.parametrize("case", ["unassemblable", "not-a-store", "bad-study"])
def test_bad_input_after_the_cluster_started_shuts_it_down(tmp_path, case):
    from multiprocessing import forkserver

    text = (STUDIES / "smoke.toml").read_text()
    store = tmp_path / "out.zarr"
    if case == "unassemblable":
        text = text.replace("[reference]", "[model]\nL3 = 0.01\n\n[reference]")
    elif case == "not-a-store":
        store.mkdir()
        (store / "keep.txt").write_text("keep")
    else:
        text = text.replace('model = "fourbar"', 'model = "fourbr"')
    study = tmp_path / "study.toml"
    study.write_text(text)
    before = _children()
    env_before = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "PYTHONHASHSEED")}
    res = CliRunner().invoke(app, ["launch", str(study), "--store", str(store), "--workers", "1"])
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert forkserver._forkserver._forkserver_pid is None
    assert _children() <= before  # no scheduler, worker or forkserver left behind
    assert not (tmp_path / "out.zarr.lock").exists()
    if case == "not-a-store":
        assert sorted(p.name for p in store.iterdir()) == ["keep.txt"]
    else:
        assert not store.exists()
    if case == "bad-study":  # nothing was started: the environment is as it was
        assert {k: os.environ.get(k) for k in env_before} == env_before



@pytest.mark.cluster
def test_a_failure_composing_the_kernel_keys_never_leaves_the_forkserver_waiting(
    tmp_path, monkeypatch
):
    """The forkserver waits for the launcher's list of kernels to load before it forks a
    worker; an error while the launcher composes it still hands it a list (an empty one),
    so the cluster starts and shuts down at once instead of after the server's wait."""
    import time

    from mbstudy.pipeline.cluster import workerboot
    from mbstudy.pipeline.run import launch as launch_module

    def broken(spec, grid):
        raise RuntimeError("kernel keys failed")

    monkeypatch.setattr(launch_module, "kernel_keys", broken)
    # a wait of 10 minutes (read by the forkserver when it starts): a launch that ended
    # within it did not wait for the list, however loaded the machine is
    monkeypatch.setenv(workerboot.PRELOAD_WAIT_ENV, "600")
    before = _children()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="kernel keys failed"):
        launch_module.launch(STUDIES / "smoke.toml", store=tmp_path / "s.zarr", workers=1,
                             quiet=True)  # fmt: skip
    assert time.monotonic() - t0 < 600
    assert _children() <= before


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie left for its parent to reap)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _sleep_forever() -> None:
    import time

    time.sleep(3600)


def test_a_cluster_start_stuck_for_good_is_killed_not_waited_for(monkeypatch):
    """ClusterStart.close waits START_WAIT_S for a start that never ends (one stuck on a
    lock an interrupt left held hung a launch in CI), then kills the forkserver and the
    worker it forked (real processes) and returns, so an interrupted launch ends."""
    import multiprocessing
    import threading
    import time

    import psutil
    from mbstudy.pipeline import private_api
    from mbstudy.pipeline.cluster import local

    if not local.WorkerForkServer.available():
        pytest.skip("no forkserver on this platform")
    forked: list[int] = []
    never = threading.Event()

    def stuck_start(workers, forkserver):
        worker = multiprocessing.get_context("forkserver").Process(target=_sleep_forever,
                                                                   daemon=True)  # fmt: skip
        worker.start()
        forked.append(worker.pid)
        never.wait()  # a start that never ends

    monkeypatch.setattr(local, "local_cluster", stuck_start)
    monkeypatch.setattr(local, "START_WAIT_S", 1.0)
    server = local.WorkerForkServer().start()
    started = local.ClusterStart(1, server)
    try:
        deadline = time.monotonic() + 120
        while not forked and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = [private_api.forkserver_pid(private_api.forkserver()), *forked]
        assert all(psutil.pid_exists(p) for p in pids), pids
        t0 = time.monotonic()
        started.close()
        assert time.monotonic() - t0 < 30  # a hang guard, not a timing claim
        assert not server.active  # stopped (reaped) with its workers
        deadline = time.monotonic() + 30
        while [p for p in pids if _alive(p)] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)], pids
    finally:
        never.set()
        server.stop()
