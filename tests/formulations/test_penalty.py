"""Acceleration-level penalty formulation with Baumgarte terms
(docs/explanation/methods.md#penalty)."""

from __future__ import annotations

import formulations_testkit as kit
import numpy as np
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose import kernel_module
from mbstudy.solvers.formulations import penalty
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import OK
from mbstudy.solvers.workspace import WS_LAM


def test_spec() -> None:
    assert registry.formulation("penalty").module is penalty
    assert [p.name for p in penalty.SPEC.params] == ["alpha", "omega", "psi"]


def test_convergence_order_rk4() -> None:
    """Order 4 of the penalty ODE itself, against its own tight dopri5 solution.

    The penalty solution differs from the constrained one by O(1/alpha) (1e-5 here, see
    below), more than RK4's error at h = 0.001, so the projection reference would
    measure the model error, not the order.
    """
    errs = kit.rk4_errors("penalty", kit.fourbar_reference("penalty"))
    kit.assert_order4(errs)


def test_tends_to_the_constrained_solution_like_one_over_alpha() -> None:
    ref = kit.fourbar_reference()
    errs = []
    for alpha in (1e5, 1e7):
        res = run_case(
            "fourbar", "penalty", "dopri5", t_end=kit.CONV_T_END, samples=kit.CONV_SAMPLES,
            formulation_params={"alpha": alpha}, integrator_params={"rtol": 1e-10, "atol": 1e-12},
        )  # fmt: skip
        assert res.status == OK
        errs.append(np.abs(res.q - ref.q).max())
    assert errs[1] < 3e-5
    assert 30 < errs[0] / errs[1] < 300  # ~100 for a factor 100 in alpha


def test_multiplier_estimate_and_input() -> None:
    """lam = alpha (phi_q a - gamma - u) is the multiplier of (0.1) up to O(1/alpha)."""
    mod = model_entry.model("fourbar").module
    p = kit.model_params("fourbar")
    q, v = mod.initial_state(p)
    k = kernel_module("fourbar", "penalty", "rk4")
    fp = pack_params(penalty.SPEC.params, {})
    ws = k.form_alloc(9, 8, fp)
    y = np.r_[q, v, 0.0]
    dy = np.zeros_like(y)
    assert k.form_rhs(0.0, y, p, fp, dy, ws) == OK
    Mm = np.zeros((9, 9))
    mod.mass(q, p, Mm)
    Q = np.zeros(9)
    mod.forces(q, v, 0.0, p, Q)
    G = kit.phi_q_of("fourbar", q, 0.0, p)
    gam = np.zeros(8)
    mod.gamma(q, v, 0.0, p, gam)
    sol = np.linalg.solve(np.block([[Mm, G.T], [G, np.zeros((8, 8))]]), np.r_[Q, gam])
    lam = ws[penalty.PEN_INDEX1][WS_LAM]
    # sign: M a + phi_q^T lam = Q in both
    np.testing.assert_allclose(lam, sol[9:], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(dy[9:18], sol[:9], rtol=1e-5, atol=1e-6)
