"""PBS through dask-jobqueue without a PBS server: the job script `mbstudy plan --cluster
pbs` prints is checked as a shell script (syntax, directives before the first command), and
`mbstudy launch --cluster pbs` runs against stand-in ``qsub``/``qdel`` commands that run each
submitted job script as a script, the way a PBS server's execution host does."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from mbstudy.pipeline.cluster.jobs import job_name

from tests.conftest import STUDIES, mbstudy_command
from tests.slurm.slurm_testkit import job_logs, launch_command, launcher_env, study_file

pytestmark = pytest.mark.cluster

FAKE_QSUB = """#!/usr/bin/env bash
# stand-in PBS server: keep a copy of the job script and run it as a script, in its own
# session; the job id is the process id
set -euo pipefail
n=$(ls "$FAKEPBS_DIR" | grep -c '[.]sh$' || true)
cp "${@: -1}" "$FAKEPBS_DIR/job$n.sh"
setsid bash "$FAKEPBS_DIR/job$n.sh" >"$FAKEPBS_DIR/job$n.out" 2>&1 </dev/null &
echo "$!.fakepbs"
"""
FAKE_QDEL = """#!/usr/bin/env bash
for id in "$@"; do kill -TERM -- "-${id%%.*}" 2>/dev/null || true; done
"""


def _pbs_study(tmp: Path) -> Path:
    return study_file(tmp, (STUDIES / "smoke.toml").read_text(), kind="pbs", queue="short",
                      walltime="00:05:00", jobs=1, extra='account = "proj1"')  # fmt: skip


def test_pbs_job_script_is_a_valid_script_with_the_cluster_directives(tmp_path):
    study = _pbs_study(tmp_path)
    res = subprocess.run([*mbstudy_command(), "plan", str(study), "--cluster", "pbs", "--json"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    script = tmp_path / "job.sh"
    script.write_text(json.loads(res.stdout)["job_script"])
    subprocess.run(["bash", "-n", str(script)], check=True)  # parses as a shell script
    lines = script.read_text().splitlines()
    assert lines[0].startswith("#!")
    first_cmd = next(i for i, ln in enumerate(lines[1:], 1) if ln and not ln.startswith("#"))
    directives = [ln.split(None, 1)[1] for ln in lines[:first_cmd] if ln.startswith("#PBS")]
    assert all(ln.startswith("#") or not ln for ln in lines[1:first_cmd])
    assert "-q short" in directives and "-A proj1" in directives
    assert "-l walltime=00:05:00" in directives
    select = next(d for d in directives if d.startswith("-l select="))
    assert re.fullmatch(r"-l select=1:ncpus=1:mem=\d+MB", select), select
    command = lines[first_cmd]
    assert "distributed.cli.dask_worker" in command and "--host 127.0.0.1" in command
    python = Path(command.split()[0])  # the launcher's own interpreter, by absolute path
    assert python.is_absolute() and os.access(python, os.X_OK), python


def test_launch_with_pbs_runs_the_job_script_and_equals_the_local_run(local_smoke, tmp_path):
    from tests.e2e_testkit import assert_same_arrays

    bindir, jobdir = tmp_path / "bin", tmp_path / "pbsjobs"
    bindir.mkdir()
    jobdir.mkdir()
    for name, text in (("qsub", FAKE_QSUB), ("qdel", FAKE_QDEL)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    env = launcher_env(tmp_path, kind="pbs")
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    env["FAKEPBS_DIR"] = str(jobdir)
    study = _pbs_study(tmp_path)
    store = tmp_path / "pbs.zarr"
    res = subprocess.run(launch_command(study, store, kind="pbs"), cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr + job_logs(tmp_path)
    assert_same_arrays(local_smoke, store)
    scripts = sorted(jobdir.glob("*.sh"))
    assert scripts, "qsub was never called"
    text = scripts[0].read_text()
    assert f"#PBS -N {job_name(store)}" in text
    out = "\n".join(p.read_text() for p in jobdir.glob("*.out"))
    assert re.search(r"Start worker at:\s+tls://127\.0\.0\.1:", out), out
