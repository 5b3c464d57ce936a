"""A self-contained HTML report of one or more stores (``mbstudy report``).

Per store: the study text, the provenance of the root attributes (docs/architecture.md#4-store:
versions, git revision, host, creation time, spec hash), one table per block with
every case (grid axes, status, the metrics of ``aggregate.DEFAULT_METRICS`` that the block
has), the ratio table of ``aggregate.baseline_ratios`` (seed 004 style, docs/reproduction.md)
when a baseline block exists, and the default figures of ``pipeline.plots``. Figures are
written beside the page (``figures/*.png``, relative links): the page needs no network.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.analysis.aggregate import DEFAULT_METRICS, baseline_ratios
from mbstudy.pipeline.store.zarr_store import ResultStore

CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:12px}
td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}
th{background:#eee} pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
img{max-width:100%;border:1px solid #ddd;margin:.3em 0} .failed{color:#b00}"""

REPORT_METRICS = (*DEFAULT_METRICS, "rms_ddphi", "e_final", "de_first", "de_last", "steps")


def fmt_number(x) -> str:
    """A table cell: 6 significant digits (the test compares cells with the store)."""
    if isinstance(x, bool | np.bool_):
        return str(bool(x))
    if isinstance(x, int | np.integer):
        return str(int(x))
    if isinstance(x, float | np.floating):
        return "nan" if not np.isfinite(x) else f"{float(x):.6g}"
    return str(x)


