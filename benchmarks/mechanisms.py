"""Mechanism-file benchmark: a mechanism file against its hand-written twin,
side by side, per step: the four-bar (studies/mechanisms/fourbar.toml vs ``fourbar``) or,
with ``--model andrews``, Andrews' squeezer (studies/mechanisms/andrews.toml, hinged
bodies, vs ``andrews``).

For each (formulation, integrator) pair the same case (t_end, step, gains) runs on both
models, interleaved (A, B, A, B, ...) so that the machine's load affects both alike;
``us/step`` is the median over ``--repeat`` runs of ``run_case`` wall time divided by the
attempted steps, ``cpu us/step`` the same with the process CPU time; ``ratio`` = file /
hand-written of the CPU medians. Compile time is excluded (one warm-up run each).

Run from the repository root (it compiles the kernels the first time; minutes)::

    python -m benchmarks.mechanisms [--model fourbar|andrews] [--repeat 7] [--t-end 2.0]
                                    [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

MODELS = {
    "fourbar": [
        ("baumgarte", "rk4", {"omega_n": 5.0, "xi": 1.0}, {"h": 0.0025}),
        ("none", "rk4", {}, {"h": 0.0025}),
        ("projection", "dopri5", {}, {"rtol": 1e-8, "atol": 1e-10}),
    ],
    # the pair tests/mechanisms/test_andrews_file.py compiles (gains: the defaults)
    "andrews": [("baumgarte", "dopri5", {}, {"rtol": 1e-10, "atol": 1e-10})],
}


def _time(model: str, form: str, integ: str, fp: dict, ip: dict, t_end: float):
    from mbstudy.solvers.runner import run_case

    c0 = time.process_time()
    res = run_case(model, form, integ, t_end=t_end, samples=2, formulation_params=fp,
                   integrator_params=ip)  # fmt: skip
    cpu = time.process_time() - c0
    steps = int(res.counters[0] + res.counters[1])
    assert res.status == 0, (model, form, integ, res.status)
    return res.wall_s / steps * 1e6, cpu / steps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="fourbar")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--t-end", type=float, default=None, help="2.0 (fourbar), 0.03 (andrews)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    name = args.model
    file_model = str(REPO / "studies" / "mechanisms" / f"{name}.toml")
    t_end = args.t_end if args.t_end is not None else (0.03 if name == "andrews" else 2.0)
    rows = []
    print(f"{'formulation':12s} {'integrator':10s} {'hand us/step':>12s} {'file us/step':>12s}"
          f" {'hand cpu':>9s} {'file cpu':>9s} {'ratio':>6s}")  # fmt: skip
    for form, integ, fp, ip in MODELS[name]:
        for model in (name, file_model):  # warm-up: compile or load from the cache
            _time(model, form, integ, fp, ip, 0.01)
        hand, file = [], []
        for _ in range(args.repeat):
            hand.append(_time(name, form, integ, fp, ip, t_end))
            file.append(_time(file_model, form, integ, fp, ip, t_end))
        hw = statistics.median(h[0] for h in hand)
        fw = statistics.median(f[0] for f in file)
        hc = statistics.median(h[1] for h in hand)
        fc = statistics.median(f[1] for f in file)
        ratio = fc / hc
        rows.append({"formulation": form, "integrator": integ, "hand_us_step": hw,
                     "file_us_step": fw, "hand_cpu_us_step": hc, "file_cpu_us_step": fc,
                     "ratio_cpu": ratio})  # fmt: skip
        print(f"{form:12s} {integ:10s} {hw:12.2f} {fw:12.2f} {hc:9.2f} {fc:9.2f} {ratio:6.2f}")
    out = {"model": name, "repeat": args.repeat, "t_end": t_end, "loadavg": os.getloadavg(),
           "rows": rows}  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
