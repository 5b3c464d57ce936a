"""Search cases against the study's reference (docs/guide/search.md, "The reference of a
search"): real launches on a LocalCluster. A search case's reference-based metrics equal
the same case run as a grid block of the same study and, for a model parameter the grid
does not hold, the case and its reference run directly here; a refine search of the
global error against h for RK4 falls with the method's order; a relaunch reuses the
stored references (nothing recomputed, the reference group's files untouched); a case
that cannot run stores its error text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.plan.search import case_params, search_references
from mbstudy.pipeline.run.batch import _angle_mask
from mbstudy.pipeline.store.reader import open_results
from mbstudy.pipeline.study import parse_study
from mbstudy.solvers.metrics import ACCURACY_METRICS, compute_metrics
from mbstudy.solvers.reference import compute_reference
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import ERROR, OK

# the metrics whose definition needs the reference (solvers/metrics.py compute_metrics)
REFERENCE_METRICS = ("e_r", "e_theta", "e_dr", "e_dtheta", "e_final")

# A pendulum in one minimal coordinate (qr): RK4 integrates an ODE, so its global error
# is C h^4 (1 + O(h)). The grid block holds h = 0.025, a value the search's first round
# (5 log-evenly spaced values in [0.004, 0.05], snapped to divisors of 0.1) holds too.
MIXED = """
[study]
name = "refsearch"
model = "pendulum"
t_end = 1.0
samples = 11

[[runs]]
name = "grid"
formulation = "qr"
integrator = "rk4"
h = [0.0125, 0.025]

[[search]]
name = "err"
formulation = "qr"
integrator = "rk4"
h = { log = [0.004, 0.05] }
model.L = [1.0, 1.5]
goal = { refine = "e_final" }
initial = 5
per_round = 2
budget = 9
"""

# model.L3 = 0.01: the four-bar cannot be assembled (|BD| outside [|L3 - L4|, L3 + L4]),
# so that combination's cases and its reference fail with the assembly's error text
FAILING = """
[study]
name = "reffail"
model = "fourbar"
t_end = 0.5
samples = 6

