"""JIT vs no-JIT parity: a generated kernel run as plain Python gives the jitted result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mbstudy.solvers.runner import run_case

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys, numpy as np
from mbstudy.solvers.runner import run_case
res = run_case("fourbar", sys.argv[1], "rk4", t_end=0.02, samples=3,
               integrator_params={"h": 0.001})
np.savez(sys.argv[2], Y=res.Y, D=res.D, status=res.status, counters=res.counters)
"""


@pytest.mark.parametrize("formulation", ["drcs", "qr"])
def test_no_jit_subprocess_matches_jitted(formulation: str, tmp_path: Path) -> None:
    out = tmp_path / "nojit.npz"
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", SCRIPT, formulation, str(out)], check=True,
                   env=env, cwd=REPO, timeout=600)  # fmt: skip
    ref = np.load(out)
    res = run_case("fourbar", formulation, "rk4", t_end=0.02, samples=3,
                   integrator_params={"h": 0.001})  # fmt: skip
    assert res.status == int(ref["status"]) == 0
    np.testing.assert_array_equal(res.counters, ref["counters"])
    np.testing.assert_allclose(res.Y, ref["Y"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.D, ref["D"], rtol=1e-12, atol=1e-14)
