"""What every kind of figure shares: the request checks, the store's cases as a table,
labels, log-axis tidying, legends and the :class:`Figure` record (see
:mod:`mbstudy.pipeline.analysis.plots`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mbstudy.pipeline.analysis.aggregate import AggregateError, load_cases
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.api import (
    ACCURACY_METRICS,
    COUNTER_METRICS,
    METRIC_MEANINGS,
    TIME_METRICS,
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
MAX_OUTSIDE_LEGEND = 60  # up to this many lines get a legend beside the axes


class PlotError(AggregateError):
    """A bad plot request (unknown kind, block, axis or metric; not a store)."""


@dataclass
class Figure:
    """A finished matplotlib figure and the file stem it is saved under; ``tight``: fit
    the saved bounding box to the drawn artists (legends beside the axes), an extra
    drawing pass that figures laid out in advance (the heatmap grid) skip."""

    name: str
    fig: Any
    title: str = ""
    tight: bool = True


def subplots(*args: Any, figsize: tuple[float, float] | None = None, **kw: Any):
    """``plt.subplots`` without pyplot: a figure on its own Agg canvas, in no global
    registry, so nothing needs closing and a report of many stores never piles figures
    up in the process (pyplot keeps every figure until closed). Returns (fig, axes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(*args, **kw)


def metric_label(name: str) -> str:
    """Axis label of a metric with its unit (METRIC_MEANINGS)."""
    meaning = METRIC_MEANINGS.get(name, name)
    return f"{name}: {meaning}"


def _all_metrics() -> tuple[str, ...]:
    return ACCURACY_METRICS + TIME_METRICS + tuple(COUNTER_METRICS)


def check_metric(name: str, option: str = "--metric") -> str:
    """``name`` if it is a store metric, else PlotError naming the option."""
    if name not in _all_metrics():
        from mbstudy.solvers.api import closest

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
    return ", ".join(f"{a}={format_value(row[a])}" for a in names)


def format_value(x) -> str:
    """A setting as it appears in titles and tick labels: floats to 4 significant digits."""
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
        ax.set_xticks(vals, [format_value(v) for v in vals], fontsize=7)
        ax.xaxis.set_minor_locator(NullLocator())


def _legend(ax, n_lines: int) -> None:
    """The legend beside the axes (right of the plot, never over the data), in columns
    of 20 entries; past ``MAX_OUTSIDE_LEGEND`` lines only a count in the title."""
    _tidy_log_axes(ax)
    if 0 < n_lines <= MAX_LEGEND:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    elif 0 < n_lines <= MAX_OUTSIDE_LEGEND:  # beside the axes, in columns of 20
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=-(-n_lines // 20), borderaxespad=0.0)  # fmt: skip
    elif n_lines:
        ax.set_title(ax.get_title() + f" ({n_lines} cases; select fewer with --sel)",
                     fontsize=9)  # fmt: skip


def _study(rs: ResultStore) -> str:
    return str(rs.root_attrs().get("study_name", rs.path.stem))

def _failed_marks(ax, xs, label: str | None = None) -> int:
    """Failed cases: red crosses on the lower edge of the axes at their x values; with
    ``label``, a legend entry ``label (count)`` too. Returns the legend lines added."""
    if not len(xs):
        return 0
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
    if label is None:
        return 0
    ax.plot([], [], "x", color="red", label=f"{label} ({len(xs)})")
    return 1


def _setting_suffix(names, values) -> str:
    """`` (a=1, b=2)`` naming the settings a line holds, or "" when there are none."""
    if not names:
        return ""
    pairs = zip(names, values, strict=True)
    return " (" + ", ".join(f"{a}={format_value(v)}" for a, v in pairs) + ")"
