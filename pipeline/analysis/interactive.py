"""Interactive (Bokeh) headline figures of a report: every block of a study overlaid.

- ``series_overlay``: constraint violation |Phi| and energy error |E - E0| against time
  (the position-level constraint norm and the energy of seed 001 figs. 9-10), one line per
  block, each block's case at the same matched settings (``compare.matched_settings``);
- ``work_precision``: an error metric against the work (right-hand-side evaluations),
  one line per block along its own cost axis (h or a tolerance), every other axis held
  at the matched settings, so a line is a cost curve and never joins other parameters.

Hovering a point shows the case's block and parameters. The figures are embedded with
``bokeh.embed.components``; the page carries BokehJS inline (``resources_html``), so it
works offline from one folder.
"""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.analysis import compare
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.api import COUNTER_METRICS, METRIC_MEANINGS

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22")  # fmt: skip
SERIES_TITLES = {
    "phi_norm": ("position constraint violation |Φ|", "|Φ| (m)", False),
    "energy": ("energy error |E − E₀|", "|E − E₀| (J)", True),
    "energy_balance": ("energy balance |E − E₀ − W|", "|E − E₀ − W| (J)", False),
}


def resources_html() -> str:
    """BokehJS and its CSS inline (no network), for the page's <head>."""
    from bokeh.resources import INLINE

    return INLINE.render()


def _label(rs: ResultStore, g: str) -> str:
    a = rs.block_attrs(g)
    return f"{g}: {a.get('formulation')} + {a.get('integrator')}"


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float | np.floating) else str(v)


def _row_series(rs: ResultStore, g: str, name: str, row: int) -> np.ndarray | None:
    grp = rs.group(g, use_consolidated=False)
    if name not in dict(grp.arrays()):
        return None
    return np.asarray(rs.read_row(g, name, row), dtype=float)  # a damaged chunk: one line


def _positive(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float).copy()
    y[~(y > 0)] = np.nan
    return y


def series_overlay(rs: ResultStore, df, settings: dict, names=("phi_norm", "energy")):
    """(Bokeh layout, caption) of the overlay, or None when no block stored a series."""
    from bokeh.layouts import row as brow
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    figs, used_all, lines = [], {}, 0
    for name in names:
        title, ylabel, subtract = SERIES_TITLES[name]
        p = figure(title=title, x_axis_label="t (s)", y_axis_label=ylabel, y_axis_type="log",
                   width=590, height=360, tools="pan,wheel_zoom,box_zoom,reset,save")  # fmt: skip
        n = 0
        for k, g in enumerate(dict.fromkeys(df["group"])):
            sub = df[df["group"] == g]
            rows, used = compare.pick_case(sub, settings)
            rows = rows[rows["status"] == "ok"]
            if rows.empty:
                continue
            r = rows.iloc[0]
            y = _row_series(rs, g, name, int(r["row"]))
            if y is None:
                continue
            t = np.asarray(rs.read(g, "t"), dtype=float)
            y = _positive(np.abs(y - y[0]) if subtract else np.abs(y))
            where = ", ".join(f"{a}={_fmt(v)}" for a, v in used.items()) or "its only case"
            src = ColumnDataSource({"t": t, "y": y, "block": [g] * t.size,
                                    "case": [where] * t.size})  # fmt: skip
            p.line("t", "y", source=src, color=PALETTE[k % len(PALETTE)], line_width=2,
                   legend_label=_label(rs, g))  # fmt: skip
            used_all[g] = where
            n += 1
        if n:
            tips = [("block", "@block"), ("case", "@case"), ("t", "@t{0.000}"),
                    ("value", "@y{0.000e}")]  # fmt: skip
            p.add_tools(HoverTool(tooltips=tips))
            legend_beside(p)
            figs.append(p)
            lines = max(lines, n)
    if not figs:
        return None
    caption = (
        f"Every block of the study overlaid ({lines} lines, one per block): what differs "
        "between the lines is the method. Each block's case: "
        + "; ".join(f"{g} at {w}" for g, w in used_all.items())
        + ". Click a legend entry to hide a line; hover for the case."
    )
    return brow(*figs), caption


def legend_beside(p) -> None:
    """Move the figure's legend out of the plot area, to its right, so that it covers no
    data (the lower left of a work-precision plane is where the best methods are);
    clicking an entry hides its line."""
    legend = p.legend[0]
    legend.label_text_font_size = "9pt"
    legend.click_policy = "hide"
    legend.location = "top_left"
    legend.orientation = "vertical"
    p.add_layout(legend, "right")


