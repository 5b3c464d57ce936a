"""Property tests of grid expansion (Hypothesis), on the fake registry of ``fakes.py``.

Random studies of one or two blocks with fixed and swept method and model parameters
and zip groups, each written twice: once in a canonical key order and once shuffled
(sections, blocks, keys, comments, whitespace; swept keys keep their relative order,
which is the case order). Properties: the case count is the product of the dimension
lengths (a zip group counts once); case ids are unique and do not change with the
rendering, nor does spec_hash; case_params(i) agrees with axis_values at i and with an
independent resolution of the parameters; batches cover [0, n) exactly once and are
aligned with chunks; reordering the axes permutes the cases but keeps every case's id.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.study.parse import parse_study

from tests.conftest import load_fakes

fakes = load_fakes()


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    fakes.install(monkeypatch)


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

MODEL_PARAMS = ("L", "mass", "n_links", "label", "damped")
T_END = 1.0


# --------------------------------------------------------------------------------------
# strategies


def _values(draw, name: str, n: int, interval: float) -> list:
    if name in ("L", "mass", "omega_n", "xi", "omega_o", "rtol", "atol"):
        floats = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)
        return draw(st.lists(floats, min_size=n, max_size=n, unique=True))
    if name == "h":
        ks = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n, unique=True))
        return [interval / k for k in ks]
    if name == "max_steps":
        return draw(st.lists(st.integers(1, 10**9), min_size=n, max_size=n, unique=True))
    if name == "n_links":
        return draw(st.permutations([1, 2, 3, 4]))[:n]
    if name == "label":
        return draw(st.permutations(["a", "b", "c"]))[:n]
    if name == "damped":
        return draw(st.permutations([True, False]))[:n]
    raise AssertionError(name)


_MAX_LEN = {"n_links": 4, "label": 3, "damped": 2}


@st.composite
def blocks(draw, name: str, samples: int) -> dict:
    interval = T_END / (samples - 1)
    integ = draw(st.sampled_from(["ode45", "rk"]))
    pool = [
        "omega_n",
        "xi",
        "omega_o",
        *(["rtol", "atol", "max_steps"] if integ == "ode45" else ["h"]),
    ]
    method = draw(st.lists(st.sampled_from(pool), unique=True, max_size=4))
    for required in ("omega_o", "h"):
        if required in pool and required not in method:
            method.append(required)
    model = draw(st.lists(st.sampled_from(MODEL_PARAMS), unique=True, max_size=3))
    items = {}
    for key in [*method, *(f"model.{m}" for m in model)]:
        pname = key.removeprefix("model.")
        if draw(st.booleans()):
            n = draw(st.integers(1, min(4, _MAX_LEN.get(pname, 4))))
            items[key] = ("axis", _values(draw, pname, n, interval))
        else:
            items[key] = ("fixed", _values(draw, pname, 1, interval)[0])
    axes = [k for k, (kind, _) in items.items() if kind == "axis"]
    # zip groups: subsets of axes with equal lengths
    zips = []
    by_len: dict[int, list[str]] = {}
    for k in axes:
        by_len.setdefault(len(items[k][1]), []).append(k)
    for names in by_len.values():
        if len(names) >= 2 and draw(st.booleans()):
            group = draw(st.lists(st.sampled_from(names), unique=True, min_size=2))
            zips.append(group)
    return {"name": name, "integrator": integ, "items": items, "zip": zips}


@st.composite
def studies(draw) -> dict:
    samples = draw(st.sampled_from([2, 11, 101, 201]))
    n_blocks = draw(st.integers(1, 2))
    bs = draw(st.one_of(st.just("auto"), st.integers(1, 7)))
    return {
        "samples": samples,
        "batch_size": bs,
        "blocks": [draw(blocks(f"b{j}", samples)) for j in range(n_blocks)],
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


# --------------------------------------------------------------------------------------
# rendering


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise AssertionError(value)


def _interleave(rng: random.Random, lines_axes: list[str], lines_other: list[str]) -> list[str]:
    """Shuffle ``lines_other`` into ``lines_axes`` keeping the axes' relative order."""
    out = list(lines_axes)
    for line in rng.sample(lines_other, len(lines_other)):
        out.insert(rng.randint(0, len(out)), line)
    return out


def render(st_: dict, shuffle: bool = False, axis_order: dict | None = None) -> str:
    rng = random.Random(st_["seed"])
    blank = (lambda: rng.choice(["", "   ", "# note"])) if shuffle else (lambda: "")
    study_lines = [
        'name = "prop"',
        'model = "toy"',
        f"t_end = {T_END!r}",
        f"samples = {st_['samples']}",
    ]
    if st_["batch_size"] != "auto":
        study_lines.append(f"batch_size = {st_['batch_size']}")
    if shuffle:
        rng.shuffle(study_lines)
    sections = {"study": "[study]\n" + "\n".join(study_lines)}
    runs = []
    for blk in st_["blocks"]:
        items = blk["items"]
        keys = list(items) if axis_order is None else axis_order[blk["name"]]
        method = [k for k in keys if not k.startswith("model.")]
        model = [k for k in keys if k.startswith("model.")]

        def line(k, items=items):
            return f"{k.removeprefix('model.')} = {_toml(items[k][1])}"

        head = [
            f'name = "{blk["name"]}"',
            'formulation = "obs"',
            f'integrator = "{blk["integrator"]}"',
        ]
        if blk["zip"]:
            head.append("zip = " + _toml(blk["zip"]))
        m_axes = [line(k) for k in method if items[k][0] == "axis"]
        m_fixed = [line(k) for k in method if items[k][0] == "fixed"] + head
        d_axes = [line(k) for k in model if items[k][0] == "axis"]
        d_fixed = [line(k) for k in model if items[k][0] == "fixed"]
        if shuffle:
            body = _interleave(rng, m_axes, m_fixed)
            mbody = _interleave(rng, d_axes, d_fixed)
        else:
            body = m_fixed[-len(head) :] + m_fixed[: -len(head)] + m_axes
            mbody = d_fixed + d_axes
        text = "[[runs]]\n" + "\n".join(x for b in body for x in (b, blank()))
        if mbody:
            text += "\n[runs.model]\n" + "\n".join(mbody)
        runs.append(text)
    if shuffle:
        rng.shuffle(runs)
    sections["runs"] = "\n\n".join(runs)
    sections["output"] = '[output]\nseries = ["phi_norm"]'
    order = list(sections)
    if shuffle:
        rng.shuffle(order)
    return "\n\n".join(sections[k] for k in order) + "\n"


