"""``mbstudy plan``: blocks, axes, case counts, batches and store size; runs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import SET_OPTION, guard

app = typer.Typer()


@app.command()
def plan(
    study: Annotated[Path, typer.Argument(metavar="STUDY", help="Study file (TOML).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Allow grids over max_cases.")] = False,
    cluster: Annotated[
        str | None, typer.Option(help="Show the job script for slurm or pbs.")
    ] = None,
    set_: Annotated[list[str] | None, SET_OPTION] = None,
) -> None:
    """Show blocks, axes, case counts, batches and store size; run nothing.

    Example: mbstudy plan studies/smoke.toml
    """

    def body():
        from mbstudy.pipeline.stages import plan as plan_stage

        summary = plan_stage(study, force=force, cluster=cluster, overrides=set_ or ()).as_dict()
        if as_json:
            typer.echo(json.dumps(summary, indent=1, default=str))
            return
        _print_plan(summary)

    guard(body)


def _print_plan(s: dict) -> None:
    typer.echo(f"study {s.get('study')!r} on model {s.get('model')!r}")
    if s.get("overrides"):
        typer.echo("overrides: " + " ".join(f"--set {o}" for o in s["overrides"]))
    for b in s.get("blocks", []):
        typer.echo(
            f"  block {b['name']}: {b['formulation']} + {b['integrator']}, {b['n_cases']} cases,"
            f" {b['n_batches']} batches of {b['batch_size']}"
        )
        for name, vals in (b.get("fixed") or {}).items():
            typer.echo(f"    {name} = {vals}")
        for name, vals in (b.get("axes") or {}).items():
            typer.echo(f"    {name}: {vals}")
    for b in s.get("searches", []):  # [[search]] blocks: bounds and a budget, not cases
        at = "" if b["at"] is None else f" at {b['at']:g}"
        typer.echo(f"  search {b['name']}: {b['formulation']} + {b['integrator']}, {b['goal']}"
                   f" {b['metric']}{at}; {b['searches']} search(es) of at most {b['budget']}"
                   f" cases ({b['max_cases']} at most)")  # fmt: skip
        for name, vals in (b.get("fixed") or {}).items():
            typer.echo(f"    {name} = {vals}")
        for name, ax in b["continuous"].items():
            typer.echo(f"    {name}: {ax['scale']} [{ax['lo']:g}, {ax['hi']:g}] (searched)")
        for name, vals in b["lists"].items():
            typer.echo(f"    {name}: {vals} (one search each)")
    typer.echo(
        f"total: {s.get('n_cases')} cases, {s.get('n_batches')} batches,"
        f" {s.get('n_references', 1)} reference(s), store ~{_size(s.get('est_store_bytes', 0))}"
    )
    if s.get("searches"):
        typer.echo(f"search blocks: at most {sum(b['max_cases'] for b in s['searches'])} cases,"
                   f" {s.get('n_search_references', 0)} reference(s)")  # fmt: skip
    for name, e in (s.get("engines") or {}).items():  # launch --engine auto, today's caches
        if s.get("n_cases"):  # the grid blocks' kernels (none for a search-only study)
            typer.echo(f"kernel {name}: {e['engine']} ({e['reason']})")
    rejected = s.get("rejected") or []
    typer.echo(f"rejected combinations: {len(rejected)}")
    for r in rejected:
        typer.echo(f"  {r}")
    if s.get("job_script"):
        typer.echo("job script:")
        typer.echo(s["job_script"])


def _size(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if nbytes < 1000:
            return f"{nbytes:.0f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.0f} PB"
