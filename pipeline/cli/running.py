"""``mbstudy launch``, ``mbstudy reproduce`` and ``mbstudy run``: running studies and cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import SET_OPTION, BadInput, guard, load

app = typer.Typer()


# ---------------------------------------------------------------------------- launch
@app.command()
def launch(
    study: Annotated[Path, typer.Argument(metavar="STUDY", help="Study file (TOML).")],
    store: Annotated[
        str | None,
        typer.Option(help="Store path or s3:// URL (default: [output] store)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="LocalCluster worker processes.")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Address of an existing Dask scheduler.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="slurm or pbs (dask-jobqueue).")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Batch jobs to start.")] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Require an existing store and resume it.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing store.")
    ] = False,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="Resume and also rerun the batches with cases of status 'error'.",
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Allow grids over max_cases.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    engine: Annotated[
        str,
        typer.Option(help="auto (interpret a kernel that is not cached when its cases cost"
                     " less than its compile), compiled or python."),
    ] = "auto",
    set_: Annotated[list[str] | None, SET_OPTION] = None,
    progress_every: Annotated[
        float,
        typer.Option(min=0.05, help="Seconds between the plain progress lines printed when"
                     " stderr is no terminal (a log file, a pipe)."),
    ] = 10.0,
) -> None:
    """Run a study on a Dask cluster and write every metric into its Zarr store.

    Example: mbstudy launch studies/smoke.toml --workers 2
    --set runs.baumgarte.h=0.005,0.0025 --set study.t_end=2
    """
    from mbstudy.pipeline.run.launch import launch as run_launch

    def body() -> int:
        if not study.exists():
            raise BadInput(f"{study}: no such study file")
        summary = run_launch(study, store=store, cluster=cluster, workers=workers,
                             scheduler=scheduler, jobs=jobs, resume=resume, overwrite=overwrite,
                             retry_failed=retry_failed, force=force, quiet=quiet,
                             echo=typer.echo, engine=engine,
                             overrides=set_ or (),
                             progress_every=progress_every)  # fmt: skip
        return summary.exit_code

    raise typer.Exit(guard(body) or 0)


# ---------------------------------------------------------------------------- reproduce
@app.command()
def reproduce(
    out: Annotated[Path, typer.Option(help="Where reproduction.md and figures/ go.")] = Path(
        "docs/explanation"
    ),
    results: Annotated[Path, typer.Option(help="Directory of the seed studies' stores.")] = Path(
        "/tmp/repro"
    ),
    workers: Annotated[
        int | None, typer.Option(min=1, help="LocalCluster worker processes.")
    ] = None,
    no_launch: Annotated[
        bool, typer.Option("--no-launch", help="Use the stores as they are; launch nothing.")
    ] = False,
) -> None:
    """Launch (or resume) every seed study into RESULTS, then write OUT/reproduction.md.

    Example: mbstudy reproduce --out docs/explanation/ --results /tmp/repro
    """

    def body():
        from mbstudy.pipeline.analysis.reproduction import SEED_STUDIES, write_reproduction
        from mbstudy.pipeline.run.launch import launch as run_launch
        from mbstudy.pipeline.store.zarr_store import ResultStore
        from mbstudy.pipeline.study.examples import studies_dir as shipped
        from mbstudy.pipeline.study.hashing import store_hash_matches

        studies_dir = shipped()
        if not no_launch:
            for name in dict.fromkeys(s for names in SEED_STUDIES.values() for s in names):
                path = results / f"{name}.zarr"
                spec = load(studies_dir / f"{name}.toml")
                stale = False
                if ResultStore.exists(path):
                    rs = ResultStore.open(path)
                    # the study file changed
                    stale = not store_hash_matches(spec, rs.spec_hash(), rs.batch_sizes())
                    if not stale and rs.root_attrs().get("complete"):
                        typer.echo(f"{name}: complete store {path}")
                        continue
                typer.echo(f"{name}: {'relaunching' if stale else 'launching'} into {path}")
                # compiled: the seed pages compare wall times (an interpreted case has none)
                summary = run_launch(spec, store=path, workers=workers, overwrite=stale,
                                     quiet=True, echo=typer.echo,
                                     engine="compiled")  # fmt: skip
                if summary.exit_code:
                    raise typer.Exit(summary.exit_code)
            from mbstudy.pipeline.analysis.reproduction import SEARCH_STUDIES

            for name in SEARCH_STUDIES:  # a search store resumes; a finished one is kept
                path = results / f"{name}.zarr"
                typer.echo(f"{name}: searching into {path}")
                summary = run_launch(load(studies_dir / f"{name}.toml"), store=path,
                                     workers=workers, quiet=True, echo=typer.echo)  # fmt: skip
                if summary.exit_code:
                    raise typer.Exit(summary.exit_code)
        typer.echo(str(write_reproduction(results, out)))

    guard(body)


# ---------------------------------------------------------------------------- run
@app.command()
def run(
    model: Annotated[str, typer.Option(help="Model name.")],
    formulation: Annotated[str, typer.Option(help="Formulation name.")] = "none",
    integrator: Annotated[str, typer.Option(help="Integrator name.")] = "rk4",
    t_end: Annotated[float | None, typer.Option(help="End time (s).")] = None,
    samples: Annotated[
        int | None,
        typer.Option(min=2, help="Output times (default 301, or fewer that a fixed h fits)."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="NAME=VALUE (model.NAME=VALUE for model parameters)."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object (NaN and infinities as null)."),
    ] = False,
    engine: Annotated[
        str, typer.Option(help="auto, compiled or python (as for launch).")
    ] = "auto",
    normalization: Annotated[
        str | None,
        typer.Option(help="Spatial mechanism file: Euler parameters by 'constraint' or 'element'."),
    ] = None,
) -> None:
    """Run one case in-process (no Dask) and print status, metrics and final state; a
    value with commas is an axis (--set omega_n=5,20,80): every case of that little grid
    runs and a table is printed (--json: a list of objects).

    Example: mbstudy run --model fourbar --formulation baumgarte --integrator rk4
    --t-end 1 --set h=0.0025 --set omega_n=5 --json
    """

    def body():
        from mbstudy.pipeline.run.single import run_grid

        if engine not in ("auto", "compiled", "python"):
            raise BadInput(f"--engine: expected auto, compiled or python, got {engine!r}")
        results = run_grid(model, formulation, integrator, t_end, samples, set_ or [], engine,
                           normalization)
        result = results[0]
        if result.get("note"):
            typer.echo(result["note"], err=True)
        if len(results) > 1 or result["params"]:
            if as_json:
                typer.echo(json.dumps(json_safe(results), allow_nan=False))
            else:
                for line in grid_table(results):
                    typer.echo(line)
            return
        if as_json:
            typer.echo(json.dumps(json_safe(result), allow_nan=False))
            return
        typer.echo(f"status: {result['status']}")
        for k, v in result["metrics"].items():
            typer.echo(f"  {k:12s} {v:.6g}")
        typer.echo(f"final t = {result['final']['t']}")

    guard(body)


TABLE_METRICS = ("rms_phi", "max_phi", "e_r", "e_final", "de_max", "steps", "rhs_evals",
                 "wall_s")  # fmt: skip


def grid_table(results: list[dict]) -> list[str]:
    """The lines of the table of ``mbstudy run`` over a grid: one row per case, its swept
    values, status and the main metrics (``--json`` has them all)."""
    names = list(results[0]["params"])
    metrics = [m for m in TABLE_METRICS if m in results[0]["metrics"]]
    rows = [[*names, "status", *metrics]]
    for r in results:
        rows.append([f"{r['params'][n]:g}" if isinstance(r["params"][n], float)
                     else str(r["params"][n]) for n in names]
                    + [r["status"]] + [f"{r['metrics'].get(m, float('nan')):.4g}"
                                       for m in metrics])  # fmt: skip
    widths = [max(len(row[j]) for row in rows) for j in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]


def json_safe(value):
    """``value`` with numpy scalars and arrays as plain numbers and lists, and every NaN or
    infinity as None, so that ``json.dumps`` writes strict JSON (RFC 8259 has no NaN): a
    metric that is undefined for a failed case reads as ``null``."""
    import math

    import numpy as np

    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
