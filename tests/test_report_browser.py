"""The report in a real browser: headless Chromium (Debian's ``chromium``) loads the page
from a local HTTP server; no console error or uncaught exception, no request leaves
127.0.0.1 (BokehJS is inline), and every figure is drawn (each Bokeh canvas and each
image has pixels that are not all one colour). Skipped without Chromium, except under
``CI=true`` or ``MBSTUDY_REQUIRE_BROWSER=1`` where a missing browser fails."""

from __future__ import annotations

import pytest
from mbstudy.pipeline.analysis.report import write_report

from tests.browser_testkit import browser_required, find_chromium, render
from tests.plot_store_testkit import tiny_store

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def chromium_path():
    path = find_chromium()
    if path is None:
        message = "no chromium on PATH (apt-get install chromium chromium-driver)"
        if browser_required():
            pytest.fail(message + "; required under CI=true / MBSTUDY_REQUIRE_BROWSER=1")
        pytest.skip(message)
    return path


def test_report_renders_in_chromium_without_errors_and_draws_every_figure(
    chromium_path, tmp_path_factory
):
    store = tiny_store(tmp_path_factory)
    out = tmp_path_factory.mktemp("browser-report")
    write_report([store], out)
    page = render(chromium_path, out)
    assert page.errors == []
    # the page and its images from the server; BokehJS's own icons are data: URIs
    assert page.requests and all(u.startswith(("http://127.0.0.1:", "data:"))
                                 for u in page.requests)  # fmt: skip
    # a Bokeh plot draws on a primary canvas and keeps an overlay canvas for interaction
    # (blank until hovered); toolbar icons are 20 x 20 canvases
    plot_canvases = [e for e in page.elements if e["kind"] == "canvas" and e["w"] >= 100]
    n_plots = len(plot_canvases) // 2
    assert n_plots >= 3  # the overlay's two panels and the work-precision plane
    assert sum(e["drawn"] for e in plot_canvases) >= n_plots, plot_canvases
    images = [e for e in page.elements if e["kind"] == "img"]
    assert len(images) >= 4
    assert all(e["ok"] and e["drawn"] for e in images), images
