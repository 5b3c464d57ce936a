"""``mbstudy certify METHOD``: observed order or tolerance proportionality against an
independent reference, constraint levels, energy drift, finite metrics and multipliers
(:mod:`mbstudy.pipeline.analysis.certify`). Exit 0 when every check passes, 1 otherwise,
2 for bad input."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import BadInput, guard

app = typer.Typer()


@app.command()
def certify(
    method: Annotated[
        str, typer.Argument(metavar="METHOD", help="Integrator name (mbstudy list).")
    ],
    formulation: Annotated[
        str | None,
        typer.Option(help="Formulation (default: none where the integrator takes it, else "
                          "the first it accepts)."),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="Model name or mechanism file (default: fourbar)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Certify an integrator: the checks a numerical analyst runs before trusting it.

    Fixed-step methods: the observed order (log-log fit over four step sizes against an
    independent DOP853 reference of the index-1 equations) beside the declared one.
    Adaptive methods: error / tol bounded and decreasing over six decades of tolerance.
    Both: constraint levels, energy drift (conservative models), finite metrics and
    multipliers. Runs interpreted: no compile. Exit 0 when every check passes, 1 if one
    fails, 2 for bad input.

    Example: mbstudy certify rk4 --model pendulum
    """

    def body():
        from mbstudy.pipeline.analysis.certify import CertifyInput, render_table
        from mbstudy.pipeline.analysis.certify import certify as run_certify

        try:
            cert = run_certify(method, formulation, model or None)
        except CertifyInput as exc:
            raise BadInput(str(exc)) from None
        if as_json:
            out = cert.as_dict()
            typer.echo(json.dumps(out, indent=1))
        else:
            typer.echo(render_table(cert))
        if not cert.passed:
            raise typer.Exit(1)

    guard(body)
