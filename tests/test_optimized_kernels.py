"""The structured index-1 solve equals the straightforward augmented LU.

``common_solve_index1`` eliminates the accelerations with M^-1 and solves the m x m
Schur complement phi_q M^-1 phi_q^T (Nocedal & Wright 2006, eq. (16.16)); composing with
``augmented=True`` keeps the plain LU of the (n+m) augmented matrix (0.1). Both must give
the same trajectories to round-off over whole runs, for a diagonal constant M (four-bar,
Baumgarte and DRCS with RK4) and for a dense configuration-dependent M (Andrews,
projection with dopri5, whose step-size control would amplify any real difference).

1e-12 holds over the four-bar runs of 400 steps; over longer or stiffer runs the
problem's own sensitivity to round-off takes over (the straightforward path started
1 ulp away differs from itself by up to ~8e-12 after 5 s of the four-bar and by ~2e-12 over
Andrews' run), so those runs are compared with that measured sensitivity instead: the
largest change over every initial coordinate moved by +-1 ulp (a single coordinate is not
enough: which one the trajectory is sensitive to depends on the machine's libm; on one
machine the crank speed's ulp changed nothing above 1e-16).
No timing here: benchmarks/kernels.py reports the speed.
"""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.solvers.runner import load_kernel, run_case
from mbstudy.solvers.workspace import WS_A, WS_GAMMA, WS_K, WS_LAM, WS_M, WS_PHI_Q, WS_Q

RTOL = 1e-12  # relative to max(1, |value|), per entry

CASES = [
    # (model, formulation, integrator, t_end, formulation params, integrator params,
    #  perturb: False: compare to RTOL; True: compare to max(RTOL, 10 x the straightforward
    #  path's own largest change when one initial coordinate is moved by +-1 ulp))
    ("fourbar", "baumgarte", "rk4", 1.0, {"omega_n": 20.0}, {"h": 0.0025}, False),
    ("fourbar", "drcs", "rk4", 1.0, {"omega_n": 5.0, "omega_o": 50.0}, {"h": 0.0025}, False),
    ("fourbar", "baumgarte", "rk4", 5.0, {"omega_n": 20.0}, {"h": 0.0025}, True),
    ("andrews", "projection", "dopri5", 0.03, {}, {"rtol": 1e-8, "atol": 1e-8}, True),
]


