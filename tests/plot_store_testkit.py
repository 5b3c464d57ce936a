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
                "--engine",  # the work-precision tests plot kernel wall times
                "compiled",
            ],
        )
        assert res.exit_code == 0, res.output
        (base / "ok").write_text("")
    return path


LARGE_STUDY = fourbar_study_head("large-synthetic", 1.0, 11) + """
[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = [0.01, 0.005]
omega_n = [{omega}]
xi = [0.5, 1.0]
"model.L3" = [0.36, 0.38, 0.40, 0.42, 0.44]
"model.m3" = [{m3}]

[output]
series = []
"""


def synthetic_store(path: Path) -> Path:
    """A 20,000-case four-bar store template (h 2 x omega_n 100 x xi 2 x model.L3 5 x
    model.m3 10) whose metrics are filled with a smooth made-up surface and a band of
    failed cases, without running anything: for tests of how figures scale."""
    import numpy as np
    import zarr
    from mbstudy.pipeline.plan.grid import expand_grid
    from mbstudy.pipeline.store.zarr_store import ResultStore
    from mbstudy.pipeline.study.parse import parse_study
    from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS

    omega = ", ".join(repr(float(w)) for w in np.geomspace(1.0, 100.0, 100))
    m3 = ", ".join(repr(round(0.2 + 0.05 * k, 3)) for k in range(10))
    spec = parse_study(LARGE_STUDY.format(omega=omega, m3=m3))
    ResultStore.create(path, spec, expand_grid(spec))
    g = zarr.open_group(str(path / "baumgarte"), mode="r+")
    h, w = np.asarray(g["h"][:]), np.asarray(g["omega_n"][:])
    base = h**4 * (1.0 + w**2) * (1.0 + np.asarray(g["model.m3"][:]))
    for name in FLOAT_METRICS:
        g[name][:] = base
    # every batch array is written, as a launch writes it (readers refuse missing chunks)
    for name in COUNTER_METRICS:
        g[name][:] = np.full(h.size, 100, dtype=g[name].dtype)
    # engine 1: interpreted (a value other than the fill value, so every chunk is written)
    for name, value in (("engine", np.ones(h.size, dtype=g["engine"].dtype)),
                        ("error", np.full(h.size, "", dtype=object))):
        arr = zarr.open_array(str(path / "baumgarte" / name), mode="r+",
                              config={"write_empty_chunks": True})  # fill-valued chunks too
        arr[:] = value
    status = np.where(h * w > 0.45, 3, 0).astype(np.int8)  # diverged past a stability bound
    g["status"][:] = status
    g["done"][:] = np.ones(h.size, dtype=bool)
    return path
