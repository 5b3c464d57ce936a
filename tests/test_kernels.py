"""Kernels of the first solver path: RK4 order, Baumgarte vs drift, dopri5, caching."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from mbstudy.solvers.linalg import chol_factor, chol_solve, lu_factor, lu_solve
from mbstudy.solvers.reference import compute_reference
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import C_STEPS, OK, SINGULAR


@pytest.fixture(scope="module")
def fourbar_ref():
    return compute_reference("fourbar", {}, "dopri5", "projection",
                             {"rtol": 1e-12, "atol": 1e-14}, 1.0, 11)


def test_reference_is_self_consistent(fourbar_ref):
    assert fourbar_ref.status == OK
    assert fourbar_ref.error_estimate < 1e-9


@pytest.mark.parametrize("formulation", ["none", "baumgarte"])
def test_rk4_converges_with_order_4(fourbar_ref, formulation):
    hs = np.array([0.001, 0.0005, 0.00025])  # asymptotic range (coarser h is pre-asymptotic)
    errs = []
    for h in hs:
        r = run_case("fourbar", formulation, "rk4", t_end=1.0, samples=11,
                     integrator_params={"h": h})
        assert r.status == OK
        errs.append(np.max(np.abs(r.q - fourbar_ref.q)))
    slope = np.polyfit(np.log(hs), np.log(errs), 1)[0]
    assert 3.6 < slope < 4.4, (slope, errs)


def test_baumgarte_bounds_drift_where_none_drifts():
    kw = dict(t_end=10.0, samples=101, integrator_params={"h": 0.005})
    free = run_case("fourbar", "none", "rk4", **kw)
    stab = run_case("fourbar", "baumgarte", "rk4", formulation_params={"omega_n": 20.0}, **kw)
    assert free.status == OK and stab.status == OK
    phi_free, phi_stab = free.D[:, 0], stab.D[:, 0]
    # unstabilized: the violation keeps growing; Baumgarte: bounded and far smaller
    assert phi_free[-10:].max() > 10 * phi_free[:10].max()
    assert phi_stab.max() < 0.05 * phi_free.max()
    assert phi_stab[-50:].max() < 3 * phi_stab[:50].max() + 1e-12


def test_dopri5_error_follows_tolerance(fourbar_ref):
    errs, steps = [], []
    for tol in (1e-6, 1e-8, 1e-10):
        r = run_case("fourbar", "projection", "dopri5", t_end=1.0, samples=11,
                     integrator_params={"rtol": tol, "atol": tol})
        assert r.status == OK
        steps.append(int(r.counters[C_STEPS]))
        errs.append(np.max(np.abs(r.q - fourbar_ref.q)))
    assert errs[0] > errs[1] > errs[2]
    # a 5th-order method: 100x tighter tolerance costs about 100^(1/5) ~ 2.5x the steps
    assert steps[0] < steps[1] < steps[2]
    assert errs[2] < 1e-8


def test_projection_keeps_constraints_at_tolerance():
    r = run_case("fourbar", "projection", "rk4", t_end=2.0, samples=21,
                 integrator_params={"h": 0.01})
    assert r.status == OK
    assert r.D[:, 0].max() < 1e-11  # |phi| after projection (tol 1e-12 per step)
    assert r.D[:, 1].max() < 1e-11  # |phi_q v|


def test_energy_balance_closes_for_conservative_fourbar(fourbar_ref):
    r = run_case("fourbar", "projection", "dopri5", t_end=1.0, samples=11,
                 integrator_params={"rtol": 1e-11, "atol": 1e-13})
    E = r.D[:, 3]
    assert np.max(np.abs(E - E[0])) < 1e-8
    assert np.all(r.work == 0.0)


def test_divergence_is_a_status_not_an_exception():
    r = run_case("fourbar", "baumgarte", "rk4", t_end=1.0, samples=11,
                 formulation_params={"omega_n": 1e4, "xi": 1.0},
                 integrator_params={"h": 0.1})
    assert r.status != OK
    assert r.k_reached < 10


def test_lu_and_cholesky_match_numpy():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 7))
    b = rng.normal(size=7)
    F = A.copy()
    piv = np.zeros(7, dtype=np.int64)
    assert lu_factor(F, piv, 7) == OK
    x = b.copy()
    lu_solve(F, piv, x, 7)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-12)
    S = A @ A.T + 7 * np.eye(7)
    C = S.copy()
    assert chol_factor(C, 7) == OK
    x = b.copy()
    chol_solve(C, x, 7)
    np.testing.assert_allclose(x, np.linalg.solve(S, b), rtol=1e-12)
    Z = np.ones((3, 3))
    assert lu_factor(Z.copy(), np.zeros(3, dtype=np.int64), 3) == SINGULAR
    assert chol_factor(Z.copy(), 3) == SINGULAR


def test_numba_cache_is_reused_by_a_second_process():
    """A fresh process loads the composed kernel from numba's disk cache (no recompile)."""
    code = (
        "import json\n"
        "from mbstudy.solvers.runner import load_kernel\n"
        "k = load_kernel('fourbar', 'baumgarte', 'rk4')\n"
        "st = k.module.common_run.stats\n"
        "print(json.dumps({'hits': sum(st.cache_hits.values()),"
        " 'misses': sum(st.cache_misses.values()), 's': k.compile_s}))\n"
    )
    run_case("fourbar", "baumgarte", "rk4", t_end=0.01, samples=2,
             integrator_params={"h": 0.005})  # make sure it is compiled and cached
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["hits"] >= 1 and info["misses"] == 0, info
