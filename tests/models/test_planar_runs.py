"""Whole runs of the planar-body models before and after the shared helpers.

fourbar, manipulator, parallelogram and nfourbar build their mass matrices, gravity,
energies and revolute-joint rows from solvers/models/_planar.py. The literals below are
the last output row of compiled runs recorded from commit aeb430a, before the models
used the shared helpers (fourbar then wrote its joint rows by hand). Checked:

- the runs now reproduce them to round-off: bit for bit for manipulator, parallelogram
  and nfourbar (same operations), within 1e-11 relative for fourbar, whose joint residual
  rows now sum the two bodies' points in another order (measured: 8e-14 absolute on
  coordinates up to 14.1, 2e-13 on velocities);
- the literals themselves are right by paths that share no code with the models: an
  independent scipy DOP853 integration of the double pendulum in its two angles
  (Lagrange's equations written out below), the exact one-DOF reductions of the
  parallelogram and the N four-bar (scipy, solvers/models/_reduction.py), and for the
  four-bar the joint positions and the energy computed here from the coordinates.
"""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import fourbar, manipulator, nfourbar, parallelogram
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_REJECTED, C_RHS, C_STEPS, OK

# (model, model params, formulation, formulation params, integrator, integrator params,
#  t_end, counters (steps, rejected, rhs), q[-1], v[-1]) recorded at aeb430a
RECORDED = {
    "manipulator": (
        {}, "projection", {}, "dopri5", {"rtol": 1e-10, "atol": 1e-12}, 0.5, (95, 0, 667),
        [0.21664615885206204, -0.45062672119465697, -1.1226537008529351, 0.8649904269646949,
         -1.1535166827967271, -0.5288334395117511],
        [-1.0879518388440519, -0.5230506222017538, -2.414308312564736, -3.676644166428653,
         -3.6143185971726, -5.949104936243605],
    ),
    "parallelogram": (
        {}, "qr", {}, "dopri5", {"rtol": 1e-8, "atol": 1e-10}, 0.5, (21, 0, 128),
        [0.34764331698183853, 0.3593662813312692, 0.8019776981276266, 1.3476433169818385,
         0.3593662813312694, 0.8019776981276264, 2.3476433169818383, 0.3593662813312694,
         0.8019776981276272, 1.6952866339636772, 0.7187325626625386, 2.428801752280491e-16],
        [0.9801027138035958, -0.9481305734844309, -2.727308500321215, 0.9801027138035957,
         -0.9481305734844296, -2.727308500321216, 0.9801027138035958, -0.9481305734844299,
         -2.727308500321214, 1.9602054276071916, -1.8962611469688608, 8.199913802641393e-16],
    ),
    "nfourbar": (
        {"n": 2}, "qr", {}, "dopri5", {"rtol": 1e-8, "atol": 1e-10}, 0.5, (21, 0, 128),
        [0.3476433169006366, 0.35936628140982224, 0.8019776983535853, 1.195286633801273,
         0.7187325628196445, -4.507248728304567e-17, 1.3476433169006365, 0.35936628140982224,
         0.8019776983535852, 2.195286633801273, 0.7187325628196447, 4.47864707975795e-16,
         2.3476433169006365, 0.35936628140982246, 0.8019776983535859],
        [0.9801027138102816, -0.9481305730621863, -2.727308499743664, 1.9602054276205634,
         -1.896261146124373, -7.159113056745271e-16, 0.9801027138102817, -0.9481305730621866,
         -2.7273084997436645, 1.9602054276205634, -1.896261146124372, 3.0924501236672388e-15,
         0.9801027138102817, -0.9481305730621852, -2.7273084997436627],
    ),
    "fourbar-rk4": (
        {}, "baumgarte", {"omega_n": 5.0, "xi": 1.0}, "rk4", {"h": 0.005}, 1.0, (200, 0, 800),
        [0.0018695675095815212, 0.04996613785326824, 14.099772309287113, 0.17692317194652232,
         0.1999658208407473, 0.5237993041407389, 0.3500536044369408, 0.14999968298747884,
         1.570439600673586],
        [-0.31691930809032137, 0.011852643271944012, 6.342745422542627, -0.6270554958738412,
         0.011963076584444723, -0.06780673253580291, -0.3101361877835198,
         0.0001104333125011691, 2.0675723013938065],
    ),
    "fourbar-dopri5": (
        {}, "projection", {}, "dopri5", {"rtol": 1e-10, "atol": 1e-12}, 1.0, (598, 16, 4284),
        [0.001884195717078995, 0.04996448545189178, 14.099474102092568, 0.17695297210937178,
         0.19996446968461296, 0.523803740033935, 0.3500687763922927, 0.1499999842327212,
         1.570337817496912],
        [-0.31686825993629203, 0.011949323862641043, 6.34186977147364, -0.6269164235106346,
         0.012091483838425059, -0.06817676170026273, -0.3100481635743426,
         0.00014215997578401513, 2.0669879744345234],
    ),
}  # fmt: skip


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_runs_reproduce_the_recorded_ones(key: str) -> None:
    mp, form, fp, integ, ip, t_end, counts, q_last, v_last = RECORDED[key]
    model = key.split("-")[0]
    res = run_case(model, form, integ, t_end=t_end, samples=11, model_params=mp,
                   formulation_params=fp, integrator_params=ip)  # fmt: skip
    assert res.status == OK
    assert (res.counters[C_STEPS], res.counters[C_REJECTED], res.counters[C_RHS]) == counts
    if model == "fourbar":
        np.testing.assert_allclose(res.q[-1], q_last, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(res.v[-1], v_last, rtol=1e-11, atol=1e-12)
    else:
        assert np.array_equal(res.q[-1], q_last) and np.array_equal(res.v[-1], v_last)


def _double_pendulum(m1, m2, l1, l2, g, t_end):
    """Two slender links in their absolute angles (Lagrange's equations), scipy DOP853."""
    from scipy.integrate import solve_ivp

    k = 0.5 * m2 * l1 * l2

    def f(t, y):
        t1, t2, w1, w2 = y
        s, c = np.sin(t1 - t2), np.cos(t1 - t2)
        M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, k * c], [k * c, m2 * l2**2 / 3]])
        rhs = [-(0.5 * m1 + m2) * g * l1 * np.cos(t1) - k * s * w2**2,
               -0.5 * m2 * g * l2 * np.cos(t2) + k * s * w1**2]  # fmt: skip
        return [w1, w2, *np.linalg.solve(M, rhs)]

    sol = solve_ivp(f, (0.0, t_end), [0.0, 0.0, 0.0, 0.0], method="DOP853", rtol=1e-13,
                    atol=1e-15)  # fmt: skip
    t1, t2 = sol.y[0, -1], sol.y[1, -1]
    return np.array([0.5 * l1 * np.cos(t1), 0.5 * l1 * np.sin(t1), t1,
                     l1 * np.cos(t1) + 0.5 * l2 * np.cos(t2),
                     l1 * np.sin(t1) + 0.5 * l2 * np.sin(t2), t2])  # fmt: skip


