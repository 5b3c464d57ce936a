"""Tiered execution: run each kernel compiled or interpreted, whichever gives results first.

A kernel (one (model, formulation, integrator) triple) runs either **compiled** (numba's
machine code: ~1-50 us per step, but a cold compile costs ~30-43 s of CPU,
docs/performance.md "Cold start") or **python**: the same generated module with every
numba dispatcher replaced by its Python function (:func:`mbstudy.pipeline.plan.purepy.
pure_kernel`), no compile at all but a few hundred times slower per step. Like a JIT's
tiers, policy ``auto`` interprets a kernel only when that is cheaper than compiling it:

    python  iff  the kernel is not in the caches
            and  spent + sum over its cases of  steps x per-step estimate x factor(kernel)
                 < COMPILE_SECONDS

where ``spent`` is what the kernel has already run interpreted in earlier launches
(:func:`mbstudy.solvers.kernel_cache.interpreted_seconds`, added to by
:func:`record_interpreted` when a launch commits to it). This is the rent-or-buy rule of
the ski-rental problem: keep paying the interpreted "rent" while the total stays below the
price of compiling, then buy (compile, and the kernel is cached for every later launch).
Its cost is never more than about twice that of the best choice made in hindsight, so a
study that is launched again and again stops paying interpreted time after a few launches
instead of forever. The per-step estimate is that of the batch cost model
(:mod:`mbstudy.pipeline.plan.batches`), the factor the kernel's measured interpreted cost
per step over that estimate (:func:`interpreted_factor`, ``INTERPRETED_FACTORS``), and the
reference (run + check run) counted with the kernel it uses. A cached kernel
always runs compiled (loading it costs under a second); element networks have only their
compiled kernel. Policies ``compiled`` and ``python`` force one engine for every kernel.

Both engines execute the same statements in the same order on IEEE doubles, so the
numbers are the same (bitwise for the triples tested, tests/test_engines.py); only the
wall times differ, which is why the store marks the engine of each case and the analysis
leaves interpreted wall times out of time comparisons.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mbstudy.pipeline.plan.batches import (
    ADAPTIVE_STEPS,
    STEP_SECONDS,
    estimate_case_seconds,
    model_sizes_of,
)
from mbstudy.solvers import api as solvers

__all__ = ["COMPILE_SECONDS", "ENGINES", "ENGINE_CODES", "INTERPRETED_FACTOR",
           "INTERPRETED_FACTORS", "POLICIES", "EngineChoice", "case_seconds", "choose_engines",
           "interpreted_factor", "record_interpreted"]  # fmt: skip

ENGINES = ("compiled", "python")
ENGINE_CODES = {"compiled": 0, "python": 1}  # the store's per-case ``engine`` flag values
POLICIES = ("auto", *ENGINES)

# The price of one cold kernel compile, in the units of the interpreted estimates below.
# With link-only compile units a cold compile costs 8.2-10.7 s of CPU on a quiet machine
# (`python -m benchmarks.compile_profile`, four Andrews and four-bar triples), and the
# interpreted estimates run ~1.8x above the measured interpreted CPU (the Andrews launch:
# 61 s estimated, 32-34 s measured; adaptive cases are assumed at ADAPTIVE_STEPS), so a
# compile is ~10 s x 1.8 = 18 s here (docs/performance.md, "Launch figures")
COMPILE_SECONDS = 18.0
# Interpreted CPU seconds per step / the cost model's compiled estimate per step
# ((n + m)^2 x STEP_SECONDS), per kernel, measured by `python -m benchmarks.interpreted`
# (CPU time of one short interpreted run per triple, 100-450 steps; docs/performance.md,
# "Tiered execution"). The cost model knows neither a formulation's nor an integrator's
# work per step (qr's Gauss-Newton corrections, bdf's Newton iterations and Jacobians,
# Andrews' dense mass matrix), so the factor spreads 14x over these kernels: one factor
# for all (the largest) made auto compile kernels that are ~10x cheaper interpreted.
INTERPRETED_FACTORS: dict[tuple[str, str, str], float] = {
    ("fourbar", "none", "rk4"): 112.0,
    ("fourbar", "baumgarte", "rk4"): 142.0,
    ("fourbar", "drcs", "rk4"): 146.0,
    ("fourbar", "projection", "rk4"): 204.0,
    ("fourbar", "penalty", "rk4"): 240.0,
    ("fourbar", "auglag", "rk4"): 369.0,
    ("fourbar", "qr", "rk4"): 615.0,
    ("fourbar", "projection", "dopri5"): 294.0,
    ("andrews", "baumgarte", "rk4"): 327.0,
    ("andrews", "baumgarte", "dopri5"): 562.0,
    ("andrews", "drcs", "dopri5"): 549.0,
    ("andrews", "projection", "dopri5"): 759.0,
    ("andrews", "qr", "dopri5"): 1576.0,
    ("andrews", "baumgarte", "bdf"): 325.0,
    ("andrews", "drcs", "bdf"): 1577.0,
}
# a kernel not measured takes the largest factor measured for its (formulation,
# integrator) on any model, and a pair never measured this one: the largest of all,
# rounded up, so that auto errs towards compiling where it knows nothing
INTERPRETED_FACTOR = 1600.0


def interpreted_factor(model: str, formulation: str, integrator: str) -> float:
    """The interpreted engine's cost per step over the cost model's compiled estimate for
    this kernel: measured (``INTERPRETED_FACTORS``), else the largest measured for its
    (formulation, integrator), else ``INTERPRETED_FACTOR``."""
    factor = INTERPRETED_FACTORS.get((model, formulation, integrator))
    if factor is not None:
        return factor
    pair = [f for (_, fo, it), f in INTERPRETED_FACTORS.items()
            if (fo, it) == (formulation, integrator)]  # fmt: skip
    return max(pair) if pair else INTERPRETED_FACTOR


def case_seconds(block, engine: str, entry=None) -> float:
    """Estimated CPU seconds of one case of ``block`` on ``engine``: the batch cost model's
    compiled estimate (``entry``: the model's resolved entry), times
    :func:`interpreted_factor` for ``python``."""
    est = estimate_case_seconds(block, entry)
    if engine == "python":
        est *= interpreted_factor(block.model, block.formulation, block.integrator)
    return est


@dataclass(frozen=True)
class EngineChoice:
    """The engine of one kernel and why.

    Attributes
    ----------
    triple : (model, formulation, integrator).
    engine : ``compiled`` or ``python``.
    cached : whether the compiled kernel was found in the caches.
    cases : cases this launch runs on it (the reference's two runs included).
    interpreted_s : estimated CPU seconds of those cases interpreted.
    reason : one phrase for the launch display.
    spent_s : estimated CPU seconds it ran interpreted in earlier launches.
    """

    triple: tuple[str, str, str]
    engine: str
    cached: bool
    cases: int
    interpreted_s: float
    reason: str
    spent_s: float = 0.0

    @property
    def name(self) -> str:
        return "/".join(self.triple)


def _reference_seconds(study, grid) -> float:
    """Estimated compiled seconds of every reference (reference run + check run)."""
    ref = study.reference
    ispec = solvers.integrator(ref.integrator).spec
    h = dict(ref.params).get("h")
    total = 0.0
    memo: dict = {}
    for key in grid.references:
        fixed = h is not None and (ispec.fixed_step or not ispec.adaptive) and h > 0
        steps = key.t_end / float(h) if fixed else float(ADAPTIVE_STEPS)
        n, m = model_sizes_of(study.model_entry, key.model_params, memo)
        total += 2 * steps * (n + m) ** 2 * STEP_SECONDS
    return total


def _interpretable(model: str | solvers.Entry) -> bool:
    """Element networks run their own kernel (solvers/elements): compiled only."""
    return not hasattr(solvers.resolve(model).module, "run_network_case")


def choose_engines(
    study,
    grid,
    policy: str = "auto",
    cached: Callable[[tuple[str, str, str]], bool] | None = None,
    pending: dict[str, int] | None = None,
    with_reference: bool = True,
    spent: Callable[[tuple[str, str, str]], float] | None = None,
) -> dict[tuple[str, str, str], EngineChoice]:
    """The engine of every kernel the study needs (the reference's first).

    Parameters
    ----------
    policy : ``auto``, ``compiled`` or ``python``.
    cached : whether a triple's compiled kernel is in the caches (default:
        :func:`mbstudy.solvers.kernel_cache.is_cached`, the launcher's view of them).
    pending : cases still to run per block name (a resumed store); default all.
    with_reference : whether the reference still has to be computed.
    spent : interpreted CPU seconds of a triple in earlier launches (default:
        :func:`mbstudy.solvers.kernel_cache.interpreted_seconds`).
    """
    if policy not in POLICIES:
        raise ValueError(f"--engine: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if cached is None or spent is None:
        from mbstudy.solvers import api as solvers
        keys: dict = {}  # composing a kernel's key generates its source: once per triple

        def key_of(t):
            if t not in keys:
                keys[t] = solvers.kernel_cache_key(t, False, study.model_entry)
            return keys[t]

        if cached is None:
            def cached(t):
                return solvers.kernel_is_cached(*t, key=key_of(t))

        if spent is None:
            def spent(t):
                return solvers.kernel_interpreted_seconds(t, key=key_of(t))

    ref_triple = (study.model, study.reference.formulation, study.reference.integrator)
    cost: dict[tuple[str, str, str], float] = {ref_triple: 0.0}
    cases: dict[tuple[str, str, str], int] = {ref_triple: 0}
    if with_reference:
        cost[ref_triple] = _reference_seconds(study, grid)
        cases[ref_triple] = 2 * len(grid.references)
    for block in grid.blocks:
        t = (study.model, block.formulation, block.integrator)
        n = block.n_cases if pending is None else int(pending.get(block.name, 0))
        cost[t] = cost.get(t, 0.0) + (n * estimate_case_seconds(block, study.model_entry)
                                      if n else 0.0)
        cases[t] = cases.get(t, 0) + n
    out = {}
    for t, compiled_s in cost.items():
        slow = compiled_s * interpreted_factor(*t)
        paid = 0.0
        if not _interpretable(study.model_entry):
            choice = ("compiled", False, "element networks run compiled only")
        elif policy != "auto":
            choice = (policy, False, f"--engine {policy}")
        elif cached(t):
            choice = ("compiled", True, "kernel cached")
        else:
            paid = spent(t) if slow > 0.0 else 0.0
            before = f" + ~{paid:.0f} s in earlier launches" if paid >= 0.5 else ""
            if paid + slow < COMPILE_SECONDS:
                choice = ("python", False, f"not cached; {cases[t]} runs ~{slow:.0f} s"
                                           f" interpreted{before} < ~{COMPILE_SECONDS:.0f} s"
                                           " compile")  # fmt: skip
            else:
                choice = ("compiled", False, f"not cached; {cases[t]} runs ~{slow:.0f} s"
                                             f" interpreted{before} >= ~{COMPILE_SECONDS:.0f}"
                                             " s compile")  # fmt: skip
        engine, hit, reason = choice
        out[t] = EngineChoice(t, engine, hit, cases[t], slow, reason, paid)
    return out


def record_interpreted(choices: dict[tuple[str, str, str], EngineChoice],
                       entry: solvers.Entry | None = None) -> None:
    """Add this launch's interpreted estimate to each interpreted kernel's total (the rent
    of the rent-or-buy rule); called once a launch commits to its engines. ``--engine
    python`` counts too: it is time spent without the compiled kernel all the same.
    ``entry``: the study's model entry, resolved once by the launch."""
    from mbstudy.solvers.api import add_interpreted_seconds

    for t, c in choices.items():
        if c.engine == "python" and c.interpreted_s > 0.0:
            add_interpreted_seconds(t, c.interpreted_s, entry)

