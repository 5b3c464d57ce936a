"""The conformance matrix: every (model, formulation, integrator) triple that plan accepts,
run once at a representative setting and checked against independent recomputations.

The matrix (:func:`matrix`) spans the built-in models (an element network once per shipped
netlist), every shipped mechanism file (``studies/mechanisms/*.toml``), spatial files in
both normalization modes, times every formulation and integrator of the registry. A triple
is *accepted* when ``registry.compatibility`` accepts it (the one decision on the declared
DAE forms of solvers/forms.py, what the study validation checks for a ``[[runs]]`` block,
pipeline/study/blocks.py); every refused triple keeps the reason.

Each accepted triple runs once (:func:`run_triple`) on the interpreted engine (no compile;
pipeline/plan/purepy.py; element networks have only their compiled kernel) at
:func:`setting`: a short interval and a step size or tolerance a sane method passes. The
checks (:func:`check_result`), each against a quantity recomputed from the stored q, v
series by :mod:`.index1`:

- ``status``: the case ends ``ok``;
- ``finite``: every metric of solvers/metrics.py is finite, except those declared absent
  (:data:`ABSENT`, with the reason) for this case;
- ``phi`` / ``dphi``: the stored |Phi| and |Phi_q v + Phi_t| series and rms_phi, max_phi,
  rms_dphi, max_dphi equal the values recomputed from q, v to round-off;
- ``energy``: the stored energy series equals E(q, v, t) recomputed, and de_max the drift
  of the recomputed series;
- ``lam``: the constraint forces Phi_q^T lam of the stored multipliers agree with those of
  the index-1 solve at the stored (q, v) (:func:`lam_tolerance` says how closely).

Pairwise covering subsets for CI come from :func:`covering_subset`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mbstudy.pipeline.plan.purepy import declared_absent_metrics

# round-off allowance of a recomputed level: Phi of O(1) coordinates is a few dozen flops
# (relative error ~1e-15 each); 1e-11 absolute leaves three decades for models with
# lengths of O(10) and for the different summation order of the kernels' norms
LEVEL_ABS = 1e-11
LEVEL_REL = 1e-9
# the energy is a sum of O(n^2) products of O(E) terms: the same relative round-off
ENERGY_REL = 1e-9
EPS = float(np.finfo(float).eps)

ABSENT = {
    "e_r": "no reference run: the matrix checks consistency; accuracy is certify's job",
    "e_theta": "no reference run",
    "e_dr": "no reference run",
    "e_dtheta": "no reference run",
    "e_final": "no reference run",
}
NO_MULTIPLIERS = "the kernel has no multipliers (element networks)"


@dataclass(frozen=True)
class MatrixModel:
    """One model of the matrix: its label on the page, registry name and parameters."""

    label: str
    name: str
    params: tuple[tuple[str, object], ...] = ()
    spatial: bool = False

    @property
    def family(self) -> str:
        """The registry name without the mode (for the compatibility decision)."""
        return self.name


@dataclass(frozen=True)
class Triple:
    model: MatrixModel
    formulation: str
    integrator: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.model.label, self.formulation, self.integrator)

    @property
    def label(self) -> str:
        return "/".join(self.key)


@dataclass(frozen=True)
class Check:
    """One check of a case: its name, whether it passed, the figure and what was expected."""

    name: str
    passed: bool
    value: float | str | None
    expected: str

    def as_dict(self) -> dict:
        v = self.value
        if isinstance(v, float) and not math.isfinite(v):
            v = None if math.isnan(v) else str(v)
        return {"name": self.name, "passed": bool(self.passed), "value": v,
                "expected": self.expected}  # fmt: skip


@dataclass
class Verdict:
    """The result of one triple: its checks, headline figures and the setting it ran at."""

    triple: tuple[str, str, str]
    checks: list[Check]
    figures: dict[str, float] = field(default_factory=dict)
    setting: str = ""
    absent: dict[str, str] = field(default_factory=dict)
    known: str = ""  # the known defect it is expected to show, if any
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]


# ---------------------------------------------------------------------------------------
# the matrix


def _studies() -> Path:
    from mbstudy.pipeline.study.examples import studies_dir

    return studies_dir()


def matrix_models() -> list[MatrixModel]:
    """Every model of the matrix: built-ins (the element network once per shipped netlist),
    then each shipped mechanism file, a spatial one in both normalization modes."""
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import MechanismError, model_name

    out: list[MatrixModel] = []
    for name, entry in sorted(solvers.entries("model").items()):
        if hasattr(entry.module, "run_network_case"):
            for net in sorted((_studies() / "networks").glob("*.net")):
                out.append(MatrixModel(f"network:{net.name}", name, (("netlist", str(net)),)))
        elif entry.module.__name__.startswith("mbstudy.solvers.models."):
            params = tuple(MODEL_PARAMS.get(name, {}).items())
            out.append(MatrixModel(name, name, params, name == "top"))
    for path in sorted((_studies() / "mechanisms").glob("*.toml")):
        rel = f"studies/mechanisms/{path.name}"
        try:
            modes = [(model_name(str(path), mode), mode) for mode in ("constraint", "element")]
        except MechanismError:  # planar: no Euler parameters, one mode
            out.append(MatrixModel(rel, str(path)))
            continue
        for name, mode in modes:
            out.append(MatrixModel(f"{rel}#{mode}", name, (), True))
    return out


def refusal(model: MatrixModel, formulation: str, integrator: str) -> str | None:
    """Why plan refuses the triple, or None: the registry's compatibility, the one decision
    on the declared DAE forms (solvers/forms.py), which pipeline/study/blocks.py makes too."""
    from mbstudy.solvers import api as solvers
    return solvers.compatibility(model.name, formulation, integrator)


def matrix() -> tuple[list[Triple], list[tuple[Triple, str]]]:
    """(accepted triples, [(refused triple, reason)]), in a fixed order."""
    from mbstudy.solvers import api as solvers
    accepted: list[Triple] = []
    refused: list[tuple[Triple, str]] = []
    forms = sorted(solvers.entries("formulation"))
    integs = sorted(solvers.entries("integrator"))
    for mm in matrix_models():
        for f in forms:
            for i in integs:
                t = Triple(mm, f, i)
                why = refusal(mm, f, i)
                if why:
                    refused.append((t, why))
                else:
                    accepted.append(t)
    return accepted, refused


# ---------------------------------------------------------------------------------------
# known defects (being fixed elsewhere): the matrix records them, CI marks them xfail

KNOWN_DEFECTS: dict[str, str] = {}  # none open


# what the matrix found beyond them (its first full run): systematic, by rule
FINDINGS = {
    "redundant-singular": "parallelogram (redundant constraints): every formulation but qr "
                          "ends 'singular', yet plan accepts them",
    "penalty-stiff": "top (Euler parameters, constraint rows): penalty + implicit at the "
                     "default alpha = 1e7 ends newton_failed (it runs at 1e5: M is about "
                     "0.1 kg m^2)",
    "newmark-lam": "spatial top (element mode): index3 + newmark's multipliers are off the "
                   "index-1 reactions beyond the matrix's allowance (the index-3 trapezoidal "
                   "rule's multipliers do not converge, docs/explanation/methods-implicit.md)",
}  # fmt: skip


# found by the matrix or named before it, fixed since (the page lists them for the record)
FIXED = {
    "spatial-dae-nan": "spatial models with Euler parameters normalized by constraint rows: "
                       "every DAE triple (index3 with genalpha/hht/newmark/radau5/bdf, ggl "
                       "with radau5/bdf) stored NaN levels and energies with status ok (the "
                       "diagnostics inverted the singular M; now M + c Phi_q^T Phi_q)",
    "interpreted-svd": "parallelogram: qr with radau5/bdf/implicit could not run interpreted "
                       "(the OpenBLAS thread setter was a numba-only external function)",
    "network-energy": "element networks: de_max, de_first, de_last, du_max were NaN with "
                      "status ok; the store now declares them absent with the reason "
                      "(block attribute absent_metrics), as e_r/e_theta of models without "
                      "translations/angles and lam of kernels without multipliers",
}  # fmt: skip


def known_defect(t: Triple) -> str:
    """The key of :data:`KNOWN_DEFECTS` or :data:`FINDINGS` this triple is expected to
    show, or ""."""
    if t.model.name == "parallelogram" and t.formulation != "qr":
        return "redundant-singular"
    if t.model.name == "top" and t.formulation == "penalty" and t.integrator == "implicit":
        return "penalty-stiff"
    if t.model.spatial and t.formulation == "index3" and t.integrator == "newmark":
        return "newmark-lam"
    return ""


# ---------------------------------------------------------------------------------------
# the representative setting

FIXED_STEPS = 20  # steps of a fixed-step method over the interval
SAMPLES = 5  # output times (every 5 steps)
# CPU seconds one triple may take interpreted; beyond it the triple is "over budget"
# (reported, not judged): the matrix must finish on a shared machine
BUDGET_S = 10.0
ADAPTIVE_TOL = {"rtol": 1e-6, "atol": 1e-8}
# the built-in N-window four-bar at the size of its study and mechanism file (N = 2): the
# interpreted engine's cost grows as (n + m)^2 and N = 40 checks nothing N = 2 does not
MODEL_PARAMS = {"nfourbar": {"n": 2}}


def interval(model: MatrixModel) -> float:
    """A short interval: a twentieth of the model's own t_end, at most 0.05 s."""
    from mbstudy.solvers import api as solvers
    spec = solvers.model(model.name).spec
    return min(0.05, float(spec.t_end) / 20.0)