def test_recorded_manipulator_run_matches_an_independent_double_pendulum() -> None:
    p = kit.params(manipulator)  # the default: m = L = 1, both links horizontal at rest
    q = _double_pendulum(1.0, 1.0, 1.0, 1.0, 9.81, 0.5)
    assert np.max(np.abs(np.array(RECORDED["manipulator"][7]) - q)) < 1e-9  # measured 2e-11
    assert p[4] == 9.81


@pytest.mark.parametrize("model", ["parallelogram", "nfourbar"])
def test_recorded_branch_runs_match_the_exact_reduction(model: str) -> None:
    mod = {"parallelogram": parallelogram, "nfourbar": nfourbar}[model]
    mp, *_, t_end, _, q_last, v_last = RECORDED[model]
    q, v = mod.exact_reference(kit.params(mod, **mp), np.array([t_end]))
    # dopri5 at rtol 1e-8: measured 1.1e-9 (q) and 6.4e-9 (v)
    assert np.max(np.abs(q[0] - q_last)) < 1e-8
    assert np.max(np.abs(v[0] - v_last)) < 5e-8


def _fourbar_joints_and_energy(p: np.ndarray, q: np.ndarray, v: np.ndarray):
    """Joint gaps (A, B, C, D) and energy of the four-bar, from the coordinates alone."""
    l1, l2, l3, l4, m2, m3, m4, g = p[:8]
    r = q.reshape(3, 3)
    e = [np.array([np.cos(th), np.sin(th)]) for th in r[:, 2]]
    h = (0.5 * l2, 0.5 * l3, 0.5 * l4)
    gaps = [
        r[0, :2] - h[0] * e[0],
        r[0, :2] + h[0] * e[0] - (r[1, :2] - h[1] * e[1]),
        r[1, :2] + h[1] * e[1] - (r[2, :2] + h[2] * e[2]),
        r[2, :2] - h[2] * e[2] - np.array([l1, 0.0]),
    ]
    energy = sum(
        0.5 * m * (v[3 * b] ** 2 + v[3 * b + 1] ** 2)
        + 0.5 * (m * L**2 / 12) * v[3 * b + 2] ** 2 + m * g * q[3 * b + 1]
        for b, (m, L) in enumerate(((m2, l2), (m3, l3), (m4, l4)))
    )
    return np.max(np.abs(gaps)), energy


@pytest.mark.parametrize("key, gap_tol, energy_tol", [
    ("fourbar-rk4", 5e-6, 1e-4), ("fourbar-dopri5", 1e-10, 1e-8),
    # measured: gap 1.1e-6, energy 3.8e-5 relative (rk4 + Baumgarte); 3e-13, 1.2e-11 (dopri5)
])  # fmt: skip
def test_recorded_fourbar_runs_close_the_loop_and_keep_the_energy(key, gap_tol, energy_tol):
    p = kit.params(fourbar)
    q0, v0 = fourbar.initial_state(p)
    gap0, e0 = _fourbar_joints_and_energy(p, q0, v0)
    assert gap0 < 1e-12
    *_, q_last, v_last = RECORDED[key]
    gap, e = _fourbar_joints_and_energy(p, np.array(q_last), np.array(v_last))
    assert gap < gap_tol
    assert abs(e - e0) < energy_tol * abs(e0)
