"""Figures that stay readable at the sizes studies reach, on a synthetic
20,000-case store (h 2 x omega_n 100 x xi 2 x model.L3 5 x model.m3 10; no kernels):
one heatmap figure per block with the other axes as small multiples, numeric axes at
their values (log where log-spaced), no per-cell labels on large panels, and the figures
closed after saving (no "More than 20 figures" warning)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from mbstudy.pipeline.analysis import plots
from mbstudy.pipeline.analysis.plot_compare import cell_edges, is_log_spaced

from tests.plot_store_testkit import synthetic_store


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return synthetic_store(tmp_path_factory.mktemp("big") / "big.zarr")


def test_a_20000_case_heatmap_is_one_figure_of_small_multiples(big, tmp_path):
    figs = plots.build_figures(big, "heatmap", x="omega_n", y="model.L3")
    assert len(figs) == 1
    fig = figs[0].fig
    panels = [a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"
              and a.collections]  # fmt: skip
    assert len(panels) == 2 * 2 * 10  # h x xi x model.m3
    for ax in panels:
        assert ax.get_xscale() == "log"  # omega_n is log-spaced from 1 to 100
        assert ax.get_yscale() == "linear"
        assert not ax.texts  # 500 cells: a colour map, no per-cell labels
        lo, hi = ax.get_xlim()
        assert lo < 1.0 and hi > 100.0  # the axis spans the values, not category indices
    titles = {ax.get_title() for ax in panels}
    assert len(titles) == 40 and all("h=" in t and "model.m3=" in t for t in titles)
    ncol = 7  # 40 panels: 7 x 6; the last row has 5, so two panels above carry the x axis
    bottoms = [ax for k, ax in enumerate(panels) if k + ncol >= len(panels)]
    assert len(bottoms) == ncol
    assert all(ax.get_xlabel() == "omega_n" for ax in bottoms)
    assert all(t.get_visible() for ax in bottoms for t in ax.get_xticklabels() if t.get_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        written = plots.save_figures(figs, tmp_path, formats=("png", "svg"))
    assert len(written) == 2
    svg = written[1].read_text()
    # each panel's 500 cells are one embedded image, not one vector path per cell
    assert svg.count("<image") >= 40 and svg.count("<path") < 5000
    assert written[1].stat().st_size < 1_000_000
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # no figure in pyplot's registry: nothing to leak


def test_too_many_panels_asks_for_a_selection(big):
    with pytest.raises(plots.PlotError, match="--sel"):
        plots.build_figures(big, "heatmap", x="h", y="xi")  # 100 x 5 x 10 combinations
    figs = plots.build_figures(big, "heatmap", x="h", y="xi",
                               select={"omega_n": 1.0, "model.L3": 0.4})  # fmt: skip
    assert len(figs) == 1


def test_log_spacing_and_cell_edges():
    assert is_log_spaced(np.geomspace(1.0, 1000.0, 13))
    assert is_log_spaced([0.02, 0.01, 0.005, 0.0025])
    assert not is_log_spaced(np.linspace(1.0, 100.0, 100))
    e = cell_edges(np.array([1.0, 10.0, 100.0]), log=True)
    np.testing.assert_allclose(e, [10**-0.5, 10**0.5, 10**1.5, 10**2.5])
    np.testing.assert_allclose(cell_edges(np.array([0.0, 1.0, 2.0]), log=False),
                               [-0.5, 0.5, 1.5, 2.5])  # fmt: skip