def setting(t: Triple) -> dict:
    """The run_case keyword arguments of one triple's representative run."""
    from mbstudy.solvers import api as solvers
    ispec = solvers.integrator(t.integrator).spec
    t_end = interval(t.model)
    iparams: dict = {}
    names = {p.name for p in ispec.params}
    if ispec.fixed_step:
        iparams["h"] = t_end / FIXED_STEPS
    for key, val in ADAPTIVE_TOL.items():
        if key in names:
            iparams[key] = val
    return {"t_end": t_end, "samples": SAMPLES, "model_params": dict(t.model.params),
            "integrator_params": iparams}  # fmt: skip


def describe(kw: dict) -> str:
    parts = [f"t_end={kw['t_end']:g}"]
    parts += [f"{k}={v:g}" for k, v in kw["integrator_params"].items()]
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------
# running and checking


# round-off of two solves with K (the kernel's and NumPy's): 100 eps cond(K), at least
LAM_ROUNDOFF = 1e-8
# DAE integrators carry lam as an unknown of the step, converged to the integration error
# only, and an index-3 multiplier's error is that of q amplified by 1/h^2 (Hairer, Lubich
# & Roche 1989, ch. 4): relative 5e-2 at the matrix's settings (generalized-alpha and
# HHT: O(h^2), Arnold & Bruls 2007; radau5 and bdf: the tolerance; Newmark's trapezoidal
# rule on an index-3 system only O(h), Hairer & Wanner II sect. VII.3, so 10 h / s)
LAM_DAE = 5e-2


