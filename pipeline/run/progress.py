"""What a launch shows on the terminal (stderr): the progress bar and the final summary."""

from __future__ import annotations

from mbstudy.pipeline.run.graph import LaunchSummary
from mbstudy.solvers.status import describe_failures
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

__all__ = ["console", "engine_line", "kernel_line", "print_summary", "progress_bar",
           "update_kernel_task"]


def console() -> Console:
    """The launch's console (stderr: stdout stays for the command's own output)."""
    return Console(stderr=True)


def progress_bar(out: Console, disable: bool = False) -> Progress:
    """Cases done / total, failed so far, elapsed time and ETA."""
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


def print_summary(summary: LaunchSummary, rs, out: Console) -> None:
    """The per-block table, failures by status, times and the store's path."""
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
        f"wall {summary.wall_s:.2f} s, kernel {summary.kernel_s:.2f} s, warm-up"
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
