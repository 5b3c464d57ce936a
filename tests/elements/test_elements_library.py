"""Element library: every element's flows against its documented equation, and its three
Jacobians against central finite differences (docs/explanation/methods.md#network-elements;
seed 003 §2.6, §2.11)."""

from __future__ import annotations

import math

import elements_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.elements.library import (
    ELEMENT_TYPES,
    EVAL_OK,
    EVAL_UNKNOWN,
    MAX_NODES,
    element_eval,
    eval_element,
)


def _s(t, p):
    return p[0] * math.sin(2 * math.pi * t / p[1] + p[2])


# F1 of each code written from the equations of docs/reference/elements.md (independently of the
# library's code); F2 = -F1 for two-node elements.
EXPECTED_F1 = {
    "K": lambda p, x, v, a, t: p[0] * (x[0] - x[1]),
    "KR": lambda p, x, v, a, t: p[0] * (x[0] - x[1]),
    "D": lambda p, x, v, a, t: p[0] * (v[0] - v[1]),
    "DR": lambda p, x, v, a, t: p[0] * (v[0] - v[1]),
    "MUNL": lambda p, x, v, a, t: -p[0] * (v[1] - v[0]) * abs(v[1] - v[0]),
    "M": lambda p, x, v, a, t: p[0] * a[0],
    "J": lambda p, x, v, a, t: p[0] * a[0],
    "R": lambda p, x, v, a, t: (v[0] - v[1]) / p[0],
    "L": lambda p, x, v, a, t: (x[0] - x[1]) / p[0] + p[1],
    "C": lambda p, x, v, a, t: p[0] * (a[0] - a[1]),
    "FCON": lambda p, x, v, a, t: -p[0],
    "TCON": lambda p, x, v, a, t: -p[0],
    "ICON": lambda p, x, v, a, t: -p[0],
    "FSTEP": lambda p, x, v, a, t: -p[0] * (t >= p[1]),
    "TSTEP": lambda p, x, v, a, t: -p[0] * (t >= p[1]),
    "ISTEP": lambda p, x, v, a, t: -p[0] * (t >= p[1]),
    "FSIN": lambda p, x, v, a, t: -_s(t, p),
    "TSIN": lambda p, x, v, a, t: -_s(t, p),
    "ISIN": lambda p, x, v, a, t: -_s(t, p),
}

CODES = sorted(ELEMENT_TYPES)


def _random_case(code: str, rng: np.random.Generator):
    et = ELEMENT_TYPES[code]
    p = np.array([rng.uniform(0.5, 3.0) if prm.positive else rng.uniform(-2.0, 2.0)
                  for prm in et.params])
    n = et.n_nodes
    x, v, a = (rng.uniform(-1.0, 1.0, n) for _ in range(3))
    return p, x, v, a, rng.uniform(0.0, 5.0)


def test_table_is_complete() -> None:
    assert set(EXPECTED_F1) == set(ELEMENT_TYPES)
    for code in ("K", "MUNL", "M", "FSIN"):  # the seed's Latin codes
        assert code in ELEMENT_TYPES


@pytest.mark.parametrize("code", CODES)
def test_flows_match_equation_and_balance(code: str) -> None:
    rng = np.random.default_rng(abs(hash(code)) % 2**32)
    et = ELEMENT_TYPES[code]
    for _ in range(5):
        p, x, v, a, t = _random_case(code, rng)
        F, *_ = eval_element(code, p, x, v, a, t)
        assert F[0] == pytest.approx(EXPECTED_F1[code](p, x, v, a, t), rel=1e-13, abs=1e-15)
        if et.n_nodes == 2:
            assert F[0] + F[1] == pytest.approx(0.0, abs=1e-14)  # flow conserved


@pytest.mark.parametrize("code", CODES)
def test_jacobians_against_finite_differences(code: str) -> None:
    rng = np.random.default_rng(1 + abs(hash(code)) % 2**32)
    et = ELEMENT_TYPES[code]
    for _ in range(5):
        p, x, v, a, t = _random_case(code, rng)
        _, Jx, Jv, Ja = eval_element(code, p, x, v, a, t)
        for which, J in enumerate((Jx, Jv, Ja)):
            def fun(z, which=which, p=p, state=(x, v, a), t=t):
                args = list(state)
                args[which] = z
                return eval_element(code, p, *args, t)[0]

            fd = kit.fd_jacobian(fun, [x, v, a][which], 1e-6)
            np.testing.assert_allclose(J, fd, rtol=1e-7, atol=1e-8,
                                       err_msg=f"{code} d/d{'xva'[which]}")
        if et.source:
            assert not (Jx.any() or Jv.any() or Ja.any())


def test_munl_derivative_near_zero_relative_velocity() -> None:
    """s|s| is C¹: the analytic 2 mu |s| matches differences across s = 0."""
    for s in (0.0, 1e-7, -1e-7):
        _, _, Jv, _ = eval_element("MUNL", [3.0], [0, 0], [0.0, s], [0, 0], 0.0)
        fd = kit.fd_jacobian(lambda z: eval_element("MUNL", [3.0], [0, 0], z, [0, 0], 0.0)[0],
                             np.array([0.0, s]), 1e-5)
        np.testing.assert_allclose(Jv, fd, atol=3.0 * 1e-5 * 1.01)  # FD error mu h at s = 0


def test_seed_force_sign_and_value() -> None:
    """FSIN (2 1; Q, T, 0) puts F_c = -Q sin(2 pi t/T) on node 2 (seed 003 §2.14: -40.6)."""
    F, *_ = eval_element("FSIN", [1000.0, 0.2 * math.pi, 0.0], [0, 0], [0, 0], [0, 0],
                         1.438e-3 + 2.63e-3)
    assert F[0] == pytest.approx(-1000 * math.sin(10 * 4.068e-3), rel=1e-12)
    assert kit.close_to_printed(F[0], "-40.6", 0.002)


def test_unknown_type_id_is_reported_not_raised() -> None:
    z = np.zeros(MAX_NODES)
    J = np.zeros((MAX_NODES, MAX_NODES))
    assert element_eval(999, np.zeros(3), z, z, z, 0.0, z.copy(), J, J.copy(), J.copy()) \
        == EVAL_UNKNOWN
    assert element_eval(0, np.ones(3), z, z, z, 0.0, z.copy(), J, J.copy(), J.copy()) == EVAL_OK
