"""Figures that compare cases over the grid: ``heatmap`` (a metric over two grid axes as
a colour map, the other axes as small multiples, failed cases hatched), ``ratio``
(metric / baseline metric at matched coordinates along one axis) and ``work-precision``
(a metric vs a cost per block)."""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.analysis.aggregate import baseline_ratios
from mbstudy.pipeline.analysis.compare import pair_failed
from mbstudy.pipeline.analysis.plot_base import (
    COST_METRICS,
    Figure,
    PlotError,
    _check_axis,
    _failed_marks,
    _legend,
    _setting_suffix,
    _slug,
    _study,
    _value_ticks,
    _varied,
    axes_of,
    check_metric,
    format_value,
    metric_label,
    subplots,
    without_row,
)
from mbstudy.pipeline.store.zarr_store import ResultStore

# ---------------------------------------------------------------------------- heatmap
MAX_PANELS = 64  # small multiples of one heatmap figure; more: name a selection (--sel)
LABEL_CELLS = 120  # per-cell value labels only on panels with at most this many cells
VALUE_TICKS = 8  # numeric axes with at most this many values get a tick at each value


def is_numeric(values) -> bool:
    """True if every value is a real number (not bool, not a string)."""
    arr = np.asarray(values)
    return arr.dtype.kind in "fiu" and arr.size > 0


def is_log_spaced(values) -> bool:
    """True for positive values spanning a factor 4 or more whose logarithms are closer to
    evenly spaced than the values themselves (a geometric or halving sequence); two
    values when they span a decade."""
    v = np.unique(np.asarray(values, dtype=float))
    if v.size < 3 or not (v > 0).all() or v[-1] / v[0] < 4:
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


def _panel_grid(n: int, nx: int, ny: int, titled: bool):
    """A figure of ``n`` panels sharing both axes, laid out in inches (margins for the
    axis labels, the panel titles, the suptitle and a colour bar on the right), so it
    needs no bounding-box pass when saved. Returns (figure, axes array, colour-bar axes)."""
    ncol = int(np.ceil(np.sqrt(n))) if n > 3 else n
    nrow = int(np.ceil(n / ncol))
    pw = min(5.5, max(3.2, 0.9 + 0.45 * nx))  # panel width, height (in)
    ph = min(4.0, max(2.4, 0.9 + 0.35 * ny))
    if n > 4:  # many panels: smaller ones
        pw, ph = min(pw, 2.6), min(ph, 1.7)
    left, right, bottom, top = 0.8, 1.3, 0.55, 0.5  # margins (in); top: the suptitle
    wgap, hgap = 0.3, (0.55 if titled else 0.3)  # between panels; room for x tick labels
    head = 0.25 if titled else 0.0  # the first row's panel titles
    width = left + ncol * pw + (ncol - 1) * wgap + right
    height = top + head + nrow * ph + (nrow - 1) * hgap + bottom
    fig, axs = subplots(nrow, ncol, figsize=(width, height), squeeze=False,
                            sharex=True, sharey=True)  # fmt: skip
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - (top + head) / height, wspace=wgap / pw,
                        hspace=hgap / ph)  # fmt: skip
    cax = fig.add_axes([1 - (right - 0.25) / width, bottom / height, 0.18 / width,
                        1 - (top + head + bottom) / height], label="<colorbar>")  # fmt: skip
    return fig, axs, cax


