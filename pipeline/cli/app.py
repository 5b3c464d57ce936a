"""The ``mbstudy`` command line (Typer): launch | plan | status | aggregate | run | list.

Exit status: 0 done (failed cases are data), 2 bad input (a one-line message naming the
key), 130 interrupted (Ctrl-C; the store is resumable), 1 anything else. Heavy imports
(dask.distributed, zarr, numba, xarray) happen inside the commands, so ``mbstudy --help``
is instant.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="mbstudy",
    help="Parameter studies of numerical methods for constrained multibody dynamics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class BadInput(Exception):
    """Any user error: printed as one line, exit status 2."""


def _fail(message: str) -> None:
    typer.echo(f"mbstudy: error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _bad_input_types() -> tuple[type[BaseException], ...]:
    from mbstudy.pipeline.analysis.aggregate import AggregateError
    from mbstudy.pipeline.store.zarr_store import StoreError
    from mbstudy.pipeline.study.parse import StudyError
    from mbstudy.solvers.assembly import AssemblyError
    from mbstudy.solvers.registry import UnknownName

    return (StudyError, StoreError, UnknownName, AssemblyError, AggregateError, BadInput)


def _guard(fn):
    """Run a command body; map bad-input exceptions to one line + exit 2."""
    try:
        return fn()
    except typer.Exit:
        raise
    except _bad_input_types() as exc:
        msg = str(exc)
        if isinstance(exc, KeyError) and msg.startswith(("'", '"')):
            msg = msg[1:-1]
        _fail(msg.splitlines()[0] if msg else type(exc).__name__)


def _load(study_path: Path, force: bool = False):
    from mbstudy.pipeline.study.parse import load_study

    if not study_path.exists():
        raise BadInput(f"{study_path}: no such study file")
    return load_study(study_path, force=force)


def check_assembly(study, grid) -> None:
    """Every model parameter set of the study must assemble (else bad input, exit 2).

    The model's functions run as plain Python (:func:`pipeline.purepy.pure_python`), so
    the launcher never initialises numba nor loads a kernel: only the workers do.
    """
    from mbstudy.pipeline.plan.purepy import pure_python
    from mbstudy.solvers import registry
    from mbstudy.solvers.assembly import AssemblyError
    from mbstudy.solvers.spec import pack_params

    entry = registry.model(study.model)
    initial_state = pure_python(entry.module.initial_state)
    for key in grid.references:
        mp = dict(key.model_params)
        try:
            initial_state(pack_params(entry.params, mp))
        except AssemblyError as exc:
            changed = {k: v for k, v in mp.items()
                       if v != next(p.default for p in entry.params if p.name == k)}
            where = ", ".join(f"model.{k} = {v!r}" for k, v in changed.items()) or "model"
            raise BadInput(f"{study.source}: {where}: {exc}") from None


# ---------------------------------------------------------------------------- list
@app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List every model, formulation and integrator with its parameters."""
    from mbstudy.solvers import registry

    out = {}
    for kind in registry.KINDS:
        out[kind + "s"] = {
            name: {
                "summary": e.spec.summary,
                "params": [
                    {"name": p.name, "default": p.default, "meaning": p.meaning, "kind": p.kind}
                    for p in e.params
                ],
                **({"formulations": list(e.spec.formulations)}
                   if getattr(e.spec, "formulations", None) else {}),
            }
            for name, e in registry.entries(kind).items()
        }
    if as_json:
        typer.echo(json.dumps(out, indent=1, default=str))
        return
    for kind, table in out.items():
        typer.echo(f"{kind}:")
        for name, info in table.items():
            typer.echo(f"  {name:14s} {info['summary']}")
            if info.get("formulations"):
                typer.echo(f"  {'':14s} formulations: {', '.join(info['formulations'])}")
            for p in info["params"]:
                typer.echo(f"  {'':14s} {p['name']:>14s} = {p['default']!s:<12s} {p['meaning']}")
        typer.echo("")


