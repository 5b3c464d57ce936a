"""`mbstudy launch --cluster slurm` on a real single-node SLURM cluster (``slurm`` fixture):
worker jobs from sbatch, the store equal to a LocalCluster run's, a worker job cancelled
mid-study, jobs whose walltime is shorter than the study, a killed launcher resumed, and
`mbstudy status` showing the jobs of a running launch."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
from mbstudy.pipeline.cluster.jobs import job_name, list_slurm_jobs
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.conftest import STUDIES, mbstudy_command
from tests.e2e_testkit import RESUME_STUDY, assert_same_arrays, done_cases
from tests.slurm.slurm_testkit import (
    JobSampler,
    job_logs,
    launch_command,
    launcher_env,
    study_file,
)

pytestmark = pytest.mark.cluster
N_RESUME = 12  # cases (= batches) of RESUME_STUDY


def _wait(pred, timeout: float, proc: subprocess.Popen | None = None, what: str = "") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"launcher exited ({proc.returncode}) before {what}: {out}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _mem_bytes(text: str) -> float:
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    return float(text[:-1]) * units[text[-1].upper()]


def test_launch_on_slurm_equals_the_local_run(slurm, local_smoke, tmp_path):
    study = study_file(tmp_path, (STUDIES / "smoke.toml").read_text(), queue=slurm.partition,
                       walltime="00:07:00", jobs=2)  # fmt: skip
    store = tmp_path / "slurm.zarr"
    # every batch sleeps 3 s first: a warm launch can otherwise finish (and cancel the jobs)
    # before the second job's worker has started, and both must be seen running
    env = launcher_env(tmp_path)
    env["MBSTUDY_FAULT_BATCH_SLEEP"] = "3"
    with JobSampler(job_name(store)) as sampler:
        res = subprocess.run(launch_command(study, store), cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert_same_arrays(local_smoke, store)
    rows = sampler.rows
    assert len(rows) == 2, rows  # jobs = 2, none replaced
    for row in rows.values():  # queue, cores, memory and walltime come from [cluster]
        assert row["partition"] == slurm.partition
        assert row["time_limit"] == "7:00"
        assert row["cpus"] == "1"
        assert abs(_mem_bytes(row["memory"]) - 1e9) < 0.01e9
        assert "RUNNING" in row["states"]
    logs = job_logs(tmp_path)
    assert len(re.findall(r"Start worker at:\s+tls://127\.0\.0\.1:", logs)) == 2, logs
    assert not list_slurm_jobs(job_name(store))  # the launcher cancelled its jobs


def test_scancel_one_worker_job_mid_study_and_status_shows_the_jobs(slurm, local_resume,
                                                                     tmp_path):  # fmt: skip
    # one job more than the node has CPUs: one job stays pending until a CPU frees up
    n_jobs = slurm.cpus + 1
    study = study_file(tmp_path, RESUME_STUDY, queue=slurm.partition, jobs=n_jobs)
    store = tmp_path / "scancel.zarr"
    name = job_name(store)
    # every batch sleeps 2 s first, so the study outlasts "two cases done" by >= 10 s
    # whatever the engine (an interpreted tiny case finishes in well under a second, and
    # the whole study could end before the scancel below)
    env = launcher_env(tmp_path)
    env["MBSTUDY_FAULT_BATCH_SLEEP"] = "2"
    proc = subprocess.Popen(launch_command(study, store), cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip
    try:
        seen: dict = {}

        def status_shows_jobs() -> bool:
            if not ResultStore.exists(store):
                return False
            res = subprocess.run([*mbstudy_command(), "status", str(store), "--json"],
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
            if res.returncode != 0:
                return False
            out = json.loads(res.stdout)
            states = (out.get("jobs") or {}).get("states", {})
            if states.get("running", 0) >= 1 and states.get("pending", 0) >= 1:
                seen.update(out)
                return True
            return False

        _wait(status_shows_jobs, 300, proc, "status showing running and pending jobs")
        assert seen["jobs"]["name"] == name
        assert seen["jobs"]["states"]["running"] + seen["jobs"]["states"]["pending"] == n_jobs
        assert seen["blocks"]["baumgarte"]["cases"] == N_RESUME
        text = subprocess.run([*mbstudy_command(), "status", str(store)], capture_output=True,
                              text=True, timeout=60).stdout  # fmt: skip
        assert f"slurm jobs {name}:" in text and "pending" in text, text
        assert f"/{N_RESUME} done" in text, text

        _wait(lambda: done_cases(store) >= 2, 300, proc, "two cases done")
        running = [j for j in list_slurm_jobs(name) if j.state == "RUNNING"]
        slurm.run("scancel", running[0].id)
        done_at_cancel = done_cases(store)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert done_at_cancel < N_RESUME, "the job was not cancelled mid-study"
    assert proc.returncode == 0, out
    assert f"ran {N_RESUME} cases in {N_RESUME} batches" in out, out  # each batch once
    assert_same_arrays(local_resume, store)
    assert ResultStore.open(store).root_attrs()["complete"] is True


def test_walltime_shorter_than_the_study_workers_retire_and_are_replaced(slurm, tmp_path):
    # two 1-core jobs that live 30 s of a 1 min walltime; every batch sleeps 2 s first
    # (MBSTUDY_FAULT_BATCH_SLEEP), so the study lasts >= 48 x 2 s / 2 workers = 48 s on any
    # machine, however fast its kernels: the workers must retire and be replaced
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.run.batch import warm_kernels
    from mbstudy.pipeline.run.graph import study_kernels
    from mbstudy.pipeline.study.parse import load_study

    n_cases = 48
    omegas = [float(2 + i) for i in range(n_cases)]
    text = RESUME_STUDY.replace("t_end = 4.0", "t_end = 1.0").replace(
        "omega_n = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0]",
        f"omega_n = {omegas}",
    )
    study = study_file(tmp_path, text, queue=slurm.partition, walltime="00:01:00", jobs=2,
                       extra='worker_lifetime = "30s"')  # fmt: skip
    # a worker retiring at 30 s cancels the task it runs: compile the kernels into the shared
    # numba cache first, so that no worker spends its short life compiling
    spec = load_study(study)
    warm_kernels(study_kernels(spec, expand_grid(spec)))
    store = tmp_path / "walltime.zarr"
    env = launcher_env(tmp_path)
    env["MBSTUDY_FAULT_BATCH_SLEEP"] = "2"
    t0 = time.time()
    with JobSampler(job_name(store)) as sampler:
        res = subprocess.run(launch_command(study, store), cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=900)  # fmt: skip
    wall = time.time() - t0  # printed only; the jobs' replacement below shows the length
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout + res.stderr
    assert f"ran {n_cases} cases in {n_cases} batches" in out, out
    rs = ResultStore.open(store)
    assert rs.read("baumgarte", "done").all() and (rs.read("baumgarte", "status") == 0).all()
    rows = sampler.rows
    print(f"study wall {wall:.0f} s, jobs {len(rows)},"
          f" longest job {max(r['elapsed_s'] for r in rows.values())} s")  # fmt: skip
    assert len(rows) > 2, rows  # retired jobs were replaced by new ones
    assert all(r["elapsed_s"] < 60 for r in rows.values()), rows  # none reached the walltime
    logs = job_logs(tmp_path)
    assert "worker-lifetime-reached" in logs, logs[-3000:]
    assert "TIME LIMIT" not in logs, logs[-3000:]


def test_launcher_killed_and_resumed_on_the_same_slurm_cluster(slurm, local_resume, tmp_path):
    # one job more than CPUs: the killed launcher leaves a job queued (its running workers
    # exit when the scheduler connection breaks; a job that starts later would wait for the
    # dead scheduler up to its death timeout), which the relaunch must cancel
    study = study_file(tmp_path, RESUME_STUDY, queue=slurm.partition, jobs=slurm.cpus + 1)
    store = tmp_path / "killed.zarr"
    name = job_name(store)
    proc = subprocess.Popen(launch_command(study, store), cwd=tmp_path,
                            env=launcher_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        _wait(lambda: done_cases(store) >= 2, 300, proc, "two cases done")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher only: its jobs live under slurmd
        proc.wait(timeout=30)
    done_at_kill = done_cases(store)
    assert done_at_kill < N_RESUME, "the launcher was not killed mid-study"
    left = {j.id for j in list_slurm_jobs(name)}
    assert left, "the killed launcher left no worker job queued"
    with JobSampler(name) as sampler:
        res = subprocess.run(launch_command(study, store, "--resume"), cwd=tmp_path,
                             env=launcher_env(tmp_path), capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "resuming" in out, out
    cancelled = re.search(
        r"cancelled \d+ worker job\(s\) left by an earlier launch[^:]*: (.*)", out
    )
    still = {j for j in left if j in sampler.rows}  # ended on their own before the relaunch
    assert cancelled or not still, out
    if cancelled:
        assert set(cancelled.group(1).split()) <= left
    assert_same_arrays(local_resume, store)
    assert not list_slurm_jobs(name)
