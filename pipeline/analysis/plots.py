"""Figures from a store (matplotlib, Agg backend): one function per kind, one file per figure.

Kinds (metrics and their units are those of docs/explanation/methods.md#metrics and
``solvers.metrics.METRIC_MEANINGS``):

- ``series``: sampled series vs time, one line per case (energy E(t) as in seed 001
  figs. 9-10; energy balance |E - E0 - W|; constraint violation at the position, velocity
  and acceleration level, docs/explanation/methods.md#metrics, on log axes); the vector series q, v
  and lam as small multiples, one panel per coordinate or constraint row, titled by the
  store's labels;
- ``convergence``: a metric vs an axis (default h) on log-log axes, with the least-squares
  slope of log(metric) on log(h) in the legend (the observed order p of e ~ C h^p);
- ``heatmap``: a metric over two grid axes, failed cases hatched and named by status;
- ``ratio``: metric / baseline metric at matched coordinates (``aggregate.baseline_ratios``,
  the seed-004 comparison of docs/explanation/reproduction.md, seed 004) along one axis;
- ``work-precision``: a metric vs wall time (or another cost counter) per block.

Every function validates its request and builds its figures before anything is written
(``save_figures`` writes), so bad input leaves no file behind. The kinds that compare
cases over the grid are in :mod:`.plot_compare`, what all kinds share in :mod:`.plot_base`;
this module re-exports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from mbstudy.pipeline.analysis.plot_base import (
    COST_METRICS,
    KINDS,
    LEVELS,
    MAX_LEGEND,
    SERIES_LABELS,
    Figure,
    PlotError,
    _check_axis,
    _failed_marks,
    _legend,
    _positive,
    _setting_suffix,
    _slug,
    _study,
    _value_ticks,
    _varied,
    axes_of,
    case_label,
    cases,
    check_metric,
    metric_label,
    open_store,
    subplots,
    without_row,
)
from mbstudy.pipeline.analysis.plot_compare import (
    heatmap_figures,
    ratio_figures,
    work_precision_figures,
)
from mbstudy.pipeline.analysis.search_report import search_figures
from mbstudy.pipeline.store.search_reader import is_search_store
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.api import VECTOR_SERIES

__all__ = [
    "COST_METRICS",
    "KINDS",
    "LEVELS",
    "MAX_LEGEND",
    "SERIES_LABELS",
    "Figure",
    "PlotError",
    "_varied",
    "axes_of",
    "build_figures",
    "case_label",
    "cases",
    "check_metric",
    "convergence_figures",
    "fitted_slope",
    "heatmap_figures",
    "line_figures",
    "make_plots",
    "metric_label",
    "open_store",
    "ratio_figures",
    "save_figures",
    "series_figures",
    "series_overlay",
    "without_row",
    "work_precision_figures",
]


# ---------------------------------------------------------------------------- series
def series_figures(rs: ResultStore, df, names: list[str] | None = None) -> list[Figure]:
    """Sampled series vs time, one line per case of ``df``; one figure per block and
    quantity (the three constraint levels share one figure, one panel each; a vector
    series has one panel per component, :func:`vector_series_figure`)."""
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
        title = f"{_study(rs)} / {g}: {attrs.get('formulation')} + {attrs.get('integrator')}"
        for s in have:
            if s in VECTOR_SERIES:  # every coordinate (constraint row), one panel each
                fig = vector_series_figure(rs, g, s, sub, vary, t, title)
                figs.append(Figure(_slug(f"{_study(rs)}_series_{g}_{s}"), fig, title))
        groups_of_panels += [(s, [s]) for s in have if s not in LEVELS + VECTOR_SERIES]
        for stem, panel_names in groups_of_panels:
            fig, axs = subplots(
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
                    if s == "energy":
                        ax.plot(t, y, lw=0.9, label=lab)
                    else:
                        ax.semilogy(t, _positive(np.abs(y)), lw=0.9, label=lab)
                    n_lines += 1
                ax.set_ylabel(f"{label} ({unit})", fontsize=8)
                ax.grid(True, which="both", alpha=0.3)
                _legend(ax, n_lines)
            axs[-1, 0].set_xlabel("time t (s)")
            axs[0, 0].set_title(title + axs[0, 0].get_title(), fontsize=9)
            fig.tight_layout()
            figs.append(Figure(_slug(f"{_study(rs)}_series_{g}_{stem}"), fig, title))
    if not figs:
        raise PlotError(
            "--kind series: the chosen blocks keep no sampled series ([output] series of the study)"
        )
    return figs


def component_labels(rs: ResultStore, g: str, s: str, width: int) -> list[str]:
    """Names of the ``width`` components of vector series ``s`` of block ``g``: the store's
    ``coord`` labels for q and v (``crank.x``, ``top.e0``), its ``constraint`` labels for
    lam, ``s[k]`` where the store has none (pipeline/store/cf.py writes them)."""
    dim = "constraint" if s == "lam" else "coord"
    if dim in rs.array_names(g):
        labels = [str(x) for x in rs.read(g, dim)]
        if len(labels) == width:
            return labels
    return [f"{s}[{k}]" for k in range(width)]


def vector_series_figure(rs: ResultStore, g: str, s: str, sub, vary: list[str], t, title: str):
    """Small multiples of vector series ``s`` (q, v or lam) of block ``g``: one panel per
    component, titled by its name, in a grid of up to four columns, one line per case of
    ``sub``; the case legend sits beside the first row."""
    data = rs.read(g, s)
    width = int(data.shape[-1])
    names = component_labels(rs, g, s, width)
    ncols = min(width, 4)
    nrows = -(-width // ncols)
    fig, axs = subplots(nrows, ncols, sharex=True, squeeze=False,
                            figsize=(2.6 * ncols + 1.5, 1.7 * nrows + 0.9))  # fmt: skip
    flat = list(axs.ravel())
    for ax in flat[width:]:  # the grid's empty cells: no axes without a coordinate
        fig.delaxes(ax)
    label, unit = SERIES_LABELS[s]
    for k, ax in enumerate(flat[:width]):
        for _, row in sub.iterrows():
            lab = case_label(row, vary) or g
            if row["status"] != "ok":
                lab += f" [{row['status']}]"
            ax.plot(t, data[int(row["row"])][:, k], lw=0.9, label=lab)
        ax.set_title(names[k], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        if k + ncols >= width:  # the lowest panel of its column
            ax.set_xlabel("time t (s)", fontsize=8)
            ax.xaxis.set_tick_params(labelbottom=True)
    n_cases = len(sub)
    if 0 < n_cases <= MAX_LEGEND:
        flat[ncols - 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                               borderaxespad=0.0)  # fmt: skip
    note = f" ({n_cases} cases)" if n_cases > MAX_LEGEND else ""
    fig.suptitle(f"{title}: {label} ({unit}){note}", fontsize=9)
    fig.tight_layout()
    return fig


def series_overlay(
    rs: ResultStore, picks: list[tuple[str, int, str]], names: list[str], name: str, title: str
) -> Figure:
    """Series of chosen cases of several blocks in one figure, one panel per series name.

    ``picks`` are (block, case row, label); energy is drawn as E(t) (seed 001 figs. 9-10),
    every other series as its norm on a log axis.
    """
    fig, axs = subplots(
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
    _check_axis(rs, df, axis, "--axis")
    figs = []
    for mname in metrics:
        check_metric(mname)
        fig, ax = subplots(figsize=(6.5, 4.5))
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
                lab = g + _setting_suffix(others, key)
                x = ok[axis].astype(float).to_numpy()
                y = _positive(ok[mname].to_numpy())
                if slope:
                    p = fitted_slope(x, y)
                    lab += f": slope {p:.2f}" if np.isfinite(p) else ""
                ax.loglog(x, y, "o-", ms=4, lw=1, label=lab)
                n_lines += 1
        if n_lines == 0:
            raise PlotError(f"--metric: no ok case of {mname!r} along {axis!r} to plot")
        n_lines += _failed_marks(ax, failed_x, "failed")
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


# ---------------------------------------------------------------------------- entry
def build_figures(
    store: str | Path,
    kind: str | None,
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
    """Validate the request and build the figures of one kind (nothing is written).
    ``kind`` None is ``series``. A search store gets one figure per search block
    (:func:`.search_report.search_figures`); of the options only ``groups`` applies."""
    if is_search_store(store):
        given = {"--kind": kind, "--metric": metrics, "--axis": axis, "--x": x, "--y": y,
                 "--baseline": baseline, "--sel": select, "--series": series,
                 "--cost": None if cost == "wall_s" else cost}  # fmt: skip
        bad = [k for k, v in given.items() if v]
        if bad:
            raise PlotError(f"{', '.join(bad)}: not for a search store ({store}): mbstudy plot"
                            " draws each search block's cases and answer; use --group and"
                            " --out only")  # fmt: skip
        return search_figures(store, groups)
    kind = kind or "series"
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
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in figs:
        for fmt in formats:
            path = out / f"{f.name}.{fmt}"
            f.fig.savefig(path, **save_options(f, fmt, dpi))
            written.append(path)
    return written


def save_options(fig: Figure, fmt: str, dpi: int) -> dict[str, Any]:
    """Keyword arguments of ``savefig`` for one figure and format: no date in SVG (the
    same figure gives the same bytes), the bounding box fitted so legends beside the
    axes stay in."""
    return {"dpi": dpi, "metadata": {"Date": None} if fmt == "svg" else None,
            "bbox_inches": "tight" if fig.tight else None}  # fmt: skip


def make_plots(store: str | Path, kind: str | None, out: str | Path = "figures",
               **options) -> list[Path]:  # fmt: skip
    """``mbstudy plot``: build the figures of ``kind`` from ``store``, then write PNG + SVG."""
    figs = build_figures(store, kind, **options)
    return save_figures(figs, out)
