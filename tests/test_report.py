"""``mbstudy report``: open the produced page, parse it with html.parser, check that every
referenced figure exists, every table cell equals the store's number (the full value in
``data-v``, the shown one to 4 significant digits), and that the comparisons (headline
overlay, work-precision lines, ranking, failure map) say what the store says."""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.status import STATUS_NAMES
from typer.testing import CliRunner

from tests.plot_store_testkit import tiny_store
from tests.report_testkit import Page

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    store = tiny_store(tmp_path_factory)
    out = tmp_path_factory.mktemp("report")
    res = CliRunner().invoke(app, ["report", str(store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    p = Page()
    p.feed((out / "index.html").read_text(encoding="utf-8"))
    return store, out, p


def _num(cell: str) -> float:
    return float("nan") if cell == "nan" else float(cell)


def test_every_referenced_figure_exists_and_nothing_needs_the_network(page):
    _, out, p = page
    assert len(p.images) >= 4  # convergence, heatmaps, ratio
    for src in p.images:
        assert not src.startswith(("http:", "https:", "/"))
        assert (out / src).is_file() and (out / src).stat().st_size > 1000
    assert all(link.startswith("data:") for link in p.links)  # BokehJS is inline
    text = (out / "index.html").read_text(encoding="utf-8")
    assert "https://cdn.bokeh.org" not in text and "Bokeh" in text


def test_case_tables_hold_the_stores_numbers(page):
    store, _, p = page
    rs = ResultStore.open(store)
    tables = [(a, rows) for a, rows in p.tables if "cases" in a.get("class", "").split()]
    values = [rows for a, rows in p.values if "cases" in a.get("class", "").split()]
    assert {a["data-group"] for a, _ in tables} == set(rs.blocks())
    for (a, rows), vrows in zip(tables, values, strict=True):
        g = a["data-group"]
        head, body = rows[0], rows[1:]
        status = rs.read(g, "status")
        assert len(body) == status.size
        for k in rs.block_attrs(g)["axes"]:  # every swept coordinate is a column
            if np.unique(rs.read(g, k)).size > 1:
                assert k in head, (g, k)
        for i, (cells, vals) in enumerate(zip(body, vrows[1:], strict=True)):
            for col, cell, full in zip(head, cells, vals, strict=True):
                if col == "status":
                    assert cell == STATUS_NAMES[int(status[i])]
                    continue
                want = float(rs.read(g, col)[i])
                if np.isnan(want):
                    assert cell == "nan" and full == "nan", (g, i, col)
                    continue
                assert float(full) == want, (g, i, col)  # exact, in data-v
                assert float(cell) == pytest.approx(want, rel=5e-4), (g, i, col)
                digits = cell.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
                assert len(digits) <= 4, (g, i, col, cell)


def test_ratio_table_is_metric_over_baseline_at_matched_coordinates(page):
    store, _, p = page
    rs = ResultStore.open(store)
    k = next(i for i, t in enumerate(p.tables) if "ratio-pairs" in t[0].get("class", ""))
    (a, rows), vrows = p.tables[k], p.values[k][1]
    base = a["data-baseline"]
    head, body = rows[0], rows[1:]
    assert body
    axes_base = {k: rs.read(base, k) for k in rs.block_attrs(base)["axes"]}
    for cells, cells_v in zip(body, vrows[1:], strict=True):
        r = dict(zip(head, cells, strict=True))
        g = r["group"]
        on = [k for k in axes_base if k in r and r[k] != "nan"]  # nan: not matched on it
        mine = np.ones(rs.read(g, "status").size, bool)
        theirs = np.ones(rs.read(base, "status").size, bool)
        for k in on:
            theirs &= np.isclose(axes_base[k], float(r[k]))
        for k in rs.block_attrs(g)["axes"]:  # the block's own axes are in the row too
            if k in r and r[k] != "nan":
                mine &= np.isclose(rs.read(g, k), float(r[k]))
        for col in (c for c in head if c.endswith("_ratio")):
            m = col[: -len("_ratio")]
            got = _num(r[col])
            if not np.isnan(got):  # the cell shows 4 significant digits
                got = float(cells_v[head.index(col)])
            # several cases of either block may share the matched axes (e.g. other gains):
            # the cell must be one of the metric / baseline metric quotients of those cases
            a_val, a_ok = rs.read(g, m)[mine], rs.read(g, "status")[mine] == 0
            b_val, b_ok = rs.read(base, m)[theirs], rs.read(base, "status")[theirs] == 0
            cand = np.where(a_ok[:, None] & b_ok[None, :], a_val[:, None] / b_val[None, :], np.nan)
            if np.isnan(got):
                assert np.isnan(cand).any()
            else:
                assert np.isclose(cand, got, rtol=1e-5).any(), (g, col, got, cand)


def test_page_has_study_text_and_provenance(page):
    store, _, p = page
    attrs = ResultStore.open(store).root_attrs()
    prov = dict(
        (row[0], row[1]) for a, rows in p.tables if a.get("class") == "provenance" for row in rows
    )
    assert prov["spec hash"] == attrs["spec_hash"]
    assert prov["version numba"] == attrs["versions"]["numba"]


def test_report_of_a_missing_store_is_bad_input(tmp_path):
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "no mbstudy store" in res.output
    assert not (tmp_path / "r").exists()


def test_ranking_has_the_baseline_value_beside_each_ratio(page):
    store, _, p = page
    rs = ResultStore.open(store)
    (a, rows) = next(t for t in p.tables if "ranking" in t[0].get("class", ""))
    head, body = rows[0], rows[1:]
    assert {"metric", "rank", "block", "median ratio", "baseline median"} <= set(head)
    base = a["data-baseline"]
    status_b = rs.read(base, "status")
    for cells in body:
        r = dict(zip(head, cells, strict=True))
        if r["metric"] != "rms_phi" or r["matched on"] != "h":
            continue
        # none is matched on h alone: the baseline median over all its ok cases
        want = np.median(rs.read(base, "rms_phi")[status_b == 0])
        assert float(r["baseline median"]) == pytest.approx(want, rel=5e-4)
    ranks = [(r[head.index("metric")], int(r[head.index("rank")])) for r in body]
    for m in {m for m, _ in ranks}:  # ranks 1..k per metric
        assert sorted(k for mm, k in ranks if mm == m) == list(range(1, 1 + sum(
            1 for mm, _ in ranks if mm == m)))


def test_failure_map_counts_every_status(page):
    store, _, p = page
    rs = ResultStore.open(store)
    (_, rows) = next(t for t in p.tables if "failures" in t[0].get("class", ""))
    head, body = rows[0], rows[1:]
    for cells in body:
        r = dict(zip(head, cells, strict=True))
        status = rs.read(r["block"], "status")
        assert int(r["cases"]) == status.size
        assert int(r["ok"]) == int((status == 0).sum())
        for col in head[3:]:
            code = next(c for c, n in STATUS_NAMES.items() if n == col)
            assert int(r[col]) == int((status == code).sum())


def test_headline_overlays_every_block_and_work_precision_lines_hold_other_axes(page):
    from mbstudy.pipeline.analysis import compare, interactive, plots

    store, out, _ = page
    text = (out / "index.html").read_text(encoding="utf-8")
    assert text.count('class="bk-root"') + text.count("data-root-id") >= 2
    rs = ResultStore.open(store)
    df = plots.cases(rs)
    settings = compare.matched_settings(df)
    fig, caption = interactive.work_precision(rs, df, settings, "e_r", "rhs_evals")
    lines = [r for r in fig.renderers if type(r.glyph).__name__ == "Line"]
    assert {r.data_source.data["block"][0] for r in lines} == set(rs.blocks())
    for r in lines:
        g = r.data_source.data["block"][0]
        cases = r.data_source.data["case"]
        held = {c.split(", ", 1)[1] if ", " in c else "" for c in cases}
        assert len(held) == 1, (g, cases)  # one line = one setting of the other axes
        axis = compare.cost_axis(df[df["group"] == g])
        swept = [c.split(", ", 1)[0] for c in cases]
        assert all(s.startswith(axis + "=") for s in swept) and len(set(swept)) == len(swept)
    assert "along h" in caption


def test_undefined_and_constant_metrics_are_named_and_left_out():
    import pandas as pd
    from mbstudy.pipeline.analysis.compare import informative_metrics

    df = pd.DataFrame({"group": ["a"] * 3, "status": ["ok", "ok", "diverged"],
                       "e_r": [np.nan, np.nan, 1.0], "e_theta": [1e-3, 2e-3, np.nan],
                       "steps": [100, 100, 7]})  # fmt: skip
    keep, dropped = informative_metrics(df, ["e_r", "e_theta", "steps"])
    assert keep == ["e_theta"]
    assert dropped["e_r"] == "undefined" and dropped["steps"].startswith("constant")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # a study's two step sizes: less than one decade of wall time, labelled across it
        ([8.02e-4, 1.803e-3], [8e-4, 9e-4, 1e-3, 1.2e-3, 1.4e-3, 1.6e-3, 1.8e-3]),
        ([3e-7, 1e-5], [5e-7, 1e-6, 2e-6, 5e-6, 1e-5]),  # 1-2-5 within 1.5 decades
        ([1e-9, 1e-2], [10.0**e for e in range(-9, -1)]),  # wide: the powers of ten
    ],
)
def test_work_precision_log_ticks_label_the_whole_plane(values, expected):
    """The work-precision plane's log ticks (by hand: 1, 2, 5 times the powers of ten in
    the data's range, finer within one decade) leave no part of an axis unlabelled."""
    from mbstudy.pipeline.analysis.interactive import log_ticks

    assert log_ticks(values) == pytest.approx(expected, rel=1e-12)


def test_a_report_of_many_stores_leaves_no_figure_open(tmp_path_factory):
    """Figures live outside pyplot's registry: a report of 12 copies of a store (over
    pyplot's 20-figure warning in total) warns of nothing and leaves no figure open."""
    import shutil
    import warnings

    import matplotlib.pyplot as plt
    from mbstudy.pipeline.analysis.report import write_report

    store = tiny_store(tmp_path_factory)
    root = tmp_path_factory.mktemp("many")
    copies = []
    for k in range(12):
        shutil.copytree(store, root / f"s{k}.zarr")
        copies.append(root / f"s{k}.zarr")
    before = plt.get_fignums()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_report(copies, root / "out")
    assert plt.get_fignums() == before
    assert len(list((root / "out" / "figures").glob("*.png"))) > 20
