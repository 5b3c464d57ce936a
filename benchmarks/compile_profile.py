"""Where a kernel's cold compile goes: numba typing, lowering, LLVM, per triple.

Each triple is compiled in its own fresh Python process with an empty ``NUMBA_CACHE_DIR``
and kernel directory (temporary directories, removed afterwards), so every figure is a
cold compile. Inside the process, listeners on numba's event API (``numba.core.event``:
``numba:compile``, ``numba:run_pass``, ``numba:llvm_lock``) record every event as a
frame on a stack; each frame's *exclusive* time (its duration minus its children's) is
added to a bucket, so the buckets add up to the CPU time of the first call. The clock is
the compiling thread's CPU time (``time.thread_time``): on a shared, loaded machine wall
times stretch several-fold while CPU times stay put (numba compiles in one thread):

- ``typing``: the ``nopython_type_inference`` pass (and the other typed passes),
- ``lowering``: ``native_lowering`` minus the LLVM optimization and machine code inside
  it (so: numba IR -> LLVM IR, parsing it, linking the callees' modules in),
- ``llvm_opt``: LLVM optimization (numba's per-function passes when a function's IR is
  added, and the module passes over the function *with every callee linked in*),
- ``llvm_codegen``: machine code emission (``finalize_object``) of that linked module,
- ``other``: the remaining passes (bytecode analysis, untyped rewrites) and bookkeeping.

The LLVM stages are timed by wrapping numba's ``CPUCodeLibrary`` methods (private API,
numba 0.6x), not with the ``numba:llvm_lock`` event, which fires on every llvmlite call.

Compiles are also attributed to the module of the function being compiled (the model's
module versus the generated kernel module), which says what a separately cached model
module could save. ``lines``/``functions``: size of the generated kernel module.

    python -m benchmarks.compile_profile                      # the launch-study triples
    python -m benchmarks.compile_profile --triple fourbar/baumgarte/rk4 --json out.json
    python -m benchmarks.compile_profile --both --triple fourbar/none/rk4   # before/after
    python -m benchmarks.compile_profile --triple studies/mechanisms/slider_crank.toml/baumgarte/rk4

``--nested`` composes kernels as before link-only units (every template its own cached
njit library); ``--both`` runs each triple that way and then as shipped. A mechanism file
is given by its path; ``model_cpu_s`` is then its read + sympy derivation + generation
and ``import_cpu_s`` the import of mbstudy and numba, so ``import + model + cpu`` is the
first kernel of a new mechanism file end to end. ``cpu us/step``: the kernel's speed on
the benchmarks.kernels case (CPU time per step), for triples the studies use.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_TRIPLES = (
    "fourbar/none/rk4",
    "fourbar/baumgarte/rk4",
    "fourbar/projection/dopri5",
    "andrews/baumgarte/dopri5",
    "andrews/drcs/dopri5",
    "andrews/projection/dopri5",
    "andrews/qr/dopri5",
)

TYPED_PASSES = ("nopython_type_inference", "nopython_rewrites", "inline_overloads",
                "parfor_pass", "nopython_supported_feature_validation", "ir_legalization",
                "annotate_types", "dump_parfor_diagnostics", "pre_parfor_pass",
                "nopython_backend", "nopython_partial_type_inference")  # fmt: skip


def _nested_units() -> None:
    """Compose kernels as before link-only units (solvers/compile_units.py): every
    template its own cached ``njit`` library (``--nested``, for the side-by-side figure)."""
    from mbstudy.solvers.compose import generate

    generate._decorator = lambda name, nrt_free: (
        "@njit(cache=True, _nrt=False)" if nrt_free else "@njit(cache=True)"
    )


def _child(triple: str) -> dict:
    """Runs in the fresh process: compile ``triple`` once, with the listeners installed."""
    c_import = time.thread_time()
    from mbstudy.solvers import compose, model_entry, runner
    from numba.core import event

    c_import = time.thread_time() - c_import

    model, form, integ = triple.rsplit("/", 2)
    buckets: dict[str, float] = {"typing": 0.0, "lowering": 0.0, "llvm_opt": 0.0,
                                 "llvm_codegen": 0.0, "other": 0.0}  # fmt: skip
    libraries = [0]
    by_module: dict[str, float] = {}
    passes: dict[str, float] = {}
    stack: list[list] = []  # [bucket, t0, child_time, module]

    def bucket_of(ev) -> tuple[str, str]:
        if ev.kind.startswith("llvm_"):
            return ev.kind, ""
        if ev.kind == "numba:run_pass":
            name = ev.data["name"].split(" [")[0]
            if name in ("native_lowering", "mbstudy_link_only_lowering"):
                return "lowering", name
            if name in TYPED_PASSES or "type" in name:
                return "typing", name
            return "other", name
        return "other", ""

    class Listener(event.Listener):
        def on_start(self, ev):
            module = ""
            if ev.kind == "numba:compile":
                disp = ev.data.get("dispatcher")
                module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
            elif stack:
                module = stack[-1][3]
            stack.append([ev, time.thread_time(), 0.0, module])

        def on_end(self, ev):
            frame = stack.pop()
            total = time.thread_time() - frame[1]
            excl = total - frame[2]
            name, pname = bucket_of(frame[0])
            buckets[name] += excl
            if pname:
                passes[pname] = passes.get(pname, 0.0) + excl
            mod = frame[3].split(".")[-1] if frame[3] else "?"
            mod = "kernel" if mod.startswith("mbk_") else mod
            by_module[mod] = by_module.get(mod, 0.0) + excl
            if stack:
                stack[-1][2] += total

    listener = Listener()
    for kind in ("numba:compile", "numba:run_pass"):
        event.register(kind, listener)

    class _Ev:
        def __init__(self, kind):
            self.kind, self.data = kind, {}

    def timed(cls, meth, kind):
        orig = getattr(cls, meth)

        def wrapper(self, *a, **k):
            ev = _Ev(kind)
            listener.on_start(ev)
            try:
                return orig(self, *a, **k)
            finally:
                listener.on_end(ev)

        setattr(cls, meth, wrapper)

    from numba.core import codegen

    timed(codegen.CPUCodeLibrary, "_optimize_functions", "llvm_opt")
    timed(codegen.CPUCodeLibrary, "_optimize_final_module", "llvm_opt")
    timed(codegen.JITCodeLibrary, "_finalize_specific", "llvm_codegen")
    orig_final = codegen.CPUCodeLibrary.finalize

    def finalize(self):
        libraries[0] += 1
        return orig_final(self)

    codegen.CPUCodeLibrary.finalize = finalize
    c_model = time.thread_time()
    model_entry.model(model)  # a mechanism file: read, derived with sympy, generated, imported
    c_model = time.thread_time() - c_model
    text = compose.generate_source(model, form, integ)
    t0, c0 = time.perf_counter(), time.thread_time()
    kernel = runner.load_kernel(model, form, integ)
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    n_funcs = text.count("\n@njit") + text.count("\n@link_only")
    return {
        "triple": triple,
        "wall_s": wall,
        "cpu_s": cpu,
        "compile_s": kernel.compile_s,
        "buckets_s": buckets,
        "by_module_s": by_module,
        "top_passes_s": dict(sorted(passes.items(), key=lambda kv: -kv[1])[:8]),
        "libraries": libraries[0],
        "cpu_us_step": _speed(triple),
        "import_cpu_s": c_import,
        "model_cpu_s": c_model,
        "lines": text.count("\n"),
        "functions": n_funcs,
    }


def _speed(triple: str) -> float | None:
    """CPU microseconds per step of the benchmarks.kernels representative case (median of
    5 runs), or None for a triple no study uses."""
    import statistics
    from pathlib import Path

    from benchmarks import kernels as kb

    cases = kb.study_cases(Path(kb.REPO) / "studies")
    t = tuple(triple.rsplit("/", 2))
    if t not in cases:
        return None
    return statistics.median([kb.time_triple(t, cases[t], 5)["cpu_us_step"]])


def _warm(triple: str) -> list[float]:
    """Wall and CPU seconds to load ``triple`` from the caches just written."""
    from mbstudy.solvers import runner

    t0, c0 = time.perf_counter(), time.thread_time()
    runner.load_kernel(*triple.rsplit("/", 2))
    return [time.perf_counter() - t0, time.thread_time() - c0]


def profile(triple: str, nested: bool = False) -> dict:
    """Cold-compile ``triple`` in a fresh process with empty caches; then a warm load
    and the kernel's speed (``nested``: every template its own library, as before)."""
    with tempfile.TemporaryDirectory(prefix="mbstudy-prof-") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                   MBSTUDY_KERNEL_DIR=os.path.join(tmp, "kernels"))  # fmt: skip
        load0 = os.getloadavg()[0]
        flag = ["--nested"] if nested else []
        out = subprocess.run([sys.executable, "-m", "benchmarks.compile_profile",
                              "--child", triple, *flag], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        res = json.loads(out.stdout.strip().splitlines()[-1])
        warm = subprocess.run([sys.executable, "-m", "benchmarks.compile_profile",
                               "--child-warm", triple, *flag], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        wall_cpu = json.loads(warm.stdout.strip().splitlines()[-1])
        res["warm_load_s"], res["warm_load_cpu_s"] = wall_cpu
        res["load_avg_1min"] = [load0, os.getloadavg()[0]]
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triple", action="append", help="model/formulation/integrator")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--nested", action="store_true",
                    help="every template its own njit library (as before link-only units)")
    ap.add_argument("--both", action="store_true", help="each triple nested, then linked")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-warm", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.nested:
        _nested_units()
    if args.child:
        print(json.dumps(_child(args.child)))
        return
    if args.child_warm:
        print(json.dumps(_warm(args.child_warm)))
        return
    rows = []
    variants = [True, False] if args.both else [args.nested]
    for triple in args.triple or DEFAULT_TRIPLES:
        for nested in variants:
            r = profile(triple, nested)
            r["units"] = "nested" if nested else "linked"
            rows.append(r)
            b = r["buckets_s"]
            top = sorted(r["by_module_s"].items(), key=lambda kv: -kv[1])[:3]
            mods = ", ".join(f"{k} {v:.1f}" for k, v in top)
            print(f"{triple:28s} {r['units']:6s} {r['lines']:4d} lines {r['functions']:3d} fns cold"
                  f" {r['wall_s']:6.1f} s wall, cpu {r['cpu_s']:5.1f} s = typing {b['typing']:5.1f}"
                  f" lowering {b['lowering']:5.1f} llvm opt {b['llvm_opt']:5.1f}"
                  f" codegen {b['llvm_codegen']:5.1f} other {b['other']:4.1f} | {mods} | warm"
                  f" {r['warm_load_s']:.2f} s (cpu {r['warm_load_cpu_s']:.2f})"
                  f" | cpu us/step {r['cpu_us_step'] or float('nan'):.2f}"
              f" | import {r['import_cpu_s']:.1f} model {r['model_cpu_s']:.1f}"
                  f" | load {r['load_avg_1min'][0]:.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
