"""Grid expansion: case order, coordinates, case ids, references, batches, the plan."""

from __future__ import annotations

import json
import math
import pickle
import textwrap
import time

import numpy as np
import pytest
from mbstudy.pipeline.plan.batches import (
    ADAPTIVE_STEPS,
    BATCH_SECONDS,
    MAX_BATCH,
    MIN_BATCH_SECONDS,
    MIN_BATCHES,
    auto_batch_size,
    estimate_case_seconds,
)
from mbstudy.pipeline.plan.grid import (
    BlockGrid,
    CaseParams,
    Grid,
    ReferenceKey,
    expand_grid,
)
from mbstudy.pipeline.plan.summary import plan_summary
from mbstudy.pipeline.study import parse_study

from tests.conftest import load_fakes

fakes = load_fakes()


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    fakes.install(monkeypatch)


def study(*parts: str) -> str:
    return "\n".join(textwrap.dedent(p) for p in parts)


HEAD = """
[study]
name = "g"
model = "toy"
t_end = 1.0
samples = 101
"""

# interval 0.01
BLOCK = """
[[runs]]
name = "a"
formulation = "obs"
integrator = "rk"
h = [0.01, 0.005]
omega_n = [5.0, 20.0, 100.0]
omega_o = 50.0
xi = [1.0, 1.0, 2.0]
model.label = ["a", "b"]
zip = [["omega_n", "xi"]]
"""


def all_distinct(a: np.ndarray) -> bool:
    """No repeated value (np.sort: np.unique of 10^6 uint64 takes seconds on NumPy 2.4)."""
    s = np.sort(a)
    return bool(np.all(s[1:] != s[:-1]))


def grid_of(*parts: str, **kw) -> tuple:
    spec = parse_study(study(*parts), **kw)
    return spec, expand_grid(spec)


def test_shape_and_c_order_with_zip_at_first_member():
    _, grid = grid_of(HEAD, BLOCK)
    assert isinstance(grid, Grid)
    (block,) = grid.blocks
    assert isinstance(block, BlockGrid)
    assert block.axis_names == ("h", "omega_n", "xi", "model.label")
    assert [d.names for d in block.dims] == [("h",), ("omega_n", "xi"), ("model.label",)]
    assert block.shape == (2, 3, 2)
    assert block.n_cases == grid.n_cases == 12
    for i in range(block.n_cases):
        ih, iz, il = np.unravel_index(i, block.shape)
        c = block.case_params(i).coords_dict
        assert c["h"] == (0.01, 0.005)[ih]
        assert (c["omega_n"], c["xi"]) == ((5.0, 1.0), (20.0, 1.0), (100.0, 2.0))[iz]
        assert c["model.label"] == ("a", "b")[il]


def test_zip_group_placed_at_its_first_member_in_file_order():
    text = study(
        HEAD,
        "[[runs]]\nformulation='stab'\nintegrator='rk'\nxi=[1.0, 2.0]\n"
        "h=[0.01, 0.005, 0.0025]\nomega_n=[5.0, 6.0]\nzip=[['omega_n', 'xi']]",
    )
    (block,) = expand_grid(parse_study(text)).blocks
    assert [d.names for d in block.dims] == [("xi", "omega_n"), ("h",)]
    assert block.shape == (2, 3)
    assert block.axis_names == ("xi", "h", "omega_n")
    assert block.case_params(1).coords == (("xi", 1.0), ("h", 0.005), ("omega_n", 5.0))


def test_case_params_are_fully_resolved():
    _, grid = grid_of(HEAD, "[model]\nmass = 4.0", BLOCK)
    (block,) = grid.blocks
    case = block.case_params(7)
    assert isinstance(case, CaseParams)
    assert (case.model, case.formulation, case.integrator) == ("toy", "obs", "rk")
    assert (case.t_end, case.samples) == (1.0, 101)
    assert case.model_dict == {"L": 1.0, "mass": 4.0, "n_links": 2, "label": "b", "damped": False}
    assert case.formulation_dict == {"omega_n": 5.0, "xi": 1.0, "omega_o": 50.0}
    assert case.integrator_dict == {"h": 0.005}
    assert case.coords == (("h", 0.005), ("omega_n", 5.0), ("xi", 1.0), ("model.label", "b"))
    assert case.flat()["model.mass"] == 4.0 and case.flat()["omega_o"] == 50.0
    assert case.block == "a" and case.index == 7
    assert case.case_id == int(block.case_ids()[7])
    assert case.ref_index == int(block.ref_index()[7])
    with pytest.raises(IndexError):
        block.case_params(12)
    with pytest.raises(IndexError):
        block.case_params(-1)


