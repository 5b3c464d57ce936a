"""Kernel properties: per-case values are data (one compiled signature), numba's disk
cache is reused by a new process, and the jitted code matches plain Python
(``NUMBA_DISABLE_JIT=1``) (docs/explanation/solver-contract.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import elements_testkit as kit
import numpy as np
from mbstudy.solvers.elements import simulate
from mbstudy.solvers.elements.implicit import implicit_run

SCRIPT = r"""
import json, sys
from mbstudy.solvers.elements import simulate
from mbstudy.solvers.elements.implicit import implicit_run
res = simulate(sys.argv[1], 0.05, 6, {"delta_l": 1e-4})
hits = sum(implicit_run.stats.cache_hits.values()) if hasattr(implicit_run, "stats") else -1
print(json.dumps({"x": res.x.tolist(), "v": res.v.tolist(), "counters": res.counters,
                  "status": res.status, "hits": hits}))
"""


def _run(env_extra: dict[str, str]) -> dict:
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = str(kit.ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(kit.NETWORKS / "spring_damper.net")],
        capture_output=True, text=True, env=env, cwd=kit.ROOT, timeout=300, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_compiled_signature_for_all_networks_and_parameters() -> None:
    for name, params in (("spring_damper", {"variable": "x"}), ("rlc", {"cap": True}),
                         ("rotational", {"delta_l": 1e-2})):
        assert simulate(kit.example(name), 0.01, 3, params).ok
    assert len(implicit_run.signatures) == 1


def test_cache_reused_and_no_jit_parity() -> None:
    simulate(kit.example("spring_damper"), 0.05, 6, {"delta_l": 1e-4})  # cache written
    jit = _run({})
    assert jit["hits"] >= 1, "numba cache not reused by a second process"
    plain = _run({"NUMBA_DISABLE_JIT": "1"})
    assert jit["status"] == plain["status"] == 0
    assert jit["counters"] == plain["counters"]
    np.testing.assert_allclose(plain["x"], jit["x"], rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(plain["v"], jit["v"], rtol=1e-12, atol=1e-15)