[[search]]
name = "fb"
formulation = "baumgarte"
integrator = "rk4"
h = { log = [0.01, 0.1] }
model.L3 = [0.40, 0.01]
goal = { refine = "e_final" }
initial = 3
per_round = 2
budget = 6
"""


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbstudy", *args], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())  # fmt: skip


def _write(tmp: Path, text: str, store: Path) -> Path:
    path = tmp / "study.toml"
    path.write_text(text + f'\n[output]\nstore = "{store}"\n')
    return path


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("refsearch")
    store = tmp / "mixed.zarr"
    path = _write(tmp, MIXED, store)
    res = _cli("launch", str(path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return store, path, res.stdout


_REFS: dict = {}


def _direct(spec, search, coords: dict) -> dict[str, float]:
    """The case at ``coords`` and its reference run here, outside the pipeline."""
    cp = case_params(search, spec.model, spec.model_params, coords)
    mp = dict(cp.model_params)
    ref = spec.reference
    key = (cp.model_params, cp.t_end, cp.samples)
    if key not in _REFS:
        _REFS[key] = compute_reference(spec.model, mp, ref.integrator, ref.formulation,
                                       dict(ref.params), cp.t_end, cp.samples)  # fmt: skip
    reference = _REFS[key]
    res = run_case(cp.model, cp.formulation, cp.integrator, t_end=cp.t_end,
                   samples=cp.samples, model_params=mp,
                   formulation_params=dict(cp.formulation_params),
                   integrator_params=dict(cp.integrator_params))  # fmt: skip
    return compute_metrics(res, reference, _angle_mask(cp.model, cp.model_params))


def test_reference_metrics_of_search_cases_equal_the_grid_case_and_direct_runs(mixed):
    store, path, out = mixed
    # L = 1.0 is the grid's model: its reference is read from the grid's, L = 1.5 computed
    assert ("search references: 1 computed, 0 stored (reused), 1 from the grid blocks'"
            " references") in out
    assert set(REFERENCE_METRICS) <= set(ACCURACY_METRICS)
    ds = open_results(store, "search/err")
    assert (ds["status"].values == OK).all()
    assert np.isfinite(ds["e_final"].values).all() and np.isfinite(ds["e_r"].values).all()

    # the grid block of the same study: the case at h = 0.025, L = 1 (the grid's model)
    grid = open_results(store, "grid", stacked=True)
    (gi,) = np.flatnonzero(np.isclose(grid["h"].values, 0.025))
    (si,) = np.flatnonzero(np.isclose(ds["h"].values, 0.025) & (ds["model.L"].values == 1.0))
    for m in REFERENCE_METRICS:
        np.testing.assert_array_equal(ds[m].values[si], grid[m].values[gi], err_msg=m)
    # the reference the search stored for L = 1 is the grid's reference
    import zarr

    spec = parse_study(path.read_text(), source=str(path))
    keys, per_block = search_references(spec)
    assert len(keys) == 2 and sorted(per_block["err"]) == [0, 1]
    plan = _cli("plan", str(path), "--json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["n_search_references"] == 2
    sref = zarr.open_group(str(store / "search"), mode="r")["reference"]
    gref = zarr.open_group(str(store), mode="r")["reference"]["r0"]
    i1 = per_block["err"][0]  # combination 0: L = 1.0
    assert dict(sref[f"r{i1}"].attrs)["model_params"]["L"] == 1.0
    np.testing.assert_array_equal(sref[f"r{i1}"]["q"][:], gref["q"][:])

    # every case, with its reference, run directly here (L = 1.5: no grid block holds it)
    (search,) = spec.searches
    for j in range(ds.sizes["case"]):
        coords = {"h": float(ds["h"].values[j]), "model.L": float(ds["model.L"].values[j])}
        want = _direct(spec, search, coords)
        for m in REFERENCE_METRICS:
            np.testing.assert_array_equal(ds[m].values[j], want[m], err_msg=f"{m} {coords}")


def test_refine_search_of_the_global_error_falls_with_rk4_order(mixed):
    store, _, _ = mixed
    ds = open_results(store, "search/err")
    assert ds.attrs["done"] and ds.attrs["goal"] == "refine"
    for length in (1.0, 1.5):
        sel = ds["model.L"].values == length
        h = ds["h"].values[sel].astype(float)
        err = ds["e_final"].values[sel].astype(float)
        assert sel.sum() == 9 and (err > 0).all()
        order = np.argsort(h)
        assert (np.diff(err[order]) > 0).all()  # the error falls with h, monotonically
        slope = np.polyfit(np.log(h), np.log(err), 1)[0]
        # RK4's global error is C h^4 (1 + O(h)): the fitted slope is 4 plus the bias of
        # the coarse end (h = 0.05, where one halving gains a factor ~20 = 2^4.3); 0.5 is
        # half the distance to the neighbouring orders 3 and 5, so a method of another
        # order, or errors against a wrong reference (flat at its own error), fail
        assert abs(slope - 4.0) < 0.5, (length, slope)


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def test_relaunch_reuses_the_stored_references_and_failed_cases_keep_their_error(tmp_path):
    from distributed import Client, LocalCluster
    from mbstudy.pipeline.run.search import run_searches

    store = tmp_path / "fail.zarr"
    path = _write(tmp_path, FAILING, store)
    spec = parse_study(path.read_text(), source=str(path))
    # one round, then stopped (as a killed launch would leave it)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        first = run_searches(spec, store, client, max_rounds=1)
    assert first.exit_code == 130 and first.references_run == 2
    assert first.references_reused == 0
    refs = _files(store / "reference")
    assert refs

    again = _cli("launch", str(path), "--workers", "2", "--resume")
    assert again.returncode == 0, again.stderr
    assert "search references: 0 computed, 2 stored (reused)" in again.stdout
    assert _files(store / "reference") == refs  # not one byte rewritten

    ds = open_results(store, "fb")
    assert ds.attrs["done"] and int(ds.attrs["rounds"]) >= 2
    bad = ds["model.L3"].values == 0.01
    assert bad.any() and (~bad).any()
    assert (ds["status"].values[bad] == ERROR).all()
    for text in ds["error"].values[bad]:
        assert "AssemblyError" in text and "cannot be assembled" in text
    assert (ds["error"].values[~bad] == "").all()
    ok = ds["status"].values == OK
    assert (ok & ~bad).any() and np.isfinite(ds["e_final"].values[ok]).all()
    # the error text is the one the case gives when run directly
    with pytest.raises(Exception, match="cannot be assembled"):
        run_case("fourbar", "baumgarte", "rk4", t_end=0.5, samples=6,
                 model_params={"L3": 0.01}, integrator_params={"h": 0.1})  # fmt: skip
    import zarr

    r = zarr.open_group(str(store), mode="r")["reference"]
    states = sorted(int(r[k].attrs["status"]) for k in r.group_keys())
    assert states == sorted([OK, ERROR])


def test_a_fixed_step_reference_must_divide_a_search_block_s_output_interval():
    """The reference is run at the search cases' output times, so its h is checked
    against each search block's window as against each grid block's."""
    from mbstudy.pipeline.study import StudyError

    text = """
[study]
name = "s"
model = "pendulum"
t_end = 1.0
samples = 11

[reference]
integrator = "rk4"
formulation = "qr"
h = 0.05

[[search]]
name = "err"
formulation = "qr"
integrator = "rk4"
samples = 41
h = { log = [0.004, 0.025] }
goal = { refine = "e_final" }
budget = 9
"""
    with pytest.raises(StudyError) as info:  # 0.05 does not divide 1/40
        parse_study(text, source="s.toml")
    assert info.value.key == "reference.h" and "1/40" in info.value.message
    assert parse_study(text.replace("samples = 41", "samples = 21"), source="s.toml")