def test_axis_values_dtypes_and_consistency():
    text = study(
        HEAD,
        "[[runs]]\nformulation='plain'\nintegrator='vi'\nh=[0.01, 0.005]\n"
        "order=[2, 3]\nmodel.damped=[true, false]\nmodel.label=['a', 'c']",
    )
    (block,) = expand_grid(parse_study(text)).blocks
    h = block.axis_values("h")
    assert h.dtype == np.float64 and h.shape == (block.n_cases,)
    assert block.axis_values("order").dtype == np.int64
    assert block.axis_values("model.damped").dtype == np.bool_
    assert block.axis_values("model.label").dtype.kind == "U"
    for i in range(block.n_cases):
        coords = block.case_params(i).coords_dict
        for name in block.axis_names:
            assert block.axis_values(name)[i] == coords[name]
    assert list(block.axis_values("h", 4, 8)) == list(h[4:8])
    with pytest.raises(KeyError, match="not an axis"):
        block.axis_values("omega_n")


def test_block_without_axes_has_one_case():
    _, grid = grid_of(HEAD, "[[runs]]\nformulation='plain'\nintegrator='ode45'")
    (block,) = grid.blocks
    assert block.shape == () and block.n_cases == 1 and block.n_batches == 1
    assert block.case_params(0).coords == ()
    assert block.case_ids().shape == (1,)
    assert block.batch_range(0) == (0, 1)


def test_batches_cover_every_case_once_and_match_chunks():
    spec, grid = grid_of(HEAD.replace("samples = 101", "samples = 101\nbatch_size = 5"), BLOCK)
    (block,) = grid.blocks
    assert block.batch_size == 5 == spec.runs[0].batch_size
    assert block.n_batches == 3
    assert block.batches() == [(0, 5), (5, 10), (10, 12)]
    assert grid.n_batches == 3
    with pytest.raises(IndexError):
        block.batch_range(3)


def test_auto_batch_size_follows_the_cost_model():
    # rk: steps = t_end / h; toy with n_links = 2: n + m = 10, 100 * 2e-8 s per step
    text = study(
        HEAD,
        "[[runs]]\nformulation='stab'\nintegrator='rk'\nh=1e-4\n"
        "omega_n=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]",
    )
    _, grid = grid_of(text.replace("t_end = 1.0", "t_end = 1.0\nmax_cases = 100"))
    (block,) = grid.blocks
    cost = 1.0 / 1e-4 * 100 * 2e-8  # 0.02 s per case
    assert estimate_case_seconds(block) == pytest.approx(cost)
    assert block.batch_size == 10  # 25 wanted, clamped to n_cases
    many = text.replace(
        "omega_n=[1.0", "omega_n=[" + ", ".join(f"{k}.5" for k in range(40)) + ", 1.0"
    )
    (block,) = expand_grid(parse_study(many)).blocks
    assert block.batch_size == 25
    # adaptive: ADAPTIVE_STEPS steps
    text = study(
        HEAD,
        "[[runs]]\nformulation='plain'\nintegrator='ode45'\n"
        "rtol=[1e-3, 1e-4, 1e-5]\nmodel.n_links=[1, 3]",
    )
    _, grid = grid_of(text)
    (block,) = grid.blocks
    mean = ADAPTIVE_STEPS * 2e-8 * (25 + 225) / 2
    assert estimate_case_seconds(block) == pytest.approx(mean)
    assert block.batch_size == min(6, round(0.5 / mean))
    assert auto_batch_size(block) == block.batch_size


def _rk_block(n_omega: int, n_xi: int):
    omega = ", ".join(f"{1.0 + 0.5 * k}" for k in range(n_omega))
    xi = ", ".join(f"{0.1 + 0.01 * k}" for k in range(n_xi))
    text = study(
        HEAD.replace("t_end = 1.0", "t_end = 1.0\nmax_cases = 1000000"),
        f"[[runs]]\nformulation='stab'\nintegrator='rk'\nh=1e-4\nomega_n=[{omega}]\nxi=[{xi}]",
    )
    (block,) = expand_grid(parse_study(text)).blocks
    return block


