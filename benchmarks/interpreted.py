"""The interpreted engine's cost per step: the measurement behind ``INTERPRETED_FACTORS``.

Tiered execution (mbstudy.pipeline.plan.engines) runs a kernel that is not cached as
Python when its cases cost less than a compile. Its estimate is the batch cost model's
compiled time per step ((n + m)^2 x STEP_SECONDS, pipeline/plan/batches.py) times the
kernel's factor (``INTERPRETED_FACTORS``, the "factor" column printed here; a new
triple's factor is added there from this benchmark's output). This benchmark runs each
triple's generated kernel interpreted (``pure_kernel``) over a short window and reports,
per triple, the CPU seconds per step,
the cost model's per-step estimate, their ratio (the factor), and where the compiled
kernel is already in the caches (never compiled here) the compiled CPU per step and the
interpreted/compiled ratio. CPU time of this process, so that the machine's load (shared
by other jobs) does not inflate the figures.

    python -m benchmarks.interpreted                 # the shipped studies' triples
    python -m benchmarks.interpreted --triple fourbar/none/rk4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

# (model, formulation, integrator, integrator params, formulation params, t_end)
TRIPLES = (
    ("fourbar", "none", "rk4", {"h": 0.0025}, {}, 0.5),
    ("fourbar", "baumgarte", "rk4", {"h": 0.0025}, {"omega_n": 20.0}, 0.5),
    ("fourbar", "drcs", "rk4", {"h": 0.0025}, {"omega_n": 20.0, "omega_o": 100.0}, 0.5),
    ("fourbar", "projection", "rk4", {"h": 0.0025}, {}, 0.5),
    ("fourbar", "penalty", "rk4", {"h": 0.0025}, {}, 0.5),
    ("fourbar", "auglag", "rk4", {"h": 0.0025}, {}, 0.5),
    ("fourbar", "qr", "rk4", {"h": 0.0025}, {}, 0.25),
    ("fourbar", "projection", "dopri5", {"rtol": 1e-12, "atol": 1e-14}, {}, 0.2),
    ("andrews", "baumgarte", "rk4", {"h": 2.5e-5}, {"omega_n": 1000.0}, 0.005),
    ("andrews", "baumgarte", "dopri5", {"rtol": 1e-6, "atol": 1e-8}, {"omega_n": 1000.0}, 0.03),
    ("andrews", "drcs", "dopri5", {"rtol": 1e-6, "atol": 1e-8},
     {"omega_n": 1000.0, "omega_o": 100.0}, 0.03),
    ("andrews", "projection", "dopri5", {"rtol": 1e-6, "atol": 1e-8}, {}, 0.03),
    ("andrews", "qr", "dopri5", {"rtol": 1e-6, "atol": 1e-8}, {}, 0.03),
    ("andrews", "baumgarte", "bdf", {"rtol": 1e-6, "atol": 1e-8}, {"omega_n": 1000.0}, 0.03),
    ("andrews", "drcs", "bdf", {"rtol": 1e-6, "atol": 1e-8},
     {"omega_n": 1000.0, "omega_o": 100.0}, 0.03),
)  # fmt: skip


def _cpu(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def measure(model, formulation, integrator, ip, fp, t_end) -> dict:
    """One triple: interpreted (and, if cached, compiled) CPU per step vs the cost model."""
    from mbstudy.pipeline.plan.batches import STEP_SECONDS
    from mbstudy.pipeline.plan.purepy import model_sizes, pure_kernel
    from mbstudy.solvers.kernel_cache import is_cached
    from mbstudy.solvers.runner import run_case
    from mbstudy.solvers.status import C_STEPS

    kernel, convert_s = _cpu(lambda: pure_kernel(model, formulation, integrator))

    def run(k):
        return run_case(model, formulation, integrator, t_end=t_end, samples=11,
                        integrator_params=ip, formulation_params=fp, kernel=k)  # fmt: skip

    res, cpu = _cpu(lambda: run(kernel))
    steps = int(res.counters[C_STEPS])
    n, m = model_sizes(model, {})
    model_step = (n + m) ** 2 * STEP_SECONDS
    out = {"triple": f"{model}/{formulation}/{integrator}", "status": res.status,
           "steps": steps, "convert_cpu_s": convert_s, "interpreted_cpu_s": cpu,
           "interpreted_us_step": 1e6 * cpu / max(steps, 1),
           "cost_model_us_step": 1e6 * model_step,
           "factor_vs_cost_model": cpu / max(steps, 1) / model_step}  # fmt: skip
    if is_cached(model, formulation, integrator):
        run(None)  # load from the cache
        best = min(_cpu(lambda: run(None))[1] for _ in range(5))
        out["compiled_us_step"] = 1e6 * best / max(steps, 1)
        out["interpreted_over_compiled"] = cpu / best
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triple", action="append", help="model/formulation/integrator")
    ap.add_argument("--json", default="benchmarks/results/interpreted.json")
    args = ap.parse_args(argv)
    todo = TRIPLES
    if args.triple:
        todo = tuple(t for t in TRIPLES if "/".join(t[:3]) in args.triple)
    rows = []
    measure(*TRIPLES[0])  # warm-up: the first interpreted run pays imports and caches
    print(f"load average at start: {os.getloadavg()}")
    for t in todo:
        r = measure(*t)
        rows.append(r)
        comp = ""
        if "compiled_us_step" in r:
            comp = (f"  compiled {r['compiled_us_step']:.2f} us/step,"
                    f" x{r['interpreted_over_compiled']:.0f}")  # fmt: skip
        print(f"{r['triple']:28s} {r['steps']:6d} steps  interpreted"
              f" {r['interpreted_us_step']:8.0f} us/step"
              f"  cost model {r['cost_model_us_step']:.2f} us/step"
              f"  factor {r['factor_vs_cost_model']:6.0f}{comp}", flush=True)  # fmt: skip
    print(f"load average at end: {os.getloadavg()}")
    factors = [r["factor_vs_cost_model"] for r in rows]
    print(f"factor vs cost model: min {min(factors):.0f}, max {max(factors):.0f}")
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump({"load": os.getloadavg(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
