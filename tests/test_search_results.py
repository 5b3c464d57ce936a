"""A search store read like a grid store (docs/guide/search.md): ``open_results`` against
the store's raw Zarr arrays and ``mbstudy boundary --json``, the report and plot figures
against the answer the command line prints (the drawn artists' data, not pixels), and an
unknown block as one line with exit status 2. One real search launch (three tiny blocks)
on a LocalCluster serves every test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

STUDY = """
[study]
name = "sr"
model = "fourbar"
t_end = 5.0
samples = 101

[[search]]
name = "edge"
formulation = "baumgarte"
integrator = "rk4"
xi = [1.0]
h = { log = [0.001, 0.05] }
omega_n = { log = [50.0, 1000.0] }
goal = { boundary = "status" }
lines = 3
budget = 60

[[search]]
name = "line"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = { log = [0.001, 0.05] }
goal = { boundary = "status" }
budget = 30

[[search]]
name = "best"
formulation = "drcs"
integrator = "rk4"
omega_n = 5.0
xi = 1.0
h = [0.025]
omega_o = { log = [5.0, 500.0] }
goal = { minimize = "rms_phi" }
budget = 20
"""


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbstudy", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("search_results")
    path = tmp / "sr.zarr"
    study = tmp / "sr.toml"
    study.write_text(STUDY + f'\n[output]\nstore = "{path}"\n')
    res = _cli("launch", str(study), "--workers", "2")
    assert res.returncode == 0, res.stderr
    return path


def _raw(store: Path, name: str):
    import zarr

    return zarr.open_group(str(store), mode="r")[name]


def test_open_results_values_equal_the_raw_arrays(store):
    from mbstudy import open_results

    for name in ("edge", "line", "best"):
        ds = open_results(store, name)
        g = _raw(store, name)
        n = int(g.attrs["n"])
        assert n > 0 and ds.sizes["case"] == n
        keys = list(g.array_keys())
        assert set(keys) == set(ds.variables)  # every array, nothing made up
        for k in keys:
            raw = np.asarray(g[k][:])
            want = raw if k.startswith("answer_") else raw[:n]
            np.testing.assert_array_equal(ds[k].values, want, err_msg=f"{name}/{k}")
            assert ds[k].attrs == dict(g[k].attrs)  # CF attributes carried
        assert ds["status"].dims == ("case",) and ds["answer_lo"].dims == ("point",)
        for axis in [*g.attrs["axes"], *g.attrs["lists"], "combo", "round"]:
            assert axis in ds.coords
        assert ds.attrs["goal"] == g.attrs["goal"]
    tree = open_results(store)
    assert sorted(tree.children) == ["best", "edge", "line"]
    assert "mbstudy_search" in tree.attrs


def test_the_dataset_boundary_is_the_boundary_command(store):
    from mbstudy import open_results

    for name in ("edge", "line"):
        res = _cli("boundary", str(store), name, "--json")
        assert res.returncode == 0, res.stderr
        points = json.loads(res.stdout)
        assert points
        ds = open_results(store, name)
        assert ds.sizes["point"] == len(points)
        for i, p in enumerate(points):
            for key, value in p.items():
                assert ds[f"answer_{key}"].values[i] == pytest.approx(value, rel=1e-12)


def test_unknown_block_is_one_line_exit_2(store, tmp_path):
    from mbstudy.pipeline.store.errors import StoreError

    from mbstudy import open_results

    with pytest.raises(StoreError, match="no search block 'edgy'"):
        open_results(store, "edgy")
    for args in (("plot", str(store), "--group", "edgy", "--out", str(tmp_path / "f")),
                 ("plot", str(store), "--kind", "heatmap", "--out", str(tmp_path / "f")),
                 ("boundary", str(store), "edgy")):  # fmt: skip
        res = _cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.strip().count("\n") == 0 and "Traceback" not in res.stderr
    assert not (tmp_path / "f").exists()


def test_boundary_figure_draws_the_answer_points_and_brackets(store):
    from mbstudy.pipeline.analysis.search_report import block_figure

    points = json.loads(_cli("boundary", str(store), "edge", "--json").stdout)
    f = block_figure(store, "edge")
    (ax,) = [a for a in f.fig.axes if a.get_visible()]
    (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == "boundary"]
    want = sorted(points, key=lambda p: p["omega_n"])
    np.testing.assert_allclose(line.get_xdata(), [p["h"] for p in want], rtol=1e-12)
    np.testing.assert_allclose(line.get_ydata(), [p["omega_n"] for p in want], rtol=1e-12)
    (brackets,) = [c for c in ax.collections if c.get_gid() == "brackets"]
    segs = brackets.get_segments()
    np.testing.assert_allclose([s[:, 0] for s in segs], [[p["lo"], p["hi"]] for p in want])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    # the scatter: the ok cases are exactly the stored cases with status 0
    g = _raw(store, "edge")
    n = int(g.attrs["n"])
    ok = np.asarray(g["status"][:n]) == 0
    (ok_dots,) = [c for c in ax.collections if str(c.get_label()).startswith("ok")]
    got = sorted(map(tuple, ok_dots.get_offsets().data.tolist()))
    raw = sorted(zip(np.asarray(g["h"][:n])[ok].tolist(),
                     np.asarray(g["omega_n"][:n])[ok].tolist(), strict=True))  # fmt: skip
    assert got == raw


def test_line_figure_marks_the_bracket_and_curves_mark_the_optimum(store):
    from mbstudy.pipeline.analysis.search_report import block_figure

    (p,) = json.loads(_cli("boundary", str(store), "line", "--json").stdout)
    ax = block_figure(store, "line").fig.axes[0]
    (span,) = [c for c in ax.patches if c.get_gid() == "brackets"]
    assert span.get_x() == pytest.approx(p["lo"], rel=1e-12)
    assert span.get_x() + span.get_width() == pytest.approx(p["hi"], rel=1e-12)
    (best,) = json.loads(_cli("aggregate", str(store), "--format", "json").stdout)["best"]
    ax = block_figure(store, "best").fig.axes[0]
    (star,) = [ln for ln in ax.get_lines() if ln.get_gid() == "optimum"]
    assert star.get_xdata()[0] == pytest.approx(best["omega_o"], rel=1e-12)
    assert star.get_ydata()[0] == pytest.approx(best["rms_phi"], rel=1e-12)


def test_report_and_plot_of_a_search_store(store, tmp_path):
    out = tmp_path / "report"
    res = _cli("report", str(store), "--out", str(out))
    assert res.returncode == 0, res.stderr
    page = (out / "index.html").read_text()
    for name in ("edge", "line", "best"):
        assert f"search block {name}" in page
    for p in json.loads(_cli("boundary", str(store), "edge", "--json").stdout):
        for key in ("h", "lo", "hi"):
            assert f'data-v="{p[key]!r}"' in page  # the answer table's full values
    imgs = [s.split('"')[0] for s in page.split('<img src="')[1:]]
    assert len(imgs) == 3 and all((out / s).is_file() for s in imgs)
    figs = tmp_path / "figs"
    res = _cli("plot", str(store), "--out", str(figs))
    assert res.returncode == 0, res.stderr
    written = sorted(p.name for p in figs.iterdir())
    assert written == sorted(f"sr_search_{n}.{e}" for n in ("best", "edge", "line")
                             for e in ("png", "svg"))  # fmt: skip
    assert all(p.stat().st_size > 0 for p in figs.iterdir())
