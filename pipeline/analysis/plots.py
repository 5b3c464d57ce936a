"""Figures from a store (matplotlib, Agg backend): one function per kind, one file per figure.

Kinds (issue 9; metrics and their units are those of DESIGN.md "Metrics" and
``solvers.metrics.METRIC_MEANINGS``):

- ``series``: sampled series vs time, one line per case (energy E(t) as in seed 001
  figs. 9-10; energy balance |E - E0 - W|; constraint violation at the position, velocity
  and acceleration level, METHODS.md 0.3, on log axes);
- ``convergence``: a metric vs an axis (default h) on log-log axes, with the least-squares
  slope of log(metric) on log(h) in the legend (the observed order p of e ~ C h^p);
- ``heatmap``: a metric over two grid axes, failed cases hatched and named by status;
- ``ratio``: metric / baseline metric at matched coordinates (``aggregate.baseline_ratios``,
  the seed-004 comparison of METHODS.md D.7) along one axis;
- ``work-precision``: a metric vs wall time (or another cost counter) per block.

Every function validates its request and builds its figures before anything is written
(``save_figures`` writes), so bad input leaves no file behind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mbstudy.pipeline.analysis.aggregate import AggregateError, baseline_ratios, load_cases
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.metrics import (
    ACCURACY_METRICS,
    COUNTER_METRICS,
    METRIC_MEANINGS,
    TIME_METRICS,
    VECTOR_SERIES,
)

KINDS = ("series", "convergence", "heatmap", "ratio", "work-precision")
COST_METRICS = ("wall_s", "rhs_evals", "steps", "newton_iters")

# label and unit of each sampled series (solvers/metrics.py SERIES_NAMES)
SERIES_LABELS = {
    "phi_norm": ("position |Φ|", "m"),
    "dphi_norm": ("velocity |Φ_q v + Φ_t|", "m/s"),
    "ddphi_norm": ("acceleration |Φ_q a − γ|", "m/s²"),
    "energy": ("total energy E", "J"),
    "energy_balance": ("energy balance |E − E₀ − W|", "J"),
    "input_norm": ("stabilization input |u|", "m/s²"),
    "q": ("coordinate q", "m or rad"),
    "v": ("velocity v", "m/s or rad/s"),
    "lam": ("multipliers λ", "N or N·m"),
}
LEVELS = ("phi_norm", "dphi_norm", "ddphi_norm")
MAX_LEGEND = 12


class PlotError(AggregateError):
    """A bad plot request (unknown kind, block, axis or metric; not a store)."""


@dataclass
class Figure:
    """A finished matplotlib figure and the file stem it is saved under."""

    name: str
    fig: Any
    title: str = ""


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def metric_label(name: str) -> str:
    """Axis label of a metric with its unit (METRIC_MEANINGS)."""
    meaning = METRIC_MEANINGS.get(name, name)
    return f"{name}: {meaning}"


def _all_metrics() -> tuple[str, ...]:
    return ACCURACY_METRICS + TIME_METRICS + tuple(COUNTER_METRICS)


def check_metric(name: str, option: str = "--metric") -> str:
    """``name`` if it is a store metric, else PlotError naming the option."""
    if name not in _all_metrics():
        from mbstudy.solvers.registry import closest

        hint = closest(name, _all_metrics())
        raise PlotError(
            f"{option}: unknown metric {name!r}" + (f"; did you mean {hint!r}?" if hint else "")
        )
    return name


def open_store(path: str | Path) -> ResultStore:
    """Open a store or raise PlotError (one line naming the path)."""
    from mbstudy.pipeline.store.zarr_store import StoreError

    try:
        return ResultStore.open(path)
    except StoreError as exc:
        raise PlotError(str(exc)) from None


def axes_of(rs: ResultStore, group: str) -> list[str]:
    """The grid axes of a block (store attrs)."""
    return list(rs.block_attrs(group).get("axes", []))


def cases(rs: ResultStore, groups: list[str] | None = None, select: dict[str, Any] | None = None):
    """Case table of the chosen blocks (``aggregate.load_cases``) with a ``row`` column
    (index of the case within its block), restricted to the cases matching ``select``."""
    df = load_cases(rs, groups)
    df["row"] = df.groupby("group").cumcount()
    for name, value in (select or {}).items():
        if name not in df.columns or name in ("group", "row"):
            raise PlotError(f"--sel: unknown axis {name!r} (axes: {_axis_list(rs, df)})")
        col = df[name]
        if col.dtype.kind in "fiu" and isinstance(value, int | float):
            match = np.isclose(col.astype(float), float(value), rtol=1e-12, atol=0.0)
        else:
            match = (col.astype(str) == str(value)).to_numpy()
        if not match.any():
            raise PlotError(f"--sel: no case has {name} = {value!r}")
        df = df[match | col.isna().to_numpy()]  # blocks without this axis are kept whole
    return df


def without_row(df):
    """The case table without the ``row`` column (not an axis: never match on it)."""
    return df.drop(columns=["row"], errors="ignore")


def _axis_list(rs: ResultStore, df) -> str:
    names: dict[str, None] = {}
    for g in dict.fromkeys(df["group"]):
        names.update(dict.fromkeys(axes_of(rs, g)))
    return ", ".join(names) or "none"


def _check_axis(rs: ResultStore, df, axis: str, option: str) -> None:
    known = {a for g in dict.fromkeys(df["group"]) for a in axes_of(rs, g)}
    if axis not in known:
        raise PlotError(f"{option}: axis {axis!r} not in the store (axes: {_axis_list(rs, df)})")


def _varied(sub, names: Iterable[str]) -> list[str]:
    """The axes among ``names`` that take more than one value in ``sub``."""
    return [a for a in names if a in sub.columns and sub[a].nunique(dropna=True) > 1]


def case_label(row, names: Iterable[str]) -> str:
    """``h=0.01, order=2`` for the given axes of one case."""
    return ", ".join(f"{a}={_num(row[a])}" for a in names)


def _num(x) -> str:
    if isinstance(x, float | np.floating):
        return f"{float(x):.4g}"
    return str(x)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_")


def _positive(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float).copy()
    y[~(y > 0)] = np.nan
    return y


def _tidy_log_axes(ax) -> None:
    """No minor tick labels on log axes (they overlap at narrow ranges)."""
    from matplotlib.ticker import NullFormatter

    if ax.get_xscale() == "log":
        ax.xaxis.set_minor_formatter(NullFormatter())
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log" and lo > 0 and hi / lo > 100:  # else minor labels are needed
        ax.yaxis.set_minor_formatter(NullFormatter())


def _value_ticks(ax, values) -> None:
    """Ticks at the grid values of the x axis (few values on a log axis show no labels)."""
    from matplotlib.ticker import NullLocator

    vals = sorted({float(v) for v in values if np.isfinite(float(v))})
    if 1 < len(vals) <= 10:
        ax.set_xticks(vals, [_num(v) for v in vals], fontsize=7)
        ax.xaxis.set_minor_locator(NullLocator())


def _legend(ax, n_lines: int) -> None:
    _tidy_log_axes(ax)
    if 0 < n_lines <= MAX_LEGEND:
        ax.legend(fontsize=7, loc="best")
    elif n_lines:
        ax.set_title(ax.get_title() + f" ({n_lines} cases)", fontsize=9)


def _study(rs: ResultStore) -> str:
    return str(rs.root_attrs().get("study_name", rs.path.stem))


# ---------------------------------------------------------------------------- series
def series_figures(rs: ResultStore, df, names: list[str] | None = None) -> list[Figure]:
    """Sampled series vs time, one line per case of ``df``; one figure per block and
    quantity (the three constraint levels share one figure, one panel each)."""
    plt = _plt()
    figs: list[Figure] = []
    for g in dict.fromkeys(df["group"]):
        attrs = rs.block_attrs(g)
        have = [s for s in attrs.get("series", []) if s in rs.array_names(g)]
        if names:
            for s in names:
                if s not in SERIES_LABELS:
                    raise PlotError(
                        f"--series: unknown series {s!r} (series: {', '.join(SERIES_LABELS)})"
                    )
            have = [s for s in have if s in names]
        if not have:
            continue
        sub = df[df["group"] == g]
        vary = _varied(sub, axes_of(rs, g))
        t = rs.read(g, "t")
        groups_of_panels = []
        levels = [s for s in LEVELS if s in have]
        if levels:
            groups_of_panels.append(("constraints", levels))
        groups_of_panels += [(s, [s]) for s in have if s not in LEVELS]
        for stem, panel_names in groups_of_panels:
            fig, axs = plt.subplots(
                len(panel_names),
                1,
                sharex=True,
                squeeze=False,
                figsize=(7, 2.4 + 1.8 * len(panel_names)),
            )
            for ax, s in zip(axs[:, 0], panel_names, strict=True):
                data = rs.read(g, s)
                label, unit = SERIES_LABELS[s]
                n_lines = 0
                for _, row in sub.iterrows():
                    y = data[int(row["row"])]
                    lab = case_label(row, vary) or g
                    if row["status"] != "ok":
                        lab += f" [{row['status']}]"
                    if s in VECTOR_SERIES:
                        for k in range(min(y.shape[1], 3)):
                            ax.plot(t, y[:, k], lw=0.9, label=f"{lab} {s}[{k}]")
                            n_lines += 1
                        continue
                    if s == "energy":
                        ax.plot(t, y, lw=0.9, label=lab)
                    else:
                        ax.semilogy(t, _positive(np.abs(y)), lw=0.9, label=lab)
                    n_lines += 1
                ax.set_ylabel(f"{label} ({unit})", fontsize=8)
                ax.grid(True, which="both", alpha=0.3)
                _legend(ax, n_lines)
            axs[-1, 0].set_xlabel("time t (s)")
            title = f"{_study(rs)} / {g}: {attrs.get('formulation')} + {attrs.get('integrator')}"
            axs[0, 0].set_title(title + axs[0, 0].get_title(), fontsize=9)
            fig.tight_layout()
            figs.append(Figure(_slug(f"{_study(rs)}_series_{g}_{stem}"), fig, title))
    if not figs:
        raise PlotError(
            "--kind series: the chosen blocks keep no sampled series ([output] series of the study)"
        )
    return figs


def series_overlay(
    rs: ResultStore, picks: list[tuple[str, int, str]], names: list[str], name: str, title: str
) -> Figure:
    """Series of chosen cases of several blocks in one figure, one panel per series name.

    ``picks`` are (block, case row, label); energy is drawn as E(t) (seed 001 figs. 9-10),
    every other series as its norm on a log axis.
    """
    plt = _plt()
    fig, axs = plt.subplots(
        len(names), 1, sharex=True, squeeze=False, figsize=(7, 2.4 + 1.8 * len(names))
    )
    for ax, s in zip(axs[:, 0], names, strict=True):
        for g, row, lab in picks:
            if s not in rs.array_names(g):
                raise PlotError(f"--series: block {g!r} keeps no series {s!r}")
            t = rs.read(g, "t")
            y = rs.read(g, s)[row]
            if y.ndim == 2:  # a vector series (q, v, lam): every component, linear axis
                for k in range(y.shape[1]):
                    ax.plot(t, y[:, k], lw=0.8, label=lab if k == 0 else None)
            elif s == "energy":
                ax.plot(t, y, lw=0.9, label=lab)
            else:
                ax.semilogy(t, _positive(np.abs(y)), lw=0.9, label=lab)
        label, unit = SERIES_LABELS[s]
        ax.set_ylabel(f"{label} ({unit})", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        _legend(ax, len(picks))
    axs[-1, 0].set_xlabel("time t (s)")
    axs[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    return Figure(_slug(name), fig, title)


# ---------------------------------------------------------------------------- lines
def _failed_marks(ax, xs) -> None:
    """Failed cases: red crosses on the lower edge of the axes at their x values."""
    if len(xs):
        ax.plot(
            xs,
            np.full(len(xs), 0.02),
            "x",
            color="red",
            ms=7,
            mew=1.5,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
        )


def fitted_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y on log x over finite positive points (nan if < 2)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2 or np.unique(x[ok]).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def line_figures(
    rs: ResultStore, df, metrics: list[str], axis: str, kind: str, slope: bool
) -> list[Figure]:
    """A metric vs a grid axis, log-log, one line per block and combination of the other
    varied axes; with ``slope`` the fitted slope is in the legend; failed cases marked."""
    plt = _plt()
    _check_axis(rs, df, axis, "--axis")
    figs = []
    for mname in metrics:
        check_metric(mname)
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        n_lines = 0
        failed_x: list[float] = []
        for g in dict.fromkeys(df["group"]):
            if axis not in axes_of(rs, g):
                continue
            sub = df[df["group"] == g]
            others = [a for a in _varied(sub, axes_of(rs, g)) if a != axis]
            keyed = sub.groupby(others, dropna=False) if others else [((), sub)]
            for key, part in keyed:
                part = part.sort_values(axis)
                ok = part[part["status"] == "ok"]
                failed_x += part.loc[part["status"] != "ok", axis].astype(float).tolist()
                if ok.empty:
                    continue
                key = key if isinstance(key, tuple) else (key,)
                lab = g + (
                    " ("
                    + ", ".join(f"{a}={_num(v)}" for a, v in zip(others, key, strict=True))
                    + ")"
                    if others
                    else ""
                )
                x = ok[axis].astype(float).to_numpy()
                y = _positive(ok[mname].to_numpy())
                if slope:
                    p = fitted_slope(x, y)
                    lab += f": slope {p:.2f}" if np.isfinite(p) else ""
                ax.loglog(x, y, "o-", ms=4, lw=1, label=lab)
                n_lines += 1
        if n_lines == 0:
            plt.close(fig)
            raise PlotError(f"--metric: no ok case of {mname!r} along {axis!r} to plot")
        _failed_marks(ax, failed_x)
        if failed_x:
            ax.plot([], [], "x", color="red", label=f"failed ({len(failed_x)})")
            n_lines += 1
        _value_ticks(ax, df.loc[df[axis].notna(), axis].astype(float))
        ax.set_xlabel(f"{axis}" + (" (s)" if axis == "h" else ""))
        ax.set_ylabel(metric_label(mname), fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        title = f"{_study(rs)}: {mname} vs {axis}"
        ax.set_title(title, fontsize=9)
        _legend(ax, n_lines)
        fig.tight_layout()
        figs.append(Figure(_slug(f"{_study(rs)}_{kind}_{mname}_vs_{axis}"), fig, title))
    return figs


def convergence_figures(rs: ResultStore, df, metrics: list[str], axis: str = "h") -> list[Figure]:
    """Metric vs step size on log-log axes, fitted slope (observed order) in the legend."""
    return line_figures(rs, df, metrics, axis, "convergence", slope=True)


# ---------------------------------------------------------------------------- heatmap
MAX_PANELS = 64  # small multiples of one heatmap figure; more: name a selection (--sel)
LABEL_CELLS = 120  # per-cell value labels only on panels with at most this many cells


def is_numeric(values) -> bool:
    """True if every value is a real number (not bool, not a string)."""
    arr = np.asarray(values)
    return arr.dtype.kind in "fiu" and arr.size > 0


def is_log_spaced(values) -> bool:
    """True for positive values spanning at least a decade whose logarithms are closer to
    evenly spaced than the values themselves (a geometric or halving sequence)."""
    v = np.unique(np.asarray(values, dtype=float))
    if v.size < 3 or not (v > 0).all() or v[-1] / v[0] < 10:
        return bool(v.size == 2 and (v > 0).all() and v[-1] / v[0] >= 10)
    lin = np.std(np.diff(v)) / np.mean(np.diff(v))
    lg = np.std(np.diff(np.log(v))) / np.mean(np.diff(np.log(v)))
    return bool(lg < lin)


def cell_edges(values: np.ndarray, log: bool) -> np.ndarray:
    """Edges of the cells centred on sorted ``values`` (midpoints, geometric when log)."""
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return np.array([v[0] / 1.5, v[0] * 1.5]) if log and v[0] > 0 else v[0] + np.array(
            [-0.5, 0.5]) * (abs(v[0]) or 1.0)
    w = np.log(v) if log else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[w[0] - (mid[0] - w[0])], mid, [w[-1] + (w[-1] - mid[-1])]])
    return np.exp(e) if log else e


def _grid_axis(values):
    """(sorted unique values, positions used for drawing, edges, scale) of one axis: real
    values on numeric axes (log when log-spaced), indices 0..k-1 on categorical ones."""
    uniq = np.array(sorted(set(values.tolist())))
    if is_numeric(uniq):
        log = is_log_spaced(uniq)
        return uniq, uniq.astype(float), cell_edges(uniq.astype(float), log), (
            "log" if log else "linear")
    idx = np.arange(uniq.size, dtype=float)
    return uniq, idx, cell_edges(idx, False), "category"


def heatmap_figures(rs: ResultStore, df, metric: str, x: str, y: str) -> list[Figure]:
    """``metric`` over the grid axes x and y as a colour map (log colour scale), one
    figure per block; the block's other varied axes become a grid of small multiples in
    that one figure (at most MAX_PANELS; ``--sel`` narrows a larger sweep). Numeric axes
    keep their values (log-scaled when log-spaced); failed cells are hatched and, on
    panels small enough to read, named by their status and labelled with their value."""
    from matplotlib.colors import ListedColormap, LogNorm

    plt = _plt()
    check_metric(metric)
    _check_axis(rs, df, x, "--x")
    _check_axis(rs, df, y, "--y")
    if x == y:
        raise PlotError(f"--y: must differ from --x (both {x!r})")
    figs = []
    for g in dict.fromkeys(df["group"]):
        if x not in axes_of(rs, g) or y not in axes_of(rs, g):
            continue
        sub = df[df["group"] == g]
        others = [a for a in _varied(sub, axes_of(rs, g)) if a not in (x, y)]
        panels = [((), sub)] if not others else [
            (k if isinstance(k, tuple) else (k,), part)
            for k, part in sub.groupby(others, dropna=False, sort=True)
        ]  # fmt: skip
        if len(panels) > MAX_PANELS:
            raise PlotError(
                f"--sel: block {g!r} has {len(panels)} combinations of "
                f"{', '.join(others)} besides {x} and {y} (at most {MAX_PANELS} panels in "
                f"one figure); fix some with --sel AXIS=VALUE"
            )
        xs, xpos, xedge, xscale = _grid_axis(sub[x].to_numpy())
        ys, ypos, yedge, yscale = _grid_axis(sub[y].to_numpy())
        vals_all = sub.loc[sub["status"] == "ok", metric].to_numpy(dtype=float)
        pos = vals_all[np.isfinite(vals_all) & (vals_all > 0)]
        norm = LogNorm(pos.min(), pos.max()) if pos.size and pos.max() > pos.min() else None
        ncol = int(np.ceil(np.sqrt(len(panels)))) if len(panels) > 3 else len(panels)
        nrow = int(np.ceil(len(panels) / ncol))
        shrink = 1.0 if len(panels) <= 4 else 0.6  # many panels: smaller ones
        pw = shrink * min(5.5, max(3.2, 0.9 + 0.45 * len(xs)))
        ph = shrink * min(4.0, max(2.4, 0.9 + 0.35 * len(ys)))
        fig, axs = plt.subplots(nrow, ncol, figsize=(pw * ncol + 1.2, ph * nrow + 0.6),
                                squeeze=False, sharex=True, sharey=True)  # fmt: skip
        fail_cmap = ListedColormap(["#f2b8b8"])
        im = None
        for ax, (key, part) in zip(axs.flat, panels, strict=False):
            vals = np.full((len(ys), len(xs)), np.nan)
            stat = np.full((len(ys), len(xs)), "", dtype=object)
            i = np.searchsorted(ys, part[y].to_numpy())
            j = np.searchsorted(xs, part[x].to_numpy())
            ok = (part["status"] == "ok").to_numpy()
            v = part[metric].to_numpy(dtype=float)
            vals[i, j] = np.where(ok & (v > 0), v, np.nan)
            stat[i, j] = part["status"].to_numpy()
            im = ax.pcolormesh(xedge, yedge, vals, cmap="viridis", norm=norm, shading="flat")
            failed = (stat != "ok") & (stat != "")
            if failed.any():
                ax.pcolormesh(xedge, yedge, np.ma.masked_where(~failed, np.ones_like(vals)),
                              cmap=fail_cmap, shading="flat")  # fmt: skip
            small = len(xs) * len(ys) <= LABEL_CELLS  # else failed cells are pink only
            for fi, fj in zip(*np.nonzero(failed & small), strict=True):
                ax.add_patch(plt.Rectangle((xedge[fj], yedge[fi]), xedge[fj + 1] - xedge[fj],
                                           yedge[fi + 1] - yedge[fi], fill=False, hatch="xx",
                                           edgecolor="red", lw=0))  # fmt: skip
                if small:
                    ax.text(xpos[fj], ypos[fi], stat[fi, fj], ha="center", va="center",
                            fontsize=6, color="darkred", weight="bold")  # fmt: skip
            if small:
                for ci, cj in zip(*np.nonzero(np.isfinite(vals)), strict=True):
                    ax.text(xpos[cj], ypos[ci], f"{vals[ci, cj]:.2g}", ha="center",
                            va="center", fontsize=6, color="white")  # fmt: skip
            for axis, scale, values, setter in (
                (ax.xaxis, xscale, xs, ax.set_xscale), (ax.yaxis, yscale, ys, ax.set_yscale)
            ):  # fmt: skip
                if scale == "log":
                    setter("log")
                elif scale == "category":
                    step = max(1, len(values) // 12)
                    axis.set_ticks(np.arange(0, len(values), step),
                                   [str(u) for u in values[::step]])  # fmt: skip
            if key:
                ax.set_title(", ".join(f"{a}={_num(k)}" for a, k in zip(others, key,
                             strict=True)), fontsize=7)  # fmt: skip
            ax.tick_params(labelsize=7)
            if len(panels) > 4:  # tick artists dominate the drawing time of many panels
                from matplotlib.ticker import MaxNLocator, NullLocator

                ax.xaxis.set_minor_locator(NullLocator())
                ax.yaxis.set_minor_locator(NullLocator())
                if xscale == "linear":
                    ax.xaxis.set_major_locator(MaxNLocator(4))
                if yscale == "linear":
                    ax.yaxis.set_major_locator(MaxNLocator(4))
        for ax in list(axs.flat)[len(panels):]:
            ax.set_visible(False)
        for ax in axs[-1, :]:
            ax.set_xlabel(x + (" (s)" if x == "h" else ""), fontsize=8)
        for ax in axs[:, 0]:
            ax.set_ylabel(y + (" (s)" if y == "h" else ""), fontsize=8)
        cb = fig.colorbar(im, ax=axs.ravel().tolist(), shrink=0.9)
        cb.set_label(metric_label(metric), fontsize=7)
        what = f" (one panel per {', '.join(others)})" if others else ""
        title = f"{_study(rs)} / {g}: {metric} over {x} and {y}{what}; failed cases pink"
        fig.suptitle(title, fontsize=9)
        figs.append(Figure(_slug(f"{_study(rs)}_heatmap_{g}_{metric}_{y}_x_{x}"), fig, title))
    if not figs:
        raise PlotError(f"--x/--y: no block has both axes {x!r} and {y!r}")
    return figs


# ---------------------------------------------------------------------------- ratio
def ratio_figures(
    rs: ResultStore, df, baseline: str, metrics: list[str], axis: str
) -> list[Figure]:
    """metric / baseline metric at matched coordinates (aggregate.baseline_ratios) along
    ``axis``, one line per block and combination of the other matched axes."""
    plt = _plt()
    _check_axis(rs, df, axis, "--axis")
    for m in metrics:
        check_metric(m)
    pairs, _ = baseline_ratios(without_row(df), baseline, metrics)
    if pairs.empty or axis not in pairs.columns:
        raise PlotError(f"--axis: {axis!r} is not an axis shared with the baseline {baseline!r}")
    figs = []
    for mname in metrics:
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        n_lines = 0
        failed_x: list[float] = []
        col = f"{mname}_ratio"
        for g in dict.fromkeys(pairs["group"]):
            sub = pairs[(pairs["group"] == g) & pairs[axis].notna()]
            if sub.empty:
                continue
            others = [
                a
                for a in _varied(
                    sub,
                    [
                        c
                        for c in sub.columns
                        if c not in ("group", axis) and not c.endswith("_ratio")
                    ],
                )
            ]
            keyed = sub.groupby(others, dropna=False) if others else [((), sub)]
            for key, part in keyed:
                key = key if isinstance(key, tuple) else (key,)
                part = part.sort_values(axis)
                good = part[np.isfinite(part[col]) & (part[col] > 0)]
                failed_x += part.loc[~np.isfinite(part[col]), axis].astype(float).tolist()
                if good.empty:
                    continue
                lab = f"{g} / {baseline}" + (
                    " ("
                    + ", ".join(f"{a}={_num(v)}" for a, v in zip(others, key, strict=True))
                    + ")"
                    if others
                    else ""
                )
                ax.plot(good[axis].astype(float), good[col], "o-", ms=4, lw=1, label=lab)
                n_lines += 1
        if n_lines == 0:
            plt.close(fig)
            raise PlotError(f"--metric: no matched ok pair of {mname!r} along {axis!r}")
        _failed_marks(ax, failed_x)
        if failed_x:
            ax.plot([], [], "x", color="red", label=f"failed pair ({len(failed_x)})")
            n_lines += 1
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_yscale("log")
        xv = pairs[axis].dropna().astype(float)
        if (xv > 0).all() and xv.max() / xv.min() >= 10:
            ax.set_xscale("log")
        _value_ticks(ax, xv)
        ax.set_xlabel(axis + (" (s)" if axis == "h" else ""))
        ax.set_ylabel(f"{mname} / {mname} of {baseline} (1)", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        title = f"{_study(rs)}: {mname} relative to {baseline} along {axis}"
        ax.set_title(title, fontsize=9)
        _legend(ax, n_lines)
        fig.tight_layout()
        figs.append(
            Figure(_slug(f"{_study(rs)}_ratio_{mname}_to_{baseline}_vs_{axis}"), fig, title)
        )
    return figs


# ---------------------------------------------------------------------------- work-precision
def work_precision_figures(
    rs: ResultStore, df, metrics: list[str], cost: str = "wall_s"
) -> list[Figure]:
    """Error vs cost (kernel wall time by default), one line per block (formulation +
    integrator), log-log; every ok case is one point."""
    plt = _plt()
    if cost not in COST_METRICS:
        raise PlotError(f"--cost: expected one of {', '.join(COST_METRICS)}, got {cost!r}")
    figs = []
    for mname in metrics:
        check_metric(mname)
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        n_lines = 0
        for g in dict.fromkeys(df["group"]):
            attrs = rs.block_attrs(g)
            ok = df[(df["group"] == g) & (df["status"] == "ok")]
            ok = ok[np.isfinite(ok[mname].astype(float)) & (ok[mname] > 0) & (ok[cost] > 0)]
            if ok.empty:
                continue
            ok = ok.sort_values(mname, ascending=False)  # from coarse to accurate
            ax.loglog(
                ok[cost].astype(float),
                ok[mname].astype(float),
                "o-",
                ms=4,
                lw=1,
                label=f"{g}: {attrs.get('formulation')} + {attrs.get('integrator')}",
            )
            n_lines += 1
        if n_lines == 0:
            plt.close(fig)
            raise PlotError(f"--metric: no ok case with a positive {mname!r} to plot")
        ax.set_xlabel(metric_label(cost), fontsize=8)
        ax.set_ylabel(metric_label(mname), fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        title = f"{_study(rs)}: work-precision, {mname} vs {cost}"
        ax.set_title(title, fontsize=9)
        _legend(ax, n_lines)
        fig.tight_layout()
        figs.append(Figure(_slug(f"{_study(rs)}_work-precision_{mname}_vs_{cost}"), fig, title))
    return figs


# ---------------------------------------------------------------------------- entry
def build_figures(
    store: str | Path,
    kind: str,
    groups: list[str] | None = None,
    metrics: list[str] | None = None,
    axis: str | None = None,
    x: str | None = None,
    y: str | None = None,
    baseline: str | None = None,
    select: dict[str, Any] | None = None,
    cost: str = "wall_s",
    series: list[str] | None = None,
) -> list[Figure]:
    """Validate the request and build the figures of one kind (nothing is written)."""
    if kind not in KINDS:
        raise PlotError(f"--kind: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    rs = open_store(store)
    if baseline and groups and baseline not in groups:
        groups = [*groups, baseline]
    df = cases(rs, groups, select)
    if kind == "series":
        return series_figures(rs, df, series)
    if kind == "convergence":
        return convergence_figures(rs, df, list(metrics or ["e_r", "rms_phi"]), axis or "h")
    if kind == "heatmap":
        if not x or not y:
            raise PlotError("--x/--y: a heatmap needs two grid axes (--x AXIS --y AXIS)")
        return [f for m in (metrics or ["rms_phi"]) for f in heatmap_figures(rs, df, m, x, y)]
    if kind == "ratio":
        if not baseline:
            raise PlotError("--baseline: a ratio plot needs the block to divide by")
        if baseline not in set(df["group"]):
            raise PlotError(f"--baseline: no block {baseline!r} (blocks: {', '.join(rs.blocks())})")
        return ratio_figures(rs, df, baseline, list(metrics or ["rms_phi", "e_r"]), axis or "h")
    return work_precision_figures(rs, df, list(metrics or ["e_r"]), cost)


def save_figures(
    figs: list[Figure], out: str | Path, formats: tuple[str, ...] = ("png", "svg"), dpi: int = 100
) -> list[Path]:
    """Write each figure as out/NAME.FORMAT (one file per figure and format); close them."""
    plt = _plt()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in figs:
        for fmt in formats:
            path = out / f"{f.name}.{fmt}"
            f.fig.savefig(path, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
            written.append(path)
        plt.close(f.fig)
    return written


def make_plots(store: str | Path, kind: str, out: str | Path = "figures", **options) -> list[Path]:
    """``mbstudy plot``: build the figures of ``kind`` from ``store``, then write PNG + SVG."""
    figs = build_figures(store, kind, **options)
    return save_figures(figs, out)
