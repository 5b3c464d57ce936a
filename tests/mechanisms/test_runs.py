"""Whole runs: the file-defined four-bar through run_case equals the hand-written model's
run to round-off (same formulation, integrator, step); a swept mechanism parameter reuses
the compiled kernel; the multipliers (reactions) come out for the file model too."""

from __future__ import annotations

import mechanisms_testkit as kit
import numpy as np
from mbstudy.solvers.runner import load_kernel, run_case

KW = dict(t_end=0.2, samples=21, formulation_params={"omega_n": 5.0, "xi": 1.0},
          integrator_params={"h": 0.0025})  # fmt: skip


def test_whole_run_matches_the_hand_written_four_bar() -> None:
    path = str(kit.MECHANISMS / "fourbar.toml")
    a = run_case("fourbar", "baumgarte", "rk4", **KW)
    b = run_case(path, "baumgarte", "rk4", **KW)
    assert a.status == b.status == 0
    scale = float(np.max(np.abs(a.Y)))
    assert float(np.max(np.abs(a.Y - b.Y))) <= 1e-12 * scale
    assert a.lam is not None and b.lam is not None
    lam_scale = float(np.max(np.abs(a.lam)))
    assert lam_scale > 1.0  # real reactions (the weight of the bars at least)
    assert float(np.max(np.abs(a.lam - b.lam))) <= 1e-11 * lam_scale
    # a sweep of a [parameters] entry runs on the same kernel (p is a runtime argument)
    misses = load_kernel.cache_info().misses
    c = run_case(path, "baumgarte", "rk4", model_params={"L3": 0.41}, **KW)
    assert c.status == 0 and load_kernel.cache_info().misses == misses
    assert float(np.max(np.abs(c.Y - b.Y))) > 1e-6
