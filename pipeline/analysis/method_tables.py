"""The report's first section: "which method, at what cost", one table per step size (or
per tolerance for adaptive blocks) with the methods as rows.

Columns: the RMS position constraint violation ``rms_phi`` (docs/explanation/methods.md#metrics),
the trajectory errors against the reference (``e_r``, ``e_theta``, ``e_final``, those the
store defines), the energy error that applies to the model (``de_max`` = max |E - E0|
for a conservative model, ``du_max`` = max |E - E0 - W_drives| for a driven one) and the
cost. The cost is the compiled kernel time ``wall_s`` where every case of the table has
one, else the counted work (right-hand sides plus Jacobians, whatever counters the store
holds), and each table says which.

Ranking rule (stated in the report): ascending by the first trajectory error the store
defines (``rms_phi`` when it defines none), rows equal to 4 significant digits ordered by
cost; a row whose error or cost is NaN (a failed case, a metric the block does not
produce) is listed below the ranked rows without a rank. Every other swept axis of a block
is held at the study's matched settings (``compare.matched_settings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mbstudy.pipeline.analysis import compare

CONSTRAINT_METRIC = "rms_phi"
TRAJECTORY_METRICS = ("e_r", "e_theta", "e_final")
WORK_COUNTERS = ("rhs_evals", "jac_evals")  # summed into the counted work, where stored
UNRANKED = "-"


@dataclass
class MethodTable:
    """One table of the first section: the methods at ``axis`` = ``value``."""

    axis: str
    value: float
    table: object  # pandas DataFrame: rank, block, method, held at, status, metrics, cost
    cost: str  # "wall_s" or "work"
    cost_column: str
    rank_key: str
    notes: list[str] = field(default_factory=list)


def energy_metric(conservative: bool, driven: bool) -> tuple[str | None, str]:
    """The energy column that means something for the model, and the note saying what
    was left out: ``de_max`` if energy is conserved, ``du_max`` (the energy balance with
    the drives' work) if drives do work, else none."""
    if conservative and not driven:
        return "de_max", ""
    if driven:
        return "du_max", ("de_max left out: the model is driven (its drives do work), so "
                          "E - E0 is not an error; du_max, the energy balance, instead")
    return None, "energy left out: the model is not conservative and has no drives"


def model_energy(model: str) -> tuple[bool, bool]:
    """(conservative, driven) of the store's model from the registry; a model the
    registry cannot load (e.g. a mechanism file moved since the launch) counts as
    driven, so that no energy error is ranked on a guess."""
    from mbstudy.solvers import api as solvers
    try:
        spec = solvers.model(model).spec
    except Exception:  # any failure to load the model: no energy claim
        return False, True
    return bool(spec.conservative), bool(spec.driven)


def _block_axis(sub) -> str | None:
    """The cost axis of a block: the one it sweeps, else a fixed step or tolerance."""
    axis = compare.cost_axis(sub)
    if axis:
        return axis
    return next((a for a in compare.COST_AXES if a in sub.columns and sub[a].notna().any()),
                None)  # fmt: skip


def _with_fixed_cost(sub, fixed: dict):
    """``sub`` with the block's fixed step size / tolerances as columns where it has none
    (a block at one rtol, when no block sweeps rtol, has no rtol column)."""
    for a in compare.COST_AXES:
        value = fixed.get(a)
        if (a not in sub.columns or sub[a].isna().all()) and isinstance(value, int | float) \
                and not isinstance(value, bool) and value > 0:  # fmt: skip
            sub = sub.assign(**{a: float(value)})
    return sub


def _finite(x) -> bool:
    return x is not None and np.isfinite(float(x))


def method_tables(df, labels: dict[str, str], conservative: bool = True, driven: bool = False,
                  fixed: dict[str, dict] | None = None) -> tuple[list[MethodTable], list[str]]:
    """The first-section tables of a case table (``compare.with_fixed`` of the store's
    cases) and the notes that apply to all of them. ``labels`` maps a block to its
    method ("formulation + integrator"); ``fixed`` a block to its fixed parameters (the
    block attribute ``fixed_parameters``), where the step size or tolerance of a block
    that sweeps neither is found when no block sweeps it."""
    import pandas as pd

    notes: list[str] = []
    traj = [m for m in compare.informative_metrics(df, TRAJECTORY_METRICS)[0]]
    energy, why = energy_metric(conservative, driven)
    if why:
        notes.append(why)
    if energy and energy not in compare.informative_metrics(df, [energy])[0]:
        notes.append(f"{energy} left out: undefined or constant in this store")
        energy = None
    metrics = [CONSTRAINT_METRIC, *traj, *([energy] if energy else [])]
    metrics = [m for m in metrics if m in df.columns]
    rank_key = traj[0] if traj else CONSTRAINT_METRIC
    settings = compare.matched_settings(df)
    # the metrics a block never produces (NaN in all its ok cases): shown empty, noted
    missing: dict[str, list[str]] = {}
    groups = list(dict.fromkeys(df["group"]))
    by_key: dict[tuple[str, float], list] = {}
    for g in groups:
        sub = df[df["group"] == g]
        ok = sub[sub["status"] == "ok"]
        for m in metrics:
            if len(ok) and not np.isfinite(ok[m].astype(float)).any():
                missing.setdefault(g, []).append(m)
        sub = _with_fixed_cost(sub, (fixed or {}).get(g) or {})
        axis = _block_axis(sub)
        if axis is None:
            notes.append(f"block {g} left out: it has no step size or tolerance")
            continue
        for v in sorted(sub[axis].dropna().unique().tolist()):
            rows, used = compare.pick_case(sub[sub[axis] == v], settings, free=(axis,))
            if rows.empty:
                continue
            by_key.setdefault((axis, float(v)), []).append((g, rows.iloc[0], used))
    for g, ms in missing.items():
        notes.append(f"block {g} does not produce {', '.join(ms)} (shown as nan, not ranked)")
    tables = []
    for (axis, value), entries in sorted(by_key.items(), key=lambda kv: (
            compare.COST_AXES.index(kv[0][0]), -kv[0][1])):  # fmt: skip
        walls = [r.get("wall_s") for _, r, _ in entries]
        if all(_finite(w) and float(w) > 0 for w in walls):
            cost, cost_col = "wall_s", "wall_s"
        else:
            counters = [c for c in WORK_COUNTERS if c in df.columns]
            cost, cost_col = "work", "work (" + " + ".join(counters) + ")"
        recs = []
        for g, r, used in entries:
            rec = {"block": g, "method": labels.get(g, g),
                   "held at": ", ".join(f"{a}={_fmt(x)}" for a, x in used.items()) or "-",
                   "status": str(r["status"])}  # fmt: skip
            for m in metrics:
                rec[m] = float(r[m]) if m not in missing.get(g, []) else np.nan
            if cost == "wall_s":
                rec[cost_col] = float(r["wall_s"])
            else:
                parts = [float(r[c]) for c in WORK_COUNTERS if c in r.index]
                rec[cost_col] = float(sum(parts)) if all(map(_finite, parts)) else np.nan
            recs.append(rec)
        ranked = [x for x in recs if _finite(x[rank_key]) and _finite(x[cost_col])
                  and x["status"] == "ok"]  # fmt: skip
        rest = [x for x in recs if x not in ranked]
        ranked.sort(key=lambda x: (float(f"{x[rank_key]:.4g}"), x[cost_col]))
        for k, x in enumerate(ranked, 1):
            x["rank"] = str(k)
        for x in rest:
            x["rank"] = UNRANKED
        cols = ["rank", "block", "method", "held at", "status", *metrics, cost_col]
        table = pd.DataFrame(ranked + rest, columns=cols)
        tables.append(MethodTable(axis, value, table, cost, cost_col, rank_key))
    return tables, notes


def _fmt(v) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}"
    return str(v)


def rank_rule(rank_key: str) -> str:
    """The ranking rule of the tables, in words, for the page."""
    return (f"Ranked by {rank_key} ascending (smaller is better); rows equal to 4 "
            "significant digits by lower cost. Rows with a NaN error or cost (a failed "
            f"case, or a metric the block does not produce) are listed without a rank "
            f"({UNRANKED}).")


def cost_text(t: MethodTable) -> str:
    """What the cost column of a table is, in words."""
    if t.cost == "wall_s":
        return "Cost: compiled kernel time wall_s (s); every case of this table has one."
    return (f"Cost: counted work {t.cost_column[6:-1]} (evaluations; not every case of "
            "this table has a compiled kernel time).")


def column_meanings(tables: list[MethodTable]) -> list[str]:
    """"name: meaning (unit)" of every metric column of the tables."""
    from mbstudy.solvers.api import METRIC_MEANINGS

    cols = dict.fromkeys(c for t in tables for c in t.table.columns if c in METRIC_MEANINGS)
    return [f"{c}: {METRIC_MEANINGS[c]}" for c in cols]
