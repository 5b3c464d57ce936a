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
        str, typer.Option(help="series, convergence, heatmap, ratio or work-precision.")
    ] = "series",
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


# ---------------------------------------------------------------------------- report
@app.command()
def report(
    stores: Annotated[list[str], typer.Argument(metavar="STORE...",
                                                help="Store path(s) or URL(s).")],
    out: Annotated[Path, typer.Option(help="Directory for index.html and figures/.")] = Path(
        "report"
    ),
    baseline: Annotated[
        str | None, typer.Option(help="Block to divide by in the ratio tables.")
    ] = None,
) -> None:
    """A self-contained HTML report comparing the methods of each study: every block
    overlaid, ranking, failures, figures over the grid, per-case tables, provenance.

    Example: mbstudy report results/smoke.zarr --out report/
    """

    def body():
        from mbstudy.pipeline.stages import report as report_stage

        typer.echo(str(report_stage(stores, out=out, baseline=baseline).path))

    guard(body)
