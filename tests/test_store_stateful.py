"""A Hypothesis state machine over one store (in the spirit of zarr-python's and Icechunk's
stateful tests): random sequences of launches (whole, interrupted after a random batch,
or interrupted while the template is written), damage to a random file of the store
(deleted, bit-flipped, truncated, garbage, a directory or a FIFO in its place), ``verify``
and reads. Invariants after every step:

* a launch returns exit 0 or 130, never a traceback (a damage it cannot undo would be
  one line with exit 2: none of the damages here is such, one at a time);
* ``verify`` exits 0, 1 or (unreadable root) 2 with one line, never a traceback;
* a read either refuses (one line, StoreError) or serves data equal, case by case for
  every finished case, to an undisturbed run made in the test: never a damaged value;

and at the end, once relaunched, ``verify`` says intact and every value array of the
store equals, bit for bit, that of the undisturbed run.

Affordable: the six four-bar cases of the integrity tests on one warm compiled kernel,
a real LocalCluster shared by every launch (``--scheduler``), a few steps per sequence.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.run import graph
from mbstudy.pipeline.run.launch import EXIT_INTERRUPTED, launch
from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError
from typer.testing import CliRunner

from tests.e2e_testkit import six_case_study, store_arrays

pytestmark = pytest.mark.cluster

N_BATCHES = 6  # six cases, one per batch
DAMAGES = ("delete", "flip", "truncate", "garbage", "directory", "fifo")  # any file
SEQUENCES = 10  # max_examples: ~4 launches each


def damage_file(path: Path, kind: str, seed: int) -> None:
    """Damage one file of the store as ``kind`` says. A document (``zarr.json``) is made
    unreadable (a flipped bit in a JSON document can leave it valid with another value:
    out of scope, the checksums guard chunks), a chunk any way."""
    data = path.read_bytes()
    rng = np.random.default_rng(seed)
    if path.name == "zarr.json" and kind == "flip":
        kind = "truncate"
    if kind in ("delete", "directory", "fifo"):
        path.unlink()
        if kind == "directory":
            path.mkdir()
            (path / "x").write_bytes(b"x")
        elif kind == "fifo":
            os.mkfifo(path)
    elif kind == "flip":
        buf = bytearray(data)
        buf[int(rng.integers(len(buf)))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(buf))
    elif kind == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(rng.bytes(max(len(data), 8)))


class StoreMachine(RuleBasedStateMachine):
    """One store, launched, interrupted, damaged, verified and read in random order."""

    study: Path
    undisturbed: dict[str, np.ndarray]
    scheduler: str
    client = None

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    @initialize()
    def fresh(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="stateful-"))
        self.store = self.dir / "s.zarr"
        self.damaged = False  # one damage, then a launch repairs it

    def teardown(self) -> None:
        try:
            self.finish()
        finally:
            self.idle()
            shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ helpers
    def idle(self) -> None:
        """Wait until the cluster runs nothing (an interrupted launch's running batch
        finishes on its worker): a hang guard, not a timing claim. The launch cancels its
        futures on Ctrl-C, so the scheduler forgets a batch its worker still writes; the
        workers' own count (``executing_count``, cancelled tasks included) says when that
        write ended (else a damage step could interleave with it: a rare failure under
        load, a status chunk missing from a batch written as done)."""
        deadline = time.time() + 120
        while time.time() < deadline and (
            any(self.client.processing().values())
            or any(self.client.run(_executing).values())
        ):
            time.sleep(0.05)

    def run_launch(self, interrupt_after: int | None = None, in_setup: bool = False) -> int:
        calls = {"n": 0}
        account = graph._account

        def interrupting(*args, **kwargs):
            account(*args, **kwargs)
            calls["n"] += 1
            if interrupt_after is not None and calls["n"] > interrupt_after:
                raise KeyboardInterrupt  # Ctrl-C after that many finished batches

        def setup_killed(*args, **kwargs):
            raise KeyboardInterrupt  # Ctrl-C while the template is written

        patches = [mock.patch.object(graph, "_account", interrupting)]
        if in_setup:
            patches.append(mock.patch.object(ResultStore, "_create_block", setup_killed))
        out: list[str] = []
        try:
            for p in patches:
                p.start()
            summary = launch(self.study, store=self.store, scheduler=self.scheduler,
                             quiet=True, engine="compiled", echo=out.append)  # fmt: skip
            code = summary.exit_code
        except KeyboardInterrupt:
            assert in_setup
            code = EXIT_INTERRUPTED
        finally:
            for p in reversed(patches):
                p.stop()
        self.idle()
        assert code in (0, EXIT_INTERRUPTED), (code, out)
        self.log.append(f"launch(interrupt={interrupt_after}, setup={in_setup}) -> {code}")
        self.damaged = False
        return code

    def files(self) -> list[Path]:
        return sorted(p for p in self.store.rglob("*") if p.is_file() and not p.is_symlink())

    # ------------------------------------------------------------------ rules
    @rule(interrupt_after=st.one_of(st.none(), st.integers(0, N_BATCHES - 1)))
    def launch_it(self, interrupt_after) -> None:
        self.run_launch(interrupt_after)

    @precondition(lambda self: not self.store.exists())
    @rule()
    def launch_killed_in_setup(self) -> None:
        self.run_launch(in_setup=True)

    @precondition(lambda self: self.store.exists() and not self.damaged)
    @rule(which=st.integers(0, 10**6), kind=st.sampled_from(DAMAGES), seed=st.integers(0, 99))
    def damage(self, which, kind, seed) -> None:
        files = self.files()
        if not files:
            return
        target = files[which % len(files)]
        damage_file(target, kind, seed)
        self.log.append(f"damage {target.relative_to(self.store)}: {kind}")
        self.damaged = True

    # ------------------------------------------------------------------ invariants
    @invariant()
    def verify_reports(self) -> None:
        """verify: intact (0), damaged (1) or one line (2: an unreadable root)."""
        if not self.store.exists():
            return
        res = CliRunner().invoke(app, ["verify", str(self.store)])
        assert res.exit_code in (0, 1, 2), res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.output
        if res.exit_code == 2:
            assert len(res.output.strip().splitlines()) == 1, res.output
        self.log.append(f"verify -> {res.exit_code}")

    @invariant()
    def reads_serve_only_undisturbed_values(self) -> None:
        """A read serves the undisturbed values of every finished case, or refuses with
        one line: never a damaged chunk's fill value."""
        from mbstudy.pipeline.store.reader import case_table, open_results

        if not self.store.exists():
            return
        try:
            ds = open_results(self.store, "baumgarte", stacked=True)
            table = case_table(self.store, "baumgarte")
        except StoreError as exc:
            assert "\n" not in str(exc)
            self.log.append("read -> refused")
            return
        done = ds["done"].values
        assert (table["done"].values == done).all()
        for name in ds.data_vars:
            if f"baumgarte/{name}" not in self.undisturbed:
                continue  # timings and the engine flag differ between runs
            want = self.undisturbed[f"baumgarte/{name}"][done]
            np.testing.assert_array_equal(ds[name].values[done], want,
                                          err_msg=f"{name}: {self.log}")  # fmt: skip
            if name in table.columns and name != "status":
                np.testing.assert_array_equal(table[name].values[done], want, err_msg=name)
        self.log.append(f"read -> {int(done.sum())} cases served")

    @invariant()
    def status_never_complete_while_pending(self) -> None:
        """status: one line (exit 2) on damage, else never complete with a batch pending
        (and the done counts are the store's)."""
        if not self.store.exists():
            return
        res = CliRunner().invoke(app, ["status", str(self.store), "--json"])
        assert res.exception is None or isinstance(res.exception, SystemExit), res.output
        if res.exit_code == 2:
            assert len(res.output.strip().splitlines()) == 1, res.output
            return
        assert res.exit_code == 0, res.output
        info = json.loads(res.output)
        pending = info["blocks"]["baumgarte"]["pending"]
        assert not (info["complete"] and pending), (info, self.log)

    # ------------------------------------------------------------------ the end
    def finish(self) -> None:
        """Relaunch until the store is complete; it equals the undisturbed run."""
        for _ in range(3):
            if self.run_launch() == 0 and ResultStore.open(self.store).root_attrs()[
                    "complete"] is True:  # fmt: skip
                break
        res = CliRunner().invoke(app, ["verify", str(self.store)])
        assert res.exit_code == 0, (res.output, self.log)
        got = store_arrays(self.store)
        assert sorted(got) == sorted(self.undisturbed), self.log
        for name, want in self.undisturbed.items():
            np.testing.assert_array_equal(got[name], want, err_msg=f"{name}: {self.log}")
        RESULTS.append(list(self.log))


