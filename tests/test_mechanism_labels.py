"""A mechanism file's store names each coordinate of q and v by body and coordinate
(``crank.x``, ``top.e0``) and each constraint row of lam by its joint (pipeline/store/cf.py),
checked against the mechanism files themselves."""

from __future__ import annotations

import tomllib

import pytest
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study

import mbstudy
from tests.conftest import STUDIES

# coordinates of one body, and constraint rows of one joint, by the dimension of the file
# (docs/mechanisms.md: planar x, y, theta; spatial position and Euler parameters)
COORDS = {2: ("x", "y", "theta"), 3: ("x", "y", "z", "e0", "e1", "e2", "e3")}
ROWS = {"revolute": 2, "prismatic": 2, "spherical": 3}


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
    rows = [f"joints[{i}] {j['type']} row {r}" for i, j in enumerate(mech["joints"])
            for r in range(ROWS[j["type"]])]  # fmt: skip
    labels = ds["constraint"].values.tolist()
    assert labels[: len(rows)] == rows
    # a spatial body's unit-norm row (constraint normalization) comes after the joints
    assert [lab.split()[0] for lab in labels[len(rows):]] == [
        f"bodies.{b}" for b in mech["bodies"]][: len(labels) - len(rows)]
