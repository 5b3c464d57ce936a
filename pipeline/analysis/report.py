"""A self-contained HTML report of one or more stores (``mbstudy report``), organised
around the comparisons a researcher makes.

Per study, in this order:

0. "which method, at what cost": one table per step size (or tolerance) with the
   methods as rows, constraint, trajectory and energy error and cost as columns, ranked
   by a stated rule (``method_tables``);
1. a headline: every block overlaid, interactive (Bokeh, inline: works offline) —
   constraint violation and energy error against time at matched settings, and the
   work-precision plane with one line per method along its own cost axis
   (``interactive``);
2. the ranking of the methods per metric: median ratio to the baseline block at matched
   coordinates, with the baseline's value beside each ratio (``compare.ranking``), and
   the pairs behind it; a NaN ratio is not ranked, and an energy metric that does not
   apply to the model is left out;
3. the failure map: per block the count of every status, then the failed cases;
4. figures that need the grid (convergence in h at matched settings, heatmaps as colour
   maps, ratios along an axis; PNG beside the page);
5. per-case tables: every swept coordinate, numbers to 4 significant digits, sortable
   by clicking a header. Metrics undefined or constant for the model are left out of the
   default tables, with a note saying which;
6. the study file and its provenance (versions, git revision, host, spec hash).

Every report folder holds a marker ``.mbstudy-report.json`` (the stores it reports on and
the files it wrote): ``write_report`` refuses a non-empty folder without a marker of the
same stores, and removes the files of the previous report before writing the new one.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from mbstudy.pipeline.analysis import (
    compare,
    interactive,
    method_tables,
    plot_base,
    plot_compare,
    plots,
    search_report,
)
from mbstudy.pipeline.analysis.aggregate import DEFAULT_METRICS, AggregateError, baseline_ratios
from mbstudy.pipeline.analysis.report_html import CSS, SORT_JS, caption, html_table
from mbstudy.pipeline.store.reader import interpreted_note
from mbstudy.pipeline.store.search_reader import is_search_store, search_part
from mbstudy.pipeline.store.zarr_store import ResultStore

REPORT_METRICS = (*DEFAULT_METRICS, "rms_ddphi", "e_final", "de_first", "de_last", "lam_max",
                  "steps")  # fmt: skip
MAX_ROWS = 1000  # rows of a per-case table in the page (the store has them all)
RANK_METRICS = ("rms_phi", "rms_dphi", "e_r", "e_theta", "e_final", "de_max", "du_max",
                "rhs_evals", "wall_s")  # fmt: skip
MARKER = ".mbstudy-report.json"  # in every report folder: the stores and the files written


class ReportError(AggregateError):
    """A report that cannot be written where asked (one line, exit status 2)."""


def block_table(rs: ResultStore, df, group: str, metrics: list[str]):
    """Every case of a block: its swept axes, status and the given metrics."""
    sub = df[df["group"] == group]
    cols = [*compare.varied_axes(sub), "status"]
    cols += [m for m in metrics if m in sub.columns]
    return sub[list(dict.fromkeys(cols))]


def pick_baseline(rs: ResultStore, requested: str | None) -> str | None:
    """The requested baseline if the store has it, else ``baumgarte`` if present, else
    the first block (when there are several)."""
    blocks = rs.blocks()
    if requested:
        return requested if requested in blocks else None
    if len(blocks) < 2:
        return None
    return "baumgarte" if "baumgarte" in blocks else blocks[0]


def default_figures(rs: ResultStore, df, baseline: str | None) -> list[plots.Figure]:
    """The grid figures of a report: convergence in h (every block at the matched
    settings of its other axes: one line per block), a colour map over the first two
    varied axes of each block, ratios to the baseline along the first shared axis."""
    figs: list[plots.Figure] = []
    settings = compare.matched_settings(df)

    def attempt(fn, *args):
        try:
            figs.extend(fn(*args))
        except plots.PlotError:
            pass  # this kind does not apply to this store (e.g. one h)

    groups = list(dict.fromkeys(df["group"]))
    with_h = [g for g in groups if "h" in plots._varied(df[df["group"] == g], ["h"])]
    if with_h:
        import pandas as pd

        held = pd.concat([compare.pick_case(df[df["group"] == g], settings, free=("h",))[0]
                          for g in with_h])  # fmt: skip
        ok_metrics = compare.informative_metrics(held, ["e_r", "e_theta", "rms_phi"])[0]
        attempt(plots.convergence_figures, rs, held, ok_metrics[:2], "h")
        for f in figs:
            f.title += " (one line per block; other axes held at " + ", ".join(
                f"{a}={plot_base.format_value(v)}" for a, v in settings.items() if a != "h") + ")"
    for g in groups:
        sub = df[df["group"] == g]
        varied = plots._varied(sub, plots.axes_of(rs, g))
        if len(varied) >= 2:
            # the two axes with the most values span the map; the others are small
            # multiples, or held at the matched settings when they would be too many
            x, y = sorted(varied, key=lambda a: -sub[a].nunique())[:2]
            others = [a for a in varied if a not in (x, y)]
            if int(np.prod([sub[a].nunique() for a in others])) > plot_compare.MAX_PANELS:
                sub = compare.pick_case(sub, settings, free=(x, y))[0]
            attempt(plots.heatmap_figures, rs, sub, "rms_phi", x, y)
    if baseline:
        pairs, _ = baseline_ratios(plots.without_row(df), baseline, ["rms_phi"])
        shared = [c for c in pairs.columns if c not in ("group", "rms_phi_ratio")
                  and pairs[c].nunique() > 1]  # fmt: skip
        if shared:
            ms = compare.informative_metrics(df, ["rms_phi", "e_r", "e_theta"])[0]
            attempt(plots.ratio_figures, rs, df, baseline, ms[:2], shared[0])
    return figs


def headline_cost(df) -> str:
    """The work-precision plane's cost axis: the compiled kernel time ``wall_s`` when
    every ok case has one, else the right-hand-side evaluations."""
    ok = df[df["status"] == "ok"]
    if "wall_s" in ok.columns and len(ok) and bool((ok["wall_s"].astype(float) > 0).all()):
        return "wall_s"
    return "rhs_evals"


def first_section(rs: ResultStore, df, conservative: bool, driven: bool) -> str:
    """The HTML of "which method, at what cost": the tables of ``method_tables`` under
    the ranking rule and the meaning of each column, each table with its cost kind, and
    the notes on what was left out (``conservative``/``driven``: the model's flags)."""
    labels = {g: f"{rs.block_attrs(g).get('formulation')} + {rs.block_attrs(g).get('integrator')}"
              for g in rs.blocks()}  # fmt: skip
    fixed = {g: rs.block_attrs(g).get("fixed_parameters") or {} for g in rs.blocks()}
    tables, notes = method_tables.method_tables(plots.without_row(df), labels, conservative,
                                                driven, fixed)  # fmt: skip
    if not tables:
        return ""
    parts = ['<h3 id="which-method">Which method, at what cost</h3>',
             '<p class="note">One table per step size (per tolerance for adaptive '
             "methods): the methods as rows; every other swept axis held at the study's "
             "matched settings (column <i>held at</i>).</p>"]  # fmt: skip
    parts.append(f'<p class="note rule">{html.escape(method_tables.rank_rule(tables[0].rank_key))} '
                 + html.escape("; ".join(method_tables.column_meanings(tables))) + ".</p>")
    if notes:
        parts.append('<p class="note method-notes">'
                     + "; ".join(html.escape(n) for n in notes) + ".</p>")  # fmt: skip
    for t in tables:
        val = plot_base.format_value(t.value)
        parts.append(f"<h4>{html.escape(t.axis)} = {html.escape(val)}</h4>")
        parts.append(f'<p class="note cost">{html.escape(method_tables.cost_text(t))}</p>')
        parts.append(html_table(t.table, {"class": "methods", "data-axis": t.axis,
                                          "data-value": repr(t.value), "data-cost": t.cost,
                                          "data-rank-key": t.rank_key}))  # fmt: skip
    return "\n".join(parts)


def _headline(rs: ResultStore, df) -> tuple[list, list[str]]:
    """Bokeh items and captions of the study's headline (overlay, work-precision)."""
    settings = compare.matched_settings(df)
    items, captions = [], []
    series = set(rs.block_attrs(rs.blocks()[0]).get("series", []))
    # the energy error of a conservative model, the energy balance of a driven one
    energy = "energy" if "energy" in series else "energy_balance"
    names = tuple(n for n in ("phi_norm", energy) if n in series)
    if names:
        got = interactive.series_overlay(rs, df, settings, names)
        if got:
            items.append(got[0])
            captions.append(got[1])
    err = compare.informative_metrics(df, compare.ERROR_METRICS)[0]
    if err:
        got = interactive.work_precision(rs, df, settings, err[0], headline_cost(df))
        if got:
            items.append(got[0])
            captions.append(got[1])
    return items, captions


def store_section(
    rs: ResultStore, baseline: str | None, fig_dir: Path, prefix: str
) -> tuple[str, list[plots.Figure], list]:
    """The HTML of one store, its PNG figures (not yet written) and its Bokeh items (the
    HTML holds a placeholder ``<!--bokeh:PREFIX:K-->`` for each)."""
    attrs = rs.root_attrs()
    df = compare.with_fixed(rs, plots.cases(rs))  # match on fixed parameters too
    name = html.escape(str(attrs.get("study_name")))
    blocks = rs.blocks()
    descr = "; ".join(
        f"<b>{html.escape(g)}</b> = {html.escape(str(rs.block_attrs(g).get('formulation')))}"
        f" + {html.escape(str(rs.block_attrs(g).get('integrator')))}"
        + (f" over {html.escape(', '.join(compare.varied_axes(df[df['group'] == g])))}"
           if compare.varied_axes(df[df["group"] == g]) else "")
        for g in blocks
    )  # fmt: skip
    parts = [
        f'<h2 id="{name}">Study {name}</h2>',
        f"<p>model <code>{html.escape(str(attrs.get('model')))}</code>; "
        f"{len(df)} cases in {len(blocks)} blocks: {descr}. Store "
        f"<code>{html.escape(str(rs.path))}</code>, complete: "
        f"{html.escape(str(attrs.get('complete')))}.</p>",
    ]
    interp = interpreted_note(df)  # tiered execution: interpreted cases have no timing
    if interp:
        parts.append(f'<p class="note">{html.escape(interp)}.</p>')
    metrics, dropped = compare.informative_metrics(df, REPORT_METRICS)
    note = ""
    if dropped:
        note = ('<p class="note">Left out of the default tables: '
                + "; ".join(f"{html.escape(m)} ({html.escape(w)})" for m, w in dropped.items())
                + ". They stay in the store.</p>")  # fmt: skip
    # 0. which method, at what cost
    conservative, driven = method_tables.model_energy(str(attrs.get("model")))
    parts.append(first_section(rs, df, conservative, driven))
    # 1. headline
    items, captions = _headline(rs, df)
    if items:
        parts.append("<h3>Every method side by side</h3>")
        for k, cap in enumerate(captions):
            parts.append(f"<figure><!--bokeh:{prefix}:{k}-->{caption(cap)}</figure>")
    # 2. ranking
    base = pick_baseline(rs, baseline)
    if base:
        rank_metrics = [m for m in RANK_METRICS if m in metrics or m in ("rhs_evals",)]
        rank_metrics = [m for m in rank_metrics if df[m].notna().any()]
        energy = method_tables.energy_metric(conservative, driven)[0]
        rank_metrics = [m for m in rank_metrics if m not in ("de_max", "du_max") or m == energy]
        rk = compare.ranking(plots.without_row(df), base, rank_metrics)  # finite ratios only
        if not rk.empty:
            parts.append(f"<h3>Ranking of the methods against {html.escape(base)}</h3>")
            parts.append(
                f'<p class="note">Per metric, each block\'s median of metric / {html.escape(base)}'
                " metric over the cases matched on the axes the two blocks share (ratio &lt; 1:"
                " better than the baseline); the block's and the baseline's own medians over "
                "the same matched cases beside it; wins = matched pairs where the block is "
                "smaller.</p>"
            )
            parts.append(html_table(rk, {"class": "ranking", "data-baseline": base}))
            left = compare.unranked(plots.without_row(df), base, rank_metrics)
            if left:
                parts.append('<p class="note unranked">Not ranked (no finite ratio): '
                             + "; ".join(html.escape(x) for x in left) + ".</p>")
            pairs, _ = baseline_ratios(plots.without_row(df), base, rank_metrics)
            parts.append(f"<details><summary>every matched pair ({len(pairs)})</summary>")
            parts.append(html_table(pairs, {"class": "ratio-pairs", "data-store": str(rs.path),
                                            "data-baseline": base}))  # fmt: skip
            parts.append("</details>")
    # 3. failure map
    parts.append("<h3>Failures</h3>")
    parts.append(html_table(compare.failure_map(df), {"class": "failures"}))
    bad, n_bad = compare.failed_cases(df)
    if n_bad:
        parts.append(f'<p class="note">{n_bad} failed case(s)'
                     + (f", the first {len(bad)}" if n_bad > len(bad) else "") + ":</p>")
        parts.append(html_table(bad, {"class": "failed-cases"}))
    # 4. grid figures
    figs = default_figures(rs, df, base)
    for f in figs:
        f.name = f"{prefix}_{f.name}"
    if figs:
        parts.append("<h3>Over the grid</h3>")
    for f in figs:
        src = f"{fig_dir.name}/{f.name}.png"
        parts.append(f'<figure><img src="{html.escape(src)}" alt="{html.escape(f.title)}">'
                     f"{caption(f.title)}</figure>")  # fmt: skip
    # 5. per-case tables
    parts.append("<h3>Cases</h3>" + note
                 + '<p class="note">Click a column header to sort.</p>')  # fmt: skip
    for g in blocks:
        battrs = rs.block_attrs(g)
        parts.append(
            f"<h4>block {html.escape(g)}: {html.escape(str(battrs.get('formulation')))}"
            f" + {html.escape(str(battrs.get('integrator')))}</h4>"
        )
        table = block_table(rs, df, g, metrics)
        if len(table) > MAX_ROWS:
            parts.append(
                f'<p class="note">The first {MAX_ROWS} of {len(table)} cases; all of them: '
                f"<code>mbstudy aggregate {html.escape(str(rs.path))} --by AXIS</code> or "
                "<code>open_results</code>.</p>"
            )
            table = table.head(MAX_ROWS)
        parts.append(
            html_table(table, {"class": "cases", "data-store": str(rs.path), "data-group": g})
        )
    # 6. study file and provenance
    parts += ["<h3>Study file</h3>", f"<pre>{html.escape(str(attrs.get('study_text', '')))}</pre>"]
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
    return "\n".join(parts), figs, items


def write_report(
    stores: list[str | Path],
    out: str | Path,
    baseline: str | None = None,
    title: str = "mbstudy report",
) -> Path:
    """Write OUT/index.html and OUT/figures/*.png for the stores; return the page path.

    Every store is opened and every figure built before anything is written. The page
    needs no network: BokehJS is inline, images are relative links.
    """
    out = Path(out)
    # a search store ([[search]] blocks) is reported by search_report, on the same page
    opened = [str(s) if is_search_store(s) else plots.open_store(s) for s in stores]
    identity = [store_identity(rs) for rs in opened]
    names = [d["study"] for d in identity]
    previous = previous_files(out, identity)
    fig_dir = out / "figures"
    sections, all_figs, all_items, keys = [], [], [], []
    for i, rs in enumerate(opened):
        if isinstance(rs, str):
            body, figs = search_report.search_section(rs, fig_dir, f"s{i}")
            sections.append(body)
            all_figs += figs
            continue
        body, figs, items = store_section(rs, baseline, fig_dir, f"s{i}")
        nested = _nested_search(stores[i])
        if nested is not None:  # a study of grid and search blocks: its search group too
            sbody, sfigs = search_report.search_section(nested, fig_dir, f"s{i}search",
                                                        nested=True)  # fmt: skip
            body += "\n" + sbody
            figs = [*figs, *sfigs]
        sections.append(body)
        all_figs += figs
        all_items += items
        keys += [f"<!--bokeh:s{i}:{k}-->" for k in range(len(items))]
    body = "\n".join(sections)
    script, head = "", ""
    if all_items:
        script, divs = interactive.embed(all_items)
        for key, div in zip(keys, divs, strict=True):
            body = body.replace(key, div)
        head = interactive.resources_html()
    toc = "".join(f'<li><a href="#{html.escape(n)}">{html.escape(n)}</a></li>' for n in names)
    page = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>'
        f'{html.escape(title)}</title><link rel="icon" href="data:,">'
        f"<style>{CSS}</style>{head}{script}</head><body>"
        f"<h1>{html.escape(title)}</h1><ul>{toc}</ul>{body}"
        f"<script>{SORT_JS}</script></body></html>"
    )
    for old in previous:  # the previous report of these stores, entirely
        old.unlink(missing_ok=True)
    if fig_dir.is_dir() and not any(fig_dir.iterdir()):
        fig_dir.rmdir()
    written = plots.save_figures(all_figs, fig_dir, formats=("png",), dpi=80)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    written.append(path)
    marker = {"stores": identity,
              "files": sorted(p.relative_to(out).as_posix() for p in written)}  # fmt: skip
    (out / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return path


def _nested_search(store: str | Path) -> Path | None:
    """The ``search`` group of a local grid store written by a study of grid and search
    blocks, or None (s3 stores hold no search blocks)."""
    if "://" in str(store):
        return None
    return search_part(store)


def store_identity(rs: ResultStore | str) -> dict[str, str]:
    """What names a store in a report's marker: its location and study name (a search
    store is given by its path)."""
    if isinstance(rs, str):
        return {"store": rs, "study": search_report.search_study_name(rs)}
    return {"store": str(rs.path), "study": str(rs.root_attrs().get("study_name"))}


def previous_files(out: Path, identity: list[dict[str, str]]) -> list[Path]:
    """The files of the previous report in ``out`` (to remove before writing), [] for a
    missing or empty folder; :class:`ReportError` if ``out`` is a file, or a non-empty
    folder that is not a report of the same stores."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"--out {out}: is a file, not a folder")
    if not out.exists() or not any(out.iterdir()):
        return []
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
        same = marker["stores"] == identity
        files = [str(f) for f in marker["files"]]
    except (OSError, ValueError, KeyError, TypeError):
        raise ReportError(f"--out {out}: folder is not empty and not an mbstudy report "
                          f"(no valid {MARKER}); choose an empty or new folder") from None
    if not same:
        raise ReportError(f"--out {out}: holds the report of other stores "
                          f"({', '.join(d.get('store', '?') for d in marker['stores'])}); "
                          "choose another folder")  # fmt: skip
    root = out.resolve()
    paths = [(out / f) for f in files]
    return [p for p in paths if p.resolve().is_relative_to(root)] + [out / MARKER]
