"""A real single-node SLURM cluster for the session: munged, slurmctld and slurmd started
from a temporary directory (slurm.conf, state, spool, logs, pids, munge key and socket all
in it), every daemon bound to 127.0.0.1, and exactly those processes stopped at the end.

Needs root and Debian's ``slurmctld slurmd slurm-client munge``. Where they are missing
the tests are skipped with the reason; with ``MBSTUDY_REQUIRE_SLURM=1`` (``.ci/run``) they
fail instead, so CI cannot pass with the SLURM tests skipped.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
PARTITION = "mbtest"

SLURM_CONF = """\
ClusterName=mbstudy-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/run/munge.socket
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
KillWait=5
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName={partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _unavailable(reason: str) -> None:
    if os.environ.get("MBSTUDY_REQUIRE_SLURM") == "1":
        pytest.fail(f"SLURM tests required (MBSTUDY_REQUIRE_SLURM=1) but {reason}")
    pytest.skip(f"SLURM tests skipped: {reason}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 2048


@dataclass
class Slurm:
    """The running test cluster: its directory, node, partition and CPU count."""

    root: Path
    host: str
    partition: str
    cpus: int
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def run(self, *cmd: str, check: bool = True) -> str:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")
        return res.stdout

    def job_ids(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    def wait_queue_empty(self, timeout: float = 60) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.job_ids():
                return True
            time.sleep(0.5)
        return False

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-n", self.host, "-o", "%t", check=False).strip()

    def logs(self) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*")):
            out.append(
                f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-15:])
            )
        return "\n".join(out)


def _stop(procs: dict[str, subprocess.Popen]) -> None:
    """SIGTERM exactly the daemons this fixture started, in reverse order; SIGKILL a daemon
    that does not exit within 20 s."""
    for name in reversed(list(procs)):
        p = procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory) -> Slurm:
    """A single-node SLURM cluster (this host at 127.0.0.1), up for the whole session."""
    if os.geteuid() != 0:
        _unavailable("not running as root (slurmd and munged run as root here)")
    missing = [b for b in DAEMONS + CLIENTS if shutil.which(b) is None]
    if missing:
        _unavailable(f"missing {', '.join(missing)} (apt-get install slurmctld slurmd"
                     " slurm-client munge)")  # fmt: skip
    root = tmp_path_factory.mktemp("slurm")
    root.chmod(0o755)  # munged wants the socket's directories traversable by everyone
    for sub in ("state", "spool", "log", "run"):
        (root / sub).mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    cpus = len(os.sched_getaffinity(0))
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(
        host=host, root=root, cpus=cpus, mem_mb=max(1024, int(_available_mb() * 0.8)),
        ctld_port=_free_port(), d_port=_free_port(), partition=PARTITION))  # fmt: skip
    old_conf = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)  # clients, launchers and jobs of this session
    cluster = Slurm(root=root, host=host, partition=PARTITION, cpus=cpus)
    procs = cluster.procs
    log = root / "log"
    try:
        procs["munged"] = subprocess.Popen(
            ["munged", "--foreground", "--force", f"--socket={root}/run/munge.socket",
             f"--key-file={key}", f"--log-file={log}/munged.log",
             f"--pid-file={root}/run/munged.pid", f"--seed-file={root}/run/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=open(log / "munged.err", "w"))  # fmt: skip
        deadline = time.time() + 20
        while time.time() < deadline and not (root / "run" / "munge.socket").exists():
            time.sleep(0.1)
        procs["slurmctld"] = subprocess.Popen(
            ["slurmctld", "-D", "-i"], stdout=subprocess.DEVNULL,
            stderr=open(log / "slurmctld.err", "w"))  # fmt: skip
        procs["slurmd"] = subprocess.Popen(
            ["slurmd", "-D", "-N", host], stdout=subprocess.DEVNULL,
            stderr=open(log / "slurmd.err", "w"))  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline and cluster.node_state() != "idle":
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead:
                break
            time.sleep(0.25)
        if cluster.node_state() != "idle":
            _stop(procs)
            _unavailable(f"the node did not come up idle ({cluster.node_state()!r}):\n"
                         + cluster.logs())  # fmt: skip
        yield cluster
        ids = cluster.job_ids()
        if ids:
            cluster.run("scancel", *ids, check=False)
            cluster.wait_queue_empty(60)
    finally:
        _stop(procs)
        if old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old_conf


@pytest.fixture(scope="session")
def local_smoke(tmp_path_factory) -> Path:
    """studies/smoke.toml run on a LocalCluster (the store the batch-job runs must equal)."""
    from tests.conftest import STUDIES
    from tests.slurm.slurm_testkit import local_store

    return local_store(tmp_path_factory.mktemp("local-smoke"), (STUDIES / "smoke.toml").read_text())


@pytest.fixture(scope="session")
def local_resume(tmp_path_factory) -> Path:
    """RESUME_STUDY (12 one-case batches) run on a LocalCluster."""
    from tests.e2e_testkit import RESUME_STUDY
    from tests.slurm.slurm_testkit import local_store

    return local_store(tmp_path_factory.mktemp("local-resume"), RESUME_STUDY)
