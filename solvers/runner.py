"""Run one case in-process: compose the kernel, build the inputs, integrate, diagnose.

This is the notebook-level API of the solvers (no Dask, no store)::

    from mbstudy.solvers.runner import run_case
    res = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=501,
                   formulation_params={"omega_n": 5.0, "xi": 1.0},
                   integrator_params={"h": 0.0025})
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import ModuleType

import numpy as np
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose import compile_lock, kernel_module
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import ERROR, N_COUNTERS, OK

N_DIAG = 5  # columns of the diagnostics: |phi|, |dphi|, |ddphi|, E, |u|


@dataclass
class CaseResult:
    """The outcome of one case.

    Attributes
    ----------
    status : int status code (solvers.status).
    t : (K,) output times.
    Y : (K, ny) states [q, v, W, extras] at the output times (rows past k_reached are NaN).
    D : (K, N_DIAG) diagnostics rows, or (K, N_DIAG + m) with the constraint multipliers
        after them (see docs/explanation/solver-contract.md; element networks have no multipliers).
    counters : (N_COUNTERS,) int64 work counters.
    k_reached : last valid row of Y and D (-1 if none).
    n, m : coordinates and constraint equations.
    wall_s : kernel wall time, compile excluded.
    compile_s : compile or cache-load time paid in this process for the kernel (0 if warm).
    error : exception text for status ERROR.
    """

    status: int
    t: np.ndarray
    Y: np.ndarray
    D: np.ndarray
    counters: np.ndarray
    k_reached: int
    n: int
    m: int
    wall_s: float
    compile_s: float = 0.0
    error: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def q(self) -> np.ndarray:
        return self.Y[:, : self.n]

    @property
    def v(self) -> np.ndarray:
        return self.Y[:, self.n : 2 * self.n]

    @property
    def work(self) -> np.ndarray:
        return self.Y[:, 2 * self.n]

    @property
    def lam(self) -> np.ndarray | None:
        """(K, m) constraint multipliers at the output times, None if the kernel has none."""
        if self.D.shape[1] < N_DIAG + self.m:
            return None
        return self.D[:, N_DIAG : N_DIAG + self.m]


@dataclass
class Kernel:
    """A composed kernel module and the time it took to make it callable in this process."""

    module: ModuleType
    compile_s: float
    model: str
    formulation: str
    integrator: str
    compiled: bool = False  # True if numba compiled it here (False: loaded from its cache)
    wait_s: float = 0.0  # part of compile_s spent waiting for another process's compile


def output_times(t_end: float, samples: int, t0: float = 0.0) -> np.ndarray:
    """The study's output times t_k = t0 + (t_end - t0) k / (samples - 1)."""
    return t0 + (t_end - t0) * np.arange(samples) / (samples - 1)


def _warm_inputs(model: str, formulation: str, integrator: str):
    mentry = model_entry.model(model)
    p = pack_params(mentry.params, {})
    fp = pack_params(registry.formulation(formulation).params, {})
    ispec = registry.integrator(integrator)
    ip = pack_params(ispec.params, {})
    q0, v0 = mentry.module.initial_state(p)
    if ispec.spec.fixed_step:
        t_out = np.array([0.0, ip[0]])
    else:
        t_out = np.array([0.0, 1e-6])
    return q0, v0, t_out, p, fp, ip


@lru_cache(maxsize=256)
def _initial_state_cached(model: str, p_bytes: bytes) -> tuple[np.ndarray, np.ndarray]:
    q0, v0 = model_entry.model(model).module.initial_state(np.frombuffer(p_bytes).copy())
    q0.setflags(write=False)
    v0.setflags(write=False)
    return q0, v0


def initial_state(model: str, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The model's consistent initial state for parameter vector ``p`` (cached per process:
    the cases of a block usually share it, and the Newton assembly is not free).

    Raises
    ------
    solvers.assembly.AssemblyError
        If the mechanism cannot be assembled.
    """
    q0, v0 = _initial_state_cached(model, np.ascontiguousarray(p, dtype=float).tobytes())
    return q0.copy(), v0.copy()


def composed_kernel(model: str, formulation: str, integrator: str) -> ModuleType:
    """The generated kernel module of a triple, composed and imported but not compiled
    (numba compiles a function on its first call): its dispatchers' ``py_func`` are the
    kernel's Python source, which an interpreted engine runs (pipeline/plan/purepy.py)."""
    return kernel_module(model, formulation, integrator)


