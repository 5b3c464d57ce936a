"""``mbstudy check-model NAME|PATH``: the model checks of :mod:`solvers.mechanisms.checks`
on a built-in model, a plugin model or a mechanism file.

The model functions run as plain Python (:func:`pipeline.plan.purepy.pure_python`): the
checks need no compiled kernel, and a fresh mechanism file is checked in seconds.
"""

from __future__ import annotations

from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import BadInput, guard
from mbstudy.pipeline.plan.purepy import pure_model

app = typer.Typer()

def _model_values(entry, items: list[str]) -> dict:
    from mbstudy.solvers import api as solvers
    values: dict = {}
    valid = [p.name for p in entry.params]
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.removeprefix("model.")
        if not sep or name not in valid:
            hint = solvers.closest(name, valid)
            raise BadInput(f"--set {item}: unknown model parameter {name!r}"
                           + (f"; did you mean {hint!r}?" if hint else ""))  # fmt: skip
        try:
            values[name] = float(raw)
        except ValueError:
            raise BadInput(f"--set {item}: expected a number") from None
    return values


@app.command("check-model")
def check_model(
    model: Annotated[
        str, typer.Argument(metavar="MODEL", help="Model name or mechanism file (PATH.toml).")
    ],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="NAME=VALUE: a model parameter (default: its default)."),
    ] = None,
    normalization: Annotated[
        str | None,
        typer.Option(help="Spatial mechanism file: Euler parameters by 'constraint' or 'element'."),
    ] = None,
) -> None:
    """Check a model: assembly, degrees of freedom and rank of phi_q, finite differences
    of phi_q, phi_t and gamma, the mass matrix, conservative forces. Exit 1 if a check
    fails, 2 for a bad file or name.

    Example: mbstudy check-model studies/mechanisms/slider_crank.toml --set k=100
    """

    def body():
        from mbstudy.solvers import api as solvers
        from mbstudy.solvers.api import (
            MechanismError,
            is_model_path,
            model_name,
            pack_params,
            run_checks,
        )

        name = model
        if normalization is not None:
            if not is_model_path(model):
                raise BadInput(f"--normalization: applies to spatial mechanism files only,"
                               f" not to model {model!r}")  # fmt: skip
            try:
                name = model_name(model, normalization)
            except MechanismError as exc:
                if exc.key != "normalization":
                    raise
                raise BadInput(f"--normalization: {exc.message} ({exc.file})") from None
        entry = solvers.model(name)
        p = pack_params(entry.params, _model_values(entry, set_ or []))
        checks = run_checks(pure_model(entry.module), p)
        typer.echo(f"model {name}: {entry.spec.summary}")
        for c in checks:
            typer.echo(f"  {'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
        if not all(c.ok for c in checks):
            raise typer.Exit(1)

    guard(body)