def test_auto_batch_size_splits_mid_size_blocks_into_min_batches():
    # 0.02 s per case: a 2 s batch would be 100 cases, but 1,000 cases then make only 10
    # tasks; the block is split into MIN_BATCHES batches instead (each still >= 0.5 s)
    block = _rk_block(40, 25)
    cost = estimate_case_seconds(block)
    assert block.n_cases / (BATCH_SECONDS / cost) < MIN_BATCHES
    assert block.batch_size == math.ceil(block.n_cases / MIN_BATCHES)
    assert block.n_batches == MIN_BATCHES
    assert block.batch_size * cost >= MIN_BATCH_SECONDS


def test_auto_batch_size_aims_at_batch_seconds_for_long_blocks():
    block = _rk_block(100, 100)  # 10^4 cases: plenty of batches at 2 s each
    cost = estimate_case_seconds(block)
    assert block.batch_size == round(BATCH_SECONDS / cost)
    assert block.n_batches > MIN_BATCHES


def test_auto_batch_size_is_clamped_to_max_batch():
    values = ", ".join(str(1.0 + k) for k in range(5000))
    # 100 steps x 25 x 2e-8 s = 5e-5 s per case: 10^4 per batch wanted
    text = study(
        HEAD,
        f"[[runs]]\nformulation='stab'\nintegrator='rk'\nomega_n=[{values}]\n"
        "h=0.01\nmodel.n_links=1",
    )
    (block,) = expand_grid(parse_study(text)).blocks
    assert block.batch_size == MAX_BATCH
    assert block.n_batches == 2


def test_case_ids_unique_stable_and_independent_of_block_name():
    _, grid = grid_of(HEAD, BLOCK)
    ids = grid.blocks[0].case_ids()
    assert ids.dtype == np.uint64 and all_distinct(ids)
    renamed = BLOCK.replace('name = "a"', 'name = "other"')
    _, again = grid_of(HEAD, renamed)
    assert np.array_equal(again.blocks[0].case_ids(), ids)
    # fixed vs swept with one value, written defaults, int vs float: the same cases
    same = BLOCK.replace("omega_o = 50.0", "omega_o = [50]") + "model.mass = 2\n"
    _, third = grid_of(HEAD, same)
    assert np.array_equal(third.blocks[0].case_ids(), ids)
    # a different value: different ids
    _, other = grid_of(HEAD, BLOCK.replace("omega_o = 50.0", "omega_o = 51.0"))
    assert not set(other.blocks[0].case_ids()) & set(ids)
    # ranges
    assert np.array_equal(grid.blocks[0].case_ids(3, 9), ids[3:9])


def test_case_ids_pinned_value():
    """The id scheme is part of the store format: changing it must be deliberate. The
    literal is the id of this case under "mbstudy-case-v1" (blake2b-64 digests of the
    context and of every (group, name, value), XORed, then splitmix64's finaliser)."""
    _, grid = grid_of(HEAD, "[[runs]]\nformulation='stab'\nintegrator='rk'\nh=0.01")
    assert grid.blocks[0].case_ids()[0] == np.uint64(1825375140984226891)
    assert grid.blocks[0].case_id(0) == 1825375140984226891


def test_same_case_in_two_blocks_has_the_same_id():
    text = study(
        HEAD,
        "[[runs]]\nname='x'\nformulation='stab'\nintegrator='rk'\nh=[0.01, 0.005]\nxi=2.0",
        "[[runs]]\nname='y'\nformulation='stab'\nintegrator='rk'\nxi=[1.0, 2.0]\nh=0.005",
    )
    x, y = expand_grid(parse_study(text)).blocks
    assert x.case_ids()[1] == y.case_ids()[1]  # h = 0.005, xi = 2.0 in both
    assert x.case_ids()[0] != y.case_ids()[0]


def test_references_one_per_model_parameter_set():
    text = study(
        HEAD,
        BLOCK,
        "[[runs]]\nname='b'\nformulation='plain'\nintegrator='ode45'\nmodel.label=['c', 'a']",
        "[[runs]]\nname='c'\nformulation='plain'\nintegrator='ode45'\nt_end=0.5\nsamples=51",
    )
    _, grid = grid_of(text)
    keys = grid.references
    assert all(isinstance(k, ReferenceKey) for k in keys)
    labels = [(k.t_end, k.samples, k.model_dict["label"]) for k in keys]
    assert labels == [(0.5, 51, "a"), (1.0, 101, "a"), (1.0, 101, "b"), (1.0, 101, "c")]
    a, b, c = grid.blocks
    for block in (a, b, c):
        ref = block.ref_index()
        assert ref.dtype == np.int32 and ref.shape == (block.n_cases,)
        for i in range(block.n_cases):
            case = block.case_params(i)
            key = keys[ref[i]]
            assert key.model_params == case.model_params
            assert (key.t_end, key.samples) == (case.t_end, case.samples)
    assert list(c.ref_index()) == [0]