def _shared_axes(ax, xedge, yedge, xaxis, yaxis, many: bool) -> None:
    """Scale, limits and ticks of a panel grid, set once on one panel: the panels share
    their axes and so their scales, limits and tickers. The limits are the cell edges and
    autoscaling is off (it walks every shared sibling at each draw: quadratic in panels);
    a tick at each value on axes of few values, fewer ticks and no minor ones when the
    panels are many (tick artists dominate their drawing time)."""
    from matplotlib.ticker import MaxNLocator, NullLocator

    for axis, (scale, values), setter in ((ax.xaxis, xaxis, ax.set_xscale),
                                          (ax.yaxis, yaxis, ax.set_yscale)):  # fmt: skip
        if scale == "log":
            setter("log")
        if many:
            axis.set_minor_locator(NullLocator())
        if scale == "category":
            step = max(1, len(values) // 12)
            axis.set_ticks(np.arange(0, len(values), step), [str(u) for u in values[::step]])
        elif len(values) <= VALUE_TICKS:  # a tick at each grid value, as written
            axis.set_ticks(values.astype(float), [format_value(u) for u in values])
            axis.set_minor_locator(NullLocator())
        elif many and scale == "linear":
            axis.set_major_locator(MaxNLocator(4))
    ax.set_xlim(xedge[0], xedge[-1])
    ax.set_ylim(yedge[0], yedge[-1])
    for sibling in ax.figure.axes:
        sibling.set_autoscale_on(False)


def heatmap_figures(rs: ResultStore, df, metric: str, x: str, y: str) -> list[Figure]:
    """``metric`` over the grid axes x and y as a colour map (log colour scale), one
    figure per block; the block's other varied axes become a grid of small multiples in
    that one figure (at most MAX_PANELS; ``--sel`` narrows a larger sweep). Numeric axes
    keep their values (log-scaled when log-spaced); failed cells are hatched and, on
    panels small enough to read, named by their status and labelled with their value."""
    from matplotlib.colors import ListedColormap, LogNorm
    from matplotlib.patches import Rectangle

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
        fig, axs, cax = _panel_grid(len(panels), len(xs), len(ys), titled=bool(others))
        fail_cmap = ListedColormap(["#f2b8b8"])
        small = len(xs) * len(ys) <= LABEL_CELLS  # else no per-cell labels, raster mesh
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
            # a large mesh is one image in an SVG, not a path per cell
            im = ax.pcolormesh(xedge, yedge, vals, cmap="viridis", norm=norm, shading="flat",
                               rasterized=not small)  # fmt: skip
            failed = (stat != "ok") & (stat != "")
            if failed.any():
                ax.pcolormesh(xedge, yedge, np.ma.masked_where(~failed, np.ones_like(vals)),
                              cmap=fail_cmap, shading="flat", rasterized=not small)  # fmt: skip
            for fi, fj in zip(*np.nonzero(failed & small), strict=True):
                ax.add_patch(Rectangle((xedge[fj], yedge[fi]), xedge[fj + 1] - xedge[fj],
                                       yedge[fi + 1] - yedge[fi], fill=False, hatch="xx",
                                       edgecolor="red", lw=0))  # fmt: skip
                if small:
                    ax.text(xpos[fj], ypos[fi], stat[fi, fj], ha="center", va="center",
                            fontsize=6, color="darkred", weight="bold")  # fmt: skip
            if small:
                for ci, cj in zip(*np.nonzero(np.isfinite(vals)), strict=True):
                    ax.text(xpos[cj], ypos[ci], f"{vals[ci, cj]:.2g}", ha="center",
                            va="center", fontsize=6, color="white")  # fmt: skip
            if key:
                ax.set_title(", ".join(f"{a}={format_value(k)}" for a, k in zip(others, key,
                             strict=True)), fontsize=7)  # fmt: skip
            ax.tick_params(labelsize=7)
        ncol = axs.shape[1]
        _shared_axes(axs[0, 0], xedge, yedge, (xscale, xs), (yscale, ys), many=len(panels) > 4)
        for k, ax in enumerate(axs.flat):
            if k >= len(panels):
                ax.set_visible(False)
            elif k + ncol >= len(panels):  # no panel below: this one carries the x axis
                ax.xaxis.set_tick_params(labelbottom=True)
                ax.set_xlabel(x + (" (s)" if x == "h" else ""), fontsize=8)
        for ax in axs[:, 0]:
            ax.set_ylabel(y + (" (s)" if y == "h" else ""), fontsize=8)
        cb = fig.colorbar(im, cax=cax)
        cb.set_label(metric_label(metric), fontsize=7)
        cb.ax.tick_params(labelsize=7)
        what = f" (one panel per {', '.join(others)})" if others else ""
        title = f"{_study(rs)} / {g}: {metric} over {x} and {y}{what}; failed cases pink"
        fig.suptitle(title, fontsize=9)
        # many panels on numeric axes: the layout above holds, no second drawing pass
        tight = len(panels) <= 4 or "category" in (xscale, yscale)
        figs.append(Figure(_slug(f"{_study(rs)}_heatmap_{g}_{metric}_{y}_x_{x}"), fig, title,
                           tight=tight))  # fmt: skip
    if not figs:
        raise PlotError(f"--x/--y: no block has both axes {x!r} and {y!r}")
    return figs


# ---------------------------------------------------------------------------- ratio
def _novalue_marks(ax, xs, label: str) -> int:
    """Ok pairs whose metric is not a number (declared absent or missing): grey open
    circles on the lower edge, with a legend entry ``label (count)``; never "failed"."""
    if not len(xs):
        return 0
    ax.plot(xs, np.full(len(xs), 0.04), "o", mfc="none", color="0.45", ms=6,
            transform=ax.get_xaxis_transform(), clip_on=False, label=f"{label} ({len(xs)})")
    return 1


def ratio_figures(
    rs: ResultStore, df, baseline: str, metrics: list[str], axis: str
) -> list[Figure]:
    """metric / baseline metric at matched coordinates (aggregate.baseline_ratios) along
    ``axis``, one line per block and combination of the other matched axes."""
    _check_axis(rs, df, axis, "--axis")
    for m in metrics:
        check_metric(m)
    pairs, _ = baseline_ratios(without_row(df), baseline, metrics)
    if pairs.empty or axis not in pairs.columns:
        raise PlotError(f"--axis: {axis!r} is not an axis shared with the baseline {baseline!r}")
    # a pair failed when one of its cases is not ok; an ok pair whose metric is NaN has
    # no value, but it did not fail
    failed_rows = pair_failed(without_row(df), baseline, metrics)
    figs = []
    for mname in metrics:
        fig, ax = subplots(figsize=(6.5, 4.5))
        n_lines = 0
        failed_x: list[float] = []
        novalue_x: list[float] = []
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
                failed = failed_rows[part.index.to_numpy()]
                failed_x += part.loc[failed, axis].astype(float).tolist()
                novalue = ~failed & ~np.isfinite(part[col].to_numpy(dtype=float))
                novalue_x += part.loc[novalue, axis].astype(float).tolist()
                if good.empty:
                    continue
                lab = f"{g} / {baseline}" + _setting_suffix(others, key)
                ax.plot(good[axis].astype(float), good[col], "o-", ms=4, lw=1, label=lab)
                n_lines += 1
        if n_lines == 0:
            raise PlotError(f"--metric: no matched ok pair of {mname!r} along {axis!r}")
        n_lines += _failed_marks(ax, failed_x, "failed pair")
        n_lines += _novalue_marks(ax, novalue_x, "ok pair, no value")
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
    if cost not in COST_METRICS:
        raise PlotError(f"--cost: expected one of {', '.join(COST_METRICS)}, got {cost!r}")
    figs = []
    for mname in metrics:
        check_metric(mname)
        fig, ax = subplots(figsize=(6.5, 4.5))
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
            if cost == "wall_s" and "engine" in df.columns and (df["engine"] == "python").any():
                raise PlotError("--cost wall_s: the cases ran on interpreted kernels (engine ="
                                " python), which have no kernel timing; launch --engine compiled"
                                " for timings, or plot --cost rhs_evals")  # fmt: skip
            raise PlotError(f"--metric: no ok case with a positive {mname!r} to plot")
        ax.set_xlabel(metric_label(cost), fontsize=8)
        ax.set_ylabel(metric_label(mname), fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        title = f"{_study(rs)}: work-precision, {mname} vs {cost}"
        n_py = int((df["engine"] == "python").sum()) if "engine" in df.columns else 0
        if cost == "wall_s" and n_py:  # interpreted cases: no kernel time (plan/engines.py)
            title += f"\n({n_py} cases ran interpreted: no wall time, left out)"
        ax.set_title(title, fontsize=9)
        _legend(ax, n_lines)
        fig.tight_layout()
        figs.append(Figure(_slug(f"{_study(rs)}_work-precision_{mname}_vs_{cost}"), fig, title))
    return figs
