"""Default references of the mechanism library, singular LU cases, and the study files.

Kernel compiles dominate the cost (~15 s each on a shared machine), so the tests reuse a
small set of (model, formulation, integrator) triples: each model's default reference
triple (SPEC.reference) plus none + rk4 for the parallelogram and the N four-bar. The
rank drop of phi_q at the singular configurations is tested in test_nfourbar.py and
test_parallelogram.py (SVD numerical rank) and not repeated here.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers import registry
from mbstudy.solvers.reference import compute_reference
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK, SINGULAR

STUDIES = Path(__file__).resolve().parents[2] / "studies"

# model -> (model parameters, short interval, samples) for the default-reference check
SHORT = {
    "andrews": ({}, 0.01, 11),
    "manipulator": ({}, 0.5, 26),
    "parallelogram": ({}, 0.5, 26),
    "nfourbar": ({"n": 2}, 0.5, 26),
    "top": ({}, 0.2, 21),
}


def _reference(model: str, model_params: dict, t_end: float, samples: int, **override):
    ref = dict(importlib.import_module(f"mbstudy.solvers.models.{model}").SPEC.reference)
    ref.update(override)
    integ, form = ref.pop("integrator"), ref.pop("formulation")
    return compute_reference(model, model_params, integ, form, ref, t_end, samples)


@pytest.mark.parametrize("model", sorted(SHORT))
def test_default_reference_runs_ok_with_small_error_estimate(model: str) -> None:
    spec = importlib.import_module(f"mbstudy.solvers.models.{model}").SPEC
    assert spec.reference["formulation"] in registry.entries("formulation")
    assert spec.reference["integrator"] in registry.entries("integrator")
    mp, t_end, samples = SHORT[model]
    ref = _reference(model, mp, t_end, samples)
    assert ref.status == OK
    assert np.isfinite(ref.error_estimate)
    # the check run is 100x looser: its deviation bounds the reference's error
    assert ref.error_estimate < 1e-6


def test_andrews_reference_agrees_with_independent_scipy_integration() -> None:
    # docs/explanation/models.md#andrews: mbstudy's reference (its own dopri5 kernel, rtol 1e-12)
    # and an independent tight DOP853 on the index-1 form agree to better than 1e-9 relative.
    from mbstudy.solvers.models import andrews as mod

    ref = _reference("andrews", {}, 0.03, 31, rtol=1e-12, atol=1e-14)
    assert ref.status == OK
    p = kit.params(mod)
    q, _, _ = kit.integrate(mod, p, np.array([0.0, 0.03]), rtol=1e-13, atol=1e-15)
    rel = np.linalg.norm(ref.q[-1] - q[-1]) / np.linalg.norm(q[-1])
    assert rel < 1e-9


def test_parallelogram_plain_lu_is_singular_at_first_step() -> None:
    # docs/explanation/models.md#parallelogram: the augmented matrix of a redundant system is
    # singular; the kernel
    # reports it as status data, it does not raise.
    res = run_case("parallelogram", "none", "rk4", t_end=0.1, samples=11,
                   integrator_params={"h": 0.01})  # fmt: skip
    assert res.status == SINGULAR
    assert res.k_reached == 0  # only the initial row
    assert res.counters[0] == 0  # no accepted step


def test_nfourbar_plain_lu_through_first_horizontal_crossing() -> None:
    # docs/explanation/models.md#nfourbar: n = 2, the first horizontal (singular) position at t ~
    # 0.7144 s. Before it the LU run is fine; through it the kernel must return a status, not crash.
    from mbstudy.solvers.models import nfourbar as mod

    res = run_case("nfourbar", "none", "rk4", t_end=1.0, samples=51,
                   model_params={"n": 2}, integrator_params={"h": 0.001})  # fmt: skip
    t_cross = 0.7144
    before = res.t < t_cross - 0.02
    assert res.k_reached >= int(np.sum(before)) - 1
    p = kit.params(mod, n=2)
    q_exact, _ = mod.exact_reference(p, res.t[before])
    assert np.max(np.abs(res.q[before] - q_exact)) < 1e-6
    if res.status != OK:
        # the LU broke down at (or after) the crossing
        assert res.t[res.k_reached] >= t_cross - 0.02
    else:
        # the LU survived numerically (RK4 stages miss the exact singular point): the
        # trajectory exists but is not trusted across the crossing; it must stay finite
        assert np.all(np.isfinite(res.q))


def _study_files() -> list[Path]:
    return sorted(STUDIES.glob("*.toml"))


def _missing_names(path: Path) -> str | None:
    """Name the first model / formulation / integrator of ``path`` that is not registered."""
    registry.entries.cache_clear()
    data = tomllib.loads(path.read_text())
    wanted = [("model", data.get("study", {}).get("model"))]
    for block in [data.get("reference", {}), *data.get("runs", [])]:
        wanted += [("formulation", block.get("formulation")),
                   ("integrator", block.get("integrator"))]  # fmt: skip
    for kind, name in wanted:
        if kind == "model" and name is not None and name.endswith(".toml"):
            if not (path.parent / name).is_file():  # a mechanism file, beside the study
                return f"mechanism file {name!r} does not exist"
            continue
        if name is not None and name not in registry.entries(kind):
            return f"{kind} {name!r} is not in the registry"
    return None


@pytest.mark.parametrize("path", _study_files(), ids=lambda p: p.name)
def test_study_file_plans(path: Path) -> None:
    from mbstudy.pipeline.cli.app import app
    from typer.testing import CliRunner

    assert _missing_names(path) is None, _missing_names(path)
    result = CliRunner().invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
