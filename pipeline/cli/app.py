"""The ``mbstudy`` command line (Typer), one module per command group:

- :mod:`.catalog`: ``list``, ``examples``
- :mod:`.planning`: ``plan``
- :mod:`.running`: ``launch``, ``reproduce``, ``run``
- :mod:`.inspecting`: ``status``, ``aggregate``
- :mod:`.figures`: ``plot``, ``report``
- :mod:`.caching`: ``warm``, ``cache``
- :mod:`.checking`: ``check-model``
- :mod:`.certifying`: ``certify``
- :mod:`.searching`: ``boundary`` (the answer of a ``[[search]]`` block)

Each group is a Typer app added here without a name, so its commands are commands of
``mbstudy`` itself. Exit status: 0 done (failed cases are data), 2 bad input (a one-line
message naming the key), 130 interrupted (Ctrl-C; the store is resumable), 1 anything
else. Heavy imports (dask.distributed, zarr, numba, xarray) happen inside the commands, so
``mbstudy --help`` is instant.
"""

from __future__ import annotations

from typing import Annotated

import typer
from mbstudy.pipeline.cli import (
    caching,
    catalog,
    certifying,
    checking,
    figures,
    inspecting,
    planning,
    running,
    searching,
)
from mbstudy.pipeline.cli.common import EXIT_BAD_INPUT, EXIT_INTERRUPTED, BadInput
from mbstudy.pipeline.cli.helptext import use_plain_help

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "BadInput", "app", "main"]

app = typer.Typer(
    name="mbstudy",
    help="Parameter studies of numerical methods for constrained multibody dynamics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain Click help (pipeline/cli/helptext.py): Rich markup would eat "[output]"-style
    # text and print "<bool>" beside every flag.
    rich_markup_mode=None,
)
for _group in (catalog, planning, running, inspecting, figures, checking, certifying,
               caching, searching):
    use_plain_help(_group.app)
    app.add_typer(_group.app)


def _print_version(value: bool) -> None:
    if value:
        from mbstudy import __version__

        typer.echo(f"mbstudy {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    """Parameter studies of numerical methods for constrained multibody dynamics."""


def main() -> None:
    """Console-script entry point (Ctrl-C: one line, exit 130; cli/interrupts.py)."""
    from mbstudy.pipeline.cli.interrupts import guard

    guard(app)


if __name__ == "__main__":
    main()
