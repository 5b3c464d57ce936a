"""Tiered execution (pipeline/plan/engines.py): a kernel runs compiled or as the
same generated code interpreted, with the same numbers, and the store says which.

- the interpreted kernel gives bitwise the metrics, series and trajectories of the
  compiled one (every stored number but the timings), for fixed-step and adaptive,
  projected and index-1 triples of two models;
- the policy: a cached kernel runs compiled, an uncached one runs interpreted only when
  its cases cost less than a compile, ``compiled`` / ``python`` force it;
- real launches (LocalCluster, real Zarr stores): with empty kernel and numba caches
  ``auto`` interprets every kernel and compiles none, the store's ``engine`` flag says
  ``python`` and the analysis leaves those wall times out; with the kernel cached,
  ``auto`` runs it compiled.

The compiled kernels used are the ones other tests compile anyway (test_optimized_kernels,
the plot store), so this file compiles nothing new into the shared cache.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.plan.engines import (
    COMPILE_SECONDS,
    choose_engines,
    interpreted_factor,
)
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.plan.purepy import pure_kernel
from mbstudy.pipeline.run.batch import engine_kernel, run_one
from mbstudy.pipeline.store.reader import case_table
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.metrics import TIME_METRICS
from mbstudy.solvers.reference import compute_reference
from mbstudy.solvers.runner import run_case

from tests.conftest import fourbar_study_head, mbstudy_command

SERIES = ("q", "v", "lam", "phi_norm", "dphi_norm", "ddphi_norm", "energy")

# (model, formulation, integrator, t_end, formulation params, integrator params)
TRIPLES = [
    ("fourbar", "none", "rk4", 0.5, {}, {"h": 0.0025}),
    ("fourbar", "baumgarte", "rk4", 0.5, {"omega_n": 20.0}, {"h": 0.0025}),
    ("fourbar", "projection", "dopri5", 0.5, {}, {"rtol": 1e-10, "atol": 1e-12}),
    ("andrews", "projection", "dopri5", 0.01, {}, {"rtol": 1e-8, "atol": 1e-8}),
]


@pytest.mark.parametrize("model,formulation,integrator,t_end,fp,ip", TRIPLES)
def test_interpreted_kernel_gives_bitwise_the_compiled_numbers(
    model, formulation, integrator, t_end, fp, ip
):
    """Every stored metric (timings aside), every series and the raw trajectory and
    counters: bitwise equal. Both engines run the same statements in the same order on
    IEEE doubles (no fast-math, so LLVM may not reassociate or contract)."""
    kw = dict(t_end=t_end, samples=11, formulation_params=fp, integrator_params=ip)
    compiled = run_case(model, formulation, integrator, **kw)
    interpreted = run_case(model, formulation, integrator, **kw,
                           kernel=pure_kernel(model, formulation, integrator))  # fmt: skip
    assert compiled.status == 0 and interpreted.status == 0
    for name in ("Y", "D", "counters"):
        a, b = getattr(compiled, name), getattr(interpreted, name)
        assert np.array_equal(a, b, equal_nan=True), name
    # and through the launch's own path: reference, metrics and series
    text = fourbar_study_head("eq", t_end, 11).replace('"fourbar"', f'"{model}"') + f"""
