"""Stores describe themselves: CF units and long names, status flags, labels
of the constraint rows, fixed parameters as block attributes, consolidated metadata that
plain ``xr.open_zarr`` reads without a warning, ordered variables, the whole store as an
``xarray.DataTree``. Real four-bar templates (no kernel runs: the template is metadata)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.cf import constraint_labels
from mbstudy.pipeline.store.reader import open_results
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS, METRIC_UNITS
from mbstudy.solvers.status import STATUS_NAMES

from tests.conftest import fourbar_labelled_study

STUDY = fourbar_labelled_study("cf", '"phi_norm", "energy", "lam", "q"')


@pytest.fixture
def store(tmp_path):
    spec = parse_study(STUDY)
    path = tmp_path / "cf.zarr"
    ResultStore.create(path, spec, expand_grid(spec))
    return path


def test_plain_open_zarr_is_silent_and_self_describing(store):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_zarr(store, group="baumgarte")
    for name in FLOAT_METRICS + tuple(COUNTER_METRICS):
        assert ds[name].attrs["units"] == METRIC_UNITS[name]
        assert ds[name].attrs["long_name"]
    for name in ("phi_norm", "energy", "lam", "q"):
        assert ds[name].attrs["units"] and ds[name].attrs["long_name"]
    assert ds["energy"].attrs["units"] == "J"
    flags = ds["status"].attrs
    assert flags["flag_values"] == sorted(STATUS_NAMES)
    assert flags["flag_meanings"].split() == [STATUS_NAMES[c] for c in sorted(STATUS_NAMES)]
    # grid axes and case identifiers are coordinates, not data variables
    for name in ("h", "omega_n", "case_id", "ref_index"):
        assert name in ds.coords and name not in ds.data_vars
    # the four revolutes of the four-bar, x and y each, label the multipliers' rows, named
    # by their bodies: A crank-ground, B crank-coupler, C coupler-rocker, D rocker-ground
    # (crank AB, coupler BC, rocker DC, ground pivots A and D: solvers/models/fourbar.py)
    joints = ["crank-ground", "crank-coupler", "coupler-rocker", "rocker-ground"]
    assert list(ds["constraint"].values) == [f"{j}.{c}" for j in joints for c in "xy"]
    # q = [x2 y2 th2 x3 y3 th3 x4 y4 th4] of crank, coupler, rocker
    assert list(ds["coord"].values) == [f"{b}.{c}" for b in ("crank", "coupler", "rocker")
                                        for c in ("x", "y", "theta")]  # fmt: skip
    assert ds["lam"].dims[-1] == "constraint"
    assert ds.attrs["model"] == "fourbar"
    assert ds.attrs["formulation"] == "baumgarte" and ds.attrs["integrator"] == "rk4"
    assert ds.attrs["fixed_parameters"]["xi"] == 1.0
    assert ds.attrs["param_xi"] == 1.0
    assert "h" not in ds.attrs["fixed_parameters"]  # swept, not fixed


def test_open_results_orders_variables_and_keeps_attributes(store):
    ds = open_results(store, "baumgarte")
    names = list(ds.data_vars)
    assert names[: len(FLOAT_METRICS)] == list(FLOAT_METRICS)
    assert names.index("status") < names.index("phi_norm") < names.index("energy")
    assert ds["rms_phi"].attrs["units"] == "m"
    assert ds["rms_phi"].dims == ("h", "omega_n")
    assert ds["lam"].sel(constraint="crank-coupler.y").dims == ("h", "omega_n", "t")


def test_open_results_without_group_is_the_whole_store(store):
    tree = open_results(store)
    assert isinstance(tree, xr.DataTree)
    assert tree.attrs["study_name"] == "cf"
    assert set(tree.children) == {"baumgarte", "none", "reference"}
    assert tree["baumgarte"].dataset["rms_phi"].dims == ("h", "omega_n")
    assert tree["none"].dataset["rms_phi"].dims == ("h",)
    ref = tree["reference/r0"].dataset
    assert ref["q"].shape == (11, 9)
    np.testing.assert_allclose(ref["t"].values, np.linspace(0.0, 1.0, 11))


def test_constraint_labels_fall_back_to_row_numbers():
    assert constraint_labels("fourbar", 8)[2] == "crank-coupler.x"
    # a row count the model's labels do not match (or a model without labels)
    assert constraint_labels("fourbar", 3) == ["c0", "c1", "c2"]
    assert constraint_labels("pendulum", 2) == ["c0", "c1"]  # it declares one row