def html_table(df, attrs: dict[str, str] | None = None) -> str:
    """A DataFrame as an HTML table; ``attrs`` become attributes of <table>."""
    at = "".join(f' {k}="{html.escape(v)}"' for k, v in (attrs or {}).items())
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            cls = ' class="failed"' if c == "status" and r[c] != "ok" else ""
            cells.append(f"<td{cls}>{html.escape(fmt_number(r[c]))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table{at}><tr>{head}</tr>" + "".join(rows) + "</table>"


def block_table(rs: ResultStore, df, group: str):
    """Every case of a block: axes, status and the report metrics the block has."""
    sub = df[df["group"] == group]
    cols = [*plots.axes_of(rs, group), "status"]
    cols += [m for m in REPORT_METRICS if m in sub.columns and sub[m].notna().any()]
    return sub[list(dict.fromkeys(cols))]


def pick_baseline(rs: ResultStore, requested: str | None) -> str | None:
    """The requested baseline if the store has it, else ``baumgarte`` if present."""
    blocks = rs.blocks()
    if requested:
        return requested if requested in blocks else None
    return "baumgarte" if "baumgarte" in blocks and len(blocks) > 1 else None


def default_figures(rs: ResultStore, df, baseline: str | None) -> list[plots.Figure]:
    """The figures a report shows for a store: series, convergence in h, a heatmap over
    the first two varied axes of each block, ratios to the baseline, work-precision."""
    figs: list[plots.Figure] = []

    def attempt(fn, *args):
        try:
            figs.extend(fn(*args))
        except plots.PlotError:
            pass  # this kind does not apply to this store (e.g. no series, one h)

    attempt(plots.series_figures, rs, df, None)
    groups = list(dict.fromkeys(df["group"]))
    with_h = [g for g in groups if "h" in plots._varied(df[df["group"] == g], ["h"])]
    if with_h:
        attempt(
            plots.convergence_figures, rs, df[df["group"].isin(with_h)], ["e_r", "rms_phi"], "h"
        )
    for g in groups:
        sub = df[df["group"] == g]
        varied = plots._varied(sub, plots.axes_of(rs, g))
        if len(varied) >= 2:
            attempt(plots.heatmap_figures, rs, sub, "rms_phi", varied[0], varied[1])
    if baseline:
        pairs, _ = baseline_ratios(plots.without_row(df), baseline, ["rms_phi"])
        shared = [
            c
            for c in pairs.columns
            if c not in ("group", "rms_phi_ratio") and pairs[c].nunique() > 1
        ]
        if shared:
            attempt(plots.ratio_figures, rs, df, baseline, ["rms_phi", "e_r"], shared[0])
    if len(groups) > 1:
        attempt(plots.work_precision_figures, rs, df, ["e_r"], "wall_s")
    return figs


def store_section(
    rs: ResultStore, baseline: str | None, fig_dir: Path, prefix: str
) -> tuple[str, list[plots.Figure]]:
    """The HTML of one store and its figures (figures are not yet written)."""
    attrs = rs.root_attrs()
    df = plots.cases(rs)
    name = html.escape(str(attrs.get("study_name")))
    parts = [
        f'<h2 id="{name}">Study {name}</h2>',
        f"<p>store <code>{html.escape(str(rs.path))}</code>; model "
        f"<code>{html.escape(str(attrs.get('model')))}</code>; complete: "
        f"{html.escape(str(attrs.get('complete')))}</p>",
        "<h3>Study file</h3>",
        f"<pre>{html.escape(str(attrs.get('study_text', '')))}</pre>",
    ]
    prov = {
        "spec hash": attrs.get("spec_hash"),
        "git revision": attrs.get("git_revision"),
        "created": attrs.get("created"),
        "host": attrs.get("host"),
        "platform": attrs.get("platform"),
        **{f"version {k}": v for k, v in (attrs.get("versions") or {}).items()},
    }
    parts.append(
        '<h3>Provenance</h3><table class="provenance">'
        + "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in prov.items()
        )
        + "</table>"
    )
    parts.append("<h3>Cases</h3>")
    for g in rs.blocks():
        battrs = rs.block_attrs(g)
        parts.append(
            f"<h4>block {html.escape(g)}: {html.escape(str(battrs.get('formulation')))}"
            f" + {html.escape(str(battrs.get('integrator')))}</h4>"
        )
        parts.append(
            html_table(
                block_table(rs, df, g),
                {"class": "cases", "data-store": str(rs.path), "data-group": g},
            )
        )
    base = pick_baseline(rs, baseline)
    if base:
        metrics = [
            m
            for m in ("rms_phi", "rms_dphi", "e_r", "e_theta", "de_max", "wall_s")
            if df[m].notna().any()
        ]
        pairs, summary = baseline_ratios(plots.without_row(df), base, metrics)
        if not summary.empty:
            parts.append(f"<h3>Ratios to {html.escape(base)} at matched coordinates</h3>")
            parts.append(
                html_table(
                    summary,
                    {"class": "ratio-summary", "data-store": str(rs.path), "data-baseline": base},
                )
            )
            parts.append(
                html_table(
                    pairs,
                    {"class": "ratio-pairs", "data-store": str(rs.path), "data-baseline": base},
                )
            )
    figs = default_figures(rs, df, base)
    for f in figs:
        f.name = f"{prefix}_{f.name}"
    if figs:
        parts.append("<h3>Figures</h3>")
    for f in figs:
        src = f"{fig_dir.name}/{f.name}.png"
        parts.append(
            f'<figure><img src="{html.escape(src)}" alt="{html.escape(f.title)}">'
            f"<figcaption>{html.escape(f.title)}</figcaption></figure>"
        )
    return "\n".join(parts), figs


def write_report(
    stores: list[str | Path],
    out: str | Path,
    baseline: str | None = None,
    title: str = "mbstudy report",
) -> Path:
    """Write OUT/index.html and OUT/figures/*.png for the stores; return the page path.

    Every store is opened and every figure built before anything is written.
    """
    out = Path(out)
    opened = [plots.open_store(s) for s in stores]
    fig_dir = out / "figures"
    sections, all_figs = [], []
    for i, rs in enumerate(opened):
        body, figs = store_section(rs, baseline, fig_dir, f"s{i}")
        sections.append(body)
        all_figs += figs
    toc = "".join(
        f'<li><a href="#{html.escape(str(rs.root_attrs().get("study_name")))}">'
        f"{html.escape(str(rs.root_attrs().get('study_name')))}</a></li>"
        for rs in opened
    )
    page = (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}'
        f"</title><style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<ul>{toc}</ul>" + "\n".join(sections) + "</body></html>"
    )
    plots.save_figures(all_figs, fig_dir, formats=("png",), dpi=80)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
