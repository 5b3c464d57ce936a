"""Kernel benchmarks: cost per step and per right-hand side of every kernel the
studies use, its compile time, and the ratio to a plain NumPy run of the same method.

For each (model, formulation, integrator) triple found in ``studies/*.toml`` (run blocks
and references) one representative case is timed: the study's formulation parameters
(first value of each axis), the finest step any study of the model uses with that
fixed-step integrator (so that all formulations of a model share h), rtol = atol = 1e-8
for dopri5, the study's t_end, two output samples (the per-sample diagnostics are left
out of the per-step figures). Columns:

- ``us/step``, ``us/rhs``: medians over ``--repeat`` runs of ``solvers.runner.run_case``
  wall time divided by the attempted steps (accepted + rejected) and by the right-hand
  side evaluations of the run; ``cpu us/step`` the same with process CPU time (less
  sensitive to other load on the machine); ``min`` the fastest repeat.
- ``compile s``: ``load_kernel``'s compile (or, with ``--warm-cache``, cache-load) time.
  By default the benchmark compiles into a fresh temporary numba cache, so this is the
  real compile time (the first kernel of a model also compiles the model's functions).
- ``numpy us/step`` and ``x numpy``: the same generated kernel run as plain Python on
  NumPy arrays (``NUMBA_DISABLE_JIT=1`` in a subprocess, the very code numba compiles),
  for a few steps (``max_steps`` cap); the ratio is numpy / compiled.
- ``lu us/step``: for the headline triples, the kernel composed with the straightforward
  augmented-LU index-1 solve (``augmented=True``) measured in the same run.
- ``proj/step``: projection iterations per accepted step (projection, qr).

Run (from the repository root; minutes, it compiles every kernel)::

    NUMBA_CACHE_DIR=/tmp/nbcache python -m benchmarks.kernels [--quick] [--json out.json]

``--quick`` times only the headline triples with 3 repeats. Results are printed as a
table and written as JSON (default benchmarks/results/kernels.json) with the machine's
load average, so that runs can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run from a checkout

HEADLINE = [
    ("fourbar", "baumgarte", "rk4"),
    ("fourbar", "drcs", "rk4"),
    ("fourbar", "projection", "rk4"),
    ("fourbar", "qr", "rk4"),
    ("andrews", "baumgarte", "dopri5"),
    ("andrews", "projection", "dopri5"),
]
LU_COLUMN = {("fourbar", "baumgarte", "rk4"), ("andrews", "projection", "dopri5")}
ADAPTIVE_TOL = 1e-8
NUMPY_STEPS = 20  # steps of the interpreted run


def study_cases(studies: Path) -> dict[tuple[str, str, str], dict]:
    """One representative case per (model, formulation, integrator) used in ``studies``.

    Returns {triple: {"t_end", "model_params", "fp", "ip"}} (see the module docstring).
    """
    from mbstudy.pipeline.study.parse import load_study
    from mbstudy.solvers import registry

    found: dict[tuple[str, str, str], dict] = {}
    finest: dict[tuple[str, str], float] = {}
    for path in sorted(studies.glob("*.toml")):
        s = load_study(path)
        blocks = [(s.reference.formulation, s.reference.integrator, dict(s.reference.params))]
        for r in s.runs:
            vals = dict(r.fixed)
            vals.update({k: v[0] for k, v in r.axes})
            blocks.append((r.formulation, r.integrator, vals))
            for k, v in r.axes:
                if k == "h":
                    key = (s.model, r.integrator)
                    finest[key] = min(finest.get(key, float("inf")), *v)
            if "h" in r.fixed:
                key = (s.model, r.integrator)
                finest[key] = min(finest.get(key, float("inf")), float(dict(r.fixed)["h"]))
        for form, integ, vals in blocks:
            triple = (s.model, form, integ)
            if triple in found:
                continue
            fnames = {p.name for p in registry.formulation(form).params}
            inames = {p.name for p in registry.integrator(integ).params}
            found[triple] = {
                "t_end": s.t_end,
                "model_params": dict(s.model_params),
                "fp": {k: v for k, v in vals.items() if k in fnames},
                "ip": {k: v for k, v in vals.items() if k in inames},
            }
    for (model, _form, integ), case in found.items():
        spec = registry.integrator(integ).spec
        if spec.fixed_step and (model, integ) in finest:
            case["ip"]["h"] = finest[(model, integ)]
        elif integ == "dopri5":
            case["ip"].update(rtol=ADAPTIVE_TOL, atol=ADAPTIVE_TOL)
    return found


def _run(triple, case, samples=2, augmented=False, ip_extra=None):
    from mbstudy.solvers.runner import run_case

    ip = dict(case["ip"], **(ip_extra or {}))
    kw = {"augmented": True} if augmented else {}
    return run_case(
        *triple, t_end=case["t_end"], samples=samples, model_params=case["model_params"],
        formulation_params=case["fp"], integrator_params=ip, **kw,
    )  # fmt: skip


def time_triple(triple, case, repeat: int, augmented: bool = False) -> dict:
    """Compile (timed apart), then ``repeat`` timed runs; medians per step and per rhs."""
    from mbstudy.solvers.runner import load_kernel
    from mbstudy.solvers.status import C_PROJ, C_REJECTED, C_RHS, C_STEPS

    t0 = time.perf_counter()
    kernel = load_kernel(*triple, augmented) if augmented else load_kernel(*triple)
    compile_s = kernel.compile_s if kernel.compile_s else time.perf_counter() - t0
    walls, cpus = [], []
    res = None
    for _ in range(repeat):
        c0 = time.process_time()
        res = _run(triple, case, augmented=augmented)
        cpus.append(time.process_time() - c0)
        walls.append(res.wall_s)
    assert res is not None
    cnt = res.counters
    steps = int(cnt[C_STEPS] + cnt[C_REJECTED])
    rhs = int(cnt[C_RHS])
    wall = statistics.median(walls)
    return {
        "status": int(res.status),
        "steps": int(cnt[C_STEPS]),
        "rejected": int(cnt[C_REJECTED]),
        "rhs": rhs,
        "proj_iters": int(cnt[C_PROJ]),
        "compile_s": compile_s,
        "run_ms": wall * 1e3,
        "run_ms_min": min(walls) * 1e3,
        "us_step": wall / max(steps, 1) * 1e6,
        "us_step_min": min(walls) / max(steps, 1) * 1e6,
        "cpu_us_step": statistics.median(cpus) / max(steps, 1) * 1e6,
        "us_rhs": wall / max(rhs, 1) * 1e6,
    }


def numpy_worker(cases: dict) -> dict:
    """Inside a NUMBA_DISABLE_JIT=1 process: time a few steps of each triple as Python."""
    from mbstudy.solvers.status import C_REJECTED, C_RHS, C_STEPS

    out = {}
    for key, case in cases.items():
        triple = tuple(key.split(":"))
        try:
            _run(triple, case, ip_extra={"max_steps": 2})  # imports, first-call costs
            res = _run(triple, case, ip_extra={"max_steps": NUMPY_STEPS})
            steps = int(res.counters[C_STEPS] + res.counters[C_REJECTED])
            out[key] = {
                "us_step": res.wall_s / max(steps, 1) * 1e6,
                "us_rhs": res.wall_s / max(int(res.counters[C_RHS]), 1) * 1e6,
                "steps": steps,
            }
        except Exception as exc:  # a kernel that cannot run uncompiled: reported, not fatal
            out[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def numpy_times(cases: dict) -> dict:
    """Run :func:`numpy_worker` in a subprocess with numba's JIT disabled."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    payload = json.dumps({":".join(k): v for k, v in cases.items()})
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.kernels", "--numpy-worker"],
        input=payload, capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"numpy reference failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return {}
    return json.loads(proc.stdout)