[[runs]]
formulation = "{formulation}"
integrator = "{integrator}"
""" + "".join(f"{k} = {v!r}\n" for k, v in {**fp, **ip}.items())
    study = parse_study(text)
    grid = expand_grid(study)
    key = grid.references[0]
    ref = study.reference
    cp = grid.blocks[0].case_params(0)
    out = {}
    for engine in ("compiled", "python"):
        kernel = engine_kernel(engine, model, ref.formulation, ref.integrator)
        reference = compute_reference(model, dict(key.model_params), ref.integrator,
                                      ref.formulation, dict(ref.params), key.t_end,
                                      key.samples, kernel=kernel)  # fmt: skip
        out[engine] = (reference, run_one(cp, reference, SERIES,
                                          engine_kernel(engine, model, formulation, integrator)))
    (rc, (sc, mc, serc, ec)), (rp, (sp, mp, serp, ep)) = out["compiled"], out["python"]
    assert np.array_equal(rc.q, rp.q) and np.array_equal(rc.v, rp.v)
    assert rc.error_estimate == rp.error_estimate
    assert sc == sp == 0 and ec == ep == ""
    assert mc.keys() == mp.keys()
    for name in mc:
        if name not in TIME_METRICS:
            assert np.array_equal(mc[name], mp[name], equal_nan=True), name
    assert serc.keys() == serp.keys() == set(SERIES)
    for name in serc:
        assert np.array_equal(serc[name], serp[name], equal_nan=True), name


STUDY = fourbar_study_head("engines", 0.2, 11) + """
[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = [0.01, 0.005]

[output]
series = ["phi_norm"]
"""


def _choices(cached, policy="auto", text=STUDY, spent=lambda t: 0.0):
    study = parse_study(text)
    return study, choose_engines(study, expand_grid(study), policy, cached=cached, spent=spent)


def test_rent_or_buy_compiles_once_earlier_launches_have_paid_for_it():
    """A kernel interpreted in earlier launches compiles once the interpreted time paid so
    far plus this launch's would reach the price of a compile (ski rental)."""
    _, got = _choices(lambda t: False)
    block = got[("fourbar", "none", "rk4")]
    assert block.engine == "python" and block.spent_s == 0.0
    paid = COMPILE_SECONDS - block.interpreted_s / 2  # this launch would tip it over
    _, got = _choices(lambda t: False, spent=lambda t: paid)
    block = got[("fourbar", "none", "rk4")]
    assert block.engine == "compiled" and block.spent_s == paid
    price = f">= ~{COMPILE_SECONDS:.0f} s compile"
    assert f"+ ~{paid:.0f} s in earlier launches {price}" in block.reason
    _, got = _choices(lambda t: False, spent=lambda t: COMPILE_SECONDS - 2 * block.interpreted_s)
    assert got[("fourbar", "none", "rk4")].engine == "python"  # still below: rent again
    # --engine python is obeyed whatever was paid
    _, got = _choices(lambda t: False, "python", spent=lambda t: 1e9)
    assert {c.engine for c in got.values()} == {"python"}


def test_the_interpreted_total_accumulates_per_kernel_and_survives_bad_records(
    tmp_path, monkeypatch
):
    from mbstudy.solvers import kernel_cache

    monkeypatch.setenv("MBSTUDY_KERNEL_DIR", str(tmp_path / "k"))
    t = ("fourbar", "none", "rk4")
    assert kernel_cache.interpreted_seconds(t) == 0.0
    kernel_cache.add_interpreted_seconds(t, 3.0)
    kernel_cache.add_interpreted_seconds(t, 4.5)
    assert kernel_cache.interpreted_seconds(t) == pytest.approx(7.5)
    assert kernel_cache.interpreted_seconds(("fourbar", "baumgarte", "rk4")) == 0.0
    (record,) = (tmp_path / "k" / "interpreted").iterdir()
    assert record.name.startswith("mbk_fourbar_none_rk4_")
    for bad in ("nan", "-5", "garbage", "\x00\xff"):
        record.write_text(bad, encoding="latin-1")
        assert kernel_cache.interpreted_seconds(t) == 0.0
    # the record is a cache entry: `mbstudy cache --prune` removes it once its key is stale
    stale = record.with_name("mbk_fourbar_none_rk4_0000000000000000.txt")
    stale.write_text("9\n")
    states = {e.key: e.state for e in kernel_cache.inventory()}
    assert states["mbk_fourbar_none_rk4_0000000000000000"] in ("stale", "orphan")


def test_auto_interprets_only_uncached_kernels_cheaper_than_a_compile():
    _, got = _choices(lambda t: False)
    assert [c.triple for c in got.values()] == [("fourbar", "projection", "dopri5"),
                                                 ("fourbar", "none", "rk4")]  # fmt: skip
    assert all(c.engine == "python" and c.interpreted_s < COMPILE_SECONDS for c in got.values())
    ref, block = got.values()
    assert ref.cases == 2 and block.cases == 2  # reference + check run; the two h
    assert block.reason.startswith("not cached; 2 runs ~")
    assert f"< ~{COMPILE_SECONDS:.0f} s compile" in block.reason
    # a cached kernel always runs compiled, whatever its cost
    _, got = _choices(lambda t: t == ("fourbar", "none", "rk4"))
    assert got[("fourbar", "none", "rk4")].engine == "compiled"
    assert got[("fourbar", "none", "rk4")].reason == "kernel cached"
    assert got[("fourbar", "projection", "dopri5")].engine == "python"
    # many cases: interpreting would cost more than compiling
    big = STUDY.replace("h = [0.01, 0.005]", "h = [0.00001, 0.000005]\nomega_n = 1.0") \
               .replace('"none"\nintegrator', '"baumgarte"\nintegrator')  # fmt: skip
    _, got = _choices(lambda t: False, text=big)
    block = got[("fourbar", "baumgarte", "rk4")]
    steps = 0.2 / 0.00001 + 0.2 / 0.000005
    assert block.cases == 2
    assert block.interpreted_s == pytest.approx(
        steps * 17**2 * 2e-8 * interpreted_factor("fourbar", "baumgarte", "rk4"))
    assert block.engine == "compiled" and f">= ~{COMPILE_SECONDS:.0f} s compile" in block.reason


def test_forced_policies_and_a_bad_policy():
    _, got = _choices(lambda t: True, "python")
    assert {c.engine for c in got.values()} == {"python"}
    _, got = _choices(lambda t: False, "compiled")
    assert {c.engine for c in got.values()} == {"compiled"}
    with pytest.raises(ValueError, match="--engine"):
        _choices(lambda t: False, "jit")


def _launch(tmp_path: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    study = tmp_path / "engines.toml"
    study.write_text(STUDY)
    return subprocess.run(
        [*mbstudy_command(), "launch", str(study), "--store", str(tmp_path / "s.zarr"),
         "--workers", "2", *extra],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_cold_launch_interprets_compiles_nothing_and_marks_the_store(tmp_path):
    """Empty kernel and numba caches: auto runs every kernel interpreted on a real
    LocalCluster, compiles nothing, and the store, the summary and the analysis say so."""
    env = dict(os.environ, MBSTUDY_KERNEL_DIR=str(tmp_path / "kernels"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))  # fmt: skip
    res = _launch(tmp_path, env)
    assert res.returncode == 0, res.stderr[-3000:]
    text = " ".join(res.stderr.split())  # the console wraps long lines
    assert "kernels ready: 0 compiled, 0 from cache, 2 interpreted" in text
    assert ("engine: 2 cases ran interpreted (projection+dopri5 not cached; 2 runs ~" in text
            and f"none+rk4 not cached; 2 runs ~0 s interpreted < ~{COMPILE_SECONDS:.0f} s compile)"
            in text)
    assert "launch --engine compiled, or mbstudy warm first, for timings" in text
    rs = ResultStore.open(tmp_path / "s.zarr")
    assert rs.read("none", "engine").tolist() == [1, 1]
    import zarr

    attrs = dict(zarr.open_array(str(tmp_path / "s.zarr" / "none" / "engine"), mode="r").attrs)
    assert attrs["flag_values"] == [0, 1] and attrs["flag_meanings"] == "compiled python"
    assert (rs.read("none", "status") == 0).all()
    assert np.isfinite(rs.read("none", "wall_s")).all()  # stored, but marked
    df = case_table(rs, "none")
    assert df["engine"].tolist() == ["python", "python"] and df["wall_s"].isna().all()
    assert np.isfinite(df["e_r"]).all()
    summary = rs.root_attrs()["last_launch"]
    assert summary["kernels"] == {} and summary["cases_python"] == 2
    assert {v["engine"] for v in summary["engines"].values()} == {"python"}
    numba_files = [p for p in (tmp_path / "numba").rglob("mbk_*")] if (
        tmp_path / "numba").exists() else []  # fmt: skip
    assert numba_files == []  # no kernel was compiled or cached
    # the aggregate table leaves the interpreted wall times out, and says so
    out = subprocess.run([*mbstudy_command(), "aggregate", str(tmp_path / "s.zarr"),
                          "--metric", "wall_s", "--metric", "e_r", "--format", "json"],
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    (title, rows), = json.loads(out.stdout).items()
    assert "2 cases ran interpreted and are left out" in title
    assert rows[0]["wall_s"] is None and rows[0]["e_r"] is not None
    # a work-precision plot over wall time has nothing to show, and says why
    out = subprocess.run([*mbstudy_command(), "plot", str(tmp_path / "s.zarr"), "--kind",
                          "work-precision", "--metric", "e_r", "--out", str(tmp_path / "f")],
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no kernel timing" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_cached_kernel_runs_compiled_under_auto(tmp_path):
    """The shared cache holds fourbar none + rk4 (loaded or compiled here first, as the
    other tests do): auto runs that block compiled and records engine = compiled."""
    from mbstudy.solvers.kernel_cache import is_cached
    from mbstudy.solvers.runner import load_kernel

    load_kernel("fourbar", "none", "rk4")
    assert is_cached("fourbar", "none", "rk4")
    res = _launch(tmp_path, dict(os.environ), "--quiet")
    assert res.returncode == 0, res.stderr[-3000:]
    rs = ResultStore.open(tmp_path / "s.zarr")
    assert rs.read("none", "engine").tolist() == [0, 0]
    summary = rs.root_attrs()["last_launch"]
    assert summary["engines"]["fourbar/none/rk4"] == {
        "engine": "compiled", "reason": "kernel cached", "cases": 2}
    assert summary["kernels"]["fourbar/none/rk4"]["compiled"] is False  # loaded, not built
    df = case_table(rs, "none")
    assert df["engine"].tolist() == ["compiled", "compiled"] and df["wall_s"].notna().all()


def test_run_command_takes_the_engine_and_refuses_a_bad_one():
    """``mbstudy run --engine python`` gives the compiled run's metrics (timings aside)
    and says why it ran interpreted; an unknown engine is one line and exit status 2."""
    from mbstudy.pipeline.run.single import run_single

    args = ("fourbar", "none", "rk4", 0.2, 11, ["h=0.005"])
    py = run_single(*args, engine="python")
    comp = run_single(*args, engine="compiled")
    assert py["engine"] == "python" and comp["engine"] == "compiled"
    assert "ran interpreted (--engine python)" in py["note"]
    assert py["final"] == comp["final"]
    for name, value in comp["metrics"].items():
        if name not in TIME_METRICS:
            assert np.array_equal(value, py["metrics"][name], equal_nan=True), name
    res = subprocess.run([*mbstudy_command(), "run", "--model", "fourbar", "--engine", "jit"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        "mbstudy: error: --engine: expected auto, compiled or python, got 'jit'"]
