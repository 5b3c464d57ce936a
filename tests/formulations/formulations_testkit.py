"""Shared helpers of the formulation tests: references, order fits, model availability.

Kernels compile once per (model, formulation, integrator) triple (~15 s each), so the
tests share a small set of triples and cache the runs they reuse within a session.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.runner import CaseResult, run_case
from mbstudy.solvers.spec import pack_params

# The convergence study of every formulation: rk4 over 1 s on the four-bar, output every
# 0.1 s (an integer multiple of every step).
CONV_T_END = 1.0
CONV_SAMPLES = 11
CONV_STEPS = (0.004, 0.002, 0.001)
TIGHT = {"rtol": 1e-12, "atol": 1e-14}


def require_model(name: str):
    """Return the model entry ``name`` (a missing model fails the test)."""
    return registry.entries("model")[name]


def model_params(name: str, **values: object) -> np.ndarray:
    """The model's parameter vector with ``values`` overriding the defaults."""
    return pack_params(model_entry.model(name).params, values)


@cache
def fourbar_reference(formulation: str = "projection", **fparams: float) -> CaseResult:
    """dopri5 at rtol 1e-12 / atol 1e-14 over the convergence interval (cached)."""
    res = run_case(
        "fourbar", formulation, "dopri5", t_end=CONV_T_END, samples=CONV_SAMPLES,
        formulation_params=dict(fparams), integrator_params=TIGHT,
    )  # fmt: skip
    assert res.status == 0, res
    return res


def rk4_errors(formulation: str, reference: CaseResult, **fparams: float) -> np.ndarray:
    """max_k |q_k - q_ref,k| of rk4 runs at CONV_STEPS on the four-bar."""
    errs = []
    for h in CONV_STEPS:
        res = run_case(
            "fourbar", formulation, "rk4", t_end=CONV_T_END, samples=CONV_SAMPLES,
            formulation_params=dict(fparams), integrator_params={"h": h},
        )  # fmt: skip
        assert res.status == 0, (formulation, h, res.status)
        errs.append(float(np.max(np.abs(res.q - reference.q))))
    return np.array(errs)


def pair_slopes(hs, errs) -> np.ndarray:
    """Observed orders log(e_i / e_{i+1}) / log(h_i / h_{i+1}) of consecutive runs."""
    hs = np.asarray(hs, float)
    errs = np.asarray(errs, float)
    return np.log(errs[:-1] / errs[1:]) / np.log(hs[:-1] / hs[1:])


def fit_slope(hs, errs) -> float:
    """Least-squares slope of log(err) against log(h)."""
    return float(np.polyfit(np.log(hs), np.log(errs), 1)[0])


def assert_order4(errs: np.ndarray) -> None:
    """RK4's order: fitted slope ~4, and the finest pair (closest to asymptotic) near 4."""
    slope = fit_slope(CONV_STEPS, errs)
    last = pair_slopes(CONV_STEPS, errs)[-1]
    assert 3.5 <= slope <= 5.3, (errs, slope)
    assert 3.6 <= last <= 4.6, (errs, last)


def phi_of(model: str, q: np.ndarray, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Phi(q_k, t_k) for every row of a trajectory, (K, m)."""
    mod = model_entry.model(model).module
    _, m = (int(x) for x in mod.sizes(p))
    out = np.zeros((q.shape[0], m))
    for k in range(q.shape[0]):
        mod.phi(np.ascontiguousarray(q[k]), float(t[k]), p, out[k])
    return out


def phi_q_of(model: str, q: np.ndarray, t: float, p: np.ndarray) -> np.ndarray:
    """Phi_q(q, t), (m, n)."""
    mod = model_entry.model(model).module
    n, m = (int(x) for x in mod.sizes(p))
    out = np.zeros((m, n))
    mod.phi_q(np.ascontiguousarray(q, dtype=float), float(t), p, out)
    return out
