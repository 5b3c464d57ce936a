"""``mbstudy certify``: the checks a numerical analyst runs before trusting an integrator.

For each model (default :data:`DEFAULT_MODELS`) the method runs with one formulation on a
short interval (:func:`certify_interval`), on the interpreted engine (no compile), and is
compared with an *independent* reference: the index-1 ODE integrated by SciPy's DOP853 at
rtol 1e-13 (:func:`mbstudy.pipeline.analysis.index1.reference_trajectory`), whose own
error is estimated against a second run at rtol 1e-11: that check run must be closer to
the reference than every certified run. Errors are max_k |q_k - q_ref,k|.

- fixed-step methods: runs at h = H, H/2, H/4, H/8; the observed order is the slope of the
  least-squares line through (log h, log error) (Hairer, Norsett & Wanner, *Solving ODEs I*,
  sect. II.1), beside the declared order; it passes at >= declared - 0.3;
- adaptive methods: runs at rtol = atol = 1e-4 ... 1e-10 (six decades); tolerance
  proportionality holds if error / tol stays <= :data:`PROPORTIONALITY_BOUND` and the
  error decreases with tol (:data:`MIN_TOL_SLOPE`, :data:`MAX_RISE`);
- at the most accurate run: the constraint levels at position and velocity (bounded by
  the Lipschitz constant of Phi times the error: Phi(q_ref) = 0), at acceleration where
  the formulation imposes it (Phi_q a = gamma + u: |Phi_q a - gamma| <= |u|); the energy
  drift of a conservative model (bounded by |grad E| times the error, E(q_ref, v_ref)
  constant); every metric finite; the multipliers (the conformance matrix's ``lam`` check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from mbstudy.pipeline.analysis.conformance import Check, lam_check

DEFAULT_MODELS = ("fourbar",)
FIXED_REFINEMENTS = 4  # step sizes H / 2^k, k = 0..3
COARSE_STEPS = 40  # steps of the coarsest run (h = 0.0125 s on the four-bar)
TOLERANCES = (1e-4, 1e-6, 1e-8, 1e-10)
PROPORTIONALITY_BOUND = 100.0  # error <= 100 tol (the matrix's "within 100 tol")
# "decreasing with tol": the error falls over the decades (fitted slope >= 0.5), and from
# one tolerance to the next smaller it never rises more than 2x (a run whose error is far
# below a loose tolerance may be luckier than the next one: not a defect)
MIN_TOL_SLOPE = 0.5
MAX_RISE = 2.0
ORDER_SLACK = 0.3  # observed order >= declared - 0.3 (pre-asymptotic coarse steps)
REF_RTOL, REF_ATOL = 1e-13, 1e-15
# the bound factor on the Lipschitz estimates of the level and energy checks: the
# curvature terms of Phi and E over the error ball, and the velocity error's share
LIPSCHITZ_SAFETY = 10.0


class CertifyInput(ValueError):
    """Bad input to certify (an unknown name, a refused combination): one line."""


@dataclass
class Certificate:
    """What ``mbstudy certify`` prints: the method, its orders and every check."""

    method: str
    formulation: str
    models: list[str]
    declared_order: int
    observed_order: float | None
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def as_dict(self) -> dict:
        return {"method": self.method, "formulation": self.formulation, "models": self.models,
                "declared_order": self.declared_order, "observed_order": self.observed_order,
                "checks": [c.as_dict() for c in self.checks]}  # fmt: skip


def default_formulation(integrator: str) -> str:
    """``none`` (the plain index-1 form) where the integrator takes it, else the first
    formulation (by name) it accepts on fourbar; ``none`` if it accepts none (the
    validation then names what it takes)."""
    from mbstudy.solvers import api as solvers
    for f in ("none", *sorted(solvers.entries("formulation"))):
        if solvers.compatibility("fourbar", f, integrator) is None:
            return f
    return "none"


def certify_interval(model: str) -> float:
    """Half a second, or a tenth of the model's own interval when that is shorter."""
    from mbstudy.solvers import api as solvers
    return min(0.5, float(solvers.model(model).spec.t_end) / 10.0)


def _validate(method: str, formulation: str, models: list[str]) -> None:
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import MechanismError

    try:
        solvers.integrator(method)
        solvers.formulation(formulation)
        for m in models:
            entry = solvers.model(m)
            if hasattr(entry.module, "run_network_case"):
                raise CertifyInput(f"--model: {m!r} is an element network (no constraints);"
                                   " certify takes a mechanism model")  # fmt: skip
    except solvers.UnknownName as exc:
        raise CertifyInput(str(exc)) from None
    except MechanismError as exc:
        raise CertifyInput(str(exc).splitlines()[0]) from None
    from mbstudy.pipeline.analysis.conformance import MatrixModel, refusal

    for m in models:
        why = refusal(MatrixModel(m, m), formulation, method)
        if why:
            raise CertifyInput(f"--formulation {formulation} --model {m}: {why}")


def _error(res, q_ref: np.ndarray) -> float:
    return float(np.max(np.abs(res.q - q_ref))) if res.status == 0 else math.nan


