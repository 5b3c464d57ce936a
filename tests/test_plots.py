"""``mbstudy plot`` on a real small store: files per kind, what the figures show against the
store's own numbers, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from typer.testing import CliRunner

from tests.plot_store_testkit import tiny_store

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tiny_store(tmp_path_factory)


def _plot(store, out, *args):
    return CliRunner().invoke(app, ["plot", str(store), "--out", str(out), *args])


def _lines(ax):
    """Data lines (not legend proxies, not the ratio = 1 reference line)."""
    return [
        ln
        for ln in ax.get_lines()
        if len(ln.get_xdata()) > 1 and not ln.get_label().startswith("_")
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--kind", "series", "--group", "baumgarte"],
        ["--kind", "convergence", "--metric", "e_r"],
        ["--kind", "heatmap", "--group", "baumgarte", "--x", "omega_n", "--y", "xi"],
        ["--kind", "ratio", "--baseline", "none", "--group", "baumgarte", "--axis", "h"],
        ["--kind", "work-precision", "--metric", "e_r"],
    ],
)
def test_every_kind_writes_png_and_svg_one_file_per_figure(store, tmp_path, args):
    import matplotlib.image as mpimg

    res = _plot(store, tmp_path / "f", *args)
    assert res.exit_code == 0, res.output
    listed = [line for line in res.output.splitlines() if line.strip()]
    pngs = sorted((tmp_path / "f").glob("*.png"))
    svgs = sorted((tmp_path / "f").glob("*.svg"))
    assert pngs and len(pngs) == len(svgs) and len(listed) == len(pngs) + len(svgs)
    assert {p.stem for p in pngs} == {s.stem for s in svgs}
    for p in pngs:
        img = mpimg.imread(p)
        assert img.shape[0] > 100 and img.shape[1] > 100 and img.std() > 0  # not blank
    for s in svgs:
        assert ET.parse(s).getroot().tag.endswith("svg")


def test_series_one_line_per_selected_case_with_units(store):
    rs = ResultStore.open(store)
    figs = plots.build_figures(store, "series", groups=["baumgarte"], select={"h": 0.01})
    names = {f.name.rsplit("_", 1)[-1] for f in figs}
    assert names == {"constraints", "energy"}
    h = rs.read("baumgarte", "h")
    rows = np.flatnonzero(np.isclose(h, 0.01))
    cons = next(f for f in figs if f.name.endswith("constraints"))
    axs = cons.fig.axes
    assert len(axs) == 3  # position, velocity, acceleration level
    for ax, name, unit in zip(axs, plots.LEVELS, ("(m)", "(m/s)", "(m/s²)"), strict=True):
        lines = _lines(ax)
        assert len(lines) == rows.size
        assert ax.get_ylabel().endswith(unit) and ax.get_yscale() == "log"
        data = rs.read("baumgarte", name)[rows]
        got = sorted(tuple(np.nan_to_num(ln.get_ydata().astype(float))) for ln in lines)
        want = sorted(tuple(np.nan_to_num(np.where(d > 0, d, np.nan))) for d in data)
        np.testing.assert_allclose(got, want, rtol=0, atol=0)
    assert axs[-1].get_xlabel() == "time t (s)"
    for f in figs:
        f.fig.clf()


def test_convergence_slope_in_legend_is_the_fit_of_the_store_values(store):
    rs = ResultStore.open(store)
    (fig,) = plots.build_figures(store, "convergence", groups=["none"], metrics=["e_r"])
    ax = fig.fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(m)" in ax.get_ylabel() and ax.get_xlabel() == "h (s)"
    h = rs.read("none", "h")
    e = rs.read("none", "e_r")
    want = np.polyfit(np.log(h), np.log(e), 1)[0]
    (text,) = [t.get_text() for t in ax.get_legend().get_texts()]
    got = float(re.search(r"slope (-?[0-9.]+)", text).group(1))
    assert got == pytest.approx(want, abs=0.006)
    assert want > 2.0  # RK4 on the index-1 form converges at a high order in h


def test_heatmap_marks_failed_cases_with_their_status(store):
    rs = ResultStore.open(store)
    status = rs.read("drcs", "status")
    failed = int((status != 0).sum())
    assert failed >= 1  # h * omega_o = 10 is far outside RK4's stability region
    figs = plots.build_figures(store, "heatmap", groups=["drcs"], x="h", y="omega_o")
    (ax,) = [a for a in figs[0].fig.axes if a.get_label() != "<colorbar>"][:1]
    texts = [t.get_text() for t in ax.texts]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == failed
    from mbstudy.solvers.status import STATUS_NAMES

    for code in status[status != 0]:
        assert STATUS_NAMES[int(code)] in texts


def test_ratio_lines_equal_metric_over_baseline_at_matched_h(store):
    rs = ResultStore.open(store)
    (fig,) = plots.build_figures(
        store,
        "ratio",
        groups=["baumgarte"],
        baseline="none",
        metrics=["e_r"],
        axis="h",
        select={"xi": 1.0},
    )
    ax = fig.fig.axes[0]
    base = dict(zip(rs.read("none", "h"), rs.read("none", "e_r"), strict=True))
    h, wn, xi, e = (rs.read("baumgarte", k) for k in ("h", "omega_n", "xi", "e_r"))
    lines = _lines(ax)
    assert len(lines) == 2  # one per omega_n
    for ln in lines:
        w = float(re.search(r"omega_n=([0-9.]+)", ln.get_label()).group(1))
        sel = (wn == w) & (xi == 1.0)
        order = np.argsort(h[sel])
        want = e[sel][order] / np.array([base[v] for v in h[sel][order]])
        np.testing.assert_allclose(ln.get_ydata(), want, rtol=1e-12)


def test_work_precision_points_are_the_store_cases(store):
    rs = ResultStore.open(store)
    (fig,) = plots.build_figures(store, "work-precision", metrics=["e_r"])
    ax = fig.fig.axes[0]
    for ln in _lines(ax):
        g = ln.get_label().split(":")[0]
        ok = rs.read(g, "status") == 0
        want = sorted(zip(rs.read(g, "wall_s")[ok], rs.read(g, "e_r")[ok], strict=True))
        got = sorted(zip(ln.get_xdata(), ln.get_ydata(), strict=True))
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["--kind", "bogus"], "--kind"),
        (["--kind", "series", "--group", "nope"], "--group"),
        (["--kind", "convergence", "--axis", "omega_x"], "--axis"),
        (["--kind", "heatmap", "--x", "h", "--y", "omega_x"], "--y"),
        (["--kind", "convergence", "--metric", "rms_phy"], "--metric"),
        (["--kind", "series", "--sel", "zeta=1"], "--sel"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(store, tmp_path, args, key):
    out = tmp_path / "never"
    res = _plot(store, out, *args)
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and key in lines[0], res.output
    assert not out.exists()


def test_not_a_store_is_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    res = _plot(tmp_path / "empty", tmp_path / "never", "--kind", "series")
    assert res.exit_code == 2 and "no mbstudy store" in res.output
    assert not (tmp_path / "never").exists()
