"""Whole compiled runs of the planar-body models against references that share no code
with the formulations and integrators.

fourbar, manipulator, parallelogram and nfourbar build their mass matrices, gravity,
energies and revolute-joint rows from solvers/models/_planar.py. Each run below is
checked against an independent solution, with a tolerance set by the method's own error
at that setting (not by round-off, so a new numpy, numba or LLVM that rounds a sum
differently cannot fail it, while a wrong equation, which shows at O(1), still does):

- manipulator: scipy DOP853 on the double pendulum in its two absolute angles
  (Lagrange's equations written out below);
- parallelogram and nfourbar: the exact one-DOF reductions (scipy DOP853 at rtol 1e-13,
  solvers/models/_reduction.py);
- fourbar: scipy DOP853 on the index-1 form solved with NumPy from the model's functions
  (tests/models/models_testkit.py), plus the joint gaps and energy computed here from the
  coordinates alone; rk4 must also show its order 4 against that reference.

Bitwise equality is checked only between two runs made here (the same case twice).
"""

from __future__ import annotations

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.models import fourbar, manipulator, nfourbar, parallelogram
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_REJECTED, C_RHS, C_STEPS, OK

MODULES = {"fourbar": fourbar, "manipulator": manipulator, "nfourbar": nfourbar,
           "parallelogram": parallelogram}  # fmt: skip

# key: (model params, formulation, formulation params, integrator, integrator params,
#       t_end, tolerance on q, tolerance on v) against the reference of _reference().
# The tolerances are the integration error allowed at that rtol, with margin for a
# different rounding of the same steps (a few ulp per step, far below them):
# - manipulator, dopri5 rtol 1e-10: measured 2.1e-11 on angles up to 1.2 (no v reference);
# - parallelogram / nfourbar, dopri5 rtol 1e-8: measured 1.1e-9 / 8.9e-10 (q), 6.4e-9 /
#   5.5e-9 (v), so 1e-8 and 5e-8;
# - fourbar, projection + dopri5 rtol 1e-10 over 1 s (coordinates up to 14.1): measured
#   9.5e-11 (q), 1.7e-10 (v) against the index-1 DOP853 at rtol 1e-11, so 1e-9 and 2e-9.
CASES = {
    "manipulator": ({}, "projection", {}, "dopri5", {"rtol": 1e-10, "atol": 1e-12}, 0.5,
                    1e-9, None),
    "parallelogram": ({}, "qr", {}, "dopri5", {"rtol": 1e-8, "atol": 1e-10}, 0.5, 1e-8, 5e-8),
    "nfourbar": ({"n": 2}, "qr", {}, "dopri5", {"rtol": 1e-8, "atol": 1e-10}, 0.5, 1e-8, 5e-8),
    "fourbar-dopri5": ({}, "projection", {}, "dopri5", {"rtol": 1e-10, "atol": 1e-12}, 1.0,
                       1e-9, 2e-9),
}  # fmt: skip
RK4 = ({"omega_n": 5.0, "xi": 1.0}, 1.0, 0.005)  # Baumgarte parameters, t_end, h


def _run(key: str, **integrator_params):
    mp, form, fp, integ, ip, t_end, *_ = CASES.get(key) or (
        {}, "baumgarte", RK4[0], "rk4", {"h": RK4[2]}, RK4[1])  # fmt: skip
    res = run_case(key.split("-")[0], form, integ, t_end=t_end, samples=11, model_params=mp,
                   formulation_params=fp, integrator_params={**ip, **integrator_params})
    assert res.status == OK
    return res


def _reference(key: str, t_end: float):
    """(q, v) at t_end by an independent path (v None where there is none)."""
    model = key.split("-")[0]
    mod = MODULES[model]
    mp = CASES[key][0] if key in CASES else {}
    p = kit.params(mod, **mp)
    if model == "manipulator":
        assert p[4] == 9.81  # the default: m = L = 1, both links horizontal at rest
        return _double_pendulum(1.0, 1.0, 1.0, 1.0, 9.81, t_end), None
    if model in ("parallelogram", "nfourbar"):
        q, v = mod.exact_reference(p, np.array([t_end]))
        return q[0], v[0]
    q, v, _ = kit.integrate(mod, p, np.array([0.0, t_end]))
    return q[-1], v[-1]


@pytest.mark.parametrize("key", sorted(CASES))
def test_runs_match_an_independent_reference(key: str) -> None:
    *_, t_end, tol_q, tol_v = CASES[key]
    res = _run(key)
    q, v = _reference(key, t_end)
    assert np.max(np.abs(res.q[-1] - q)) < tol_q
    if v is not None:
        assert np.max(np.abs(res.v[-1] - v)) < tol_v


def test_rk4_fourbar_converges_with_order_4_to_the_reference() -> None:
    """Fixed steps h = 5, 2.5, 1.25 ms: exactly t_end / h steps of 4 right-hand sides each,
    and the error against the index-1 reference falls by 2^4 per halving (measured
    3.0e-4, 2.3e-5, 1.6e-6 on q: observed orders 3.7 and 3.9, still approaching 4)."""
    q, _ = _reference("fourbar-rk4", RK4[1])
    errs = []
    for h in (0.005, 0.0025, 0.00125):
        res = _run("fourbar-rk4", h=h)
        n = round(RK4[1] / h)
        assert (res.counters[C_STEPS], res.counters[C_REJECTED], res.counters[C_RHS]) == (
            n, 0, 4 * n)
        errs.append(np.max(np.abs(res.q[-1] - q)))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all((orders > 3.5) & (orders < 4.5)), (errs, orders)
    assert errs[0] < 1e-3


def test_the_same_case_twice_gives_the_same_bits() -> None:
    a, b = _run("nfourbar"), _run("nfourbar")
    assert np.array_equal(a.Y, b.Y) and np.array_equal(a.counters, b.counters)


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
    # measured: gap 1.1e-6, energy 3.8e-5 relative (rk4 h = 5 ms + Baumgarte, whose
    # stabilisation bounds the drift by the per-step error); 3e-13, 1.2e-11 (dopri5 at
    # rtol 1e-10 with projection onto both constraint levels)
])  # fmt: skip
def test_fourbar_runs_close_the_loop_and_keep_the_energy(key, gap_tol, energy_tol):
    p = kit.params(fourbar)
    q0, v0 = fourbar.initial_state(p)
    gap0, e0 = _fourbar_joints_and_energy(p, q0, v0)
    assert gap0 < 1e-12
    res = _run(key)
    gap, e = _fourbar_joints_and_energy(p, res.q[-1], res.v[-1])
    assert gap < gap_tol
    assert abs(e - e0) < energy_tol * abs(e0)