@cache
def load_kernel(model: str, formulation: str, integrator: str, augmented: bool = False) -> Kernel:
    """Compose (or load from numba's cache) and warm one kernel; time it once per process.

    The warm-up runs the kernel on the model's default state over one tiny step, which
    triggers compilation (or loads the cached machine code). ``augmented=True`` loads the
    variant with the straightforward augmented-LU index-1 solve (tests, benchmarks).
    """
    t0 = time.perf_counter()
    mod = model_entry.model(model).module
    if hasattr(mod, "warm_kernel"):  # element networks (solvers/models/network.py)
        mod.warm_kernel()
        return Kernel(mod, time.perf_counter() - t0, model, formulation, integrator)
    module = kernel_module(model, formulation, integrator, augmented)
    q0, v0, t_out, p, fp, ip = _warm_inputs(model, formulation, integrator)
    with compile_lock(model, formulation, integrator, augmented):
        # one process compiles a kernel at a time; the others then load numba's cache
        t_locked = time.perf_counter()
        ny = int(module.common_state_size(p, fp))
        Y = np.full((t_out.size, ny), np.nan)
        D = np.full((t_out.size, N_DIAG), np.nan)
        cnt = np.zeros(N_COUNTERS, dtype=np.int64)
        module.common_run(q0, v0, t_out, p, fp, ip, Y, D, cnt)
    stats = getattr(module.common_run, "stats", None)  # None under NUMBA_DISABLE_JIT
    compiled = stats is not None and sum(stats.cache_misses.values()) > 0
    return Kernel(module, time.perf_counter() - t0, model, formulation, integrator,
                  compiled=compiled, wait_s=t_locked - t0)  # fmt: skip


def run_case(
    model: str,
    formulation: str,
    integrator: str,
    *,
    t_end: float | None = None,
    samples: int = 301,
    model_params: dict | None = None,
    formulation_params: dict | None = None,
    integrator_params: dict | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    augmented: bool = False,
    kernel: Kernel | None = None,
) -> CaseResult:
    """Run one case and return its :class:`CaseResult` (never raises for solver failures).

    Parameters
    ----------
    model, formulation, integrator : registry names.
    t_end : end of the interval (default: the model's); output times are
        ``output_times(t_end, samples)``.
    model_params, formulation_params, integrator_params : values by name (defaults filled).
    q0, v0 : initial state (default: the model's consistent initial state).
    augmented : use the straightforward augmented-LU index-1 solve instead of the
        structured (Schur complement) one, for comparisons.
    kernel : run this :class:`Kernel` instead of :func:`load_kernel`'s (e.g. the same
        generated module interpreted, mbstudy.pipeline.plan.purepy.pure_kernel); its
        ``compile_s`` is charged to the case only the first time it is used.

    Raises
    ------
    solvers.registry.UnknownName, KeyError
        For unknown names or missing required parameters (bad input, not solver failure).
    solvers.assembly.AssemblyError
        If the model cannot be assembled with these parameters.
    """
    mentry = model_entry.model(model)
    if hasattr(mentry.module, "run_network_case"):  # element networks: their own kernel
        return mentry.module.run_network_case(
            formulation, integrator, t_end=t_end, samples=samples, model_params=model_params,
            formulation_params=formulation_params, integrator_params=integrator_params,
            q0=q0, v0=v0,
        )  # fmt: skip
    p = pack_params(mentry.params, model_params or {})
    fp = pack_params(registry.formulation(formulation).params, formulation_params or {})
    ip = pack_params(registry.integrator(integrator).params, integrator_params or {})
    if t_end is None:
        t_end = mentry.spec.t_end
    t_out = output_times(float(t_end), int(samples))
    if q0 is None or v0 is None:
        q0, v0 = initial_state(model, p)
    if kernel is None:
        cache_info = load_kernel.cache_info()
        kernel = load_kernel(model, formulation, integrator, augmented)
        fresh = load_kernel.cache_info().misses > cache_info.misses
        compile_s = kernel.compile_s if fresh else 0.0
    else:
        compile_s, kernel.compile_s = kernel.compile_s, 0.0  # paid once, by its first case
    n, m = (int(x) for x in kernel.module.model_sizes(p))  # the kernel's own (engine's) sizes
    ny = int(kernel.module.common_state_size(p, fp))
    Y = np.full((t_out.size, ny), np.nan)
    D = np.full((t_out.size, N_DIAG + m), np.nan)  # diagnostics, then the multipliers
    cnt = np.zeros(N_COUNTERS, dtype=np.int64)
    error = ""
    t0 = time.perf_counter()
    try:
        st, k_reached = kernel.module.common_run(
            np.ascontiguousarray(q0, dtype=float),
            np.ascontiguousarray(v0, dtype=float),
            t_out, p, fp, ip, Y, D, cnt,
        )  # fmt: skip
    except Exception as exc:  # a kernel must never raise; record it as data
        st, k_reached, error = ERROR, -1, f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - t0
    if k_reached < t_out.size - 1:
        Y[k_reached + 1 :] = np.nan
        D[k_reached + 1 :] = np.nan
    return CaseResult(
        status=int(st) if st is not None else ERROR,
        t=t_out,
        Y=Y,
        D=D,
        counters=cnt,
        k_reached=int(k_reached),
        n=n,
        m=m,
        wall_s=wall,
        compile_s=compile_s,
        error=error,
    )


def is_ok(result: CaseResult) -> bool:
    """True if the case integrated to t_end."""
    return result.status == OK
