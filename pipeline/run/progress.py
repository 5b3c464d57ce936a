"""What a launch shows (on stderr): its progress and the final summary.

In a terminal the progress is rich's live bars. Where stderr is not a terminal (a log
file, a pipe: SLURM, nohup, CI) bars would print one frame cut to the console width, so
:class:`PlainProgress` prints a plain status line every ``every`` seconds instead (done,
failed and pending cases, cases per second, ETA and the phase: starting, compiling k of n
kernels, running, writing) and a last one when the cases are over; such a console is
never cut to a width (:func:`console`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mbstudy.pipeline.run.graph import LaunchSummary
from mbstudy.solvers.api import describe_failures
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

__all__ = ["PROGRESS_EVERY_S", "PlainProgress", "console", "engine_line", "kernel_line",
           "print_summary", "progress_bar", "update_kernel_task"]

PROGRESS_EVERY_S = 10.0  # default interval of the plain status lines (--progress-every)
UNCUT_WIDTH = 1000  # a console that is no terminal: lines and tables are never folded


def console() -> Console:
    """The launch's console (stderr: stdout stays for the command's own output); one that
    is not a terminal has no width to cut lines to."""
    out = Console(stderr=True)
    if not out.is_terminal:
        out = Console(stderr=True, width=UNCUT_WIDTH)
    return out


def progress_bar(out: Console, disable: bool = False,
                 every: float = PROGRESS_EVERY_S) -> Progress:  # fmt: skip
    """Cases done / total, failed so far, elapsed time and ETA: rich's bars on a terminal,
    else :class:`PlainProgress` lines every ``every`` seconds; nothing if ``disable``."""
    if not disable and not out.is_terminal:
        return PlainProgress(out, every)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=out,
        disable=disable,
    )


class PlainProgress(Progress):
    """A rich :class:`Progress` that draws nothing (its tasks are kept as usual) while a
    thread prints one plain line every ``every`` seconds, and a last one at exit::

        [ 12.0 s] running: done 120/600, failed 3, pending 480; 9.8 cases/s, ETA 49 s

    The tasks are the launch's: one with the field ``role="kernels"`` (its
    ``completed``/``total`` count the kernels ready; its description is printed before
    the last line) and one with ``role="cases"``. The
    rate counts the cases done since the running phase began (cases done before a resume
    are not this launch's work); ETA is pending / rate.
    """

    def __init__(self, out: Console, every: float = PROGRESS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        super().__init__(console=out, disable=True)
        self.clock = clock
        self.out = out
        self.every = max(float(every), 0.05)
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = clock()
        self._run_start: tuple[float, float] | None = None  # (time, cases done) then

    def __enter__(self) -> PlainProgress:
        self._t0 = self.clock()
        self._thread = threading.Thread(target=self._loop, name="mbstudy-progress",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
        cases, kernels = self._task("cases"), self._task("kernels")
        if exc[0] is None and cases is not None and cases.completed >= (cases.total or 0):
            # the last lines, as the bars' last frame ("kernels ready: 2 compiled, 1 from
            # cache"); an interrupted launch says so in one line of its own
            if kernels is not None and kernels.total is not None:
                self.out.print(kernels.description, markup=False, soft_wrap=True)
            self.out.print(self.line(final=True), markup=False, soft_wrap=True)

    def _loop(self) -> None:
        while not self._halt.wait(self.every):
            self.out.print(self.line(), markup=False, soft_wrap=True)

    def update(self, task_id, **kwargs) -> None:
        """As rich's; the running phase begins when the kernels task is complete."""
        super().update(task_id, **kwargs)
        kernels, cases = self._task("kernels"), self._task("cases")
        if (self._run_start is None and kernels is not None and cases is not None
                and kernels.total is not None and kernels.completed >= kernels.total):
            self._run_start = (self.clock(), cases.completed)

    def _task(self, role: str):
        return next((t for t in self.tasks if t.fields.get("role") == role), None)

    def line(self, final: bool = False) -> str:
        """The status line now (``final``: the last one, without an ETA)."""
        now = self.clock()
        kernels, cases = self._task("kernels"), self._task("cases")
        total = int(cases.total or 0) if cases else 0
        done = int(cases.completed) if cases else 0
        failed = int(cases.fields.get("failed", 0)) if cases else 0
        if cases is None or kernels is None or kernels.total is None:
            phase = "starting"
        elif kernels.completed < kernels.total:
            phase = f"compiling {int(kernels.completed)} of {int(kernels.total)} kernels"
        elif done < total:
            phase = "running"
        else:
            phase = "writing"
        if phase in ("running", "writing") and self._run_start is None:
            self._run_start = (now, done)
        rate = 0.0
        if self._run_start is not None and now > self._run_start[0]:
            rate = (done - self._run_start[1]) / (now - self._run_start[0])
        pending = total - done
        eta = "-" if rate <= 0 else f"{pending / rate:.0f} s"
        if final:
            phase = "cases finished"
        head = f"[{now - self._t0:6.1f} s] {phase}: done {done}/{total}, failed {failed},"
        tail = f" pending {pending}; {rate:.1f} cases/s"
        return head + tail + ("" if final else f", ETA {eta}")


def _short(kernel: str) -> str:
    """``model/formulation/integrator`` -> ``formulation+integrator`` (one model a study)."""
    parts = kernel.split("/")
    return "+".join(parts[1:]) if len(parts) == 3 else kernel


def update_kernel_task(progress: Progress, task, info: dict, waiting: list[str]) -> None:
    """The kernels line of the launch display: what is compiling, then what it cost.

    ``compiling 1/4 kernels: drcs+dopri5, qr+dopri5 ...`` while kernels are not ready
    (the elapsed column runs), ``kernels ready: 3 compiled, 1 from cache`` after (and
    ``, 2 interpreted`` for kernels that run as Python, plan/engines.py).
    """
    t = progress.tasks[[x.id for x in progress.tasks].index(task)]
    state = t.fields.setdefault("kernels", {})
    if info:
        state[info["kernel"]] = info
    total = len(state) + len(waiting)
    if waiting:
        names = ", ".join(_short(k) for k in waiting)
        line = f"compiling {len(state)}/{total} kernels: {names} ..."
        progress.update(task, total=total, completed=len(state), description=line)
    else:
        n_comp = sum(1 for v in state.values() if v["compiled"])
        n_py = sum(1 for v in state.values() if v.get("engine") == "python")
        interp = f", {n_py} interpreted" if n_py else ""
        progress.update(task, total=total, completed=total,
                        description=f"kernels ready: {n_comp} compiled,"
                                    f" {total - n_comp - n_py} from cache{interp}")  # fmt: skip
        progress.stop_task(task)


def kernel_line(kernels: dict[str, dict]) -> str:
    """Summary line: the kernels compiled in this launch apart from those loaded from cache."""
    comp = {k: v["s"] for k, v in kernels.items() if v["compiled"]}
    load = {k: v["s"] for k, v in kernels.items() if not v["compiled"]}
    parts = []
    if comp:
        each = ", ".join(f"{_short(k)} {s:.1f} s" for k, s in comp.items())
        parts.append(f"compiled {len(comp)} in {sum(comp.values()):.1f} s ({each})")
    if load:
        parts.append(f"loaded {len(load)} from cache in {sum(load.values()):.1f} s")
    return "kernels: " + ("; ".join(parts) or "none")


def engine_line(summary: LaunchSummary) -> str:
    """How many cases ran interpreted and why (plan/engines.py), and how to get timings."""
    why = "; ".join(f"{_short(k)} {v['reason']}" for k, v in summary.engines.items()
                    if v["engine"] == "python")  # fmt: skip
    return (f"engine: {summary.cases_python} cases ran interpreted ({why}): same numbers,"
            " no kernel timing (engine=python in the store); launch --engine compiled,"
            " or mbstudy warm first, for timings")


def print_summary(summary: LaunchSummary, rs, out: Console, run_s: float | None = None) -> None:
    """The per-block table, failures by status, times and the store's path. ``run_s``:
    the part of ``summary.wall_s`` (the whole launch) that ran the cases."""
    table = Table(title="mbstudy launch")
    for col in ("block", "cases", "ok", "failed", "skipped (done before)"):
        table.add_column(col, justify="right")
    for name, info in summary.per_block.items():
        table.add_row(name, str(info["cases"]), str(info["ok"]), str(info["failed"]),
                      str(info["skipped"]))  # fmt: skip
    out.print(table)
    out.print(
        f"ran {summary.cases_run} cases in {summary.batches_run} batches"
        f" ({summary.batches_skipped} batches already done); failed: "
        f"{describe_failures(summary.status_counts)}",
        markup=False,
    )
    out.print(
        f"wall {summary.wall_s:.2f} s"
        + (f" (running the cases {run_s:.2f} s)" if run_s is not None else "")
        + f", kernel {summary.kernel_s:.2f} s, warm-up"
        f" {summary.warm_s:.2f} s, workers {summary.workers}, efficiency {summary.efficiency:.2f}"
    )
    if summary.kernels:
        out.print(kernel_line(summary.kernels))
    if summary.cases_python:
        out.print(engine_line(summary), markup=False)
    if summary.warm_per_worker and summary.kernels:
        w = sorted(summary.warm_per_worker.values())
        out.print(f"kernels ready per worker (its compiles, then cache loads):"
                  f" {w[0]:.2f}-{w[-1]:.2f} s")  # fmt: skip
    if summary.interrupted:
        out.print("[yellow]interrupted[/yellow]: the store is resumable (launch again)")
    out.print(f"store: {rs.path}")