def machine() -> dict:
    """What the figures depend on: CPU, load, versions."""
    import numba
    import numpy as np

    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "loadavg": list(os.getloadavg()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def targets(rows: list[dict]) -> list[str]:
    """The issue's targets, measured (medians) with the ratio to the target beside them."""
    by = {(r["model"], r["formulation"], r["integrator"]): r for r in rows}
    lines = []
    fb = by.get(("fourbar", "baumgarte", "rk4"))
    if fb:
        lines.append(
            f"fourbar rk4+baumgarte: {fb['us_step']:.2f} us/step (target <= 3; "
            f"x{fb['us_step'] / 3:.2f} of target; cpu {fb['cpu_us_step']:.2f}, "
            f"min {fb['us_step_min']:.2f})"
        )
    for form in ("baumgarte", "drcs", "projection", "qr"):
        an = by.get(("andrews", form, "dopri5"))
        if an:
            lines.append(
                f"andrews dopri5+{form} rtol=atol=1e-8 [0, 0.03]: whole run {an['run_ms']:.2f} ms"
                f" (target <= 10; x{an['run_ms'] / 10:.2f}; min {an['run_ms_min']:.2f} ms,"
                f" {an['steps']} steps, {an['rejected']} rejected)"
            )
    for (model, form, integ), r in by.items():
        if form == "drcs" and (model, "baumgarte", integ) in by:
            b = by[(model, "baumgarte", integ)]
            lines.append(
                f"{model} {integ}: drcs / baumgarte per step = "
                f"{r['us_step'] / b['us_step']:.3f} (target <= 1.15; cpu "
                f"{r['cpu_us_step'] / b['cpu_us_step']:.3f})"
            )
    for r in rows:
        if r["formulation"] in ("projection", "qr"):
            lines.append(
                f"{r['model']} {r['integrator']}+{r['formulation']}: {r['us_step']:.2f} us/step,"
                f" {r['proj_iters'] / max(r['steps'], 1):.2f} projection iterations/step"
            )
    return lines


def print_table(rows: list[dict]) -> None:
    head = (
        f"{'model':13s} {'formulation':10s} {'integ':8s} {'us/step':>8s} {'min':>7s} "
        f"{'cpu':>7s} {'us/rhs':>7s} {'compile s':>9s} {'numpy us':>9s} {'x numpy':>8s} "
        f"{'lu us':>7s} {'proj/st':>7s} {'steps':>7s} st"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        npy = r.get("numpy_us_step")
        lu = r.get("lu_us_step")
        npy_s = f"{npy:9.0f}" if npy else "      n/a"
        ratio_s = f"{npy / r['us_step']:8.0f}" if npy else "     n/a"
        lu_s = f"{lu:7.2f}" if lu else "      -"
        print(
            f"{r['model']:13s} {r['formulation']:10s} {r['integrator']:8s} "
            f"{r['us_step']:8.2f} {r['us_step_min']:7.2f} {r['cpu_us_step']:7.2f} "
            f"{r['us_rhs']:7.3f} {r['compile_s']:9.1f} "
            f"{npy_s} {ratio_s} {lu_s} "
            f"{r['proj_iters'] / max(r['steps'], 1):7.2f} {r['steps']:7d} {r['status']}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="headline triples, 3 repeats")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per kernel (7)")
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks/results/kernels.json")
    ap.add_argument(
        "--warm-cache",
        action="store_true",
        help="reuse $NUMBA_CACHE_DIR (compile column = cache-load time)",
    )
    ap.add_argument("--only", nargs="*", default=None, help="MODEL:FORMULATION:INTEGRATOR")
    ap.add_argument("--no-numpy", action="store_true", help="skip the interpreted runs")
    ap.add_argument("--numpy-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.numpy_worker:
        print(json.dumps(numpy_worker(json.loads(sys.stdin.read()))))
        return 0
    if not args.warm_cache:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="mbstudy-bench-nb-")
        os.environ.pop("MBSTUDY_KERNEL_DIR", None)
    repeat = args.repeat or (3 if args.quick else 7)
    cases = study_cases(REPO / "studies")
    if args.only:
        wanted = [tuple(s.split(":")) for s in args.only]
    elif args.quick:
        wanted = [t for t in HEADLINE if t in cases]
    else:
        wanted = sorted(cases)
    info = machine()
    print(f"# {info['cpu']}, {info['cores']} cores, load average {info['loadavg']}")
    print(f"# NUMBA_CACHE_DIR={os.environ.get('NUMBA_CACHE_DIR')}, repeat={repeat}")
    rows = []
    for triple in wanted:
        # dop853, in no study, takes dopri5's case (same parameters)
        case = cases.get(triple) or cases[(*triple[:2], "dopri5")]
        try:
            row = time_triple(triple, case, repeat)
        except Exception as exc:
            print(f"{':'.join(triple)}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        row.update(model=triple[0], formulation=triple[1], integrator=triple[2], case=case)
        if triple in LU_COLUMN:
            lu = time_triple(triple, case, repeat, augmented=True)
            row["lu_us_step"] = lu["us_step"]
            row["lu_cpu_us_step"] = lu["cpu_us_step"]
            row["lu_run_ms"] = lu["run_ms"]
        rows.append(row)
        print(f"  {':'.join(triple)}: {row['us_step']:.2f} us/step", file=sys.stderr, flush=True)
    if not args.no_numpy:
        npy = numpy_times(
            {(r["model"], r["formulation"], r["integrator"]): r["case"] for r in rows}
        )
        for r in rows:
            got = npy.get(f"{r['model']}:{r['formulation']}:{r['integrator']}", {})
            if "us_step" in got:
                r["numpy_us_step"] = got["us_step"]
                r["numpy_us_rhs"] = got["us_rhs"]
            elif "error" in got:
                r["numpy_error"] = got["error"]
    info["loadavg_end"] = list(os.getloadavg())
    print_table(rows)
    print()
    for line in targets(rows):
        print(line)
    print(f"# load average at the end {info['loadavg_end']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1, default=float))
    print(f"# written {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
