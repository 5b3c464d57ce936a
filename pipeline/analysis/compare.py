"""The comparisons a report is organised around, as tables: which metrics say
something for this store, the settings at which blocks are compared, the cost axis of a
method, the ranking of methods per metric against a baseline, the failure map.

Everything here reads the case table of ``aggregate.load_cases`` (one row per case, the
grid axes as columns, NaN where a block lacks an axis) and returns pandas objects; the
figures and HTML are built from these by ``report``.
"""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.analysis.aggregate import baseline_ratios
from mbstudy.solvers.api import ACCURACY_METRICS, COUNTER_METRICS, TIME_METRICS

NOT_AXES = {"group", "status", "done", "row", "engine", *ACCURACY_METRICS, *TIME_METRICS,
            *COUNTER_METRICS}  # fmt: skip
# cost axes of a method, in order of preference: a fixed step, else a tolerance
COST_AXES = ("h", "rtol", "tol", "atol")
# error metrics for the work-precision plane, in order of preference
ERROR_METRICS = ("e_r", "e_theta", "e_final", "rms_phi")


def axes_in(df) -> list[str]:
    """The grid-axis columns of a case table (in table order)."""
    return [c for c in df.columns if c not in NOT_AXES]


def with_fixed(rs, df):
    """The case table with each block's fixed parameters filled into the axis columns it
    lacks (a block holding ``omega_n = 5`` gets 5 where another block sweeps omega_n), so
    that blocks are matched on every coordinate they share, swept or fixed. Uses the
    block attribute ``fixed_parameters`` (stores without it are left as they are)."""
    df = df.copy()
    for g in dict.fromkeys(df["group"]):
        fixed = rs.block_attrs(g).get("fixed_parameters") or {}
        rows = df["group"] == g
        for col in axes_in(df):
            if col in fixed and df.loc[rows, col].isna().all():
                value = fixed[col]
                if isinstance(value, int | float) and not isinstance(value, bool):
                    df.loc[rows, col] = float(value)
                elif df[col].dtype == object:
                    df.loc[rows, col] = value
    return df


def varied_axes(df) -> list[str]:
    """Axes taking more than one value in ``df``."""
    return [a for a in axes_in(df) if df[a].nunique(dropna=True) > 1]


def informative_metrics(df, candidates) -> tuple[list[str], dict[str, str]]:
    """The metrics among ``candidates`` that say something about this table, and why each
    other one was left out: ``undefined`` (NaN in every ok case, e.g. e_r of a model
    with angles only) or ``constant`` (one value in every ok case)."""
    ok = df[df["status"] == "ok"]
    keep, dropped = [], {}
    for m in candidates:
        if m not in df.columns:
            continue
        vals = ok[m].astype(float)
        finite = vals[np.isfinite(vals)]
        if finite.empty:
            dropped[m] = "undefined"
        elif finite.nunique() == 1 and len(ok) > 1:
            dropped[m] = f"constant ({finite.iloc[0]:.4g})"
        else:
            keep.append(m)
    return keep, dropped


def cost_axis(sub) -> str | None:
    """The axis along which a block trades cost for accuracy: ``h`` for a fixed-step
    block that sweeps it, else a swept tolerance; None if it sweeps neither."""
    for a in COST_AXES:
        if a in sub.columns and sub[a].nunique(dropna=True) > 1:
            return a
    return None


