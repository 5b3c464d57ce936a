"""Euler-parameter normalization: constraint row vs normalization element, the
heavy top from studies/mechanisms/top.toml.

For each integrator the same case runs three times, formulation ``none`` (the index-1
system, no stabilization, so what each mode does to |e| is not hidden by a projection):

* ``constraint``: the file as it is, e^T e - 1 = 0 a constraint row;
* ``element``: ``#normalization=element`` with the default m_u, M_u;
* ``M_u = 0``: the element without its flow (radial inertia only);
* ``M_u x 1e4``: a stiff flow as the seed's large coefficient makes it (the rate
  M_u/m_u = 1e5/s at t_end = 2), for rk4 (unstable at this h), radau5 and bdf (dopri5
  would need ~3e5 steps per second of motion, so it is left out).

Columns: max over the output times of ||e| - 1| (the constraint mode's normalization
drift; the element modes' gauge |e| = L), the largest difference of x = e/|e| from a
tight reference (constraint mode, dopri5 + projection, rtol 1e-12), the energy balance
max |E - E0 - W|, and the steps and right-hand-side evaluations. Only accuracy is
compared, so by default the kernels run interpreted (``--engine python``: the same
generated code as plain Python, no compile; identical numbers, slower).

Run from the repository root::

    python -m benchmarks.normalization [--t-end 10] [--engine python|compiled] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TOP = str(REPO / "studies" / "mechanisms" / "top.toml")
CASES = [
    ("rk4", {"h": 0.002}),
    ("dopri5", {"rtol": 1e-6, "atol": 1e-8}),
    ("radau5", {"rtol": 1e-6, "atol": 1e-8}),
    ("bdf", {"rtol": 1e-6, "atol": 1e-8}),
]
TOP_EL = TOP + "#normalization=element"
MODES = [("constraint", TOP, {}), ("element", TOP_EL, {}), ("M_u = 0", TOP_EL, {"M_u": 0.0}),
         ("M_u x 1e4", TOP_EL, "stiff")]  # fmt: skip


def _kernel(engine: str, model: str, form: str, integ: str):
    if engine == "python":
        from mbstudy.pipeline.plan.purepy import pure_kernel

        return pure_kernel(model, form, integ)
    return None


def measure(t_end: float, samples: int, engine: str, cases=CASES, modes=MODES) -> list[dict]:
    """One row per (integrator, mode): drift of |e|, error of x, energy balance, work."""
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.runner import run_case

    M_u = next(p.default for p in model_entry.model(TOP_EL).params if p.name == "M_u")

    ref = run_case(TOP, "projection", "dopri5", t_end=t_end, samples=samples,
                   integrator_params={"rtol": 1e-12, "atol": 1e-14},
                   kernel=_kernel(engine, TOP, "projection", "dopri5"))  # fmt: skip
    assert ref.status == 0
    x_ref = ref.q[:, 3:7]
    rows = []
    for integ, ip in cases:
        for label, model, mp in modes:
            if mp == "stiff":
                if integ == "dopri5":
                    continue
                mp = {"M_u": 1e4 * M_u}
            kernel = _kernel(engine, model, "none", integ)
            res = run_case(model, "none", integ, t_end=t_end, samples=samples, model_params=mp,
                           integrator_params=ip, kernel=kernel)  # fmt: skip
            e = res.q[:, 3:7]
            norm = np.linalg.norm(e, axis=1)
            balance = res.D[:, 3] - res.D[0, 3] - res.work
            rows.append({
                "integrator": integ, "params": ip, "mode": label, "status": int(res.status),
                "norm_drift": float(np.max(np.abs(norm - 1.0))),
                "x_error": float(np.max(np.abs(e / norm[:, None] - x_ref))),
                "energy_balance": float(np.max(np.abs(balance))),
                "steps": int(res.counters[0]), "rhs": int(res.counters[2]),
            })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--samples", type=int, default=501)
    ap.add_argument("--engine", choices=("python", "compiled"), default="python")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rows = measure(args.t_end, args.samples, args.engine)
    print("| integrator | mode | max abs(abs(e) - 1) | max error of e/abs(e) | max abs(E - E0 - W) "
          "| steps | rhs |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        ip = ", ".join(f"{k} = {v:g}" for k, v in r["params"].items())
        print(f"| {r['integrator']} ({ip}) | {r['mode']} | {r['norm_drift']:.1e} | "
              f"{r['x_error']:.1e} | {r['energy_balance']:.1e} | {r['steps']} | {r['rhs']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
