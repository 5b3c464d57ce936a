"""Tables from a store: reductions over chosen axes, ratios to a baseline block at matched
coordinates, and the variation factor (max / min) of each metric over an axis.

Seed-004-style comparison (docs/explanation/reproduction.md, seed 004): ``--baseline baumgarte``
matches every case of
another block to the baseline case with the same values of the axes the two blocks share
(e.g. h, omega_n, xi) and reports metric / baseline metric; the summary row per block is
the median of those ratios, plus how many matched pairs the block beats the baseline in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.reader import case_table
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.api import ACCURACY_METRICS, COUNTER_METRICS, TIME_METRICS

DEFAULT_METRICS = ("rms_phi", "rms_dphi", "e_r", "e_theta", "de_max", "du_max", "wall_s",
                   "rhs_evals")


class AggregateError(ValueError):
    """Bad aggregation request (unknown group, axis or metric)."""


NOT_METRIC_COLUMNS = {"group", "status", "done", "engine"}  # case-table columns, not axes


def _all_metrics() -> tuple[str, ...]:
    return ACCURACY_METRICS + TIME_METRICS + tuple(COUNTER_METRICS)


def load_cases(store: ResultStore, groups: list[str] | None = None):
    """Concatenated case tables of the chosen blocks (all by default)."""
    import pandas as pd

    blocks = store.blocks()
    groups = groups or blocks
    for g in groups:
        if g not in blocks:
            from mbstudy.solvers.api import closest

            hint = closest(g, blocks)
            raise AggregateError(
                f"--group: no block {g!r}" + (f"; did you mean {hint!r}?" if hint else "")
                + f" (blocks: {', '.join(blocks)})"
            )
    return pd.concat([case_table(store, g) for g in groups], ignore_index=True)


def reduce_cases(df, by: list[str], metrics: list[str], how: str = "median"):
    """Group rows by block and ``by`` axes; reduce metrics over ok cases; count failures."""
    keys = ["group", *by]
    missing = [b for b in by if b not in df.columns]
    if missing:
        raise AggregateError(f"--by: unknown axis {missing[0]!r} (axes: {_axes(df)})")
    ok = df[df["status"] == "ok"]
    red = ok.groupby(keys, dropna=False)[metrics].agg(how)
    counts = df.groupby(keys, dropna=False).agg(
        cases=("status", "size"), failed=("status", lambda s: int((s != "ok").sum()))
    )
    return counts.join(red).reset_index()


def reduction_title(df, by: list[str], how: str = "median") -> str:
    """What a reduced table is: ``median over the ok cases of each block and h (pooling
    omega_n, xi)``, naming the axes that are pooled (varied but not grouped by)."""
    skip = {"group", "status", "done", "row", "engine", *_all_metrics(), *by}
    pooled = [c for c in df.columns if c not in skip and df[c].nunique(dropna=True) > 1]
    title = f"{how} over the ok cases of each block" + (f" and {', '.join(by)}" if by else "")
    return title + (f" (pooling {', '.join(pooled)})" if pooled else "")


def _axes(df) -> str:
    skip = NOT_METRIC_COLUMNS | set(_all_metrics())
    return ", ".join(c for c in df.columns if c not in skip)


def baseline_ratios(df, baseline: str, metrics: list[str]):
    """Per matched case: metric / baseline metric; plus a per-block summary.

    Returns (pairs, summary): ``pairs`` has one row per matched case, ``summary`` one row
    per block with the median ratio of each metric and ``wins_<metric>`` = number of
    matched pairs where the block's metric is smaller than the baseline's.
    """
    import pandas as pd

    if baseline not in set(df["group"]):
        raise AggregateError(f"--baseline: no block {baseline!r} (blocks: "
                             f"{', '.join(sorted(set(df['group'])))})")
    base = df[df["group"] == baseline]
    axes_base = [c for c in base.columns if c not in NOT_METRIC_COLUMNS | set(_all_metrics())
                 and base[c].notna().any()]
    pair_rows = []
    summary_rows = []
    for g in [x for x in dict.fromkeys(df["group"]) if x != baseline]:
        other = df[df["group"] == g]
        on = [a for a in axes_base if a in other.columns and other[a].notna().any()]
        if on:
            merged = other.merge(base, on=on, suffixes=("", "_base"))
        else:
            merged = other.merge(base, how="cross", suffixes=("", "_base"))
        # the block's own other axes too, so that pairs can be told apart (plots.ratio)
        own = [
            c
            for c in other.columns
            if c not in NOT_METRIC_COLUMNS | set(_all_metrics())
            and c not in on
            and other[c].notna().any()
            and c in merged.columns
        ]
        out = merged[["group", *on, *own]].copy()
        row = {"group": g, "baseline": baseline, "pairs": len(merged), "matched_on": ",".join(on)}
        for mname in metrics:
            ratio = merged[mname] / merged[f"{mname}_base"]
            ratio[(merged["status"] != "ok") | (merged["status_base"] != "ok")] = np.nan
            out[f"{mname}_ratio"] = ratio
            row[f"{mname}_ratio"] = float(np.nanmedian(ratio)) if ratio.notna().any() else np.nan
            row[f"wins_{mname}"] = int((ratio < 1).sum())
        pair_rows.append(out)
        summary_rows.append(row)
    pairs = pd.concat(pair_rows, ignore_index=True) if pair_rows else pd.DataFrame()
    return pairs, pd.DataFrame(summary_rows)


def variation(df, axis: str, metrics: list[str]):
    """Per block: max / min of each metric over ``axis`` (ok cases; other axes pooled)."""
    import pandas as pd

    if axis not in df.columns:
        raise AggregateError(f"--variation: unknown axis {axis!r} (axes: {_axes(df)})")
    rows = []
    for g, sub in df[df["status"] == "ok"].groupby("group"):
        row = {"group": g, "axis": axis}
        for mname in metrics:
            vals = sub.groupby(axis)[mname].median()
            row[f"{mname}_max/min"] = float(vals.max() / vals.min()) if len(vals) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def render(df, fmt: str) -> str:
    """A table as text: table (aligned), csv, markdown or json."""
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":  # every digit (pandas' to_json keeps 10 decimal places: 1.2e-9)
        rows = [{str(k): _json_value(v) for k, v in r.items()}
                for r in df.to_dict(orient="records")]
        return json.dumps(rows, indent=1)
    if fmt == "markdown":
        cols = list(df.columns)
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for _, r in df.iterrows():
            lines.append("| " + " | ".join(_fmt(r[c]) for c in cols) + " |")
        return "\n".join(lines)
    if fmt == "table":
        cols = list(df.columns)
        cells = [[_fmt(r[c]) for c in cols] for _, r in df.iterrows()]
        widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c)
                  for i, c in enumerate(cols)]
        out = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
        for row in cells:
            out.append("  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)))
        return "\n".join(out)
    raise AggregateError(f"--format: expected table, csv, markdown or json, got {fmt!r}")


def _json_value(x):
    """A cell as strict JSON: numpy scalars as Python ones, NaN and infinities as null."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def _fmt(x) -> str:
    if isinstance(x, float | np.floating):
        return "nan" if not np.isfinite(x) else f"{x:.4g}"
    return str(x)