def _fit_slope(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def _grad_norm(f, x: np.ndarray) -> float:
    """|grad f| at x by central differences (step 1e-6 scaled)."""
    g = np.zeros_like(x)
    for i in range(x.size):
        h = 1e-6 * max(1.0, abs(x[i]))
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return float(np.linalg.norm(g))


def certify_model(method: str, formulation: str, model: str) -> tuple[list[Check], float | None]:
    """The checks of one model and its observed order (None for adaptive methods)."""
    from mbstudy.pipeline.analysis.index1 import equations, reference_trajectory
    from mbstudy.pipeline.plan.purepy import pure_kernel
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import (
        ACCURACY_METRICS,
        OK,
        Reference,
        compute_metrics,
        initial_state,
        run_case,
        status_name,
    )

    ispec = solvers.integrator(method).spec
    mentry = solvers.model(model)
    eq = equations(model)
    t_end = certify_interval(model)
    samples = 11
    t_out = np.linspace(0.0, t_end, samples)
    q0, v0 = initial_state(model, eq.p)
    q_ref, v_ref, ok_ref = reference_trajectory(eq, t_out, q0, v0, REF_RTOL, REF_ATOL)
    q_chk, _, _ = reference_trajectory(eq, t_out, q0, v0, 100 * REF_RTOL, 100 * REF_ATOL)
    ref_err = float(np.max(np.abs(q_chk - q_ref))) if ok_ref else math.nan
    kernel = pure_kernel(model, formulation, method)
    tag = f"[{model}]"
    checks: list[Check] = []

    def run(iparams):
        return run_case(model, formulation, method, t_end=t_end, samples=samples,
                        integrator_params=iparams, kernel=kernel)  # fmt: skip

    if ispec.fixed_step:
        H = t_end / COARSE_STEPS
        xs = np.array([H / 2**k for k in range(FIXED_REFINEMENTS)])
        runs = [run({"h": float(h)}) for h in xs]
    else:
        names = {p.name for p in ispec.params}
        keys = [k for k in ("rtol", "atol") if k in names] or ["delta_l"]
        xs = np.array(TOLERANCES)
        runs = [run({k: float(tol) for k in keys}) for tol in xs]
    errs = np.array([_error(r, q_ref) for r in runs])
    statuses = [status_name(r.status) for r in runs]
    all_ok = all(r.status == OK for r in runs)
    checks.append(Check(f"status{tag}", all_ok, ", ".join(statuses), "ok at every run"))
    # the check run (tolerance 100x looser) is itself closer to the reference than any
    # certified run: by DOP853's tolerance proportionality the reference is ~100x closer
    checks.append(Check(f"reference{tag}", bool(ok_ref and ref_err < np.nanmin(errs)),
                        ref_err, "|reference - its 100x looser check run| < min error"))
    observed = None
    if ispec.fixed_step:
        observed = _fit_slope(xs, errs)
        want = float(ispec.order)
        checks.append(Check(f"order{tag}", all_ok and math.isfinite(observed) and observed >= want -
                            ORDER_SLACK, observed if math.isfinite(observed) else None,
                            f">= {want - ORDER_SLACK:g} (declared {ispec.order}; errors "
                            f"{', '.join(f'{e:.2e}' for e in errs)} at h = "
                            f"{', '.join(f'{h:.3g}' for h in xs)})"))  # fmt: skip
    else:
        ratio = errs / xs
        slope = _fit_slope(xs, errs)
        decreasing = bool(math.isfinite(slope) and slope >= MIN_TOL_SLOPE
                          and np.all(errs[1:] <= MAX_RISE * errs[:-1]))  # fmt: skip
        bounded = bool(np.all(ratio <= PROPORTIONALITY_BOUND))
        checks.append(Check(
            f"tolerance_proportionality{tag}", decreasing and bounded and all_ok,
            float(np.nanmax(ratio)) if np.isfinite(ratio).any() else None,
            f"error/tol <= {PROPORTIONALITY_BOUND:g}, log-log slope of error over tol >= "
            f"{MIN_TOL_SLOPE:g} (got {slope:.2f}), no rise > {MAX_RISE:g}x over tol = "
            f"{', '.join(f'{x:g}' for x in xs)} (errors {', '.join(f'{e:.2e}' for e in errs)})",
        ))  # fmt: skip
    best = runs[int(np.nanargmin(errs))] if np.isfinite(errs).any() else runs[-1]
    if best.status != OK:
        return checks, observed
    err_q = float(np.max(np.abs(best.q - q_ref)))
    err_v = float(np.max(np.abs(best.v - v_ref)))
    lip = max((np.linalg.norm(eq.phi_q(q, t), 2) for q, t in zip(best.q, best.t,
                                                                   strict=True)), default=0.0)
    if eq.m:
        bound_p = LIPSCHITZ_SAFETY * lip * err_q + 1e-13
        bound_v = LIPSCHITZ_SAFETY * max(1.0, lip) * (err_q + err_v) + 1e-12
        checks.append(Check(f"phi{tag}", float(np.max(best.D[:, 0])) <= bound_p,
                            float(np.max(best.D[:, 0])), f"<= {bound_p:.2e} (10 |Phi_q| error)"))
        checks.append(Check(f"dphi{tag}", float(np.max(best.D[:, 1])) <= bound_v,
                            float(np.max(best.D[:, 1])),
                            f"<= {bound_v:.2e} (10 |Phi_q| (error q + error v))"))  # fmt: skip
        # a DAE form has the integrator's own a: no acceleration level (solvers/forms.py)
        if not solvers.is_dae_form(solvers.formulation(formulation).spec.form):
            u = np.nan_to_num(best.D[:, 4], nan=np.inf)
            excess = float(np.max(best.D[:, 2] - u))
            checks.append(Check(f"ddphi{tag}", excess <= 1e-8 * max(1.0, lip), excess,
                                "|Phi_q a - gamma| - |u| <= 1e-8 |Phi_q|"))  # fmt: skip
    if mentry.spec.conservative:
        E = np.array([eq.energy(q, v, t) for q, v, t in zip(best.q, best.v, best.t,
                                                              strict=True)])  # fmt: skip
        gq = _grad_norm(lambda x: eq.energy(x, v0, 0.0), q0)
        gv = _grad_norm(lambda x: eq.energy(q0, x, 0.0), v0)
        drift = float(np.max(np.abs(E - E[0])))
        bound_e = LIPSCHITZ_SAFETY * (gq * err_q + gv * err_v) + 1e-12 * max(1.0, abs(E[0]))
        checks.append(Check(f"energy_drift{tag}", drift <= bound_e, drift,
                            f"<= {bound_e:.2e} (10 |grad E| error)"))  # fmt: skip
    ref = Reference(t=t_out, q=q_ref, v=v_ref, status=0 if ok_ref else 1,
                    error_estimate=ref_err)  # fmt: skip
    mask = np.asarray(mentry.module.angle_mask(eq.p), dtype=bool)
    metrics = compute_metrics(best, ref, mask)
    absent = set()
    if not mask.any():
        absent |= {"e_theta", "e_dtheta"}
    if mask.all():
        absent |= {"e_r", "e_dr"}
    if best.lam is None or eq.m == 0:
        absent |= {"lam_max", "lam_rms"}
    bad = [k for k in ACCURACY_METRICS if k not in absent and not math.isfinite(metrics[k])]
    checks.append(Check(f"finite{tag}", not bad, ", ".join(bad) or "all",
                        "every metric finite" + (f" ({', '.join(sorted(absent))} absent: no "
                                                 "such coordinates or multipliers)"
                                                 if absent else "")))  # fmt: skip
    kw = {"integrator_params": {"h": float(xs[-1])} if ispec.fixed_step else {}}
    lc = lam_check(eq, best, formulation, method, kw)
    if lc is not None:
        checks.append(Check(f"multipliers{tag}", lc.passed, lc.value, lc.expected))
    return checks, observed


def certify(method: str, formulation: str | None = None,
            models: list[str] | None = None) -> Certificate:  # fmt: skip
    """Run every check of ``method`` (an integrator) with ``formulation`` on ``models``.

    Raises
    ------
    CertifyInput
        For an unknown name or a combination that plan refuses.
    """
    from mbstudy.solvers import api as solvers
    try:
        formulation = formulation or default_formulation(method)
    except solvers.UnknownName as exc:
        raise CertifyInput(str(exc)) from None
    models = list(models or DEFAULT_MODELS)
    _validate(method, formulation, models)
    spec = solvers.integrator(method).spec
    cert = Certificate(method, formulation, models, int(spec.order), None)
    orders = []
    for m in models:
        checks, observed = certify_model(method, formulation, m)
        cert.checks += checks
        if observed is not None:
            orders.append(observed)
    if orders:
        finite = [o for o in orders if math.isfinite(o)]
        cert.observed_order = round(min(finite), 3) if len(finite) == len(orders) else None
    return cert


def render_table(cert: Certificate) -> str:
    """The certificate as an aligned text table."""
    head = (f"certify {cert.method} (formulation {cert.formulation}; models "
            f"{', '.join(cert.models)}): declared order {cert.declared_order}, observed "
            + (f"{cert.observed_order:.2f}" if cert.observed_order is not None else "n/a"))
    rows = [("check", "result", "value", "expected")]
    for c in cert.checks:
        v = c.value
        shown = f"{v:.3g}" if isinstance(v, float) else ("-" if v is None else str(v))
        rows.append((c.name, "pass" if c.passed else "FAIL", shown, c.expected))
    widths = [max(len(r[j]) for r in rows) for j in range(3)]
    lines = [head]
    for r in rows:
        lines.append("  ".join(r[j].ljust(widths[j]) for j in range(3)) + "  " + r[3])
    lines.append("all checks pass" if cert.passed else
                 f"{sum(not c.passed for c in cert.checks)} check(s) FAIL")  # fmt: skip
    return "\n".join(lines)
