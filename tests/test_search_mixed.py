"""A study of ``[[runs]]`` and ``[[search]]`` blocks (docs/guide/search.md, "Grid and
search blocks in one study"): one launch on a real LocalCluster writes the grid blocks
and, in the store's ``search`` group, the search blocks; status, aggregate and boundary
read both from the one store path; a relaunch reruns neither; a store a search cannot
take is refused before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.reader import open_results
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK

MIXED = """
[study]
name = "mixed"
model = "fourbar"
t_end = 5.0
samples = 101

[[runs]]
name = "grid"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = [0.005, 0.025]

[[search]]
name = "line"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = { log = [0.001, 0.05] }
goal = { boundary = "status" }
budget = 30
"""


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbstudy", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())  # fmt: skip


def _status_of(h: float) -> int:
    """The case run directly, outside the pipeline (the independent check of a bracket)."""
    return run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=101,
                    formulation_params={"omega_n": 200.0, "xi": 1.0},
                    integrator_params={"h": h}).status  # fmt: skip


def test_grid_and_search_blocks_launch_into_one_store(tmp_path: Path):
    store = tmp_path / "mixed.zarr"
    study = tmp_path / "mixed.toml"
    study.write_text(MIXED + f'\n[output]\nstore = "{store}"\n')
    res = _cli("launch", str(study), "--workers", "2")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr

    # the grid block: both cases, each as run directly
    ds = open_results(store, "grid", stacked=True)
    assert ds["done"].values.all()
    hs = ds["h"].values
    for h, st in zip(hs, ds["status"].values, strict=True):
        assert int(st) == _status_of(float(h))

    # the search block, in the store's search group: the bracket holds when rerun directly
    out = _cli("boundary", str(store), "line", "--json")
    assert out.returncode == 0, out.stderr
    (p,) = json.loads(out.stdout)
    assert _status_of(p["lo"]) == OK and _status_of(p["hi"]) != OK
    import zarr

    g = zarr.open_group(str(store / "search"), mode="r")["line"]
    n = int(g.attrs["n"])
    assert 0 < n <= 30 and g.attrs["done"]
    rounds = int(g.attrs["rounds"])

    # one store path for status and aggregate: the grid's lines and the search's
    status = _cli("status", str(store), "--json")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert info["blocks"]["grid"]["done"] == 2 and info["search"]["line"]["cases"] == n
    agg = _cli("aggregate", str(store), "--format", "json")
    assert agg.returncode == 0, agg.stderr
    assert json.loads(agg.stdout)["search"]["line"] == json.loads(out.stdout)
    assert _cli("verify", str(store)).returncode == 0

    # open_results and report read the search group through the one store path
    tree = open_results(store, "search")
    assert list(tree.children) == ["line"]
    line = open_results(store, "search/line")
    assert line.sizes["case"] == n
    np.testing.assert_array_equal(line["status"].values, g["status"][:n])
    rep = _cli("report", str(store), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Study mixed" in page and "Search blocks of mixed" in page
    assert "search block line" in page
    figs = {p.name for p in (tmp_path / "rep" / "figures").iterdir()}
    assert any(f.startswith("s0search_") for f in figs), figs

    # launched again: the grid is complete, the search done; neither runs again
    again = _cli("launch", str(study), "--workers", "2", "--resume")
    assert again.returncode == 0, again.stderr
    assert "not rerun" in again.stdout
    g = zarr.open_group(str(store / "search"), mode="r")["line"]
    assert int(g.attrs["n"]) == n and int(g.attrs["rounds"]) == rounds
    np.testing.assert_array_equal(open_results(store, "grid", stacked=True)["status"].values,
                                  ds["status"].values)  # fmt: skip


def test_no_grid_block_can_take_the_search_group_s_name():
    from mbstudy.pipeline.store.search_block import SEARCH_GROUP
    from mbstudy.pipeline.study.spec import RESERVED_RUN_NAMES

    assert SEARCH_GROUP in RESERVED_RUN_NAMES


def test_a_store_a_search_cannot_take_is_refused_before_anything_is_written(tmp_path: Path):
    study = tmp_path / "mixed.toml"
    study.write_text(MIXED + '\n[output]\nstore = "s3://bucket/mixed.zarr"\n')
    res = _cli("launch", str(study), "--workers", "1")
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().count("\n") == 0 and "local folder" in res.stderr
    assert "Traceback" not in res.stderr


def test_plan_shows_the_search_blocks_beside_the_grid_blocks(tmp_path: Path):
    study = tmp_path / "mixed.toml"
    study.write_text(MIXED + f'\n[output]\nstore = "{tmp_path / "never.zarr"}"\n')
    res = _cli("plan", str(study), "--json")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    assert [b["name"] for b in plan["blocks"]] == ["grid"] and plan["n_cases"] == 2
    (s,) = plan["searches"]
    assert s["goal"] == "boundary" and s["metric"] == "status" and s["max_cases"] == 30
    # the bounds as the study gives them (0.001 and 0.05 divide the output interval 0.05)
    assert s["continuous"]["h"] == {"lo": 0.001, "hi": 0.05, "scale": "log"}
    text = _cli("plan", str(study))
    assert "search line: baumgarte + rk4, boundary status" in text.stdout
    assert "h: log [0.001, 0.05] (searched)" in text.stdout
    assert not (tmp_path / "never.zarr").exists()