def aggregate(
    store_path: str | Path,
    groups: list[str] | None = None,
    by: list[str] | None = None,
    baseline: str | None = None,
    metrics: list[str] | None = None,
    variation_axis: str | None = None,
    how: str = "median",
) -> dict:
    """Compute the tables ``mbstudy aggregate`` prints: {'title': DataFrame, ...}."""
    store = ResultStore.open(store_path)
    metrics = list(metrics or DEFAULT_METRICS)
    for mname in metrics:
        if mname not in _all_metrics():
            from mbstudy.solvers.api import closest

            hint = closest(mname, _all_metrics())
            raise AggregateError(f"--metric: unknown metric {mname!r}"
                                 + (f"; did you mean {hint!r}?" if hint else ""))
    if baseline and groups and baseline not in groups:
        groups = [*groups, baseline]
    df = load_cases(store, groups)
    tables = {}
    if baseline:
        pairs, summary = baseline_ratios(df, baseline, metrics)
        tables[f"ratio to {baseline} (median over matched cases)"] = summary
        if by:
            keep = ["group", *[b for b in by if b in pairs.columns]]
            cols = keep + [c for c in pairs.columns if c.endswith("_ratio")]
            tables["ratios by " + ", ".join(by)] = pairs[cols]
    else:
        tables[reduction_title(df, list(by or []), how)] = reduce_cases(
            df, list(by or []), metrics, how
        )
    if variation_axis:
        tables[f"variation factor over {variation_axis}"] = variation(df, variation_axis, metrics)
    n_py = int((df["engine"] == "python").sum()) if "engine" in df.columns else 0
    if n_py and any(m in TIME_METRICS for m in metrics):
        # tiered execution: interpreted cases have no kernel timing (NaN in the case table)
        note = f" [wall_s: {n_py} cases ran interpreted and are left out]"
        tables = {title + note: table for title, table in tables.items()}
    return tables
