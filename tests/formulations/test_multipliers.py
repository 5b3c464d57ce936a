"""The constraint multipliers every kernel reports at the samples (the store's reactions).

docs/explanation/methods.md (0.1): M a + phi_q^T lam = Q, phi_q a = gamma + u. The kernel writes lam
into the diagnostics columns N_DIAG.. (docs/explanation/solver-contract.md); checked here against an
independent NumPy solve of (0.1) at the stored states, with and without a stabilization
input, and through the study pipeline into the store.
"""

from __future__ import annotations

import formulations_testkit as kit
import numpy as np
from mbstudy.solvers import model_entry
from mbstudy.solvers.metrics import compute_metrics
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK


def _index1_lam(q, v, t, p, u):
    mod = model_entry.model("fourbar").module
    n, m = 9, 8
    Mm = np.zeros((n, n))
    mod.mass(q, p, Mm)
    Q = np.zeros(n)
    mod.forces(q, v, t, p, Q)
    G = kit.phi_q_of("fourbar", q, t, p)
    gam = np.zeros(m)
    mod.gamma(q, v, t, p, gam)
    K = np.block([[Mm, G.T], [G, np.zeros((m, m))]])
    return np.linalg.solve(K, np.r_[Q, gam + u])[n:]


def test_index1_multipliers_equal_numpy_solve() -> None:
    """`none` (u = 0) and `baumgarte` (u = -omega_n^2 phi - 2 xi omega_n phi'): the sample
    multipliers equal lam of (0.1) solved by NumPy at the same state."""
    p = kit.model_params("fourbar")
    mod = model_entry.model("fourbar").module
    for form, fparams in (("none", {}), ("baumgarte", {"omega_n": 20.0, "xi": 1.0})):
        res = run_case("fourbar", form, "rk4", t_end=1.0, samples=11,
                       formulation_params=fparams, integrator_params={"h": 0.0025})
        assert res.status == OK
        assert res.lam.shape == (11, 8)
        for k in (0, 5, 10):
            q, v, t = res.q[k], res.v[k], float(res.t[k])
            u = np.zeros(8)
            if form == "baumgarte":
                ph = np.zeros(8)
                mod.phi(q, t, p, ph)
                G = kit.phi_q_of("fourbar", q, t, p)
                pt = np.zeros(8)
                mod.phi_t(q, t, p, pt)
                u = -20.0**2 * ph - 2.0 * 20.0 * (G @ v + pt)
            lam = _index1_lam(q, v, t, p, u)
            np.testing.assert_allclose(res.lam[k], lam, rtol=1e-10, atol=1e-12)
        mt = compute_metrics(res, None, mod.angle_mask(p))
        assert mt["lam_max"] == np.abs(res.lam).max() > 0.0


def test_failed_case_has_nan_multiplier_metrics() -> None:
    res = run_case("fourbar", "baumgarte", "rk4", t_end=1.0, samples=11,
                   formulation_params={"omega_n": 1e6, "xi": 1.0},
                   integrator_params={"h": 0.0025})
    assert res.status != OK
    p = kit.model_params("fourbar")
    mt = compute_metrics(res, None, model_entry.model("fourbar").module.angle_mask(p))
    assert np.isnan(mt["lam_max"]) and np.isnan(mt["lam_rms"])
