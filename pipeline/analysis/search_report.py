"""Figures and the report section of a search store (``[[search]]`` blocks,
docs/guide/search.md), read through :mod:`mbstudy.pipeline.store.search_reader`.

One figure per search block (one panel per combination of the list axes for a boundary):

- boundary over two continuous axes: the cases in the plane (crossed axis, second axis),
  each axis in its scale (log or linear), coloured by side (status ok / failed, or the
  metric below / above ``at``; a failed case is on the "above" side), and the answer drawn
  over them: the line through the boundary points (gid ``boundary``) and each point's
  bracket [lo, hi] on the crossed axis (gid ``brackets``) -- the search's heatmap with the
  boundary overlaid;
- boundary along one axis: the metric (or the status code) against the axis, the bracket
  shaded (gid ``brackets``) and its midpoint marked (gid ``boundary``);
- minimize / maximize: the metric against the continuous axis, one curve per combination,
  the optimum marked on each (gid ``optimum``);
- refine: the sampled curve of each combination.

:func:`search_section` is the HTML of one search store in ``mbstudy report`` (same page
as grid stores: :mod:`.report_html`).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from mbstudy.pipeline.analysis.plot_base import (
    Figure,
    PlotError,
    _failed_marks,
    _slug,
    _tidy_log_axes,
    format_value,
    metric_label,
    subplots,
)
from mbstudy.pipeline.analysis.report_html import caption, html_table
from mbstudy.pipeline.store.errors import StoreError
from mbstudy.pipeline.store.search_block import read_search_root
from mbstudy.pipeline.store.search_reader import (
    AxisInfo,
    search_axes,
    search_dataset,
    search_names,
)
from mbstudy.solvers.api import OK

__all__ = ["block_figure", "search_figures", "search_section", "search_study_name"]

MAX_PANELS = 12  # combinations drawn as panels of one boundary figure


def search_study_name(path: str | Path) -> str:
    """The study name recorded in a search store's study text (the path's stem if none)."""
    import tomllib

    root = read_search_root(path)
    try:
        doc = tomllib.loads(str(dict(root.attrs).get("study", "")))
        return str(doc["study"]["name"])
    except (tomllib.TOMLDecodeError, KeyError, TypeError):
        return Path(str(path)).stem


def _combos(ds) -> list[tuple[int, dict]]:
    """Each stored combination of the list axes: (index, {axis: value})."""
    lists = list(ds.attrs.get("lists", []))
    combo = ds["combo"].values
    out = []
    for c in sorted(set(combo.tolist())):
        i = int(np.flatnonzero(combo == c)[0])
        out.append((int(c), {a: ds[a].values[i].item() for a in lists}))
    return out


def _answer_rows(ds) -> list[dict]:
    """The answer points as dicts (from the ``answer_*`` arrays along ``point``)."""
    keys = [k for k in ds.data_vars if str(k).startswith("answer_")]
    n = ds.sizes.get("point", 0)
    return [{str(k)[len("answer_"):]: ds[k].values[i].item() for k in keys} for i in range(n)]


def _matches(row: dict, values: dict) -> bool:
    return all(row.get(a) == v for a, v in values.items())


def _combo_text(values: dict) -> str:
    return ", ".join(f"{a}={format_value(v)}" for a, v in values.items())


def _ok_side(ds) -> np.ndarray:
    """The ok side of every case: status ok, or the metric below ``at`` (plan/search.py
    ``side_of``)."""
    status = ds["status"].values
    ok = status == OK
    metric = ds.attrs.get("metric")
    if metric != "status" and metric in ds:
        v = ds[metric].values.astype(float)
        ok = ok & np.isfinite(v) & (v < float(ds.attrs["at"]))
    return ok


def _side_labels(ds) -> tuple[str, str]:
    metric = ds.attrs.get("metric")
    if metric == "status":
        return "ok", "failed"
    at = format_value(float(ds.attrs["at"]))
    return f"{metric} < {at}", f"{metric} ≥ {at} or failed"


def _scale(ax, info: AxisInfo, which: str, limits: bool = True) -> None:
    """The axis in its scale, spanning the search's bounds with a 3 % margin (in that
    scale) so the cases on the bounds stay visible."""
    log = info.scale == "log"
    if log:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    if not limits or not info.hi > info.lo:
        return
    if log:
        pad = (info.hi / info.lo) ** 0.03
        lims = (info.lo / pad, info.hi * pad)
    else:
        pad = 0.03 * (info.hi - info.lo)
        lims = (info.lo - pad, info.hi + pad)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*lims)


def _panels(n: int, title: str):
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axs = subplots(rows, cols, figsize=(4.6 * cols + 1.2, 3.6 * rows), squeeze=False)
    for ax in axs.flat[n:]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    return fig, list(axs.flat[:n])


def _boundary_2d(ax, ds, sel, ok, rows, x: AxisInfo, y: AxisInfo) -> None:
    good, bad = _side_labels(ds)
    xs, ys = ds[x.name].values[sel], ds[y.name].values[sel]
    k = ok[sel]
    ax.scatter(xs[k], ys[k], s=14, c="tab:blue", marker="o", zorder=3,
               label=f"{good} ({int(k.sum())})")  # fmt: skip
    ax.scatter(xs[~k], ys[~k], s=18, c="tab:red", marker="x", zorder=3,
               label=f"{bad} ({int((~k).sum())})")  # fmt: skip
    pts = sorted(rows, key=lambda r: r[y.name])
    if pts:
        (line,) = ax.plot([r[x.name] for r in pts], [r[y.name] for r in pts], "-", color="k",
                          lw=1.2, label=f"boundary ({len(pts)} points)")  # fmt: skip
        line.set_gid("boundary")
        br = ax.hlines([r[y.name] for r in pts], [r["lo"] for r in pts],
                       [r["hi"] for r in pts], colors="k", lw=3, alpha=0.35, zorder=1,
                       label="bracket [lo, hi]")  # fmt: skip
        br.set_gid("brackets")
    _scale(ax, x, "x")
    _scale(ax, y, "y")
    ax.set_xlabel(x.name)
    ax.set_ylabel(y.name)


def _boundary_1d(ax, ds, sel, ok, rows, x: AxisInfo) -> None:
    good, bad = _side_labels(ds)
    metric = ds.attrs.get("metric")
    xs = ds[x.name].values[sel]
    k = ok[sel]
    if metric == "status":
        yv = ds["status"].values[sel].astype(float)
        ax.set_ylabel("status code (0 ok; solvers/status.py)")
    else:
        yv = ds[metric].values[sel].astype(float)
        ax.set_ylabel(metric_label(metric))
        if np.nanmin(np.where(yv > 0, yv, np.nan), initial=np.inf) < np.inf:
            ax.set_yscale("log")
        ax.axhline(float(ds.attrs["at"]), ls="--", color="gray", lw=1, label="at")
    ax.plot(xs[k], yv[k], "o", color="tab:blue", ms=4, label=f"{good} ({int(k.sum())})")
    ax.plot(xs[~k], np.where(np.isfinite(yv[~k]), yv[~k], np.nan), "x", color="tab:red",
            label=f"{bad} ({int((~k).sum())})")  # fmt: skip
    if metric != "status":
        _failed_marks(ax, xs[~k & ~np.isfinite(yv)])
    for r in rows:
        span = ax.axvspan(r["lo"], r["hi"], color="k", alpha=0.2, label="bracket [lo, hi]")
        span.set_gid("brackets")
    if rows:
        (line,) = ax.plot([r[x.name] for r in rows], np.full(len(rows), 0.5), "|", color="k",
                          ms=30, transform=ax.get_xaxis_transform(),
                          label="boundary")  # fmt: skip
        line.set_gid("boundary")
    _scale(ax, x, "x")
    ax.set_xlabel(x.name)


def _curves(ax, ds, combos, rows, x: AxisInfo) -> None:
    import matplotlib

    goal, metric = ds.attrs["goal"], ds.attrs["metric"]
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    status = ds["status"].values
    values = ds[metric].values.astype(float)
    xs_all = ds[x.name].values.astype(float)
    positive = True
    failed = []
    for j, (c, vals) in enumerate(combos):
        sel = ds["combo"].values == c
        okc = sel & (status == OK) & np.isfinite(values)
        order = np.argsort(xs_all[okc])
        xs, ys = xs_all[okc][order], values[okc][order]
        if goal == "refine":
            ys = np.abs(ys)
        positive &= bool((ys > 0).all())
        colour = colours[j % len(colours)]
        label = _combo_text(vals) or metric
        ax.plot(xs, ys, ".-", color=colour, lw=1, ms=5, label=f"{label} ({int(okc.sum())} ok)")
        failed += xs_all[sel & ~okc].tolist()
        if goal in ("minimize", "maximize"):
            for r in (r for r in rows if _matches(r, vals)):
                (star,) = ax.plot([r[x.name]], [r[metric]], "*", color=colour, ms=14, mec="k",
                                  label=f"{goal[:3]}imum{(' ' + label) if vals else ''}")
                star.set_gid("optimum")
    _failed_marks(ax, failed, "failed")
    _scale(ax, x, "x")
    if positive:
        ax.set_yscale("log")
    ax.set_xlabel(x.name)
    ax.set_ylabel(("|" + metric + "|") if goal == "refine" else metric_label(metric))


def block_figure(path: str | Path, name: str, study: str | None = None) -> Figure:
    """The figure of search block ``name`` of the store at ``path`` (module docstring)."""
    root = read_search_root(path)
    ds = search_dataset(path, name, root)
    axes = search_axes(path, name, root)
    study = study or search_study_name(path)
    goal, metric = ds.attrs["goal"], ds.attrs["metric"]
    rows = _answer_rows(ds)
    combos = _combos(ds)
    what = "status" if metric == "status" else f"{metric} = {format_value(ds.attrs.get('at'))}"
    if goal == "boundary":
        shown = combos[:MAX_PANELS]
        more = f" (first {MAX_PANELS} of {len(combos)} combinations)" if len(combos) > len(
            shown) else ""
        plane = ", ".join(a.name for a in axes[:2])
        title = f"{study} / {name}: boundary of {what} in ({plane}){more}"
        fig, panels = _panels(max(1, len(shown)), title)
        ok = _ok_side(ds)
        for ax, (c, vals) in zip(panels, shown, strict=False):
            sel = ds["combo"].values == c
            mine = [r for r in rows if _matches(r, vals)]
            if len(axes) > 1:
                _boundary_2d(ax, ds, sel, ok, mine, axes[0], axes[1])
            else:
                _boundary_1d(ax, ds, sel, ok, mine, axes[0])
            ax.set_title(_combo_text(vals), fontsize=9)
            _tidy_log_axes(ax)
        handles, labels = panels[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=len(labels),
                   frameon=False)  # fmt: skip
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        return Figure(_slug(f"{study}_search_{name}"), fig, title)
    else:
        title = (f"{study} / {name}: {goal} {metric} along {axes[0].name}, one curve per"
                 f" combination of {', '.join(ds.attrs.get('lists', [])) or 'no list axis'}")
        fig, ax = subplots(figsize=(7.5, 4.5))
        _curves(ax, ds, combos, rows, axes[0])
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        _tidy_log_axes(ax)
    fig.tight_layout()
    return Figure(_slug(f"{study}_search_{name}"), fig, title)


def search_figures(path: str | Path, groups: list[str] | None = None) -> list[Figure]:
    """One figure per search block of the store at ``path`` (``groups``: those blocks
    only; an unknown one is a PlotError naming it and the blocks)."""
    try:
        names = search_names(read_search_root(path))
    except StoreError as exc:
        raise PlotError(str(exc)) from None
    for g in groups or []:
        if g not in names:
            raise PlotError(f"--group: no search block {g!r} in {path} (blocks:"
                            f" {', '.join(names) or 'none'})")  # fmt: skip
    study = search_study_name(path)
    return [block_figure(path, n, study) for n in (groups or names)]


def _asked(ds, axes: list[AxisInfo]) -> str:
    goal, metric = ds.attrs["goal"], ds.attrs["metric"]
    what = f"{goal} {metric}" + (f" at {format_value(ds.attrs['at'])}"
                                 if ds.attrs.get("at") is not None else "")  # fmt: skip
    cont = "; ".join(f"{a.name} in [{format_value(a.lo)}, {format_value(a.hi)}] ({a.scale})"
                     for a in axes)  # fmt: skip
    lists = "; ".join(
        f"{a} = " + ", ".join(format_value(v) for v in sorted(set(ds[a].values.tolist())))
        for a in ds.attrs.get("lists", []))  # fmt: skip
    return (f"asked: <b>{html.escape(what)}</b>; continuous axes {html.escape(cont)}"
            + (f"; list axes {html.escape(lists)}" if lists else "")
            + f"; budget {int(ds.attrs['budget'])} cases per search. ")


def search_section(path: str | Path, fig_dir: Path, prefix: str,
                   nested: bool = False) -> tuple[str, list[Figure]]:  # fmt: skip
    """The HTML of one search store in a report and its figures (not yet written);
    ``nested``: the ``search`` group of a study of grid and search blocks, reported under
    the study's grid section (a sub-heading, no second study heading)."""
    import pandas as pd

    root = read_search_root(path)
    study = search_study_name(path)
    name = html.escape(study)
    names = search_names(root)
    heading = (f'<h3 id="{name}-search">Search blocks of {name}</h3>' if nested
               else f'<h2 id="{name}">Study {name} (search)</h2>')  # fmt: skip
    parts = [heading,
             f"<p>{len(names)} search block(s): {html.escape(', '.join(names))}. Store "
             f"<code>{html.escape(str(path))}</code>.</p>"]  # fmt: skip
    figs: list[Figure] = []
    for g in names:
        ds = search_dataset(path, g, root)
        axes = search_axes(path, g, root)
        a = ds.attrs
        state = "done" if a.get("done") else "not done"
        parts.append(f"<h3>search block {html.escape(g)}</h3>")
        parts.append(f'<p class="search-asked">{_asked(ds, axes)}{int(a["rounds"])} rounds, '
                     f"{int(a['n'])} cases of {int(a['capacity'])}, {state}.</p>")
        rows = _answer_rows(ds)
        if rows:
            parts.append(html_table(pd.DataFrame(rows), {"class": "answer", "data-group": g}))
        else:
            parts.append('<p class="note">No answer yet (no bracket or no finite case).</p>')
        f = block_figure(path, g, study)
        f.name = f"{prefix}_{f.name}"
        figs.append(f)
        src = f"{fig_dir.name}/{f.name}.png"
        parts.append(f'<figure><img src="{html.escape(src)}" alt="{html.escape(f.title)}">'
                     f"{caption(f.title)}</figure>")  # fmt: skip
    parts += ["<h3>Study file</h3>",
              f"<pre>{html.escape(str(dict(root.attrs).get('study', '')))}</pre>"]  # fmt: skip
    return "\n".join(parts), figs
