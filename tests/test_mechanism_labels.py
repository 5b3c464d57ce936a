"""A mechanism file's store names each coordinate of q and v by body and coordinate
(``crank.x``, ``top.e0``) and each constraint row of lam by its joint's bodies and row
(``crank-ground.x``), checked against the mechanism files themselves."""

from __future__ import annotations

import tomllib

import pytest
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study
from mbstudy.solvers.mechanisms.derive import derive
from mbstudy.solvers.mechanisms.rownames import RowNamer
from mbstudy.solvers.mechanisms.schema import read

import mbstudy
from tests.conftest import STUDIES

# coordinates of one body, and constraint rows of one joint, by the dimension of the file
# (docs/explanation/mechanisms.md: planar x, y, theta; spatial position and Euler parameters)
COORDS = {2: ("x", "y", "theta"), 3: ("x", "y", "z", "e0", "e1", "e2", "e3")}
# the row names of each joint type, in the row order of Haug's joint equations
# (solvers/mechanisms/planar.py, spatial.py): coincident points x, y (z), then angles
JOINT_ROWS = {
    (2, "revolute"): ("x", "y"), (2, "prismatic"): ("normal", "theta"),
    (3, "spherical"): ("x", "y", "z"), (3, "revolute"): ("x", "y", "z", "axis1", "axis2"),
}  # fmt: skip
MECHANISMS = STUDIES / "mechanisms"


@pytest.mark.parametrize("study", ["mech_fourbar.toml", "mech_top.toml"])
def test_series_are_labelled_by_body_and_joint(study, tmp_path):
    spec = load_study(STUDIES / study, overrides=['output.series=["q", "v", "lam"]'])
    mech_path = STUDIES / tomllib.loads((STUDIES / study).read_text())["study"]["model"]
    mech = tomllib.loads(mech_path.read_text())
    dim = mech.get("mechanism", {}).get("dimension", 2)
    ResultStore.create(tmp_path / "s.zarr", spec, expand_grid(spec))
    block = spec.runs[0].name
    ds = mbstudy.open_results(tmp_path / "s.zarr", block)
    expected = [f"{b}.{c}" for b in mech["bodies"] for c in COORDS[dim]]
    assert ds["coord"].values.tolist() == expected
    assert ds["q"].dims[-1] == ds["v"].dims[-1] == "coord"
    rows = [f"{'-'.join(p.split('.')[0] for p in j['at'])}.{r}"
            for j in mech["joints"] for r in JOINT_ROWS[dim, j["type"]]]  # fmt: skip
    labels = ds["constraint"].values.tolist()
    assert labels[: len(rows)] == rows
    # a spatial body's unit-norm row (constraint normalization) comes after the joints
    assert labels[len(rows):] == [
        f"{b}.e_norm" for b in mech["bodies"]][: len(labels) - len(rows)]


@pytest.mark.parametrize("path", sorted(MECHANISMS.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_mechanism_names_each_row_once(path):
    """One name per row of Phi, no name twice, none of the generic ``r<k>`` fallback."""
    derived = derive(read(path))
    labels = derived.row_labels
    assert len(labels) == len(derived.phi)
    assert len(set(labels)) == len(labels), labels
    assert all("." in lab and not lab.rsplit(".", 1)[1].startswith("r") for lab in labels)


def test_drivers_named_joints_and_a_second_joint_between_the_same_bodies(tmp_path):
    """A driver's row is ``<coordinate>.driver``, a named joint's rows ``<name>.<row>``,
    and a second joint between the same two bodies ``<i>-<j>#2.<row>`` (names unique)."""
    text = (MECHANISMS / "fourbar.toml").read_text()
    text = text.replace('fix = { "crank.theta" = "theta2_0" }\n', "")
    text = text.replace('speed = { "crank.theta" = "omega2_0" }\n', "")
    text = text.replace(
        "[initial]",
        '[[drivers]]\ncoordinate = "crank.theta"\nvalue = "2*t"\n\n'
        '[[drivers]]\nrelative = ["rocker", "ground"]\nvalue = "t"\n\n[initial]',
    )
    path = tmp_path / "driven.toml"
    path.write_text(text)
    labels = derive(read(path)).row_labels
    assert labels[-2:] == ["crank.theta.driver", "rocker-ground.theta.driver"]
    namer = RowNamer(2)
    first = namer.joint({"at": ["crank.A", "ground.O"]}, "revolute", 2)
    again = namer.joint({"at": ["crank.B", "ground.P"]}, "revolute", 2)
    named = namer.joint({"at": ["crank.B", "ground.P"], "name": "pin"}, "revolute", 2)
    assert first == ["crank-ground.x", "crank-ground.y"]
    assert again == ["crank-ground#2.x", "crank-ground#2.y"]
    assert named == ["pin.x", "pin.y"]
