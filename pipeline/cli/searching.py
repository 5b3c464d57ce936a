"""``mbstudy boundary``: the boundary a ``[[search]]`` block found, as points with brackets."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import guard

app = typer.Typer()


def _g(x) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


@app.command()
def boundary(
    store: Annotated[str, typer.Argument(metavar="STORE", help="Search store path.")],
    name: Annotated[str, typer.Argument(metavar="NAME", help="Search block name.")],
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list, one object per"
                                          " boundary point.")] = False,
) -> None:
    """The boundary of a search block: per point every continuous axis's value, the list
    axes' values, and lo / hi, the last ok and first failed (or below / above 'at') values
    of the crossed axis.

    Example: mbstudy boundary results/fourbar_edge_search.zarr edge --json
    """

    def body():
        from mbstudy.pipeline.analysis.search_answer import boundary_points

        info, points = boundary_points(store, name)
        if as_json:
            typer.echo(json.dumps(points, indent=1))
            return
        crossed = info["axes"][0]
        what = "status" if info["metric"] == "status" else f"{info['metric']} = {info['at']:g}"
        state = "done" if info["done"] else "not done"
        typer.echo(f"{name}: boundary of {what} across {crossed}, {len(points)} points"
                   f" ({info['cases']} cases, {info['rounds']} rounds, {state})")  # fmt: skip
        for p in points:
            where = "  ".join(f"{k} = {_g(v)}" for k, v in p.items() if k not in ("lo", "hi"))
            typer.echo(f"  {where}  [{crossed} lo {_g(p['lo'])} ok, hi {_g(p['hi'])} not ok]")

    guard(body)
