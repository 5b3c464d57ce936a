"""One small real store for the plot and report tests, launched once per test session.

Four-bar, RK4, 1 s: the unstabilized form and Baumgarte over h (x omega_n x xi), DRCS over
h x omega_o with one case at h * omega_o = 10 (far outside RK4's stability region: it must
fail, so the figures have a failed case to mark). Kernels: fourbar with none, baumgarte,
drcs + rk4 and the projection + dopri5 reference, the set other tests compile anyway.
"""

from __future__ import annotations

from pathlib import Path

from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import fourbar_study_head

TINY_STUDY = fourbar_study_head("tiny-plots", 1.0, 11) + """
[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = [0.02, 0.01, 0.005]

[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = [0.02, 0.01, 0.005]
omega_n = [5.0, 20.0]
xi = [0.5, 1.0]

[[runs]]
name = "drcs"
formulation = "drcs"
integrator = "rk4"
h = [0.05, 0.01]
omega_n = 5.0
xi = 1.0
omega_o = [20.0, 200.0]

[output]
series = ["phi_norm", "dphi_norm", "ddphi_norm", "energy"]
"""


def tiny_store(tmp_path_factory) -> Path:
    """Path of the session's tiny store (launched on first use, reused afterwards)."""
    base = tmp_path_factory.getbasetemp() / "tiny_plot_store"
    path = base / "tiny.zarr"
    if not (path / "zarr.json").exists() or not (base / "ok").exists():
        base.mkdir(parents=True, exist_ok=True)
        study = base / "tiny.toml"
        study.write_text(TINY_STUDY)
        res = CliRunner().invoke(
            app,
            [
                "launch",
                str(study),
                "--store",
                str(path),
                "--workers",
                "1",
                "--quiet",
                "--overwrite",
            ],
        )
        assert res.exit_code == 0, res.output
        (base / "ok").write_text("")
    return path
