"""What every section of docs/explanation/reproduction.md shares: the seed studies, the document
being written (:class:`Doc`), number formatting, row picking and the stores' provenance
(see :mod:`mbstudy.pipeline.analysis.reproduction`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.analysis.aggregate import render
from mbstudy.pipeline.store.zarr_store import ResultStore

SEED_STUDIES: dict[str, tuple[str, ...]] = {
    "001": ("manipulator_hermite",),
    "002": ("redundant", "singular", "parallelogram", "nfourbar"),
    "003": ("spring_damper",),
    "004": ("fourbar_gains", "fourbar_steps", "fourbar_bandwidth", "andrews"),
}
FOURBAR_WHY = (
    "our four-bar data are not Marques et al.'s (docs/explanation/models.md#fourbar: lengths, "
    "masses, initial state unknown), so sizes of effects can differ"
)
REACTION_HINTS = ("lam", "reaction", "multiplier")


class Doc:
    """Markdown lines plus the figures they reference (written at the end)."""

    def __init__(self, fig_dir: Path) -> None:
        self.lines: list[str] = []
        self.figs: list[plots.Figure] = []
        self.fig_dir = fig_dir

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, df) -> None:
        self.lines += [render(df, "markdown"), ""]

    def figure(self, fig: plots.Figure, caption: str) -> None:
        self.figs.append(fig)
        self.lines += [f"![{caption}]({self.fig_dir.name}/{fig.name}.png)", "", f"*{caption}*", ""]


def _g(x: float, digits: int = 3) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def half_ulp(printed: str) -> float:
    """Half a unit of the last printed digit of a decimal literal ('0.034' -> 5e-4)."""
    from decimal import Decimal

    return 0.5 * 10.0 ** Decimal(printed).as_tuple().exponent


def _x(r: float) -> str:
    return "n/a" if not np.isfinite(r) else f"{r:.3g}x"


def _pct(r: float) -> str:
    return "n/a" if not np.isfinite(r) else f"{(r - 1) * 100:+.1f} %"


def pick(df, group: str, **sel):
    """The one case of ``group`` whose axes equal ``sel`` (None if absent)."""
    sub = df[df["group"] == group]
    for k, v in sel.items():
        if k not in sub.columns:
            return None
        sub = sub[np.isclose(sub[k].astype(float), float(v), rtol=1e-9, atol=0)]
    return sub.iloc[0] if len(sub) == 1 else None


def ratio(a, b, metric: str) -> float:
    """a[metric] / b[metric] for two ok cases, else nan."""
    if a is None or b is None or a["status"] != "ok" or b["status"] != "ok":
        return float("nan")
    return float(a[metric]) / float(b[metric]) if b[metric] else float("nan")


def eps_q(row, n_trans: int, n_ang: int) -> float:
    """Coordinate RMS error over all coordinates (seed 004's epsilon_q) from the
    translational and angular RMS errors: sqrt((n_r e_r^2 + n_t e_theta^2) / n)."""
    if row is None or row["status"] != "ok":
        return float("nan")
    return math.sqrt((n_trans * row["e_r"] ** 2 + n_ang * row["e_theta"] ** 2) / (n_trans + n_ang))


def _open(results: Path, name: str) -> ResultStore | None:
    path = results / f"{name}.zarr"
    return ResultStore.open(path) if ResultStore.exists(path) else None


def _provenance(doc: Doc, stores: dict[str, ResultStore | None]) -> None:
    doc.add(
        "| study | store | complete | git revision | created | numba | cases ok / total |",
        "|---|---|---|---|---|---|---|",
    )
    for name, rs in stores.items():
        if rs is None:
            doc.add(f"| {name} | missing | | | | | |")
            continue
        a = rs.root_attrs()
        df = plots.cases(rs)
        doc.add(
            f"| {name} | `{rs.path.name}` | {a.get('complete')} | "
            f"`{str(a.get('git_revision'))[:10]}` | {a.get('created')} | "
            f"{(a.get('versions') or {}).get('numba')} | "
            f"{int((df['status'] == 'ok').sum())} / {len(df)} |"
        )
    doc.add("")


def _missing(doc: Doc, name: str) -> None:
    doc.add(
        f"*Store `{name}.zarr` is missing: run `mbstudy reproduce` (it launches "
        f"`studies/{name}.toml`).*",
        "",
    )
