"""The report's first section ("which method, at what cost") and its folder handling, on
the session's tiny launched store (tests/plot_store_testkit.py): every table cell is read back
from the store's own arrays at the case the row names, the ranking follows the rule the
page states, the cost is the kernel time of a compiled store and the counted work where a
case has no kernel time; a driven model has no de_max column; no warning while building;
a foreign non-empty folder is refused, the report's own old files are replaced."""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest
from mbstudy.pipeline.analysis import compare, interactive, method_tables, plots
from mbstudy.pipeline.analysis.report import MARKER, write_report
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from typer.testing import CliRunner

from tests.plot_store_testkit import tiny_store
from tests.report_testkit import Page

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tiny store and its report, built with every warning turned into an error."""
    store = tiny_store(tmp_path_factory)
    out = tmp_path_factory.mktemp("first-section") / "report"
    p, text = _report(store, out)
    return store, out, p, text


def _report(store, out):
    """The report of ``store`` written to ``out`` with every warning an error: its parsed
    page and its text."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_report([store], out)
    p = Page()
    text = (out / "index.html").read_text(encoding="utf-8")
    p.feed(text)
    return p, text


def _methods(p: Page):
    return [(a, rows, vals) for (a, rows), (_, vals) in zip(p.tables, p.values, strict=True)
            if "methods" in a.get("class", "").split()]  # fmt: skip


def _case_index(rs: ResultStore, g: str, axis: str, value: float, held: str) -> int:
    """The store row of block ``g`` at ``axis`` = value and the "held at" settings."""
    sel = np.isclose(rs.read(g, axis), value, rtol=0, atol=0)
    for item in [] if held == "-" else held.split(", "):
        name, v = item.split("=")
        if name in rs.block_attrs(g)["axes"]:
            sel &= np.isclose(rs.read(g, name), float(v), rtol=1e-3)
    (idx,) = np.flatnonzero(sel)
    return int(idx)


def test_first_section_comes_first_with_one_table_per_step_size(built):
    store, _, p, text = built
    rs = ResultStore.open(store)
    assert text.index('id="which-method"') < text.index("Every method side by side")
    assert "methods" in p.tables[0][0].get("class", "")  # the page's first table
    tables = _methods(p)
    # every h of every block has a table, holding exactly the blocks that ran at that h
    want = {}
    for g in rs.blocks():
        for h in np.unique(rs.read(g, "h")):
            want.setdefault(float(h), set()).add(g)
    got = {float(a["data-value"]): {r[1] for r in rows[1:]} for a, rows, _ in tables}
    assert got == want
    assert all(a["data-axis"] == "h" for a, _, _ in tables)


def test_every_cell_is_the_stores_number_and_the_ranking_follows_the_stated_rule(built):
    store, _, p, text = built
    rs = ResultStore.open(store)
    assert "Ranked by e_r ascending" in text  # the rule, stated on the page
    assert text.count("Cost: compiled kernel time wall_s") == len(_methods(p))
    for a, rows, vals in _methods(p):
        head, body = rows[0], rows[1:]
        assert head[:5] == ["rank", "block", "method", "held at", "status"]
        assert {"rms_phi", "e_r", "de_max", "wall_s"} <= set(head)  # four-bar: conservative
        assert a["data-cost"] == "wall_s"  # a compiled store: every case has a kernel time
        key = a["data-rank-key"]
        assert key == "e_r"
        ranked = []
        for cells, cells_v in zip(body, vals[1:], strict=True):
            r = dict(zip(head, cells, strict=True))
            i = _case_index(rs, r["block"], "h", float(a["data-value"]), r["held at"])
            battrs = rs.block_attrs(r["block"])
            assert r["method"] == f"{battrs['formulation']} + {battrs['integrator']}"
            for col, full in zip(head, cells_v, strict=True):
                if col in ("rms_phi", "e_r", "e_theta", "e_final", "de_max", "wall_s"):
                    want = float(rs.read(r["block"], col)[i])
                    assert (full == "nan") if np.isnan(want) else float(full) == want
            if r["rank"] != "-":
                ranked.append((int(r["rank"]), float(cells_v[head.index(key)]),
                               float(cells_v[head.index("wall_s")])))  # fmt: skip
            else:  # unranked rows: a NaN error or cost
                assert "nan" in (cells_v[head.index(key)], cells_v[head.index("wall_s")])
        assert [k for k, _, _ in ranked] == list(range(1, len(ranked) + 1))
        errs = [float(f"{e:.4g}") for _, e, _ in ranked]
        assert errs == sorted(errs)


def _cases(store):
    rs = ResultStore.open(store)
    return rs, plots.without_row(compare.with_fixed(rs, plots.cases(rs)))


def test_cost_is_counted_work_when_a_case_has_no_kernel_time(built):
    store = built[0]
    rs, df = _cases(store)
    df.loc[(df["group"] == "none") & np.isclose(df["h"], 0.01), "wall_s"] = np.nan
    tables, _ = method_tables.method_tables(df, {}, conservative=True, driven=False)
    by_h = {t.value: t for t in tables}
    t = by_h[0.01]
    assert t.cost == "work" and t.cost_column == "work (rhs_evals + jac_evals)"
    assert "counted work rhs_evals + jac_evals" in method_tables.cost_text(t)
    for _, r in t.table.iterrows():  # the store's own counters, summed
        i = _case_index(rs, r["block"], "h", 0.01, r["held at"])
        want = float(rs.read(r["block"], "rhs_evals")[i]) + float(rs.read(r["block"],
                                                                          "jac_evals")[i])
        assert r[t.cost_column] == want
    assert by_h[0.02].cost == "wall_s"  # the other tables keep the kernel time


