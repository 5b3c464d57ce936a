"""Series plots of vector series (q, v, lam) show every component, one panel each, named
as the mechanism file names them (pipeline/analysis/plots.py's small multiples).

The store is a real one created from a mechanism-file study (the spatial slider-crank:
three spatial bodies of seven coordinates each, 21 in all); its q, v and lam arrays are
filled with known numbers written through zarr, so each panel's line can be checked
against the component it claims to show, and the expected names come from the mechanism
file itself."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study
from mbstudy.solvers.mechanisms.rownames import JOINT_ROWS

from tests.conftest import STUDIES

STUDY = "mech_spatial_slider_crank.toml"
# docs/explanation/mechanisms.md: a spatial body's position and Euler parameters
SPATIAL = ("x", "y", "z", "e0", "e1", "e2", "e3")


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """(store path, block, {series: data}) of a created store with known series."""
    spec = load_study(STUDIES / STUDY, overrides=['output.series=["q", "v", "lam"]'])
    path = tmp_path_factory.mktemp("multiples") / "s.zarr"
    ResultStore.create(path, spec, expand_grid(spec))
    rs = ResultStore.open(path)
    block = spec.runs[0].name
    g = rs.group(block, mode="r+")
    rng = np.random.default_rng(7)
    data = {}
    for s in ("q", "v", "lam"):
        data[s] = rng.standard_normal(g[s].shape)
        g[s][...] = data[s]
    return path, block, data


def _mechanism() -> dict:
    study = tomllib.loads((STUDIES / STUDY).read_text())
    return tomllib.loads((STUDIES / study["study"]["model"]).read_text())


def test_q_and_v_have_one_panel_per_coordinate_named_by_body(filled):
    path, block, data = filled
    mech = _mechanism()
    expected = [f"{b}.{c}" for b in mech["bodies"] for c in SPATIAL]
    assert len(expected) >= 10  # the case the brief is about: many coordinates
    figs = {f.name.rsplit("_", 1)[-1]: f
            for f in plots.build_figures(path, "series", groups=[block])}  # fmt: skip
    assert {"q", "v", "lam"} <= set(figs)
    rs = ResultStore.open(path)
    rows = int(rs.read(block, "h" if "h" in rs.array_names(block) else "rtol").shape[0])
    for s in ("q", "v"):
        axs = figs[s].fig.axes
        assert len(axs) == len(expected)
        assert [ax.get_title() for ax in axs] == expected
        for k, ax in enumerate(axs):
            lines = ax.get_lines()
            assert len(lines) == rows  # one line per case of the block
            got = np.array([ln.get_ydata() for ln in lines], dtype=float)
            np.testing.assert_array_equal(got, data[s][:, :, k])  # component k, bit for bit
    for f in figs.values():
        f.fig.clf()


def test_lam_has_one_panel_per_constraint_row_named_by_joint(filled):
    path, block, data = filled
    mech = _mechanism()
    width = data["lam"].shape[-1]
    fig = next(f for f in plots.build_figures(path, "series", groups=[block], series=["lam"]))
    axs = fig.fig.axes
    assert len(axs) == width
    titles = [ax.get_title() for ax in axs]
    # the joints name their rows in the file's order, each joint's rows in the row order
    # of its type (crank-ground.x, ...); the bodies' unit-norm rows follow
    assert len(set(titles)) == len(titles)
    rows = [r for j in mech["joints"] for r in JOINT_ROWS[(3, j["type"])]]
    assert [t.rsplit(".", 1)[1] for t in titles[: len(rows)]] == rows, titles
    assert all(t.endswith(".e_norm") for t in titles[len(rows) :]), titles
    np.testing.assert_array_equal(
        np.array([ln.get_ydata() for ln in axs[-1].get_lines()], dtype=float),
        data["lam"][:, :, -1])
    fig.fig.clf()