# ---------------------------------------------------------------------------- plan
@app.command()
def plan(
    study: Annotated[Path, typer.Argument(help="Study file (TOML).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    force: Annotated[bool, typer.Option(help="Allow grids over max_cases.")] = False,
    cluster: Annotated[
        str | None, typer.Option(help="Show the job script for slurm or pbs.")
    ] = None,
) -> None:
    """Show blocks, axes, case counts, batches and store size; run nothing."""

    def body():
        from mbstudy.pipeline.plan.grid import expand_grid, plan_summary

        spec = _load(study, force)
        grid = expand_grid(spec)
        check_assembly(spec, grid)
        summary = plan_summary(spec, grid)
        if cluster:
            from mbstudy.pipeline.cluster.backends import jobqueue_cluster

            if cluster not in ("slurm", "pbs"):
                raise BadInput(f"--cluster: expected slurm or pbs, got {cluster!r}")
            jc = jobqueue_cluster(cluster, spec.cluster)
            summary["job_script"] = jc.job_script()
            jc.close()
        if as_json:
            typer.echo(json.dumps(summary, indent=1, default=str))
            return
        _print_plan(summary)

    _guard(body)


def _print_plan(s: dict) -> None:
    typer.echo(f"study {s.get('study')!r} on model {s.get('model')!r}")
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


# ---------------------------------------------------------------------------- launch
@app.command()
def launch(
    study: Annotated[Path, typer.Argument(help="Study file (TOML).")],
    store: Annotated[
        Path | None, typer.Option(help="Store path (default: [output] store).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="LocalCluster worker processes.")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="Address of an existing Dask scheduler.")
    ] = None,
    cluster: Annotated[str | None, typer.Option(help="slurm or pbs (dask-jobqueue).")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="Batch jobs to start.")] = None,
    resume: Annotated[bool, typer.Option(help="Require an existing store and resume it.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing store.")] = False,
    retry_failed: Annotated[
        bool,
        typer.Option(help="Resume and also rerun the batches with cases of status 'error'."),
    ] = False,
    force: Annotated[bool, typer.Option(help="Allow grids over max_cases.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Run a study on a Dask cluster and write every metric into its Zarr store."""
    code = _guard(lambda: _launch(study, store, workers, scheduler, cluster, jobs,
                                  resume or retry_failed, overwrite, force, quiet,
                                  retry_failed))  # fmt: skip
    raise typer.Exit(code or 0)


def _launch(study, store_opt, workers, scheduler, cluster, jobs, resume, overwrite, force,
            quiet, retry_failed=False) -> int:
    from mbstudy.pipeline.plan.grid import expand_grid

    if resume and overwrite:
        flag = "--retry-failed" if retry_failed else "--resume"
        raise BadInput(f"{flag} and --overwrite exclude each other")
    if cluster is not None and cluster not in ("slurm", "pbs"):
        raise BadInput(f"--cluster: expected slurm or pbs, got {cluster!r}")
    forks = started = None
    if scheduler is None and cluster is None:
        # a LocalCluster unless the study names a [cluster]: the forkserver its workers fork
        # from imports their stack while the launcher reads the study (pipeline.workerboot)
        from mbstudy.pipeline.cluster.backends import WorkerForkServer

        forks = WorkerForkServer().start()
    try:
        spec = _load(study, force)
        grid = expand_grid(spec)
        if forks is not None and not (spec.cluster and spec.cluster.kind):
            # the study is valid: start the LocalCluster now, while the launcher checks the
            # assembly and the store and writes the template (shut down on every error)
            from mbstudy.pipeline.cluster.backends import ClusterStart

            started, forks = ClusterStart(workers, forks), None  # it owns the forkserver
        return _launch_store(spec, grid, store_opt, workers, scheduler, cluster, jobs, resume,
                             overwrite, quiet, retry_failed, started)  # fmt: skip
    finally:
        if started is not None:
            started.close()
        if forks is not None:  # bad input, or a study that runs on SLURM/PBS
            forks.stop(unused=True)


def _launch_store(spec, grid, store_opt, workers, scheduler, cluster, jobs, resume, overwrite,
                  quiet, retry_failed, started) -> int:
    import shutil

    from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError, StoreLock

    check_assembly(spec, grid)
    path = Path(store_opt) if store_opt else Path(spec.output.store)
    exists = path.exists()
    if exists and not ResultStore.exists(path):
        if any(path.iterdir()) if path.is_dir() else True:
            raise StoreError(f"{path}: exists and is not an mbstudy store; choose another --store")
    if resume and not ResultStore.exists(path):
        flag = "--retry-failed" if retry_failed else "--resume"
        raise StoreError(f"{path}: {flag}: no store to resume")
    lock = StoreLock(path).acquire()
    try:
        rs = None
        if ResultStore.setup_incomplete(path):  # a setup that never finished: build it again
            typer.echo(f"{path}: the template was not finished; writing it again")
        elif ResultStore.exists(path) and not overwrite:
            rs = ResultStore.open(path)
            if rs.spec_hash() != spec.spec_hash:
                raise StoreError(
                    f"{path}: made by another study ({rs.root_attrs().get('study_name')!r},"
                    f" hash {rs.spec_hash()[:12]}); use --overwrite to replace it or --store"
                    " to choose another path"
                )
            typer.echo(f"resuming {path}")
            _repair_before_resume(rs, spec, grid)
            if retry_failed:
                n = sum(rs.reopen_failed_batches(b.name) for b in grid.blocks)
                typer.echo(f"rerunning {n} batches with failed ('error') cases")
                if n:
                    rs.mark_complete(False)
        if rs is None:
            if exists and overwrite and path.is_dir():
                shutil.rmtree(path)
            rs = ResultStore.create(path, spec, grid)
        return _run_on_cluster(spec, grid, rs, workers, scheduler, cluster, jobs, quiet,
                               started)  # fmt: skip
    finally:
        lock.release()


def _run_on_cluster(spec, grid, rs, workers, scheduler, cluster, jobs, quiet,
                    started=None) -> int:
    from mbstudy.pipeline.cluster.backends import attach_dashboard, open_client
    from mbstudy.pipeline.run.graph import run_study
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    try:
        kind = cluster or (spec.cluster.kind if spec.cluster else None)
        from mbstudy.pipeline.cluster.jobs import job_name

        name = job_name(rs.path) if kind else None
        with open_client(workers, scheduler, kind, spec.cluster, jobs, job_name=name,
                         started=started) as client:  # fmt: skip
            link = getattr(client, "dashboard_link", None)
            console.print(f"cluster: {client.scheduler.address}  dashboard: {link}")
            progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("failed {task.fields[failed]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                disable=quiet,
            )
            with progress:
                task = progress.add_task("cases", total=grid.n_cases, failed=0)
                done_before = sum(
                    int(rs.read(b.name, "done").sum()) for b in grid.blocks
                )
                progress.update(task, completed=done_before)
                state = {"failed": 0}

                def on_batch(report):
                    if not state.get("dashboard"):  # computing has started: now the dashboard
                        state["dashboard"] = True
                        attach_dashboard(client)
                    state["failed"] += report.failed
                    progress.update(task, advance=report.n, failed=state["failed"])

                summary = run_study(spec, grid, rs, client, on_batch=on_batch)
    except KeyboardInterrupt:  # before or after run_study (cluster start / teardown)
        done = sum(int(rs.read(b.name, "done").sum()) for b in grid.blocks)
        console.print(f"[yellow]interrupted[/yellow]: {done}/{grid.n_cases} cases done;"
                      f" the store is resumable: {rs.path}")
        return EXIT_INTERRUPTED
    _print_summary(summary, rs, console)
    return EXIT_INTERRUPTED if summary.interrupted else _error_exit(rs, grid, console)


def _repair_before_resume(rs, spec, grid) -> None:
    """Read every chunk of the store being resumed; batches (and references) with a missing
    or corrupt chunk, and lost template arrays, are made pending again (store/verify.py)."""
    from mbstudy.pipeline.store.verify import repair_store, verify_store

    report = verify_store(rs)
    if report.ok:
        return
    reopened = repair_store(rs, spec, grid, report)
    parts = [f"{b}: {n} batches" for b, n in reopened.items()]
    if report.references:
        parts.append(f"{len(report.references)} references")
    typer.echo(f"damaged chunks found; running again: {', '.join(parts) or 'template only'}")


def _error_exit(rs, grid, console) -> int:
    """1 if any case of the store ended with status ``error`` (an unexpected exception or a
    lost task, not a solver outcome), after everything else was written; else 0."""
    from mbstudy.solvers.status import ERROR

    n = sum(int((rs.read(b.name, "status") == ERROR).sum()) for b in grid.blocks)
    if n:
        console.print(f"[red]{n} cases ended with status 'error'[/red] (mbstudy status"
                      f" {rs.path} lists them; launch --retry-failed runs them again)")
        return 1
    return 0


def _print_summary(summary, rs, console) -> None:
    from mbstudy.solvers.status import STATUS_NAMES
    from rich.table import Table

    table = Table(title="mbstudy launch")
    for col in ("block", "cases", "ok", "failed", "skipped (done before)"):
        table.add_column(col, justify="right")
    for name, info in summary.per_block.items():
        table.add_row(name, str(info["cases"]), str(info["ok"]), str(info["failed"]),
                      str(info["skipped"]))
    console.print(table)
    fails = {STATUS_NAMES.get(k, str(k)): v for k, v in summary.status_counts.items() if k != 0}
    console.print(
        f"ran {summary.cases_run} cases in {summary.batches_run} batches"
        f" ({summary.batches_skipped} batches already done); failed by status: {fails or 'none'}"
    )
    console.print(
        f"wall {summary.wall_s:.2f} s, kernel {summary.kernel_s:.2f} s, warm-up"
        f" {summary.warm_s:.2f} s, workers {summary.workers}, efficiency {summary.efficiency:.2f}"
    )
    if summary.warm_per_worker:
        w = sorted(summary.warm_per_worker.values())
        console.print(f"kernel warm-up per worker (load from cache after the first compile):"
                      f" {w[0]:.2f}-{w[-1]:.2f} s")
    if summary.interrupted:
        console.print("[yellow]interrupted[/yellow]: the store is resumable (launch again)")
    console.print(f"store: {rs.path}")


# ---------------------------------------------------------------------------- status
@app.command()
def status(
    store: Annotated[Path, typer.Argument(help="Store path.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Done / failed (by status) / pending cases per block of a store, and the SLURM worker
    jobs of a launch running on it (pending / running)."""

    def body():
        from mbstudy.pipeline.store.zarr_store import ResultStore
        from mbstudy.solvers.status import STATUS_NAMES

        rs = ResultStore.open(store)
        attrs = rs.root_attrs()
        out = {"store": str(store), "study": attrs.get("study_name"),
               "complete": attrs.get("complete"), "blocks": {}}
        for b in rs.blocks():
            st = rs.read(b, "status")
            done = rs.read(b, "done")
            errors = rs.read(b, "error")
            counts = {}
            for code in sorted(set(st[done].tolist())):
                counts[STATUS_NAMES.get(int(code), str(code))] = int((st[done] == code).sum())
            out["blocks"][b] = {
                "cases": int(st.size),
                "done": int(done.sum()),
                "pending": int((~done).sum()),
                "ok": counts.get("ok", 0),
                "failed": {k: v for k, v in counts.items() if k != "ok"},
                "errors": sorted({e for e in errors.tolist() if e})[:5],
            }
        out["jobs"] = None if out["complete"] is True else _store_jobs(store)
        if as_json:
            typer.echo(json.dumps(out, indent=1))
            return
        typer.echo(f"store {store}: study {out['study']!r}, complete: {out['complete']}")
        for b, info in out["blocks"].items():
            typer.echo(
                f"  {b}: {info['done']}/{info['cases']} done, {info['ok']} ok,"
                f" {info['pending']} pending, failed: {info['failed'] or 'none'}"
            )
            for e in info["errors"]:
                typer.echo(f"    error: {e}")
        if out["jobs"] is not None:
            jobs = out["jobs"]
            states = ", ".join(f"{n} {s}" for s, n in sorted(jobs["states"].items()))
            typer.echo(f"slurm jobs {jobs['name']}: {states or 'none queued'}")
            for j in jobs["list"]:
                typer.echo(
                    f"  {j['id']} {j['state'].lower()} {j['partition']}"
                    f" elapsed {j['elapsed']} of {j['time_limit']} ({j['reason']})"
                )

    _guard(body)


# ---------------------------------------------------------------------------- verify
@app.command()
def verify(
    store: Annotated[Path, typer.Argument(help="Store path.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Read every chunk of a store and check its checksum: missing and corrupt chunks per
    block and batch. Exit 0 if the store is intact, 1 if damage was found (a launch on the
    store runs the damaged batches again)."""

    def body() -> int:
        from mbstudy.pipeline.store.verify import verify_store
        from mbstudy.pipeline.store.zarr_store import ResultStore

        report = verify_store(ResultStore.open(store))
        out = report.as_dict()
        if as_json:
            typer.echo(json.dumps(out, indent=1))
            return 0 if report.ok else 1
        typer.echo(f"store {store}: {'intact' if report.ok else 'DAMAGED'}")
        for i, what in out["references"].items():
            typer.echo(f"  reference r{i}: {'; '.join(what)}")
        for name, info in out["blocks"].items():
            bad = sorted({*info["missing"], *info["corrupt"]}, key=int)
            typer.echo(f"  {name}: {info['batches']} batches, {len(bad)} damaged")
            for kind in ("missing", "corrupt"):
                for b, arrays in info[kind].items():
                    typer.echo(f"    batch {b}: {kind} {', '.join(arrays)}")
            for what in info["template"]:
                typer.echo(f"    template: {what}")
        return 0 if report.ok else 1

    raise typer.Exit(_guard(body) or 0)


def _store_jobs(store: Path) -> dict | None:
    """The SLURM worker jobs of a launch on ``store`` (None where SLURM is not available)."""
    from mbstudy.pipeline.cluster.jobs import count_states, job_name, list_slurm_jobs

    name = job_name(store)
    jobs = list_slurm_jobs(name)
    if jobs is None:
        return None
    return {"name": name, "states": count_states(jobs), "list": [j.as_dict() for j in jobs]}


# ---------------------------------------------------------------------------- aggregate
@app.command()
def aggregate(
    store: Annotated[Path, typer.Argument(help="Store path.")],
    group: Annotated[list[str] | None, typer.Option(help="Block(s) to include.")] = None,
    by: Annotated[list[str] | None, typer.Option(help="Axes to keep; others are reduced.")] = None,
    baseline: Annotated[
        str | None, typer.Option(help="Block to divide by, at matched coordinates.")
    ] = None,
    metric: Annotated[list[str] | None, typer.Option(help="Metrics to show.")] = None,
    variation: Annotated[
        str | None, typer.Option(help="Axis over which to report max/min of each metric.")
    ] = None,
    how: Annotated[str, typer.Option(help="Reduction: median, mean, min, max.")] = "median",
    fmt: Annotated[str, typer.Option("--format", help="table, csv, markdown or json.")] = "table",
) -> None:
    """Tables from a store: reductions, ratios to a baseline, variation factors."""

    def body():
        from mbstudy.pipeline.analysis.aggregate import AggregateError, render
        from mbstudy.pipeline.analysis.aggregate import aggregate as agg

        if how not in ("median", "mean", "min", "max"):
            raise AggregateError(f"--how: expected median, mean, min or max, got {how!r}")
        if fmt not in ("table", "csv", "markdown", "json"):
            raise AggregateError(f"--format: expected table, csv, markdown or json, got {fmt!r}")
        tables = agg(store, group, by, baseline, metric, variation, how)
        if fmt == "json":
            typer.echo(json.dumps({k: json.loads(render(v, "json")) for k, v in tables.items()},
                                  indent=1))
            return
        for title, df in tables.items():
            if fmt != "csv":
                typer.echo(f"## {title}" if fmt == "markdown" else f"{title}:")
            typer.echo(render(df, fmt))
            typer.echo("")

    _guard(body)


# ---------------------------------------------------------------------------- plot
def _parse_sel(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise BadInput(f"--sel: expected NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            out[name.strip()] = value.strip()
    return out


@app.command()
def plot(
    store: Annotated[Path, typer.Argument(help="Store path.")],
    kind: Annotated[
        str, typer.Option(help="series, convergence, heatmap, ratio or work-precision.")
    ] = "series",
    group: Annotated[list[str] | None, typer.Option(help="Block(s) to plot.")] = None,
    out: Annotated[Path, typer.Option(help="Directory for the PNG and SVG files.")] = Path(
        "figures"
    ),
    metric: Annotated[list[str] | None, typer.Option(help="Metric(s) to plot.")] = None,
    axis: Annotated[
        str | None, typer.Option(help="Grid axis of convergence/ratio plots (default h).")
    ] = None,
    x: Annotated[str | None, typer.Option("--x", help="Heatmap x axis.")] = None,
    y: Annotated[str | None, typer.Option("--y", help="Heatmap y axis.")] = None,
    baseline: Annotated[str | None, typer.Option(help="Block to divide by (ratio).")] = None,
    sel: Annotated[
        list[str] | None, typer.Option(help="NAME=VALUE: only cases with this axis value.")
    ] = None,
    cost: Annotated[str, typer.Option(help="Cost axis of work-precision plots.")] = "wall_s",
    series: Annotated[list[str] | None, typer.Option(help="Series to plot (series).")] = None,
) -> None:
    """Figures (PNG + SVG, one file per figure) from a store."""

    def body():
        from mbstudy.pipeline.analysis.plots import make_plots

        paths = make_plots(
            store,
            kind,
            out,
            groups=group,
            metrics=metric,
            axis=axis,
            x=x,
            y=y,
            baseline=baseline,
            select=_parse_sel(sel),
            cost=cost,
            series=series,
        )
        for p in paths:
            typer.echo(str(p))

    _guard(body)


# ---------------------------------------------------------------------------- report
@app.command()
def report(
    stores: Annotated[list[Path], typer.Argument(help="Store path(s).")],
    out: Annotated[Path, typer.Option(help="Directory for index.html and figures/.")] = Path(
        "report"
    ),
    baseline: Annotated[
        str | None, typer.Option(help="Block to divide by in the ratio tables.")
    ] = None,
) -> None:
    """A self-contained HTML report: study text, provenance, tables and figures."""

    def body():
        from mbstudy.pipeline.analysis.report import write_report

        typer.echo(str(write_report(stores, out, baseline=baseline)))

    _guard(body)


# ---------------------------------------------------------------------------- reproduce
@app.command()
def reproduce(
    out: Annotated[Path, typer.Option(help="Where reproduction.md and figures/ go.")] = Path(
        "docs"
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
    """Launch (or resume) every seed study into RESULTS, then write OUT/reproduction.md."""

    def body():
        from mbstudy.pipeline.analysis.reproduction import SEED_STUDIES, write_reproduction
        from mbstudy.pipeline.store.zarr_store import ResultStore
        from mbstudy.pipeline.study.examples import studies_dir as shipped

        studies_dir = shipped()
        if not no_launch:
            for name in dict.fromkeys(s for names in SEED_STUDIES.values() for s in names):
                path = results / f"{name}.zarr"
                spec = _load(studies_dir / f"{name}.toml")
                stale = False
                if ResultStore.exists(path):
                    rs = ResultStore.open(path)
                    stale = rs.spec_hash() != spec.spec_hash  # the study file changed
                    if not stale and rs.root_attrs().get("complete"):
                        typer.echo(f"{name}: complete store {path}")
                        continue
                typer.echo(f"{name}: {'relaunching' if stale else 'launching'} into {path}")
                code = _launch(
                    studies_dir / f"{name}.toml",
                    path,
                    workers,
                    scheduler=None,
                    cluster=None,
                    jobs=None,
                    resume=False,
                    overwrite=stale,
                    force=False,
                    quiet=True,
                )
                if code:
                    raise typer.Exit(code)
        typer.echo(str(write_reproduction(results, out)))

    _guard(body)


# ---------------------------------------------------------------------------- run
@app.command()
def run(
    model: Annotated[str, typer.Option(help="Model name.")],
    formulation: Annotated[str, typer.Option(help="Formulation name.")] = "none",
    integrator: Annotated[str, typer.Option(help="Integrator name.")] = "rk4",
    t_end: Annotated[float | None, typer.Option(help="End time (s).")] = None,
    samples: Annotated[int, typer.Option(min=2, help="Output times.")] = 301,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="NAME=VALUE (model.NAME=VALUE for model parameters)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Run one case in-process (no Dask) and print status, metrics and final state."""

    def body():
        from mbstudy.pipeline.run.single import run_single

        result = run_single(model, formulation, integrator, t_end, samples, set_ or [])
        if as_json:
            typer.echo(json.dumps(result, default=float))
            return
        typer.echo(f"status: {result['status']}")
        for k, v in result["metrics"].items():
            typer.echo(f"  {k:12s} {v:.6g}")
        typer.echo(f"final t = {result['final']['t']}")

    _guard(body)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
