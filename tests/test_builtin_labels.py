"""Every built-in model names its coordinates and constraint rows in the style of mechanism
files (``BODY.COORDINATE``, ``JOINT.ROW``; solvers/model_labels.py), and a launch stores
those names as the ``coord`` and ``constraint`` labels of its series.

The references are the models' documented layouts (each module's docstring: ``q = [x2 y2
th2 ...]``, its joints and rows), written down here by hand, not read from the code under
test; the count of coordinates and rows is checked against the model's own ``sizes``."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mbstudy.pipeline.plan.purepy import model_sizes
from mbstudy.solvers import registry
from mbstudy.solvers.model_labels import constraint_labels, coordinate_labels

import mbstudy
from tests.conftest import STUDIES

#: model -> (n coordinates, m constraint rows) at the default parameters, from the docstrings
DOCUMENTED_SIZES = {
    "andrews": (7, 6),  # q = (beta, Theta, gamma, Phi, delta, Omega, epsilon), 3 closures x 2
    "fourbar": (9, 8),  # 3 bars x (x, y, th), 4 revolutes x 2
    "manipulator": (6, 4),  # 2 links x (x, y, th), 2 revolutes x 2
    "oscillator": (1, 0),  # q = [x], unconstrained
    "parallelogram": (12, 12),  # 4 bodies x 3, 6 revolutes x 2
    "pendulum": (2, 1),  # q = [x y], x^2 + y^2 - L^2
    "top": (4, 1),  # Euler parameters, q^T q - 1
}
#: what some names must be, from the same docstrings (the position of a coordinate / row)
DOCUMENTED_NAMES = {
    "fourbar": ({2: "crank.theta", 5: "coupler.theta", 8: "rocker.theta"},
                {0: "crank-ground.x", 7: "rocker-ground.y"}),
    "manipulator": ({3: "link2.x"}, {0: "link1-ground.x", 2: "link2-link1.x"}),
    "parallelogram": ({9: "coupler.x"}, {0: "crank0-ground.x", 6: "crank0-coupler.x"}),
    "pendulum": ({0: "mass.x", 1: "mass.y"}, {}),
    "top": ({0: "top.e0"}, {0: "top.e_norm"}),
    "andrews": ({0: "body1.beta"}, {}),
    "oscillator": ({0: "mass.x"}, {}),
}
NAME = re.compile(r"^[A-Za-z][\w#-]*\.[A-Za-z_]\w*$")  # BODY.COORD, JOINT.ROW


def test_the_fixed_size_models_are_all_listed():
    """Every built-in model is here or named below as sized by a parameter / a netlist."""
    builtin = {n for n, e in registry.entries("model").items()
               if e.module.__name__.startswith("mbstudy.solvers.models.")}  # fmt: skip
    assert builtin == set(DOCUMENTED_SIZES) | {"nfourbar", "network"}


@pytest.mark.parametrize("model", sorted(DOCUMENTED_SIZES))
def test_each_builtin_model_names_every_coordinate_and_row(model):
    n, m = DOCUMENTED_SIZES[model]
    assert model_sizes(model, {}) == (n, m)
    coords, rows = coordinate_labels(model, n), constraint_labels(model, m)
    assert len(coords) == n and len(set(coords)) == n, coords
    assert len(rows) == m and len(set(rows)) == m, rows
    for name in coords + rows:
        assert NAME.match(name), name
    want_coords, want_rows = DOCUMENTED_NAMES[model]
    assert all(coords[i] == v for i, v in want_coords.items()), coords
    assert all(rows[i] == v for i, v in want_rows.items()), rows
    # a count the model does not have falls back to generic names, never a wrong name
    assert coordinate_labels(model, n + 1) == [f"q{i}" for i in range(n + 1)]


@pytest.mark.parametrize("windows", [1, 2, 3])
def test_nfourbar_names_follow_its_chain_for_any_window_count(windows):
    """N four-bar windows: 6N + 3 coordinates (crank i at q[6i:6i+3], coupler j at
    q[6j+3:6j+6]) and 6N + 2 rows (crank 0 on its pivot, then per window the coupler on
    two crank tips and the next crank on its pivot), as its docstring lays them out."""
    n, m = 6 * windows + 3, 6 * windows + 2
    assert model_sizes("nfourbar", {"n": windows}) == (n, m)
    coords, rows = coordinate_labels("nfourbar", n), constraint_labels("nfourbar", m)
    assert len(set(coords)) == n and len(set(rows)) == m
    for i in range(windows + 1):
        assert coords[6 * i: 6 * i + 3] == [f"crank{i}.x", f"crank{i}.y", f"crank{i}.theta"]
    for j in range(windows):
        assert coords[6 * j + 3] == f"coupler{j}.x"
        r = 6 * j + 2
        assert rows[r: r + 6] == [f"coupler{j}-crank{j}.x", f"coupler{j}-crank{j}.y",
                                  f"coupler{j}-crank{j + 1}.x", f"coupler{j}-crank{j + 1}.y",
                                  f"crank{j + 1}-ground.x", f"crank{j + 1}-ground.y"]  # fmt: skip
    assert rows[:2] == ["crank0-ground.x", "crank0-ground.y"]


CHAIN_NETLIST = """$ FRAGMENT: chain
# BASE: 1
# STRUCTURE:
k1' K (1 5; 100)
m5' M (5; 0.1)
k2' K (5 3; 100)
m3' M (3; 0.2)
"""


def test_network_coordinates_are_its_free_nodes_in_first_appearance_order(tmp_path):
    """A network's coordinates are its netlist's free nodes, ``NODE.x``, numbered by first
    appearance in ``# STRUCTURE:`` (node 5 before node 3 here, read off the text above);
    without a readable netlist they are generic."""
    net = tmp_path / "chain.net"
    net.write_text(CHAIN_NETLIST, encoding="utf-8")
    assert coordinate_labels("network", 2, {"netlist": str(net)}) == ["5.x", "3.x"]
    assert coordinate_labels("network", 3, {"netlist": str(net)}) == ["q0", "q1", "q2"]
    swept = ("model.netlist",)  # the netlist differs between cases
    assert coordinate_labels("network", 2, {"netlist": str(net)}, swept) == ["q0", "q1"]
    assert coordinate_labels("network", 2, {"netlist": str(tmp_path / "gone.net")}) == [
        "q0", "q1"]
    assert coordinate_labels("network", 3) == ["q0", "q1", "q2"]


def test_a_launch_stores_the_names(tmp_path):
    """studies/smoke.toml (the four-bar) with q and lam sampled: the store's label arrays
    are the four-bar's names, and a row can be selected by its name."""
    store = tmp_path / "labels.zarr"
    summary = mbstudy.launch(STUDIES / "smoke.toml", store=store, workers=1, quiet=True,
                             echo=lambda s: None, engine="python",
                             overrides=['output.series=["q","lam"]'])  # fmt: skip
    assert summary.exit_code == 0
    ds = mbstudy.open_results(store, "baumgarte")
    n, m = DOCUMENTED_SIZES["fourbar"]
    assert list(ds["coord"].values) == coordinate_labels("fourbar", n)
    assert list(ds["constraint"].values) == constraint_labels("fourbar", m)
    assert ds["coord"].values[2] == "crank.theta"
    crank = ds["q"].sel(coord="crank.theta").isel(h=0, omega_n=0)
    assert crank.dims == ("t",) and np.isfinite(crank.values).all()


def test_a_network_store_block_names_its_nodes(tmp_path):
    """The store's ``coord`` labels of a network block (studies/spring_damper.toml: the
    mass on free node 2) are written by the same path a launch takes
    (:func:`mbstudy.pipeline.store.cf.describe_block` on a real Zarr group)."""
    import zarr
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.store.cf import describe_block
    from mbstudy.pipeline.study.parse import load_study

    study = load_study(STUDIES / "spring_damper.toml")
    block = expand_grid(study).blocks[0]
    g = zarr.open_group(str(tmp_path / "net.zarr"), mode="w")
    g.create_array("q", shape=(1, 3, 1), dtype="f8")
    describe_block(g, block, study.model_entry)
    assert list(g["coord"][:]) == ["2.x"]