def _close(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| / max(1, |b|) over finite entries (NaN where either is NaN fails)."""
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(b)
    return float(np.max(np.abs(a[ok] - b[ok]) / np.maximum(1.0, np.abs(b[ok]))))


@pytest.mark.parametrize("model,formulation,integrator,t_end,fp,ip,perturb", CASES)
def test_structured_equals_augmented_over_a_run(
    model, formulation, integrator, t_end, fp, ip, perturb
):
    kw = dict(t_end=t_end, samples=11, formulation_params=fp, integrator_params=ip)
    fast = run_case(model, formulation, integrator, **kw)
    ref = run_case(model, formulation, integrator, augmented=True, **kw)
    assert fast.status == ref.status == 0
    assert np.array_equal(fast.counters, ref.counters)  # same steps, rejections, rhs
    tol = RTOL
    if perturb:
        sensitivity = 0.0
        for i in range(ref.q.shape[1]):
            for direction in (np.inf, -np.inf):
                q0 = ref.q[0].copy()
                q0[i] = np.nextafter(q0[i], direction)
                ulp = run_case(model, formulation, integrator, augmented=True, q0=q0,
                               v0=ref.v[0].copy(), **kw)  # fmt: skip
                sensitivity = max(sensitivity, _close(ulp.Y, ref.Y))
        assert sensitivity > 0.0
        tol = max(RTOL, 10.0 * sensitivity)
    assert _close(fast.Y, ref.Y) <= tol
    assert _close(fast.D, ref.D) <= tol
    # the two really are different kernels
    assert load_kernel(model, formulation, integrator).module is not (
        load_kernel(model, formulation, integrator, True).module
    )


def _workspace(mod, rng, n, m, diag):
    """A workspace with random SPD M (diagonal or dense), full-rank phi_q, Q, gamma, u."""
    ws = mod.common_alloc(n, m)
    M, Q, G, gam, K = ws[WS_M], ws[WS_Q], ws[WS_PHI_Q], ws[WS_GAMMA], ws[WS_K]
    if diag:
        M[:] = np.diag(rng.uniform(0.1, 3.0, n))
    else:
        A = rng.standard_normal((n, n))
        M[:] = A @ A.T + n * np.eye(n)
    G[:] = rng.standard_normal((m, n))
    G[rng.random((m, n)) < 0.5] = 0.0  # sparse rows, as for joints
    G[np.arange(m), np.arange(m)] += 2.0  # keep full row rank
    Q[:] = rng.standard_normal(n)
    gam[:] = rng.standard_normal(m)
    u = rng.standard_normal(m)
    if diag:
        K[np.arange(n), np.arange(n)] = 1.0 / np.diag(M)
    else:
        K[:n, :n] = np.linalg.cholesky(M)
    return ws, u


@pytest.mark.parametrize("diag", [True, False], ids=["diagonal M", "dense M"])
def test_schur_solve_matches_lu_on_random_systems(diag):
    mod = load_kernel("fourbar", "baumgarte", "rk4").module
    rng = np.random.default_rng(8)
    for n, m in [(9, 8), (7, 6), (12, 5), (3, 1)]:
        ws, u = _workspace(mod, rng, n, m, diag)
        mode = mod.MASS_DIAG if diag else mod.MASS_CHOL
        assert mod.common_schur_solve(mode, u, ws) == 0
        a, lam = ws[WS_A].copy(), ws[WS_LAM].copy()
        assert mod.common_augmented_lu(u, ws) == 0
        assert np.allclose(a, ws[WS_A], rtol=1e-12, atol=1e-12 * np.abs(ws[WS_A]).max())
        assert np.allclose(lam, ws[WS_LAM], rtol=1e-12, atol=1e-12 * np.abs(ws[WS_LAM]).max())
        # and the equations (0.1) hold
        M, Q, G, gam = ws[WS_M], ws[WS_Q], ws[WS_PHI_Q], ws[WS_GAMMA]
        assert np.allclose(M @ a + G.T @ lam, Q, atol=1e-11)
        assert np.allclose(G @ a, gam + u, atol=1e-11)


def test_redundant_rows_are_singular_on_the_structured_path():
    mod = load_kernel("fourbar", "baumgarte", "rk4").module
    rng = np.random.default_rng(3)
    ws, u = _workspace(mod, rng, 9, 8, True)
    ws[WS_PHI_Q][7] = ws[WS_PHI_Q][6]  # a repeated constraint row: S is singular
    assert mod.common_schur_solve(mod.MASS_DIAG, u, ws) != 0
    assert mod.common_augmented_lu(u, ws) != 0


def test_singular_mass_is_detected_by_the_eigenvalue_estimate():
    """1 / max (M^-1)_cc brackets lambda_min within a factor n; a singular M (the
    Euler-parameter top's M = 4 L^T J L) must not pass for positive definite."""
    mod = load_kernel("fourbar", "baumgarte", "rk4").module
    rng = np.random.default_rng(5)
    x = np.zeros(6)
    for _ in range(20):
        A = rng.standard_normal((6, 6))
        M = A @ A.T + 1e-3 * np.eye(6)
        lam_min = np.linalg.eigvalsh(M)[0]
        est = 1.0 / mod.common_inv_diag_max(np.linalg.cholesky(M), 6, x)
        assert lam_min * (1 - 1e-9) <= est <= 6 * lam_min * (1 + 1e-9)
    e = rng.standard_normal(4)
    Lc = np.array([[-e[1], e[0], e[3], -e[2]], [-e[2], -e[3], e[0], e[1]],
                   [-e[3], e[2], -e[1], e[0]]])  # fmt: skip
    M = 4.0 * Lc.T @ np.diag([0.01, 0.01, 0.02]) @ Lc  # singular: M e = 0
    K = np.tril(M).copy()
    factored = mod.chol_factor(K, 4) == 0  # round-off may let the Cholesky through
    spd = factored and mod.common_inv_diag_max(K, 4, x) * mod.MASS_COND_TOL * M.max() < 1.0
    assert not spd  # ... the eigenvalue estimate must not
