"""``mbstudy plan``: blocks, axes, case counts, batches and store size; runs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import SET_OPTION, BadInput, guard, load

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
        from mbstudy.pipeline.plan.assembly import check_assembly
        from mbstudy.pipeline.plan.grid import expand_grid
        from mbstudy.pipeline.plan.memory import check_memory
        from mbstudy.pipeline.plan.summary import plan_summary

        spec = load(study, force, set_ or ())
        grid = expand_grid(spec)
        from mbstudy.pipeline.cluster.local import default_workers

        # before the assembly, which allocates the model's matrices; the workers of a
        # default launch (a [cluster] job's memory when the study names one)
        check_memory(spec, grid, default_workers())
        check_assembly(spec, grid)
        summary = plan_summary(spec, grid)
        summary["overrides"] = list(spec.overrides)  # --set, as the store records them
        from mbstudy.pipeline.plan.engines import choose_engines

        summary["engines"] = {c.name: {"engine": c.engine, "reason": c.reason}
                              for c in choose_engines(spec, grid).values()}  # fmt: skip
        if cluster:
            summary["job_script"] = _job_script(cluster, spec)
        if as_json:
            typer.echo(json.dumps(summary, indent=1, default=str))
            return
        _print_plan(summary)

    guard(body)


def _job_script(kind: str, spec) -> str:
    """The job script ``launch`` submits for the study's store (the same job name), rendered
    without starting a scheduler (:func:`~mbstudy.pipeline.cluster.jobqueue.render_job_script`)."""
    from mbstudy.pipeline.cluster.jobqueue import render_job_script
    from mbstudy.pipeline.cluster.jobs import job_name
    from mbstudy.pipeline.store.urls import store_location

    if kind not in ("slurm", "pbs"):
        raise BadInput(f"--cluster: expected slurm or pbs, got {kind!r}")
    return render_job_script(kind, spec.cluster, job_name(store_location(spec.output.store)))


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
    typer.echo(
        f"total: {s.get('n_cases')} cases, {s.get('n_batches')} batches,"
        f" {s.get('n_references', 1)} reference(s), store ~{_size(s.get('est_store_bytes', 0))}"
    )
    for name, e in (s.get("engines") or {}).items():  # launch --engine auto, today's caches
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