def test_reference_order_does_not_depend_on_block_order():
    b1 = "[[runs]]\nname='b'\nformulation='plain'\nintegrator='ode45'\nmodel.label=['c', 'a']"
    b2 = "[[runs]]\nname='d'\nformulation='plain'\nintegrator='ode45'\nmodel.mass=[3.0, 1.0]"
    g1 = grid_of(HEAD, b1, b2)[1]
    g2 = grid_of(HEAD, b2, b1)[1]
    assert g1.references == g2.references
    assert list(g1.block("b").ref_index()) == list(g2.block("b").ref_index())


def test_grid_is_picklable_and_block_lookup():
    _, grid = grid_of(HEAD, BLOCK)
    again = pickle.loads(pickle.dumps(grid))
    assert again == grid
    assert np.array_equal(again.blocks[0].case_ids(), grid.blocks[0].case_ids())
    assert grid.block("a") is grid.blocks[0]
    with pytest.raises(KeyError):
        grid.block("zz")


def test_plan_summary_is_json_and_counts():
    spec, grid = grid_of(HEAD, BLOCK, "[output]\nseries=['phi_norm', 'q']")
    plan = plan_summary(spec, grid)
    text = json.dumps(plan)
    assert json.loads(text) == plan
    assert plan["study"] == "g" and plan["model"] == "toy"
    assert plan["spec_hash"] == spec.spec_hash
    assert plan["n_cases"] == 12 and plan["n_batches"] == grid.n_batches
    assert plan["n_references"] == 2
    assert plan["rejected"] == []
    (blk,) = plan["blocks"]
    assert blk["name"] == "a"
    assert blk["axes"] == {
        "h": [0.01, 0.005],
        "omega_n": [5.0, 20.0, 100.0],
        "xi": [1.0, 1.0, 2.0],
        "model.label": ["a", "b"],
    }
    assert blk["zip"] == [["omega_n", "xi"]]
    assert blk["fixed"] == {"omega_o": 50.0}
    assert blk["n_cases"] == 12 and blk["batch_size"] == grid.blocks[0].batch_size
    # n = 6 (two links): metrics + coords + status/done/id + series (1 + 6) x samples
    per_case = 30 * 8 + (8 + 8 + 8 + 4) + 1 + 1 + 8 + 7 * 101 * 8
    assert blk["est_bytes"] == per_case * 12
    assert plan["est_store_bytes"] == per_case * 12 + 2 * (101 * 13 * 8 + 7 * 4096)  # 2 refs
    assert plan["est_cpu_s"] > 0


def test_million_case_plan_completes():
    """10^6 cases: expansion, plan and ids without per-case objects (not a timing test)."""
    ks = ", ".join(str(k) for k in range(1, 101))
    text = study(
        "[study]\nname = 'big'\nmodel = 'toy'\nt_end = 1.0\nsamples = 101\n",
        "[[runs]]\nformulation = 'stab'\nintegrator = 'rk'",
        "h = [" + ", ".join(repr(0.01 / k) for k in range(1, 101)) + "]",
        f"omega_n = [{ks}]",
        f"xi = [{ks}]",
    )
    t0 = time.perf_counter()
    spec = parse_study(text)
    grid = expand_grid(spec)
    plan = plan_summary(spec, grid)
    t1 = time.perf_counter()
    (block,) = grid.blocks
    ids = block.case_ids()
    xi = block.axis_values("xi")
    ref = block.ref_index()
    t2 = time.perf_counter()
    assert plan["n_cases"] == grid.n_cases == 10**6
    assert ids.shape == xi.shape == ref.shape == (10**6,)
    assert all_distinct(ids)
    assert block.case_params(123456).coords_dict["xi"] == xi[123456]
    print(f"10^6 cases: load+expand+plan {t1 - t0:.2f} s, ids+coords+refs {t2 - t1:.2f} s")
