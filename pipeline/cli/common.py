"""What every command of the command line shares: exit codes and the bad-input guard.

Exit status: 0 done (failed cases are data), 2 bad input (one line naming the file and
key, nothing written), 130 interrupted (Ctrl-C; the store is resumable), 1 anything else
(a store that failed under a launch is one line too, and stays resumable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# ``--set`` of ``plan`` and ``launch`` (pipeline/study/overrides.py)
SET_OPTION = typer.Option(
    "--set",
    help="KEY=VALUE: set a key of the study file (study.t_end=2, runs.NAME.h=0.01,0.005;"
    " commas make an axis), recorded in the store.",
)


class BadInput(Exception):
    """Any user error: printed as one line, exit status 2."""


def fail(message: str) -> NoReturn:
    """Print ``mbstudy: error: MESSAGE`` on stderr and exit with status 2."""
    typer.echo(f"mbstudy: error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _bad_input_types() -> tuple[type[BaseException], ...]:
    from mbstudy.pipeline.analysis.aggregate import AggregateError
    from mbstudy.pipeline.run.launch import LaunchError
    from mbstudy.pipeline.run.single import RunInputError
    from mbstudy.pipeline.store.zarr_store import StoreError
    from mbstudy.pipeline.study.spec import StudyError
    from mbstudy.solvers.api import AssemblyError, MechanismError, UnknownName, UnsafeCacheDir

    # UnsafeCacheDir: a kernel or numba cache directory of another user (set another one)
    return (StudyError, StoreError, UnknownName, AssemblyError, AggregateError, LaunchError,
            RunInputError, BadInput, MechanismError, UnsafeCacheDir)  # fmt: skip


EXIT_FAULT = 1


def guard(fn: Callable[[], Any]) -> Any:
    """Run a command body; map bad-input exceptions to one line + exit 2, and a store that
    failed under a launch (StoreFault: full, read-only, unreachable) to one line + exit 1."""
    from mbstudy.pipeline.store.errors import StoreFault

    try:
        return fn()
    except typer.Exit:
        raise
    except StoreFault as exc:
        typer.echo(f"mbstudy: error: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(EXIT_FAULT) from None
    except _bad_input_types() as exc:
        msg = str(exc)
        if isinstance(exc, KeyError) and msg.startswith(("'", '"')):
            msg = msg[1:-1]
        fail(msg.splitlines()[0] if msg else type(exc).__name__)


def load(study_path: Path, force: bool = False, overrides: Sequence[str] = ()):
    """The validated study of ``study_path`` with the ``--set`` ``overrides`` applied
    (:class:`BadInput` if there is no such file)."""
    from mbstudy.pipeline.study.parse import load_study

    if not study_path.exists():
        raise BadInput(f"{study_path}: no such study file")
    return load_study(study_path, force=force, overrides=overrides)