def test_a_driven_model_has_no_energy_error_column_but_a_note(built):
    _, df = _cases(built[0])
    assert method_tables.model_energy("andrews") == (False, True)  # the registry's word
    assert method_tables.model_energy("fourbar") == (True, False)
    tables, notes = method_tables.method_tables(df, {}, conservative=False, driven=True)
    for t in tables:
        assert "de_max" not in t.table.columns and "du_max" in t.table.columns
    assert any(n.startswith("de_max left out: the model is driven") for n in notes)


def test_a_metric_a_block_does_not_produce_is_noted_and_not_ranked(built):
    _, df = _cases(built[0])
    df.loc[df["group"] == "drcs", "e_r"] = np.nan
    tables, notes = method_tables.method_tables(df, {}, conservative=True, driven=False)
    assert "block drcs does not produce e_r (shown as nan, not ranked)" in notes
    rows = [r for t in tables for _, r in t.table.iterrows() if r["block"] == "drcs"]
    assert rows and all(r["rank"] == "-" for r in rows)


def test_headline_work_precision_plots_wall_time_and_legends_sit_outside(built):
    store, _, _, text = built
    assert "work-precision: e_r against wall_s" in text
    rs, df = _cases(store)
    fig, _ = interactive.work_precision(rs, df, compare.matched_settings(df), "e_r", "wall_s")
    kinds = [type(x).__name__ for x in fig.center]
    assert "Legend" not in kinds and [type(x).__name__ for x in fig.right] == ["Legend"]
    figs = plots.convergence_figures(rs, plots.cases(rs), ["e_r"], "h")
    for f in figs:
        f.fig.canvas.draw()
        ax = f.fig.axes[0]
        leg = ax.get_legend().get_window_extent()
        assert leg.x0 >= ax.get_window_extent().x1  # right of the axes: covers no data


def test_report_refuses_a_foreign_non_empty_folder_and_writes_nothing(built, tmp_path):
    store = built[0]
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    res = CliRunner().invoke(app, ["report", str(store), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "not empty and not an mbstudy report" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # a report of another store is refused too
    other = tmp_path / "other"
    shutil.copytree(built[1], other)
    marker = json.loads((other / MARKER).read_text())
    marker["stores"] = [{"store": "/elsewhere/x.zarr", "study": "x"}]
    (other / MARKER).write_text(json.dumps(marker))
    before = sorted(p.relative_to(other) for p in other.rglob("*"))
    res = CliRunner().invoke(app, ["report", str(store), "--out", str(other)])
    assert res.exit_code == 2 and "holds the report of other stores" in res.output
    assert sorted(p.relative_to(other) for p in other.rglob("*")) == before


def test_report_replaces_its_own_previous_files_entirely(built, tmp_path):
    store, first = built[0], built[1]
    out = tmp_path / "again"
    shutil.copytree(first, out)
    stale = out / "figures" / "s0_old-study_heatmap.png"  # a figure of an earlier report
    stale.write_bytes(b"old")
    marker = json.loads((out / MARKER).read_text())
    marker["files"].append("figures/s0_old-study_heatmap.png")
    (out / MARKER).write_text(json.dumps(marker))
    res = CliRunner().invoke(app, ["report", str(store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert not stale.exists()
    marker = json.loads((out / MARKER).read_text())
    present = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                     if p.is_file() and p.name != MARKER)  # fmt: skip
    assert present == marker["files"]  # nothing in the folder but this report's files
    assert marker["stores"] == [{"store": str(ResultStore.open(store).path),
                                 "study": "tiny-plots"}]  # fmt: skip


def test_interpreted_cases_cost_counted_work_and_are_not_ranked_on_wall_time(built, tmp_path):
    """A copy of the store whose ``none`` block is marked as run by the interpreted tier
    (engine = python: its wall_s is no kernel time, NaN in the case table), reported with
    warnings as errors: the tables holding ``none`` cost counted work, the others keep
    wall_s, and the ranking has no wall_s row for ``none``."""
    import zarr

    store = tmp_path / "interp.zarr"
    shutil.copytree(built[0], store)
    g = zarr.open_group(str(store / "none"), mode="r+")
    g["engine"][:] = np.ones(g["engine"].shape, dtype=g["engine"].dtype)
    out = tmp_path / "report"
    p, text = _report(store, out)
    for a, rows, _ in _methods(p):
        blocks = {r[1] for r in rows[1:]}
        assert a["data-cost"] == ("work" if "none" in blocks else "wall_s"), (a, blocks)
        if "none" in blocks:
            assert rows[0][-1] == "work (rhs_evals + jac_evals)"
    (_, rk) = next(t for t in p.tables if "ranking" in t[0].get("class", ""))
    head = rk[0]
    rows = [dict(zip(head, r, strict=True)) for r in rk[1:]]
    assert not [r for r in rows if r["metric"] == "wall_s" and r["block"] == "none"]
    assert "Not ranked (no finite ratio): none on wall_s: its" in text
    assert "work-precision: e_r against rhs_evals" in text  # not every case has wall_s


def test_a_block_at_one_fixed_step_size_gets_it_from_its_fixed_parameters(built):
    """When no block sweeps the step size, the case table has no h column; the block's
    fixed parameters (the store's ``fixed_parameters``) give the table its h."""
    _, df = _cases(built[0])
    df = df[np.isclose(df["h"], 0.01)].drop(columns="h")
    fixed = {g: {"h": 0.01, "xi": True} for g in set(df["group"])}
    tables, notes = method_tables.method_tables(df, {}, fixed=fixed)
    assert [(t.axis, t.value) for t in tables] == [("h", 0.01)]
    assert set(tables[0].table["block"]) == set(df["group"]) and not notes
    assert method_tables.method_tables(df, {})[1][0].endswith("has no step size or tolerance")
