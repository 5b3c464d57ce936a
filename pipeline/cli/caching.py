"""``mbstudy warm`` and ``mbstudy cache``: the compiled-kernel caches."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import SET_OPTION, BadInput, guard

app = typer.Typer()


def _size(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return ""


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


# ---------------------------------------------------------------------------- warm
@app.command()
def warm(
    study: Annotated[Path, typer.Argument(metavar="STUDY", help="Study file (TOML).")],
    workers: Annotated[
        int | None, typer.Option(min=1, help="Compile processes (default: the cores).")
    ] = None,
    set_: Annotated[list[str] | None, SET_OPTION] = None,
) -> None:
    """Compile a study's kernels into the caches without running it (before a cluster run);
    --set overrides the study file as for launch (a swept method adds its kernel).

    Example: mbstudy warm studies/smoke.toml --workers 2 --set runs.none.formulation=baumgarte
    """

    def body():
        from mbstudy.pipeline.run.progress import kernel_line
        from mbstudy.pipeline.stages import warm as warm_stage

        t0 = time.perf_counter()

        def on_start(n: int, where: str) -> None:
            typer.echo(f"compiling {n} kernels into {where} ...", err=True)

        def on_kernel(info):
            how = "compiled" if info["compiled"] else "from cache"
            typer.echo(f"  {info['kernel']}: {how}, {info['s']:.1f} s"
                       f" (elapsed {time.perf_counter() - t0:.0f} s)", err=True)  # fmt: skip

        try:
            out = warm_stage(study, workers=workers, overrides=set_ or (), on_start=on_start,
                             on_kernel=on_kernel)
        except RuntimeError as exc:  # UnsafeCacheDir from a compile process
            if type(exc).__name__ != "UnsafeCacheDir":
                raise
            raise BadInput(str(exc)) from None
        typer.echo(kernel_line(dict(out.kernels)) + f"; wall {out.wall_s:.1f} s")

    guard(body)


# ---------------------------------------------------------------------------- cache
@app.command()
def cache(
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete the entries no current source can use.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The kernel and numba caches: size, entries, age; --prune removes stale entries.

    Example: mbstudy cache --prune
    """

    def body():
        from mbstudy.solvers import api as solvers
        from mbstudy.solvers.api import kernel_dir

        try:
            solvers.secure_dirs()  # before reading or deleting anything there
            entries = solvers.kernel_inventory()
        except solvers.UnsafeCacheDir as exc:
            raise BadInput(str(exc)) from None
        states: dict[str, dict] = {}
        for e in entries:
            s = states.setdefault(e.state, {"entries": 0, "bytes": 0, "oldest_s": 0.0})
            s["entries"] += 1
            s["bytes"] += e.bytes
            s["oldest_s"] = max(s["oldest_s"], e.age_s)
        out = {"kernel_dir": str(kernel_dir()), "kernels": states,
               "numba": solvers.numba_cache_totals()}  # fmt: skip
        if prune:
            n, b = solvers.prune_kernel_cache(entries)
            out["pruned"] = {"files": n, "bytes": b}
        if as_json:
            typer.echo(json.dumps(out, indent=1))
            return
        typer.echo(f"kernel directory: {out['kernel_dir']}")
        for state in ("current", "stale", "unknown", "orphan"):
            if state in states:
                s = states[state]
                typer.echo(f"  {state:8s} {s['entries']:4d} entries {_size(s['bytes']):>9s},"
                           f" oldest {_age(s['oldest_s'])}")  # fmt: skip
        nb = out["numba"]
        if nb["dir"]:
            typer.echo(f"numba cache: {nb['dir']}: {nb['files']} files {_size(nb['bytes'])},"
                       f" written {_age(nb['newest_s'])} to {_age(nb['oldest_s'])} ago")
        if prune:
            typer.echo(f"pruned {out['pruned']['files']} files"
                       f" ({_size(out['pruned']['bytes'])})")  # fmt: skip
        elif states.get("stale") or states.get("orphan"):
            typer.echo("mbstudy cache --prune removes the stale and orphan entries")

    guard(body)
