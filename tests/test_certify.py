"""``mbstudy certify``: orders and tolerance proportionality against the independent
reference, the JSON shape, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json

import pytest
from mbstudy.pipeline.analysis import certify as cert_mod
from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

runner = CliRunner()


def _json(args: list[str]):
    res = runner.invoke(app, ["certify", *args, "--json"])
    return res, (json.loads(res.stdout) if res.stdout.strip().startswith("{") else None)


def test_rk4_observes_order_four_on_the_pendulum():
    res, out = _json(["rk4", "--model", "pendulum"])
    assert res.exit_code == 0, res.output
    assert set(out) >= {"method", "observed_order", "checks"}
    assert out["method"] == "rk4" and out["declared_order"] == 4
    # four halvings of h in the asymptotic range: the fitted slope is 4 within 0.3
    assert out["observed_order"] == pytest.approx(4.0, abs=0.3)
    names = {c["name"] for c in out["checks"]}
    assert {"order[pendulum]", "phi[pendulum]", "dphi[pendulum]", "ddphi[pendulum]",
            "energy_drift[pendulum]", "finite[pendulum]", "multipliers[pendulum]"} <= names
    for c in out["checks"]:
        assert set(c) == {"name", "passed", "value", "expected"} and c["passed"] is True


def test_an_adaptive_method_is_tolerance_proportional_and_has_no_order():
    res, out = _json(["dopri5", "--model", "pendulum"])
    assert res.exit_code == 0, res.output
    assert out["observed_order"] is None
    (prop,) = [c for c in out["checks"] if c["name"].startswith("tolerance_proportionality")]
    assert prop["passed"] and 0 < prop["value"] <= cert_mod.PROPORTIONALITY_BOUND


def test_a_failing_check_exits_1_and_is_marked(monkeypatch):
    monkeypatch.setattr(cert_mod, "PROPORTIONALITY_BOUND", 1e-6)  # no method meets it
    res = runner.invoke(app, ["certify", "dopri5", "--model", "pendulum"])
    assert res.exit_code == 1, res.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("tolerance_prop"))
    assert "FAIL" in line


@pytest.mark.parametrize(("args", "says"), [
    (["rk5"], "unknown integrator 'rk5'"),
    (["rk4", "--formulation", "nope"], "unknown formulation"),
    (["rk4", "--model", "nomodel"], "unknown model"),
    (["genalpha", "--formulation", "none"], "does not take formulation 'none'"),
    (["rk4", "--model", "network"], "element network"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, says):
    res = runner.invoke(app, ["certify", *args])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in res.output


def test_the_order_fit_is_the_least_squares_slope():
    import numpy as np

    h = np.array([0.1, 0.05, 0.025, 0.0125])
    assert cert_mod._fit_slope(h, 3.0 * h**2.5) == pytest.approx(2.5, rel=1e-12)
