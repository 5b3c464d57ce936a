"""``mbstudy list`` (the registry's models, formulations and integrators) and ``mbstudy
examples`` (the study files that ship with mbstudy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import guard

app = typer.Typer()


@app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every model, formulation and integrator with its parameters.

    Example: mbstudy list
    """
    from mbstudy.solvers import api as solvers
    out = {}
    for kind in solvers.KINDS:
        out[kind + "s"] = {
            name: {
                "summary": e.spec.summary,
                "params": [
                    {"name": p.name, "default": p.default, "meaning": p.meaning, "kind": p.kind}
                    for p in e.params
                ],
                **({"form": e.spec.form} if kind == "formulation" else {}),
                **({"forms": list(e.spec.forms or ())} if kind == "integrator" else {}),
            }
            for name, e in solvers.entries(kind).items()
        }
    if as_json:
        typer.echo(json.dumps(out, indent=1, default=str))
        return
    for kind, table in out.items():
        typer.echo(f"{kind}:")
        for name, info in table.items():
            typer.echo(f"  {name:14s} {info['summary']}")
            if info.get("form"):
                typer.echo(f"  {'':14s} DAE form: {info['form']}")
            if info.get("forms"):
                typer.echo(f"  {'':14s} DAE forms: {', '.join(info['forms'])}")
            for p in info["params"]:
                typer.echo(f"  {'':14s} {p['name']:>14s} = {p['default']!s:<12s} {p['meaning']}")
        typer.echo("")


@app.command()
def examples(
    copy: Annotated[
        Path | None,
        typer.Option(
            "--copy",
            help="Copy every shipped study (with networks/ and mechanisms/) into this folder.",
        ),
    ] = None,
) -> None:
    """List the example and seed studies that ship with mbstudy; --copy DIR copies them.

    Example: mbstudy examples --copy my-studies
    """

    def body():
        from mbstudy.pipeline.study.examples import copy_studies, list_studies

        if copy is None:
            for name, description in list_studies():
                typer.echo(f"{name:28s} {description}")
            return
        for path in copy_studies(copy):
            typer.echo(str(path))

    guard(body)
