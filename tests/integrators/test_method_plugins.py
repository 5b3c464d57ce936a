"""Methods brought from outside the package (solvers/registry.py ``plugins``): the worked
example examples/plugin-bs32, the Bogacki-Shampine 3(2) pair, registered under the
entry-point group ``mbstudy.integrators``.

- The plugin's tableau, run by mbstudy's driver and explicit stepper as plain Python,
  takes scipy's ``RK23`` steps (the same pair, error norm, controller and starting step:
  an independent implementation) on the Arenstorf orbit: equal accepted steps and
  right-hand sides, solutions within round-off.
- Installed for real (a ``dist-info`` with its entry points on PYTHONPATH, as pip
  leaves it) it is listed by ``mbstudy list``, passes ``mbstudy certify`` (error / tol
  bounded and decreasing over six decades of tolerance, constraint and energy checks), and
  a study launched with it on the embedded LocalCluster (worker processes that discover
  the plugin themselves) finishes with every case ok and its error falling with rtol.
- A broken plugin (import error, no SPEC, a name that is not an identifier or is a
  built-in's, kernel imports from outside mbstudy) is skipped with a warning naming it;
  the built-in entries stay.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import erk_testkit
import numpy as np
import pytest
from mbstudy.solvers import registry
from mbstudy.solvers.status import C_RHS, C_STEPS, OK

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "examples" / "plugin-bs32"
MU = 0.012277471
ARENSTORF_Y0 = [0.994, 0.0, 0.0, -2.00158510637908252240537862224]
ARENSTORF_T = 17.0652165601579625588917206249


def _arenstorf(t, y):
    x, yy, vx, vy = y
    d1 = ((x + MU) ** 2 + yy**2) ** 1.5
    d2 = ((x - 1.0 + MU) ** 2 + yy**2) ** 1.5
    return np.array([
        vx, vy,
        x + 2.0 * vy - (1.0 - MU) * (x + MU) / d1 - MU * (x - 1.0 + MU) / d2,
        yy - 2.0 * vx - (1.0 - MU) * yy / d1 - MU * yy / d2,
    ])  # fmt: skip


@pytest.fixture
def bs32(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    import mbstudy_bs32

    return mbstudy_bs32


@pytest.mark.parametrize("tol", [1e-5, 1e-8])
def test_the_plugin_tableau_takes_scipys_rk23_steps(bs32, tol):
    from scipy.integrate import solve_ivp

    st, _, Y, cnt = erk_testkit.run_template(bs32, _arenstorf, ARENSTORF_Y0,
                                             [0.0, ARENSTORF_T], rtol=tol, atol=tol)  # fmt: skip
    sol = solve_ivp(_arenstorf, (0.0, ARENSTORF_T), ARENSTORF_Y0, method="RK23",
                    rtol=tol, atol=tol)  # fmt: skip
    assert st == OK and sol.success
    assert cnt[C_STEPS] == sol.t.size - 1 > 50
    assert cnt[C_RHS] == sol.nfev  # FSAL: scipy also re-uses the last stage
    err = np.max(np.abs(Y[-1] - ARENSTORF_Y0))  # the orbit is periodic
    assert np.max(np.abs(Y[-1] - sol.y[:, -1])) < max(1e-2 * err, 1e-7)


def _installed(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that sees the plugin installed: its package and a
    dist-info holding its entry points (what ``pip install`` writes) on PYTHONPATH."""
    site = tmp_path / "site"
    info = site / "mbstudy_bs32-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mbstudy-bs32\n"
                                   "Version: 0.1.0\n")  # fmt: skip
    (info / "entry_points.txt").write_text("[mbstudy.integrators]\nbs32 = mbstudy_bs32\n")
    path = os.pathsep.join([str(PLUGIN), str(site), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path.rstrip(os.pathsep))


def _mbstudy(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 600):
    return subprocess.run([sys.executable, "-m", "mbstudy", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


STUDY = """
[study]
name = "plugin"
model = "pendulum"
t_end = 1.0
samples = 11

[reference]
integrator = "dop853"
formulation = "projection"
rtol = 1e-12
atol = 1e-12

[[runs]]
name = "bs32"
formulation = "projection"
integrator = "bs32"
rtol = [1e-4, 1e-6, 1e-8]
atol = 1e-10
"""


@pytest.mark.cluster
def test_an_installed_plugin_is_listed_certified_and_launched(tmp_path):
    env = _installed(tmp_path)
    listed = _mbstudy(["list", "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "bs32" in json.dumps(json.loads(listed.stdout))
    cert = _mbstudy(["certify", "bs32", "--model", "pendulum", "--json"], env, tmp_path)
    assert cert.returncode == 0, cert.stdout + cert.stderr
    assert "Traceback" not in cert.stderr
    (tmp_path / "plugin.toml").write_text(STUDY)
    run = _mbstudy(["launch", "plugin.toml", "--store", "p.zarr", "--workers", "2"], env,
                   tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    from mbstudy.pipeline.store.zarr_store import ResultStore

    rs = ResultStore.open(tmp_path / "p.zarr")
    assert (rs.read("bs32", "status") == 0).all()
    err = rs.read("bs32", "e_final")
    # against the dop853 reference: the error falls with the tolerance (a third-order
    # pair's global error is not proportional to rtol, so only the ordering is claimed)
    assert err[0] > err[1] > err[2] and err[2] < 1e-6, err


def _plugins_with(monkeypatch, tmp_path, sources: dict[str, str]):
    """Entry points of group mbstudy.integrators naming modules written from ``sources``."""
    for name, src in sources.items():
        (tmp_path / f"{name}.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [md.EntryPoint(name=n, value=n, group="mbstudy.integrators") for n in sources]

    def fake(group=None, **_):
        return eps if group == "mbstudy.integrators" else []

    monkeypatch.setattr(md, "entry_points", fake)
    registry.entries.cache_clear()


GOOD = (PLUGIN / "mbstudy_bs32" / "__init__.py").read_text()
BROKEN = {
    "plug_syntax": "def (:\n",
    "plug_nospec": "X = 1\n",
    "plug_badname": GOOD.replace('name="bs32"', 'name="bs-32"'),
    "plug_builtin": GOOD.replace('name="bs32"', 'name="rk4"'),
    "plug_imports": GOOD + '\nKERNEL_IMPORTS = {"os": ("system",)}\n',
    "plug_good": GOOD,
}


def test_broken_plugins_are_skipped_by_name_and_the_builtins_stay(monkeypatch, tmp_path):
    _plugins_with(monkeypatch, tmp_path, BROKEN)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = registry.entries("integrator")
        said = "\n".join(str(w.message) for w in caught)
        for name in ("plug_syntax", "plug_nospec", "plug_badname", "plug_imports"):
            assert f"plugin {name!r}" in said, said
        assert "'rk4' skipped: a built-in integrator has that name" in said, said
        assert table["rk4"].module.__name__ == "mbstudy.solvers.integrators.rk4"
        assert table["bs32"].module.__name__ == "plug_good"
        assert not {"bs-32"} & set(table)
    finally:
        registry.entries.cache_clear()
        for name in BROKEN:
            sys.modules.pop(name, None)
