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

__all__ = ["console", "print_summary", "progress_bar"]


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
    if summary.warm_per_worker:
        w = sorted(summary.warm_per_worker.values())
        out.print(f"kernel warm-up per worker (load from cache after the first compile):"
                  f" {w[0]:.2f}-{w[-1]:.2f} s")  # fmt: skip
    if summary.interrupted:
        out.print("[yellow]interrupted[/yellow]: the store is resumable (launch again)")
    out.print(f"store: {rs.path}")