RESULTS: list[list[str]] = []


def _executing(dask_worker) -> int:
    """On a worker: the tasks running on its threads, cancelled ones included."""
    return dask_worker.state.executing_count


def test_random_launches_kills_and_damage_end_in_the_undisturbed_store(tmp_path):
    from distributed import Client, LocalCluster

    study = tmp_path / "six.toml"
    study.write_text(six_case_study("stateful"))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        full = tmp_path / "full.zarr"
        summary = launch(study, store=full, scheduler=cluster.scheduler_address, quiet=True,
                         engine="compiled", echo=lambda _: None)  # fmt: skip
        assert summary.exit_code == 0
        StoreMachine.study = study
        StoreMachine.undisturbed = store_arrays(full)
        StoreMachine.scheduler = cluster.scheduler_address
        StoreMachine.client = client
        run_state_machine_as_test(StoreMachine, settings=settings(
            max_examples=SEQUENCES, stateful_step_count=5, deadline=None, derandomize=True,
            suppress_health_check=list(HealthCheck), database=None))  # fmt: skip
    assert len(RESULTS) >= SEQUENCES  # every sequence ended in the undisturbed store
    steps = [step for log in RESULTS for step in log]
    print(f"{len(RESULTS)} sequences, {len(steps)} steps:",
          {kind: sum(kind in step for step in steps)
           for kind in ("launch", "-> 130", "damage", "verify -> 1", "refused", "served")})
    for log in RESULTS:
        print("  " + "; ".join(log))