def log_ticks(values, mantissas=(1, 2, 5)) -> list[float]:
    """Ticks at ``mantissas`` times the powers of ten within the range of ``values``
    (finer mantissas when that leaves fewer than three): Bokeh's log ticker labels one or
    two values on a plane spanning less than two decades, the usual few step sizes."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return []
    pad = (float(v.max()) / float(v.min())) ** 0.05  # inside Bokeh's 10 % range padding
    lo, hi = float(v.min()) / pad, float(v.max()) * pad
    decades = range(int(np.floor(np.log10(lo))), int(np.floor(np.log10(hi))) + 1)
    if len(decades) > 4:  # wide: the powers of ten alone
        mantissas = (1,)
    for ms in (mantissas, range(1, 10), (1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [t for e in decades for m in ms if lo <= (t := float(f"{m}e{e}")) <= hi]
        edges = np.log10([lo, *ticks, hi])
        if len(ticks) >= 3 and np.diff(edges).max() <= 0.4 * (edges[-1] - edges[0]):
            break  # enough labels, none of the axis' parts without one
    return ticks


def dense_log_ticks(p, xs, ys) -> None:
    """The work-precision plane's ticks from its data (:func:`log_ticks`), when they
    give at least two labels per axis; Bokeh's own otherwise."""
    from bokeh.models import FixedTicker

    for axis, values in ((p.xaxis, xs), (p.yaxis, ys)):
        ticks = log_ticks(values)
        if len(ticks) >= 2:
            axis.ticker = FixedTicker(ticks=ticks)


def work_precision(rs: ResultStore, df, settings: dict, metric: str, cost: str = "rhs_evals"):
    """(Bokeh figure, caption) of the work-precision plane, or None if no block sweeps a
    cost axis with ok cases."""
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure

    p = figure(title=f"work-precision: {metric} against {cost}", x_axis_type="log",
               y_axis_type="log", x_axis_label=f"{cost}: {METRIC_MEANINGS.get(cost, cost)}",
               y_axis_label=f"{metric}: {METRIC_MEANINGS.get(metric, metric)}", width=900,
               height=440, tools="pan,wheel_zoom,box_zoom,reset,save")  # fmt: skip
    parts, n = [], 0
    xs: list[float] = []
    ys: list[float] = []
    for k, g in enumerate(dict.fromkeys(df["group"])):
        sub = df[df["group"] == g]
        axis = compare.cost_axis(sub)
        if axis is None:
            continue
        rows, used = compare.pick_case(sub, settings, free=(axis,))
        rows = rows[(rows["status"] == "ok") & (rows[metric] > 0) & (rows[cost] > 0)]
        if rows.empty:
            continue
        rows = rows.sort_values(axis)
        held = ", ".join(f"{a}={_fmt(v)}" for a, v in used.items())
        cases = [f"{axis}={_fmt(v)}" + (f", {held}" if held else "") for v in rows[axis]]
        src = ColumnDataSource({"x": rows[cost].astype(float).to_numpy(),
                                "y": rows[metric].astype(float).to_numpy(),
                                "block": [g] * len(rows), "case": cases})  # fmt: skip
        color = PALETTE[k % len(PALETTE)]
        label = f"{_label(rs, g)} (along {axis})"
        xs += list(src.data["x"])
        ys += list(src.data["y"])
        p.line("x", "y", source=src, color=color, line_width=2, legend_label=label)
        p.scatter("x", "y", source=src, color=color, size=7, legend_label=label)
        parts.append(f"{g} along {axis}" + (f" at {held}" if held else ""))
        n += 1
    if not n:
        return None
    # a counter as an integer; a time in seconds (wall_s ~ 1e-3) in exponent form
    xfmt = "@x{0,0}" if cost in COUNTER_METRICS else "@x{0.000e}"
    p.add_tools(HoverTool(tooltips=[("block", "@block"), ("case", "@case"),
                                    (cost, xfmt), (metric, "@y{0.000e}")]))  # fmt: skip
    dense_log_ticks(p, xs, ys)
    legend_beside(p)
    caption = (
        "One line per method along its own cost axis (every other parameter held): "
        + "; ".join(parts) + f". Lower left is better: less {metric} for less work."
    )
    return p, caption


def embed(items) -> tuple[str, list[str]]:
    """(one <script> for every item, one <div> per item) from ``bokeh.embed.components``."""
    from bokeh.embed import components

    script, divs = components(list(items))
    return script, list(divs)
