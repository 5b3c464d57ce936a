"""``mbstudy status``, ``mbstudy aggregate`` and ``mbstudy verify``: what a store holds."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from mbstudy.pipeline.cli.common import guard

app = typer.Typer()


# ---------------------------------------------------------------------------- status
@app.command()
def status(
    store: Annotated[str, typer.Argument(metavar="STORE",
                                         help="Store path or URL (s3://BUCKET/NAME.zarr).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Done / failed (by status) / pending cases per block of a store, and the SLURM worker
    jobs of a launch running on it (pending / running).

    Example: mbstudy status results/smoke.zarr
    """

    def body():
        from mbstudy.pipeline.analysis.search_answer import (
            is_search_store,
            search_blocks,
            search_part,
        )
        from mbstudy.pipeline.store.zarr_store import ResultStore
        from mbstudy.solvers.api import STATUS_NAMES, describe_failures

        if is_search_store(store):
            return _search_status(store, as_json)
        rs = ResultStore.open(store)
        attrs = rs.root_attrs()
        out = {"store": str(store), "study": attrs.get("study_name"),
               "complete": attrs.get("complete"), "blocks": {}}
        for b in rs.blocks():
            rs.check_block(b)  # a lost array or chunk of a finished batch: one line
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
        # complete only if the marker says so and no batch is pending (a lost done chunk
        # makes its batch pending: the next launch runs it again)
        pending = sum(info["pending"] for info in out["blocks"].values())
        out["complete"] = attrs.get("complete") is True and pending == 0
        out["jobs"] = None if out["complete"] else _store_jobs(rs.path)
        nested = search_part(store) if isinstance(store, str) and "://" not in store else None
        if as_json:
            if nested is not None:
                out["search"] = search_blocks(nested)
            typer.echo(json.dumps(out, indent=1))
            return
        typer.echo(f"store {store}: study {out['study']!r}, complete: {out['complete']}")
        for b, info in out["blocks"].items():
            typer.echo(
                f"  {b}: {info['done']}/{info['cases']} done, {info['ok']} ok,"
                f" {info['pending']} pending, failed: {describe_failures(info['failed'])}"
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
        if nested is not None:  # the study's search blocks, beside its grid blocks
            _search_status(str(nested), False)

    guard(body)


def _store_jobs(store) -> dict | None:
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
    store: Annotated[str, typer.Argument(metavar="STORE",
                                         help="Store path or URL (s3://BUCKET/NAME.zarr).")],
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
    """Tables from a store: reductions, ratios to a baseline, variation factors.

    Example: mbstudy aggregate results/smoke.zarr --baseline baumgarte --metric rms_phi
    """

    def body():
        from mbstudy.pipeline.analysis.aggregate import AggregateError, render
        from mbstudy.pipeline.analysis.aggregate import aggregate as agg
        from mbstudy.pipeline.analysis.search_answer import (
            is_search_store,
            search_blocks,
            search_part,
        )

        if is_search_store(store):
            return _search_aggregate(store, fmt == "json")

        if how not in ("median", "mean", "min", "max"):
            raise AggregateError(f"--how: expected median, mean, min or max, got {how!r}")
        if fmt not in ("table", "csv", "markdown", "json"):
            raise AggregateError(f"--format: expected table, csv, markdown or json, got {fmt!r}")
        tables = agg(store, group, by, baseline, metric, variation, how)
        nested = search_part(store) if isinstance(store, str) and "://" not in store else None
        if fmt == "json":
            out = {k: json.loads(render(v, "json")) for k, v in tables.items()}
            if nested is not None:  # the study's search blocks' answers, by block
                out["search"] = {n: b["answer"] for n, b in search_blocks(nested).items()}
            typer.echo(json.dumps(out, indent=1))
            return
        for title, df in tables.items():
            if fmt != "csv":
                typer.echo(f"## {title}" if fmt == "markdown" else f"{title}:")
            typer.echo(render(df, fmt))
            typer.echo("")
        if nested is not None and fmt != "csv":
            _search_aggregate(str(nested), False)

    guard(body)


def _search_status(store: str, as_json: bool) -> None:
    """``status`` of a search store: per block the rounds done, cases, and the current
    estimate (boundary points or optimum)."""
    from mbstudy.pipeline.analysis.search_answer import search_blocks

    blocks = search_blocks(store)
    if as_json:
        typer.echo(json.dumps({"store": str(store), "search": blocks}, indent=1))
        return
    typer.echo(f"search store {store}:")
    for name, b in blocks.items():
        state = "done" if b["done"] else "not done"
        typer.echo(f"  {name}: {b['goal']} {b['metric']}, {b['rounds']} rounds done,"
                   f" {b['cases']}/{b['budget']} cases, {state};"
                   f" estimate: {len(b['answer'])} point(s)")  # fmt: skip
        for row in b["answer"][:20]:
            typer.echo("    " + "  ".join(f"{k} = {v:.6g}" if isinstance(v, float)
                                          else f"{k} = {v}" for k, v in row.items()))


def _search_aggregate(store: str, as_json: bool) -> None:
    """``aggregate`` of a search store: the optimum (or boundary) per combination."""
    from mbstudy.pipeline.analysis.search_answer import search_blocks

    blocks = search_blocks(store)
    if as_json:
        typer.echo(json.dumps({n: b["answer"] for n, b in blocks.items()}, indent=1))
        return
    for name, b in blocks.items():
        what = {"minimize": "minimum", "maximize": "maximum"}.get(b["goal"], b["goal"])
        typer.echo(f"{name}: {what} of {b['metric']} per combination of"
                   f" {', '.join(b['lists']) or 'no list axis'}:")
        for row in b["answer"]:
            typer.echo("  " + "  ".join(f"{k} = {v:.6g}" if isinstance(v, float)
                                        else f"{k} = {v}" for k, v in row.items()))
        typer.echo("")


# ---------------------------------------------------------------------------- verify
@app.command()
def verify(
    store: Annotated[str, typer.Argument(metavar="STORE",
                                         help="Store path or URL (s3://BUCKET/NAME.zarr).")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Read every chunk of a store and check its checksum: missing and corrupt chunks per
    block and batch. Exit 0 if the store is intact, 1 if damage was found (a launch on the
    store runs the damaged batches again).

    Example: mbstudy verify results/smoke.zarr
    """

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
            typer.echo(f"  reference r{i}: {'; '.join(what)}" if int(i) >= 0
                       else f"  references: {'; '.join(what)}")  # fmt: skip
        for what in out["consolidated"]:
            typer.echo(f"  consolidated metadata: {what}")
        for name, info in out["blocks"].items():
            bad = sorted({*info["missing"], *info["corrupt"]}, key=int)
            typer.echo(f"  {name}: {info['batches']} batches, {len(bad)} damaged")
            for kind in ("missing", "corrupt"):
                for b, arrays in info[kind].items():
                    typer.echo(f"    batch {b}: {kind} {', '.join(arrays)}")
            for what in info["template"]:
                typer.echo(f"    template: {what}")
        return 0 if report.ok else 1

    raise typer.Exit(guard(body) or 0)
