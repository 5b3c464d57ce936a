"""RADAU5 (solvers/integrators/radau5.py): order 5 in fixed steps, Andrews against the
IVP Test Set, scipy's Radau as a cross-check, the DAE forms, statuses.

Measured (this machine) on Andrews, t = 0.03, rtol = atol, max relative q error
against the Test Set: none 1e-6 / 1e-8 / 1e-10: 1.3e-6 / 2.3e-8 / 5.8e-10 (842 steps at
1e-10); ggl: 3.2e-8 / 4.2e-9 / 3.3e-10; index3: 8.0e-6 / 2.2e-7 / 3.7e-9 (1521 steps at
1e-10; with RADAU5's tolerance exponent 2/3 it was 9.6e-5 / 5.0e-6 / 5.7e-7, which is why
index3 takes the linear rule, test_tolerance_proportionality.py).
"""

from __future__ import annotations

import dae_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers import model_entry
from mbstudy.solvers.integrators.radau5 import R5_C_LU
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import (
    C_JAC,
    C_REJECTED,
    C_STEPS,
    OK,
    STEP_BUDGET,
    STEP_FLOOR,
)

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
        q_ref, v_ref = model_entry.model(model).module.exact(kit.model_params(model),
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


def test_transformed_solve_equals_the_stage_system() -> None:
    # The real 3N x 3N simplified-Newton matrix I (x) J + (W/h) (x) B, solved directly by
    # numpy, against the kernel's transformed solve (one real and one complex N x N LU,
    # Hairer & Wanner IV.8 (8.16)-(8.18)); B not the identity (the DAE forms' M(q)).
    from mbstudy.solvers.integrators import radau5

    rng = np.random.default_rng(7)
    ny, h = 9, 0.013
    J = rng.normal(size=(ny, ny))
    B = rng.normal(size=(ny, ny))
    E1, E2 = np.zeros((ny, ny)), np.zeros((ny, ny), dtype=np.complex128)
    piv1, piv2 = np.zeros(ny, dtype=np.int64), np.zeros(ny, dtype=np.int64)
    assert radau5.integ_r5_matrices(J, B, h, E1, piv1, E2, piv2) == OK
    A = np.array([[(88 - 7 * 6**0.5) / 360, (296 - 169 * 6**0.5) / 1800, (-2 + 3 * 6**0.5) / 225],
                  [(296 + 169 * 6**0.5) / 1800, (88 + 7 * 6**0.5) / 360, (-2 - 3 * 6**0.5) / 225],
                  [(16 - 6**0.5) / 36, (16 + 6**0.5) / 36, 1 / 9]])  # fmt: skip
    big = np.kron(np.eye(3), J) + np.kron(np.linalg.inv(A) / h, B)
    for _ in range(3):
        b = rng.normal(size=3 * ny)
        x = b.copy()
        radau5.integ_r5_solve(E1, piv1, E2, piv2, x, np.zeros(ny, dtype=np.complex128))
        ref = np.linalg.solve(big, b)
        assert np.max(np.abs(x - ref)) < 1e-12 * np.max(np.abs(ref))
    # the error estimate's matrix (gamma/h) B + J is the real block
    np.testing.assert_allclose(np.linalg.eigvals(np.linalg.inv(A)).real.max(), radau5.R5_U1,
                               rtol=1e-14)  # fmt: skip


def test_transformation_constants_match_scipy() -> None:
    # scipy's Radau (an independent implementation) tabulates T, T^-1 and the eigenvalues
    from mbstudy.solvers.integrators import radau5
    from scipy.integrate._ivp import radau as sp

    np.testing.assert_allclose(radau5._T, sp.T, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(radau5._TI, sp.TI, rtol=1e-13, atol=1e-14)
    assert abs(radau5.R5_U1 - sp.MU_REAL) < 1e-14
    assert abs(complex(radau5.R5_ALPH, -radau5.R5_BETA) - sp.MU_COMPLEX) < 1e-14


def test_jacobian_reuse_follows_thet() -> None:
    # RADAU5's WORK(3): thet < 0 asks for a new J after every accepted step (one per step
    # start, rejected steps reuse it); the default keeps J when Newton contracts fast.
    ip = {"rtol": 1e-6, "atol": 1e-6}
    every = run_case("fourbar", "none", "radau5", t_end=T_END, samples=2,
                     integrator_params={**ip, "thet": -1.0})  # fmt: skip
    dflt = run_case("fourbar", "none", "radau5", t_end=T_END, samples=2,
                    integrator_params=ip)  # fmt: skip
    assert every.status == OK and dflt.status == OK
    assert every.counters[C_JAC] == every.counters[C_STEPS]
    assert dflt.counters[C_JAC] < every.counters[C_JAC]
    # one LU pair per new J or new h, never fewer than one per J
    assert dflt.counters[R5_C_LU] >= dflt.counters[C_JAC]
