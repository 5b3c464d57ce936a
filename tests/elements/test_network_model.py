"""The ``network`` model: study validation of netlist / element keys, run_case dispatch,
and an end-to-end launch of studies/spring_damper.toml."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import StudyError, load_study
from mbstudy.solvers.elements import load_netlist, simulate
from mbstudy.solvers.elements.assembly import build_network
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_NEWTON, C_REJECTED, C_STEPS, OK
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
NETLIST = """\
# BASE: 1
# STRUCTURE:
K1 ' K (1 2; 20000)
MU ' MUNL (1 2; 1000)
M1 ' M (2; 0.1)
F1 ' FSIN (2 1; 1000, 0.2*pi, 0)
"""


def _study(tmp_path: Path, runs: str, model: str = 'netlist = "nets/sd.net"') -> Path:
    (tmp_path / "nets").mkdir(exist_ok=True)
    (tmp_path / "nets" / "sd.net").write_text(NETLIST)
    text = textwrap.dedent(f"""
        [study]
        name = "net"
        model = "network"
        t_end = 0.1
        samples = 11

        [model]
        {model}

        [[runs]]
        formulation = "none"
        """) + textwrap.dedent(runs)
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def _plan(path: Path):
    return CliRunner().invoke(app, ["plan", str(path)])


def test_element_axes_validate(tmp_path):
    path = _study(
        tmp_path,
        """
        integrator = "implicit"
        delta_l = [1e-3, 1e-4]
        variable = ["v", "x"]
        model.K1.k = [1e4, 2e4]
        model.MU.mu = 500.0
        """,
    )
    spec = load_study(path)
    run = spec.runs[0]
    assert dict(run.axes)["model.K1.k"] == (1e4, 2e4)
    assert dict(run.fixed)["model.MU.mu"] == 500.0
    assert run.n_cases == 8
    assert dict(spec.model_params)["netlist"] == str((tmp_path / "nets" / "sd.net").resolve())
    # reference: the same network, delta_l 1000x below the smallest swept value
    assert dict(spec.reference.integrator_params)["delta_l"] == pytest.approx(1e-7)
    assert spec.reference.integrator == "implicit"
    assert _plan(path).exit_code == 0


@pytest.mark.parametrize(
    ("line", "key", "text"),
    [
        (
            "model.K1.kk = [1.0, 2.0]",
            "runs[0].model.K1.kk",
            "unknown parameter 'kk' of element K1; did you mean 'k'? (K: k)",
        ),
        ("model.K9.k = [1.0, 2.0]", "runs[0].model.K9.k", "unknown element 'K9'"),
        ("model.K1 = 3.0", "runs[0].model.K1", "'K1' is an element"),
        ("model.M1.m = [-1.0]", "runs[0].model.M1.m[0]", "a number > 0"),
    ],
)
def test_bad_element_keys_are_exit_2_naming_the_key(tmp_path, line, key, text):
    path = _study(tmp_path, f'integrator = "implicit"\n{line}\n')
    res = _plan(path)
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert f"{key}: " in out and text in out, out
    with pytest.raises(StudyError) as err:
        load_study(path)
    assert "\n" not in str(err.value)


def test_unreadable_netlist_is_exit_2(tmp_path):
    path = _study(tmp_path, 'integrator = "implicit"\n', model='netlist = "nets/missing.net"')
    res = _plan(path)
    assert res.exit_code == 2, res.output
    assert "model.netlist" in res.output and "cannot read netlist" in res.output


def test_other_integrators_are_rejected_listing_the_allowed(tmp_path):
    path = _study(tmp_path, 'integrator = "rk4"\nh = 0.001\n')
    res = _plan(path)
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "runs[0].integrator" in out and "allowed: implicit" in out


def test_run_case_equals_simulate(tmp_path):
    net_path = tmp_path / "sd.net"
    net_path.write_text(NETLIST)
    ip = {"delta_l": 1e-4, "c": 0.7}
    res = run_case(
        "network",
        "none",
        "implicit",
        t_end=0.1,
        samples=11,
        model_params={"netlist": str(net_path), "K1.k": 15000.0},
        integrator_params=ip,
    )
    net = build_network(load_netlist(net_path)).with_params("K1", k=15000.0)
    sim = simulate(net, 0.1, res.t, ip)
    assert res.status == OK == sim.status
    np.testing.assert_array_equal(res.q, sim.x)
    np.testing.assert_array_equal(res.v, sim.v)
    np.testing.assert_array_equal(res.extra["a"], sim.a)
    assert res.counters[C_STEPS] == sim.counters["steps"]
    assert res.counters[C_REJECTED] == sim.counters["rejected"]
    assert res.counters[C_NEWTON] == sim.counters["newton_iters"]
    assert res.n == 1 and res.m == 0 and res.Y.shape == (11, 3)
    assert np.all(res.D[:, :3] == 0.0) and np.all(np.isnan(res.D[:, 3]))


def test_launch_spring_damper_study(tmp_path):
    study = REPO / "studies" / "spring_damper.toml"
    store = tmp_path / "sd.zarr"
    runner = CliRunner()
    res = runner.invoke(
        app, ["launch", str(study), "--store", str(store), "--workers", "2", "--quiet"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["status", str(store)])
    assert res.exit_code == 0 and "complete: True" in res.output, res.output
    rs = ResultStore(path=store)
    spec = load_study(study)
    for run in spec.runs:
        status = rs.read(run.name, "status")
        assert np.all(status == OK)
        for name in ("steps", "rejected", "newton_iters"):
            assert np.all(rs.read(run.name, name) >= (1 if name != "rejected" else 0))
        assert np.all(np.isfinite(rs.read(run.name, "e_r")))
    steps = rs.read("implicit", "steps")
    assert steps.max() > 10 * steps.min()  # delta_l 1e-2 .. 1e-5
