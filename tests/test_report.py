"""``mbstudy report``: open the produced page, parse it with html.parser, check that every
referenced figure exists and every table cell equals the store's number."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.solvers.status import STATUS_NAMES
from typer.testing import CliRunner

from tests.plot_store import tiny_store

pytestmark = pytest.mark.cluster


class Page(HTMLParser):
    """Tables (attrs, rows of cell texts), image sources and links of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[dict, list[list[str]]]] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append((a, []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(a["src"])
        elif tag in ("link", "script") and (a.get("href") or a.get("src")):
            self.links.append(a.get("href") or a.get("src"))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


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
    assert len(p.images) >= 5  # series, convergence, heatmaps, ratio, work-precision
    for src in p.images:
        assert not src.startswith(("http:", "https:", "/"))
        assert (out / src).is_file() and (out / src).stat().st_size > 1000
    assert p.links == []


def test_case_tables_hold_the_stores_numbers(page):
    store, _, p = page
    rs = ResultStore.open(store)
    tables = [(a, rows) for a, rows in p.tables if a.get("class") == "cases"]
    assert {a["data-group"] for a, _ in tables} == set(rs.blocks())
    for a, rows in tables:
        g = a["data-group"]
        head, body = rows[0], rows[1:]
        status = rs.read(g, "status")
        assert len(body) == status.size
        for i, cells in enumerate(body):
            for col, cell in zip(head, cells, strict=True):
                if col == "status":
                    assert cell == STATUS_NAMES[int(status[i])]
                    continue
                want = float(rs.read(g, col)[i])
                got = _num(cell)
                if np.isnan(want):
                    assert np.isnan(got), (g, i, col)
                else:
                    assert got == pytest.approx(want, rel=1e-5), (g, i, col)


def test_ratio_table_is_metric_over_baseline_at_matched_coordinates(page):
    store, _, p = page
    rs = ResultStore.open(store)
    (a, rows) = next(t for t in p.tables if t[0].get("class") == "ratio-pairs")
    base = a["data-baseline"]
    head, body = rows[0], rows[1:]
    assert body
    axes_base = {k: rs.read(base, k) for k in rs.block_attrs(base)["axes"]}
    for cells in body:
        r = dict(zip(head, cells, strict=True))
        g = r["group"]
        on = [k for k in axes_base if k in r]
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
