"""Figures that compare cases over the grid: ``heatmap`` (a metric over two grid axes,
failed cases hatched and named by status), ``ratio`` (metric / baseline metric at matched
coordinates along one axis) and ``work-precision`` (a metric vs a cost per block)."""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.analysis.aggregate import baseline_ratios
from mbstudy.pipeline.analysis.plot_base import (
    COST_METRICS,
    Figure,
    PlotError,
    _check_axis,
    _failed_marks,
    _legend,
    _num,
    _plt,
    _slug,
    _study,
    _value_ticks,
    _varied,
    axes_of,
    check_metric,
    metric_label,
    without_row,
)
from mbstudy.pipeline.store.zarr_store import ResultStore


# ---------------------------------------------------------------------------- heatmap
def heatmap_figures(rs: ResultStore, df, metric: str, x: str, y: str) -> list[Figure]:
    """``metric`` over the grid axes x and y, one figure per block and combination of the
    other varied axes; log colour scale; failed cells hatched with their status."""
    from matplotlib.colors import LogNorm

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
        keyed = sub.groupby(others, dropna=False) if others else [((), sub)]
        for key, part in keyed:
            key = key if isinstance(key, tuple) else (key,)
            xs = sorted(part[x].unique())
            ys = sorted(part[y].unique())
            vals = np.full((len(ys), len(xs)), np.nan)
            stat = np.full((len(ys), len(xs)), "", dtype=object)
            for _, row in part.iterrows():
                i, j = ys.index(row[y]), xs.index(row[x])
                vals[i, j] = row[metric] if row["status"] == "ok" else np.nan
                stat[i, j] = row["status"]
            fig, ax = plt.subplots(
                figsize=(max(4.5, 2.2 + 1.0 * len(xs)), max(3.2, 1.8 + 0.6 * len(ys)))
            )
            pos = vals[np.isfinite(vals) & (vals > 0)]
            norm = LogNorm(pos.min(), pos.max()) if pos.size and pos.max() > pos.min() else None
            im = ax.imshow(
                np.where(vals > 0, vals, np.nan),
                origin="lower",
                aspect="auto",
                cmap="viridis",
                norm=norm,
            )
            for i in range(len(ys)):
                for j in range(len(xs)):
                    if stat[i, j] and stat[i, j] != "ok":
                        ax.add_patch(
                            plt.Rectangle(
                                (j - 0.5, i - 0.5),
                                1,
                                1,
                                facecolor="0.85",
                                hatch="xx",
                                edgecolor="red",
                                lw=0,
                            )
                        )
                        ax.text(
                            j,
                            i,
                            stat[i, j],
                            ha="center",
                            va="center",
                            fontsize=7,
                            color="darkred",
                            weight="bold",
                            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
                        )
                    elif not stat[i, j]:
                        ax.text(j, i, "no case", ha="center", va="center", fontsize=6)
                    elif np.isfinite(vals[i, j]):
                        ax.text(
                            j,
                            i,
                            f"{vals[i, j]:.2g}",
                            ha="center",
                            va="center",
                            fontsize=6,
                            color="white",
                        )
            ax.set_xticks(range(len(xs)), [_num(v) for v in xs], fontsize=7)
            ax.set_yticks(range(len(ys)), [_num(v) for v in ys], fontsize=7)
            ax.set_xlabel(x + (" (s)" if x == "h" else ""))
            ax.set_ylabel(y + (" (s)" if y == "h" else ""))
            cb = fig.colorbar(im, ax=ax)
            cb.set_label(metric_label(metric), fontsize=7)
            extra = ", ".join(f"{a}={_num(v)}" for a, v in zip(others, key, strict=True))
            title = f"{_study(rs)} / {g}: {metric}" + (f" ({extra})" if extra else "")
            ax.set_title(title, fontsize=8)
            fig.tight_layout()
            figs.append(
                Figure(_slug(f"{_study(rs)}_heatmap_{g}_{metric}_{y}_x_{x}_{extra}"), fig, title)
            )
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