def matched_settings(df) -> dict[str, object]:
    """One value per varied axis at which the blocks are compared: for each axis, the
    value held by the most blocks (ties: the median of those values), so that as many
    blocks as possible have a case there. Cost axes get the value too (used by the
    series overlay; the work-precision plane frees them)."""
    out: dict[str, object] = {}
    for a in varied_axes(df):
        counts: dict[object, int] = {}
        for _, sub in df.groupby("group", sort=False):
            for v in sub[a].dropna().unique().tolist():
                counts[v] = counts.get(v, 0) + 1
        if not counts:
            continue
        top = max(counts.values())
        best = sorted(v for v, c in counts.items() if c == top)
        out[a] = best[(len(best) - 1) // 2]
    return out


def pick_case(sub, settings: dict[str, object], free: tuple[str, ...] = ()):
    """Rows of ``sub`` (one block) at ``settings`` on the axes the block has, ignoring
    ``free`` axes; where a block lacks a case at a setting, the nearest value is used.
    Returns (rows, the settings actually used)."""
    used = {}
    for a, v in settings.items():
        if a in free or a not in sub.columns or sub[a].isna().all():
            continue
        vals = sub[a].dropna().unique()
        if v in set(vals.tolist()):
            pick = v
        elif np.asarray(vals).dtype.kind in "fiu" and isinstance(v, int | float):
            pick = vals[np.argmin(np.abs(vals.astype(float) - float(v)))]
        else:
            pick = sorted(vals.tolist(), key=str)[0]
        used[a] = pick
        sub = sub[sub[a] == pick]
    return sub, used


def finite_median(values) -> float:
    """The median of the finite values, NaN if there are none (np.nanmedian would warn
    "All-NaN slice" for a metric a block does not produce, e.g. interpreted wall times)."""
    vals = np.asarray(values, dtype=float)
    vals = vals[np.isfinite(vals)]
    return float(np.median(vals)) if vals.size else float("nan")


def ranking(df, baseline: str, metrics: list[str]):
    """Per metric, the blocks ranked by their median ratio to ``baseline`` at matched
    coordinates (``aggregate.baseline_ratios``), with the baseline's median value over
    the same matched cases beside the ratio. Columns: metric, rank, block, median ratio,
    block median, baseline median, wins (pairs where the block is smaller), pairs. A block
    with no finite ratio of a metric is left out of that metric's ranking
    (:func:`unranked` names it and why)."""
    import pandas as pd

    _pairs, summary = baseline_ratios(df, baseline, metrics)
    rows = []
    if summary.empty:
        return pd.DataFrame()
    base = df[df["group"] == baseline]
    for m in metrics:
        per = []
        for _, r in summary.iterrows():
            if not np.isfinite(r[f"{m}_ratio"]):
                continue  # not ranked: no finite ratio (see below, and unranked())
            g = r["group"]
            other = df[df["group"] == g]
            on = [a for a in str(r["matched_on"]).split(",") if a]
            merged = (other.merge(base, on=on, suffixes=("", "_base")) if on
                      else other.merge(base, how="cross", suffixes=("", "_base")))  # fmt: skip
            both = merged[(merged["status"] == "ok") & (merged["status_base"] == "ok")]
            per.append({
                "metric": m, "block": g, "median ratio": r[f"{m}_ratio"],
                "block median": finite_median(both[m]),
                "baseline median": finite_median(both[f"{m}_base"]),
                "wins": int(r[f"wins_{m}"]), "pairs": int(r["pairs"]),
                "matched on": ", ".join(on) or "(all cases)",
            })  # fmt: skip
        # a block without a finite ratio is not ranked: either its pairs failed (the
        # failure map lists them) or its ok cases have no value of this metric; ranking it
        # last with "nan" would call ok cases worse than every other
        per.sort(key=lambda x: x["median ratio"])
        for k, x in enumerate(per, 1):
            rows.append({"metric": m, "rank": k, **{k2: v for k2, v in x.items()
                                                    if k2 != "metric"}})  # fmt: skip
    return pd.DataFrame(rows)


def pair_failed(df, baseline: str, metrics: list[str]) -> np.ndarray:
    """Row for row with the pairs of ``aggregate.baseline_ratios(df, baseline, metrics)``:
    True where a case of the pair is not ok. (The ratio of a metric set to 1 in every case
    is NaN exactly there; an ok pair whose metric is NaN has no value but did not fail.)"""
    ones = df.assign(**{m: 1.0 for m in metrics})
    pairs, _ = baseline_ratios(ones, baseline, metrics[:1])
    if pairs.empty:
        return np.zeros(0, dtype=bool)
    return ~np.isfinite(pairs[f"{metrics[0]}_ratio"].to_numpy(dtype=float))


def unranked(df, baseline: str, metrics: list[str]) -> list[str]:
    """One phrase per (metric, block) that :func:`ranking` leaves out, saying why: its
    matched pairs failed, or its ok pairs have no value of the metric (not a failure)."""
    pairs, summary = baseline_ratios(df, baseline, metrics)
    if summary.empty:
        return []
    failed = pair_failed(df, baseline, metrics)
    out = []
    for m in metrics:
        for _, r in summary.iterrows():
            if np.isfinite(r[f"{m}_ratio"]):
                continue
            mine = (pairs["group"] == r["group"]).to_numpy()
            n_ok = int((~failed[mine]).sum())
            why = (f"its {n_ok} ok pair(s) have no value of {m}" if n_ok
                   else "every matched pair failed")  # fmt: skip
            out.append(f"{r['group']} on {m}: {why}")
    return out


def failure_map(df):
    """Per block: cases, ok, and the count of every failure status that occurs."""
    import pandas as pd

    statuses = sorted({s for s in df["status"] if s != "ok"})
    rows = []
    for g, sub in df.groupby("group", sort=False):
        row = {"block": g, "cases": len(sub), "ok": int((sub["status"] == "ok").sum())}
        for s in statuses:
            row[s] = int((sub["status"] == s).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def failed_cases(df, limit: int = 50):
    """The failed cases with their block, varied axes and status (at most ``limit``)."""
    bad = df[df["status"] != "ok"]
    cols = ["group", *[a for a in varied_axes(df) if bad[a].notna().any()], "status"]
    return bad[cols].head(limit), len(bad)
