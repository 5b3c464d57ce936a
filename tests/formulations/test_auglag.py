"""Bayo's index-1 augmented Lagrangian formulation (docs/explanation/methods.md#auglag)."""

from __future__ import annotations

import formulations_testkit as kit
import numpy as np
from mbstudy.solvers import registry
from mbstudy.solvers.formulations import auglag
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import NEWTON_FAILED, OK, status_name


def test_spec() -> None:
    assert registry.formulation("auglag").module is auglag
    names = [p.name for p in auglag.SPEC.params]
    assert names == ["alpha", "omega", "xi", "al_tol", "al_max_iter"]


def test_convergence_order_rk4() -> None:
    """The converged iteration solves (0.1): the projection reference applies."""
    errs = kit.rk4_errors("auglag", kit.fourbar_reference())
    kit.assert_order4(errs)


def test_iterations_are_counted_with_rk4() -> None:
    res = run_case("fourbar", "auglag", "rk4", t_end=0.1, samples=11,
                   integrator_params={"h": 0.001})  # fmt: skip
    assert res.status == OK
    per_rhs = res.counters[3] / res.counters[2]
    assert 2.0 <= per_rhs <= 8.0, per_rhs


def test_dopri5_converges_to_the_constrained_solution() -> None:
    """At convergence a satisfies (0.1) with Baumgarte terms: no O(1/alpha) model error
    (compare the penalty method's 1e-5 at the same alpha), and phi_q a - gamma = u."""
    ref = kit.fourbar_reference()
    res = run_case(
        "fourbar", "auglag", "dopri5", t_end=kit.CONV_T_END, samples=kit.CONV_SAMPLES,
        integrator_params={"rtol": 1e-10, "atol": 1e-12},
    )  # fmt: skip
    assert res.status == OK, status_name(res.status)
    assert np.abs(res.q - ref.q).max() < 1e-7
    # |phi_q a - gamma| and |u| agree to the round-off floor of the iteration
    assert np.abs(res.D[:, 2] - res.D[:, 4]).max() < 1e-6
    # the iterations are counted with the adaptive integrator too (form_flush_counters):
    # at least two solves per right-hand side, as with rk4
    per_rhs = res.counters[3] / res.counters[2]
    assert 2.0 <= per_rhs <= 8.0, per_rhs


def test_iteration_limit_is_a_status_not_an_exception() -> None:
    res = run_case("fourbar", "auglag", "rk4", t_end=0.1, samples=11,
                   formulation_params={"al_max_iter": 1}, integrator_params={"h": 0.001})
    assert res.status == NEWTON_FAILED
    assert res.error == ""
