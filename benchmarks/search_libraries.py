"""The search's proposers against libraries, by cases spent to reach the same answer.

Cases are run in this process (run_case; a case already run is not counted again) on:

1. the status edge of Baumgarte + RK4 on the four-bar at omega_n = 200, xi = 1 along h in
   [1e-4, 0.05] (log, h snapped to 0.05/k): cases until the bracket is two adjacent
   divisors (the exact bracket), for the batch bracketing of pipeline/plan/search.py and
   python-adaptive's Learner1D (default loss, asked 4 points at a time);
2. seed 004's best omega_o at h = 0.01 (DRCS, omega_n = 5, xi = 1, samples 51), omega_o
   in [5, 500] (log): the argmin's distance in cells of a 128-value dense line, and the
   cases spent, for the batch zoom (tol 0.01), scipy.optimize.minimize_scalar (bounded,
   xatol 0.01 in the unit coordinate) and Learner1D given the zoom's number of cases.

Writes benchmarks/results/search_libraries.json.
Run:  python benchmarks/search_libraries.py   (needs: pip install adaptive)
"""

from __future__ import annotations

import json
import math
import os
import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BOUNDARY = """
[study]
name = "lib"
model = "fourbar"
t_end = 5.0
samples = 101
[[search]]
name = "line"
formulation = "baumgarte"
integrator = "rk4"
xi = 1.0
omega_n = 200.0
h = { log = [1e-4, 0.05] }
goal = { boundary = "status" }
budget = 200
"""
GAINS = """
[study]
name = "lib"
model = "fourbar"
t_end = 5.0
samples = 51
[[search]]
name = "gains"
formulation = "drcs"
integrator = "rk4"
omega_n = 5.0
xi = 1.0
h = 0.01
omega_o = { log = [5.0, 500.0] }
goal = { minimize = "rms_phi", tol = 0.01 }
budget = 200
"""


class Counted:
    """A case function with a memo: ``calls`` counts distinct cases run."""

    def __init__(self, fn) -> None:
        self.fn, self.memo = fn, {}

    def __call__(self, x: float) -> float:
        if x not in self.memo:
            self.memo[x] = self.fn(x)
        return self.memo[x]

    @property
    def calls(self) -> int:
        return len(self.memo)


def main() -> None:
    import adaptive
    from mbstudy.pipeline.plan.search import Observation, propose
    from mbstudy.pipeline.study import parse_study
    from mbstudy.pipeline.study.search_block import snap_h
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.metrics import compute_metrics
    from mbstudy.solvers.runner import run_case
    from mbstudy.solvers.spec import pack_params
    from mbstudy.solvers.status import OK
    from scipy.optimize import minimize_scalar

    out: dict = {"adaptive": adaptive.__version__}
    # 1. boundary ---------------------------------------------------------------------
    search = parse_study(BOUNDARY).searches[0]
    (ax,) = search.continuous

    def status_ok(h: float) -> float:
        r = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=101,
                     formulation_params={"omega_n": 200.0, "xi": 1.0},
                     integrator_params={"h": h})  # fmt: skip
        return 1.0 if r.status == OK else 0.0

    f = Counted(status_ok)
    divisors = sorted({snap_h(0.05 / k, 0.05) for k in range(1, 501)
                       if 0.05 / k >= ax.lo * (1 - 1e-9)})  # fmt: skip
    ok = [f(h) for h in divisors]
    exact = next((divisors[j - 1], divisors[j]) for j in range(1, len(ok))
                 if ok[j - 1] and not ok[j])  # fmt: skip

    def is_exact(pts: dict[float, float]) -> bool:
        xs = sorted(pts)
        return any(pts[a] and not pts[b] and (a, b) == exact for a, b in pairwise(xs))

    obs: list[Observation] = []
    while True:
        new = propose(search, obs, search.budget - len(obs))
        if not new:
            break
        obs += [Observation(p, f(p["h"])) for p in new]
    ours = {o.coords["h"]: o.value for o in obs}
    out["boundary_ours"] = {"cases": len(ours), "exact_bracket": is_exact(ours)}
    learner = adaptive.Learner1D(lambda u: f(ax.from_unit(u)), bounds=(0.0, 1.0))
    seen: dict[float, float] = {}
    while len(seen) < 200 and not is_exact(seen):
        xs, _ = learner.ask(4)
        for u in xs:
            y = learner.function(u)
            learner.tell(u, y)
            seen[ax.from_unit(u)] = y
    out["boundary_adaptive_learner1d"] = {"cases": len(seen), "exact_bracket": is_exact(seen)}
    print("boundary", out["boundary_ours"], out["boundary_adaptive_learner1d"], flush=True)

    # 2. minimize ---------------------------------------------------------------------
    search = parse_study(GAINS).searches[0]
    (ax,) = search.continuous
    entry = model_entry.model("fourbar")
    mask = np.asarray(entry.module.angle_mask(pack_params(entry.params, {})))

    def rms(w: float) -> float:
        r = run_case("fourbar", "drcs", "rk4", t_end=5.0, samples=51,
                     formulation_params={"omega_n": 5.0, "xi": 1.0, "omega_o": w},
                     integrator_params={"h": 0.01})  # fmt: skip
        m = compute_metrics(r, None, mask)["rms_phi"]
        return m if r.status == OK and math.isfinite(m) else math.inf

    ws = [ax.from_unit(u) for u in np.linspace(0, 1, 128)]
    dense = [rms(w) for w in ws]
    w_best = ws[int(np.argmin(dense))]
    step = math.log(ws[1] / ws[0])

    def cells(w: float) -> float:
        return abs(math.log(w / w_best)) / step

    g = Counted(rms)
    obs = []
    while True:
        new = propose(search, obs, search.budget - len(obs))
        if not new:
            break
        obs += [Observation(p, g(p["omega_o"])) for p in new]
    vals = {o.coords["omega_o"]: o.value for o in obs}
    w_ours = min(vals, key=lambda w: vals[w])
    out["minimize_ours"] = {"cases": g.calls, "cells_from_dense_argmin": cells(w_ours)}
    g2 = Counted(rms)
    res = minimize_scalar(lambda u: min(g2(ax.from_unit(u)), 1.0), bounds=(0.0, 1.0),
                          method="bounded", options={"xatol": 0.01})  # fmt: skip
    w_sc = min(g2.memo, key=lambda w: g2.memo[w])
    out["minimize_scipy_bounded"] = {"cases": g2.calls, "sequential": True,
                                     "cells_from_dense_argmin": cells(w_sc),
                                     "converged_at": ax.from_unit(float(res.x))}  # fmt: skip
    g3 = Counted(rms)
    learner = adaptive.Learner1D(lambda u: math.log10(min(g3(ax.from_unit(u)), 1.0)),
                                 bounds=(0.0, 1.0))  # fmt: skip
    while g3.calls < g.calls:
        xs, _ = learner.ask(4)
        for u in xs:
            learner.tell(u, learner.function(u))
    w_ad = min(g3.memo, key=lambda w: g3.memo[w])
    out["minimize_adaptive_learner1d"] = {"cases": g3.calls,
                                          "cells_from_dense_argmin": cells(w_ad)}  # fmt: skip
    print("minimize", out["minimize_ours"], out["minimize_scipy_bounded"],
          out["minimize_adaptive_learner1d"], flush=True)  # fmt: skip
    path = ROOT / "benchmarks" / "results" / "search_libraries.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
