"""RADAU5 (solvers/integrators/radau5.py): order 5 in fixed steps, Andrews against the
IVP Test Set, scipy's Radau as a cross-check, the DAE forms, statuses.

Measured (this machine) on Andrews, t = 0.03, rtol = atol, max relative q error
against the Test Set: none 1e-6 / 1e-8 / 1e-10: 1.3e-6 / 2.3e-8 / 5.8e-10 (842 steps at
1e-10); ggl: 3.2e-8 / 4.2e-9 / 3.3e-10; index3: 9.6e-5 / 5.0e-6 / 5.6e-7 (the index-3
scaling of the v and lam weights by 1/h and 1/h^2 lets the steps grow: 255 steps at 1e-10).
"""

from __future__ import annotations

import dae_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers import registry
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_JAC, C_REJECTED, C_STEPS, OK, STEP_BUDGET, STEP_FLOOR

T_END = 0.5


def fixed_step(h: float) -> dict:
    """Every step of size h: loose error weights, h0 = h_max = h, tight Newton."""
    return {"rtol": 1e3, "atol": 1e3, "h0": h, "h_max": h, "fnewt": 1e-15,
            "max_newton": 50}  # fmt: skip


@pytest.fixture(scope="module")
def ref():
    q, v, lam, _, _ = kit.reference("fourbar", np.array([0.0, T_END]))
    return q[-1], v[-1], lam[-1]


@pytest.mark.parametrize("model", ["oscillator", "pendulum"])
def test_order_five_on_the_ode_form(model) -> None:
    # fixed steps of 2^-k (t sums them exactly), Newton to round-off; errors at t_end
    # against the exact solution (oscillator) or scipy's DOP853 at rtol 1e-13 (pendulum).
    # Measured slopes 4.99 / 4.99 (errors 2.4e-7 .. 7.5e-12 and 2.2e-6 .. 6.9e-11). The
    # four-bar is pre-asymptotic for h >= 1/256 (error ratios 640, 186, 21 over
    # h = 1/64 .. 1/512), hence not used here.
    t_end = 2.0 if model == "oscillator" else 1.0
    steps = np.array([1 / 4, 1 / 8, 1 / 16, 1 / 32]) / (1.0 if model == "oscillator" else 4.0)
    if model == "oscillator":
        q_ref, v_ref = registry.model(model).module.exact(kit.model_params(model),
                                                          np.array([0.0, t_end]))  # fmt: skip
    else:
        q_ref, v_ref, _, _, _ = kit.reference(model, np.array([0.0, t_end]))
    errs = []
    for h in steps:
        r = run_case(model, "none", "radau5", t_end=t_end, samples=2,
                     integrator_params=fixed_step(float(h)))  # fmt: skip
        assert r.status == OK
        assert r.counters[C_REJECTED] == 0
        assert r.counters[C_STEPS] == round(t_end / h)
        errs.append(max(np.max(np.abs(r.q[-1] - q_ref[-1])), np.max(np.abs(r.v[-1] - v_ref[-1]))))
    s = kit.slope(steps, np.array(errs))
    print("radau5 order on", model, ": errors", errs, "slope", s)
    assert 4.7 < s < 5.3


def test_andrews_against_the_test_set() -> None:
    # IVP Test Set reference q(0.03) (PSIDE, 1e-14); rtol 1e-10, relative 1e-8
    for form in ("none", "ggl"):
        r = run_case("andrews", form, "radau5", t_end=0.03, samples=2,
                     integrator_params={"rtol": 1e-10, "atol": 1e-10})  # fmt: skip
        assert r.status == OK
        rel = np.max(np.abs(r.q[-1] - kit.ANDREWS_Q_003) / np.abs(kit.ANDREWS_Q_003))
        print("andrews", form, rel, r.counters[:6])
        assert rel < 1e-8
        assert r.counters[C_JAC] > 0


def test_index3_converges_on_andrews() -> None:
    errs = []
    for rtol in (1e-8, 1e-10, 1e-12):
        r = run_case("andrews", "index3", "radau5", t_end=0.03, samples=2,
                     integrator_params={"rtol": rtol, "atol": rtol})  # fmt: skip
        assert r.status == OK
        errs.append(np.max(np.abs(r.q[-1] - kit.ANDREWS_Q_003) / np.abs(kit.ANDREWS_Q_003)))
        assert np.max(r.D[:, 0]) < 1e-9  # Phi = 0 is an equation of the step
    assert errs[2] < 1e-7 and errs[2] < errs[1] < errs[0]


def test_matches_scipy_radau_on_the_fourbar(ref) -> None:
    # scipy's Radau (an independent implementation of the same method) at the same rtol:
    # both within their tolerance of the DOP853 reference, and of each other
    q, _, _, nfev, njev = kit.reference("fourbar", np.array([0.0, T_END]), method="Radau",
                                        rtol=1e-8, atol=1e-10)  # fmt: skip
    r = run_case("fourbar", "none", "radau5", t_end=T_END, samples=2,
                 integrator_params={"rtol": 1e-8, "atol": 1e-10})  # fmt: skip
    assert r.status == OK
    e_ours = np.max(np.abs(r.q[-1] - ref[0]))
    e_scipy = np.max(np.abs(q[-1] - ref[0]))
    print("fourbar rtol 1e-8: radau5", e_ours, r.counters[:6], "scipy Radau", e_scipy, nfev, njev)
    assert e_ours < 1e-6 and e_scipy < 1e-6
    assert np.max(np.abs(r.q[-1] - q[-1])) < 1e-6


def test_multipliers_of_the_dae_forms_match_the_index1_solve(ref) -> None:
    # index3: lam is the index-3 variable, its weights relaxed by 1/h^2 (measured 5.9e-4)
    for form, bound in (("index3", 2e-3), ("ggl", 1e-5)):
        r = run_case("fourbar", form, "radau5", t_end=T_END, samples=2,
                     integrator_params={"rtol": 1e-10, "atol": 1e-10})  # fmt: skip
        assert r.status == OK
        lam_rel = np.max(np.abs(r.lam[-1] - ref[2])) / np.max(np.abs(ref[2]))
        print(form, "lam rel err", lam_rel)
        assert lam_rel < bound


def test_failures_are_statuses() -> None:
    r = run_case("fourbar", "none", "radau5", t_end=1.0, samples=2,
                 integrator_params={"max_steps": 3})  # fmt: skip
    assert r.status == STEP_BUDGET
    r = run_case("fourbar", "none", "radau5", t_end=1.0, samples=2,
                 integrator_params={"h0": 1e-3, "h_min": 0.5})  # fmt: skip
    assert r.status == STEP_FLOOR