def lam_allowance(formulation: str, integrator: str, kw: dict) -> float:
    """Relative allowance of the stored constraint forces against the index-1 solve on top
    of the stabilization input's own effect (see :func:`check_result`)."""
    if formulation in ("index3", "ggl"):
        h = kw["integrator_params"].get("h")
        if integrator == "newmark" and h:
            return max(LAM_DAE, 10.0 * float(h))
        return LAM_DAE
    if formulation in ("penalty", "auglag"):
        # penalty: [M Phi_q^T; Phi_q -I/alpha], K perturbed by 1/alpha; the augmented
        # Lagrangian's iteration stops at al_tol on the same perturbed matrix
        from mbstudy.solvers import api as solvers
        alpha = next(p.default for p in solvers.formulation("penalty").params
                     if p.name == "alpha")  # fmt: skip
        return LAM_ROUNDOFF + 10.0 / float(alpha)
    return LAM_ROUNDOFF


def _close(stored: np.ndarray, recomputed: np.ndarray, rel: float = LEVEL_REL,
           absolute: float = LEVEL_ABS) -> tuple[bool, float]:  # fmt: skip
    """(within tolerance, max deviation) of two series."""
    dev = np.abs(stored - recomputed)
    worst = float(np.max(dev)) if dev.size else 0.0
    if not np.all(np.isfinite(stored)):
        return False, float("nan")
    return bool(np.all(dev <= absolute + rel * np.abs(recomputed))), worst