# --------------------------------------------------------------------------------------
# expectations


def expected_n_cases(blk: dict) -> int:
    axes = {k: v for k, (kind, v) in blk["items"].items() if kind == "axis"}
    zipped = {k for g in blk["zip"] for k in g}
    n = math.prod(len(v) for k, v in axes.items() if k not in zipped)
    return n * math.prod(len(axes[g[0]]) for g in blk["zip"])


def resolve(blk: dict, coords: dict) -> tuple[dict, dict, dict]:
    """Independent resolution: spec defaults <- fixed <- swept values."""
    integ = fakes.INTEGRATORS[blk["integrator"]]
    form = fakes.FORMULATIONS["obs"]
    model = fakes.MODELS["toy"]
    out = []
    for spec, prefix in ((model, "model."), (form, ""), (integ, "")):
        values = {}
        for prm in spec.params:
            key = prefix + prm.name
            if key in coords:
                v = coords[key]
            elif key in blk["items"]:
                v = blk["items"][key][1]
            else:
                v = prm.default
            values[prm.name] = float(v) if prm.kind == "float" else v
        out.append(values)
    return out[0], out[1], out[2]


def _picks(n: int) -> list[int]:
    return sorted({0, n - 1, *np.linspace(0, n - 1, min(n, 25)).astype(int).tolist()})


# --------------------------------------------------------------------------------------
# properties


@SETTINGS
@given(studies())
def test_grid_properties(study_data):
    spec = parse_study(render(study_data))
    grid = expand_grid(spec)
    assert grid.n_cases == sum(expected_n_cases(b) for b in study_data["blocks"])
    for blk, block in zip(study_data["blocks"], grid.blocks, strict=True):
        n = expected_n_cases(blk)
        assert block.n_cases == n == math.prod(block.shape)
        # ids: unique, and each equals the id of case_params(i)
        ids = block.case_ids()
        assert ids.dtype == np.uint64 and ids.shape == (n,)
        assert len(set(ids.tolist())) == n
        coords = {name: block.axis_values(name) for name in block.axis_names}
        refs = block.ref_index()
        for i in _picks(n):
            case = block.case_params(i)
            assert case.case_id == ids[i]
            assert case.ref_index == refs[i]
            assert grid.references[refs[i]].model_params == case.model_params
            for name, value in case.coords:
                assert coords[name][i] == value
            m, f, g = resolve(blk, case.coords_dict)
            assert case.model_dict == m
            assert case.formulation_dict == f
            assert case.integrator_dict == g
        # batches: cover [0, n) exactly once, chunk-aligned
        ranges = block.batches()
        assert len(ranges) == block.n_batches
        covered = np.concatenate([np.arange(a, b) for a, b in ranges])
        assert np.array_equal(covered, np.arange(n))
        assert all(a % block.batch_size == 0 for a, _ in ranges)
        assert all(b - a == block.batch_size for a, b in ranges[:-1])
        assert 1 <= block.batch_size <= max(1, n)


@SETTINGS
@given(studies())
def test_key_order_changes_nothing(study_data):
    a = parse_study(render(study_data))
    b = parse_study(render(study_data, shuffle=True))
    assert a.spec_hash == b.spec_hash
    ga, gb = expand_grid(a), expand_grid(b)
    assert ga.references == gb.references
    for block in ga.blocks:
        other = gb.block(block.name)
        assert other.shape == block.shape
        assert other.axis_names == block.axis_names
        assert np.array_equal(other.case_ids(), block.case_ids())
        assert np.array_equal(other.ref_index(), block.ref_index())
        for name in block.axis_names:
            assert np.array_equal(other.axis_values(name), block.axis_values(name))


@SETTINGS
@given(studies(), st.randoms(use_true_random=False))
def test_axis_order_permutes_cases_but_keeps_ids(study_data, rnd):
    order = {}
    for blk in study_data["blocks"]:
        keys = list(blk["items"])
        rnd.shuffle(keys)
        order[blk["name"]] = keys
    a = expand_grid(parse_study(render(study_data)))
    b = expand_grid(parse_study(render(study_data, axis_order=order)))
    for block in a.blocks:
        other = b.block(block.name)
        assert other.n_cases == block.n_cases
        assert sorted(other.case_ids().tolist()) == sorted(block.case_ids().tolist())
        # the same swept values have the same id in both layouts
        assert id_map(other) == id_map(block)


def id_map(block) -> dict:
    """{(swept values sorted by axis name): case id} over every case of a block."""
    names = sorted(block.axis_names)
    cols = [block.axis_values(n).tolist() for n in names]
    rows = list(zip(*cols, strict=True)) if cols else [()]
    return dict(zip(rows, block.case_ids().tolist(), strict=True))
