"""The analysis never calls an ``ok`` case failed: an ok case whose metric is NaN (a metric
declared absent, or a kernel that did not store it) is "no value" in the ratio figure and
is left out of the report's ranking with the reason, while a pair with a case that is not
ok is still a "failed pair"."""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.pipeline.analysis import compare, plots
from mbstudy.pipeline.analysis.plot_compare import ratio_figures
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.plot_store_testkit import tiny_store

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    store = tiny_store(tmp_path_factory)
    rs = ResultStore.open(store)
    df = plots.without_row(plots.cases(rs, ["none", "baumgarte", "drcs"], None))
    return rs, df


def _legend(fig) -> list[str]:
    leg = fig.fig.axes[0].get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def _count(labels: list[str], prefix: str) -> int:
    hit = [x for x in labels if x.startswith(prefix)]
    return int(hit[0].rsplit("(", 1)[1].rstrip(")")) if hit else 0


def test_ok_pairs_without_a_value_are_not_failed_pairs(frame):
    rs, df = frame
    df = df.copy()
    ok_b = (df["group"] == "baumgarte") & (df["status"] == "ok")
    assert ok_b.sum() >= 4
    blank = ok_b & (df["omega_n"] == 20.0)  # these ok cases lose their metric
    df.loc[blank, "rms_phi"] = np.nan
    base = df[df["group"] == "none"]
    pairs_expected = df[blank].merge(base, on="h", suffixes=("", "_base"))
    n_failed = int(((pairs_expected["status"] != "ok") | (pairs_expected["status_base"] != "ok"))
                   .sum())  # fmt: skip
    (fig,) = [f for f in ratio_figures(rs, df[df["group"].isin(["none", "baumgarte"])],
                                       "none", ["rms_phi"], "h")]  # fmt: skip
    labels = _legend(fig)
    assert _count(labels, "ok pair, no value") == len(pairs_expected) - n_failed > 0
    assert _count(labels, "failed pair") == n_failed


def test_pair_failed_marks_exactly_the_pairs_with_a_case_not_ok(frame):
    _, df = frame
    sub = df[df["group"].isin(["none", "drcs"])].copy()
    sub.loc[sub["group"] == "drcs", "rms_phi"] = np.nan  # no value must not mean failed
    pairs, _ = compare.baseline_ratios(sub, "none", ["rms_phi"])
    failed = compare.pair_failed(sub, "none", ["rms_phi"])
    assert failed.shape == (len(pairs),)
    merged = sub[sub["group"] == "drcs"].merge(sub[sub["group"] == "none"], on="h",
                                               suffixes=("", "_base"))  # fmt: skip
    want = ((merged["status"] != "ok") | (merged["status_base"] != "ok")).to_numpy()
    assert sorted(failed.tolist()) == sorted(want.tolist())


def test_ranking_leaves_out_a_block_without_values_and_says_why(frame):
    _, df = frame
    df = df.copy()
    df.loc[df["group"] == "baumgarte", "rms_phi"] = np.nan
    rk = compare.ranking(df, "none", ["rms_phi", "steps"])
    ranked = rk[rk["metric"] == "rms_phi"]
    assert "baumgarte" not in set(ranked["block"])
    assert np.isfinite(ranked["median ratio"].to_numpy(dtype=float)).all()
    assert "baumgarte" in set(rk[rk["metric"] == "steps"]["block"])  # other metrics keep it
    why = compare.unranked(df, "none", ["rms_phi", "steps"])
    assert any(x.startswith("baumgarte on rms_phi: its") and "no value" in x for x in why)