def check_result(t: Triple, res, kw: dict) -> Verdict:
    """Every check of the matrix on one run_case result."""
    from mbstudy.pipeline.analysis.index1 import equations, norms_along
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import OK, compute_metrics, status_name

    checks: list[Check] = []
    entry = solvers.model(t.model.name)
    network = hasattr(entry.module, "run_network_case")
    said = status_name(res.status) + (f": {res.error}"[:120] if res.error else "")
    checks.append(Check("status", res.status == OK, said, "ok"))
    verdict = Verdict(t.key, checks, setting=describe(kw), known=known_defect(t))
    if res.status != OK:
        return verdict
    mask = np.zeros(res.n, dtype=bool)
    metrics = compute_metrics(res, None, mask)
    absent = dict(ABSENT)
    absent.update(declared_absent_metrics(t.model.name, dict(t.model.params)))  # the store's
    if res.lam is None or res.m == 0:
        absent["lam_max"] = NO_MULTIPLIERS if res.lam is None else "no constraints (m = 0)"
        absent["lam_rms"] = absent["lam_max"]
    verdict.absent = absent
    bad = sorted(k for k, v in metrics.items() if k not in absent and not math.isfinite(v))
    checks.append(Check("finite", not bad, ", ".join(bad) or "all", "every metric finite"))
    for key in ("rms_phi", "max_phi", "rms_dphi", "de_max", "lam_max", "steps"):
        verdict.figures[key] = metrics[key]
    if network:  # no Phi; its energy and power are the element library's (solvers/elements)
        return verdict
    eq = equations(t.model.name, kw["model_params"])
    q, v, tt = res.q, res.v, res.t
    rec = norms_along(eq, tt, q, v)
    m = max(res.m, 1)
    for j, lvl in enumerate(("phi", "dphi")):
        ok_series, dev = _close(res.D[:, j], rec[lvl])
        want_rms = float(np.sqrt(np.mean(rec[lvl] ** 2) / m))
        want_max = float(np.max(rec[lvl]))
        ok_rms, _ = _close(np.array([metrics[f"rms_{lvl}"]]), np.array([want_rms]))
        ok_max, _ = _close(np.array([metrics[f"max_{lvl}"]]), np.array([want_max]))
        checks.append(Check(lvl, ok_series and ok_rms and ok_max, dev,
                            f"stored = recomputed from q, v within {LEVEL_ABS:g} + "
                            f"{LEVEL_REL:g} |x|"))  # fmt: skip
    E = rec["energy"]
    scale = max(1.0, float(np.max(np.abs(E))))
    ok_e, dev_e = _close(res.D[:, 3], E, rel=0.0, absolute=ENERGY_REL * scale)
    want_de = float(np.max(np.abs(E - E[0])))
    ok_de = math.isfinite(metrics["de_max"]) and abs(metrics["de_max"] - want_de) <= (
        2 * ENERGY_REL * scale)
    checks.append(Check("energy", ok_e and ok_de, dev_e,
                        f"stored E = E(q, v, t) within {ENERGY_REL:g} max(1, |E|)"))  # fmt: skip
    lam = lam_check(eq, res, t.formulation, t.integrator, kw)
    if lam is not None:
        checks.append(lam)
        verdict.figures["lam_dev"] = float(lam.value) if lam.value is not None else math.nan
    return verdict


def lam_check(eq, res, formulation: str, integrator: str, kw: dict) -> Check | None:
    """The ``lam`` check of a run (None without multipliers): the constraint forces
    Phi_q^T lam of the stored multipliers against those of the index-1 solve at the
    stored (q, v). A formulation's lam solves Phi_q a = gamma + u, u its stabilization
    input (stored as |u|, the diagnostics' column 4), so it may differ from the index-1
    one by ||Phi_q|| ||K^+|| |u| (:func:`.index1.input_gain`); beyond that the
    :func:`lam_allowance`, relative to max(1, |Phi_q^T lam|)."""
    from mbstudy.pipeline.analysis.index1 import (
        input_gain,
        reaction_forces,
        stored_reaction_forces,
    )

    if res.lam is None or res.m == 0:
        return None
    tt, q, v = res.t, res.q, res.v
    f_ref = reaction_forces(eq, tt, q, v)
    f_got = stored_reaction_forces(eq, tt, q, res.lam)
    fscale = max(1.0, float(np.max(np.abs(f_ref))))
    dev = np.max(np.abs(f_got - f_ref), axis=1) / fscale
    gain, cond = input_gain(eq, tt, q)
    shift = gain * np.nan_to_num(res.D[:, 4], nan=np.inf) / fscale
    tol = lam_allowance(formulation, integrator, kw) + 100 * EPS * float(np.max(cond))
    dev_l = float(np.max(dev - shift)) if np.all(np.isfinite(dev)) else float("nan")
    ok_l = math.isfinite(dev_l) and dev_l <= tol
    return Check("lam", ok_l, dev_l, f"|Phi_q^T (lam - lam_index1)| - ||Phi_q|| ||K^+|| |u|"
                                     f" <= {tol:.3g} max(1, |f|)")  # fmt: skip


