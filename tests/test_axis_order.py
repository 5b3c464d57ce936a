"""Grid axes are sorted in ``open_results`` for every block, one axis or several
(pipeline/store/reader.py), each value staying with its labels; the stacked form keeps
the file's case order."""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import load_study

import mbstudy
from tests.conftest import STUDIES

H = [0.005, 0.001, 0.0025]  # neither sorted nor reversed
OMEGA = [20.0, 5.0, 10.0]


def test_every_block_has_its_axes_sorted(tmp_path):
    spec = load_study(STUDIES / "smoke.toml", overrides=[
        f"runs.none.h={','.join(map(str, H))}", f"runs.baumgarte.h={','.join(map(str, H))}",
        f"runs.baumgarte.omega_n={','.join(map(str, OMEGA))}"])  # fmt: skip
    path = tmp_path / "order.zarr"
    ResultStore.create(path, spec, expand_grid(spec))  # the template: coordinates, case ids
    one = mbstudy.open_results(path, "none")
    two = mbstudy.open_results(path, "baumgarte")
    assert one["h"].values.tolist() == sorted(H)
    assert two["h"].values.tolist() == sorted(H)
    assert two["omega_n"].values.tolist() == sorted(OMEGA)
    # the reference for the permutation: the stacked block, case by case
    stacked = mbstudy.open_results(path, "baumgarte", stacked=True)
    assert stacked["omega_n"].values.tolist() == OMEGA * 3  # file order, C order
    for h, cid in zip(mbstudy.open_results(path, "none", stacked=True)["h"].values,
                      mbstudy.open_results(path, "none", stacked=True)["case_id"].values,
                      strict=True):  # fmt: skip
        assert one["case_id"].sel(h=h).item() == cid
    for h, w, cid in zip(stacked["h"].values, stacked["omega_n"].values,
                         stacked["case_id"].values, strict=True):  # fmt: skip
        assert two["case_id"].sel(h=h, omega_n=w).item() == cid
    assert np.unique(two["case_id"].values).size == 9
