"""``mbstudy plot`` and ``mbstudy report``: figures and the HTML report of stores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import BadInput, guard

app = typer.Typer()


# ---------------------------------------------------------------------------- plot
def _parse_sel(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise BadInput(f"--sel: expected NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            out[name.strip()] = value.strip()
    return out


@app.command()
def plot(
    store: Annotated[str, typer.Argument(metavar="STORE",
                                         help="Store path or URL (s3://BUCKET/NAME.zarr).")],
    kind: Annotated[
        str | None, typer.Option(help="series (default), convergence, heatmap, ratio or"
                                 " work-precision; not for a search store (one figure per"
                                 " search block).")
    ] = None,
    group: Annotated[list[str] | None, typer.Option(help="Block(s) to plot.")] = None,
    out: Annotated[Path, typer.Option(help="Directory for the PNG and SVG files.")] = Path(
        "figures"
    ),
    metric: Annotated[list[str] | None, typer.Option(help="Metric(s) to plot.")] = None,
    axis: Annotated[
        str | None, typer.Option(help="Grid axis of convergence/ratio plots (default h).")
    ] = None,
    x: Annotated[str | None, typer.Option("--x", help="Heatmap x axis.")] = None,
    y: Annotated[str | None, typer.Option("--y", help="Heatmap y axis.")] = None,
    baseline: Annotated[str | None, typer.Option(help="Block to divide by (ratio).")] = None,
    sel: Annotated[
        list[str] | None, typer.Option(help="NAME=VALUE: only cases with this axis value.")
    ] = None,
    cost: Annotated[str, typer.Option(help="Cost axis of work-precision plots.")] = "wall_s",
    series: Annotated[list[str] | None, typer.Option(help="Series to plot (series).")] = None,
) -> None:
    """Figures (PNG + SVG, one file per figure) from a store.

    Example: mbstudy plot results/smoke.zarr --kind heatmap --group baumgarte --x omega_n
    --y h
    """

    def body():
        from mbstudy.pipeline.analysis.plots import make_plots

        _writable_folder(out)
        paths = make_plots(
            store,
            kind,
            out,
            groups=group,
            metrics=metric,
            axis=axis,
            x=x,
            y=y,
            baseline=baseline,
            select=_parse_sel(sel),
            cost=cost,
            series=series,
        )
        for p in paths:
            typer.echo(str(p))

    guard(body)


def _writable_folder(out: Path) -> None:
    """Refuse an ``--out`` that cannot be written, before any store is read and without
    creating anything: the folder, or its nearest existing ancestor, must be a folder in
    which a scratch file can be made (a traceback at the end, otherwise)."""
    import tempfile

    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(0, f"{probe} is not a folder")
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise BadInput(f"--out {out}: cannot write there: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------- report
@app.command()
def report(
    stores: Annotated[list[str], typer.Argument(metavar="STORE...",
                                                help="Store path(s) or URL(s).")],
    out: Annotated[Path, typer.Option(
        help="Directory for index.html and figures/: missing, empty or a previous report "
        "of the same stores (its files are replaced).")] = Path("report"),
    baseline: Annotated[
        str | None, typer.Option(help="Block to divide by in the ratio tables.")
    ] = None,
) -> None:
    """A self-contained HTML report comparing the methods of each study: which method at
    what cost (one table per step size or tolerance), every block overlaid, ranking,
    failures, figures over the grid, per-case tables, provenance.

    Example: mbstudy report results/smoke.zarr --out report/
    """

    def body():
        from mbstudy.pipeline.stages import report as report_stage

        _writable_folder(out)
        typer.echo(str(report_stage(stores, out=out, baseline=baseline).path))

    guard(body)