class OverBudget(BaseException):
    """A triple ran past :data:`BUDGET_S` of CPU (a BaseException: the runner records an
    Exception from a kernel as the case's status, and this must reach run_triple)."""


def _over_budget(signum, frame):
    raise OverBudget


def _arm_budget():
    """Start the CPU-time alarm of one triple (main thread only; else no budget)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.signal(signal.SIGPROF, _over_budget)
    signal.setitimer(signal.ITIMER_PROF, BUDGET_S)
    return previous


def _disarm_budget(previous) -> None:
    import signal

    if previous is None:
        return
    signal.setitimer(signal.ITIMER_PROF, 0.0)
    signal.signal(signal.SIGPROF, previous)


def run_triple(t: Triple, budget: bool = True) -> Verdict:
    """Run one triple at its :func:`setting` and check it (never raises: an exception is
    the check ``status`` failing with its text); ``budget``: stop an interpreted run after
    :data:`BUDGET_S` CPU seconds."""
    import time

    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import run_case

    t0 = time.perf_counter()
    kw = setting(t)
    previous = None
    try:
        kernel = None
        if not hasattr(solvers.model(t.model.name).module, "run_network_case"):
            from mbstudy.pipeline.plan.purepy import pure_kernel

            kernel = pure_kernel(t.model.name, t.formulation, t.integrator)
            if budget:  # interpreted only: never interrupt numba's compile
                previous = _arm_budget()
        res = run_case(t.model.name, t.formulation, t.integrator, kernel=kernel, **kw)
        verdict = check_result(t, res, kw)
    except OverBudget:
        verdict = Verdict(t.key, [Check("budget", False, f"> {BUDGET_S:g} s CPU",
                                        f"<= {BUDGET_S:g} s CPU interpreted")],
                          setting=describe(kw), known=known_defect(t))  # fmt: skip
    except Exception as exc:  # a check must never stop the matrix: it is a failure
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
        verdict = Verdict(t.key, [Check("status", False, msg, "ok")], setting=describe(kw),
                          known=known_defect(t))  # fmt: skip
    finally:
        _disarm_budget(previous)
    verdict.seconds = time.perf_counter() - t0
    return verdict


def run_many(triples: list[Triple], workers: int | None = None,
             progress: Callable[[int, Verdict], None] | None = None,
             budget: bool = True) -> list[Verdict]:
    """Run triples in parallel on ``workers`` processes (default: the available cores),
    results in the order given; processes are spawned, so nothing is inherited but the
    names. ``progress(done, verdict)`` is called as each one finishes."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    workers = workers or len(os.sched_getaffinity(0))
    out: list[Verdict] = []
    if workers <= 1 or len(triples) <= 1:
        for t in triples:
            out.append(run_triple(t, budget))
            if progress:
                progress(len(out), out[-1])
        return out
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for v in pool.map(run_triple, triples, [budget] * len(triples), chunksize=1):
            out.append(v)
            if progress:
                progress(len(out), v)
    return out


# ---------------------------------------------------------------------------------------
# the pairwise covering subset


def pairs_of(t: Triple) -> set[tuple]:
    m, f, i = t.key
    return {("mf", m, f), ("mi", m, i), ("fi", f, i)}


def covering_subset(triples: list[Triple]) -> list[Triple]:
    """A fixed pairwise covering array of ``triples``: every (model, formulation),
    (model, integrator) and (formulation, integrator) pair among them appears at least
    once. Greedy (Cohen et al. 1997, AETG without randomness): repeatedly take the first
    triple, in the given order, that covers the most pairs not yet covered."""
    need: set[tuple] = set().union(*(pairs_of(t) for t in triples)) if triples else set()
    chosen: list[Triple] = []
    while need:
        best, gain = None, 0
        for t in triples:
            g = len(pairs_of(t) & need)
            if g > gain:
                best, gain = t, g
        chosen.append(best)
        need -= pairs_of(best)
    return chosen
