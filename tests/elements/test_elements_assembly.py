"""Assembly: residual = sum of element flows at free nodes, BASE nodes removed, and the
Jacobian df/dz with the chain-rule coefficients of each solution variable against finite
differences of f(z) (docs/explanation/methods.md#network-elements; seed 003 §2.3–2.7)."""

from __future__ import annotations

import math

import elements_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.elements import VARIABLES, chain_coefficients, state_from_z
from mbstudy.solvers.elements.assembly import VAR_V, VAR_X, select_z

# two masses, every mechanical element kind, BASE node used by several elements
CHAIN = """
# BASE: 0
# STRUCTURE:
k1 ' K (0 1; 400)
d1 ' D (0 1; 2)
m1 ' M (1; 1.5)
k2 ' K (1 2; 300)
q2 ' MUNL (1 2; 7)
m2 ' M (2; 0.5)
f2 ' FSIN (2 0; 3, 0.7, 0.4)
c2 ' FCON (1 0; 1.25)
s2 ' FSTEP (2 1; -2, 0.1)
"""

# an electrical network with a floating-by-itself node kept by an inductor
CIRCUIT = """
# BASE: gnd
# STRUCTURE:
r1 ' R (a gnd; 50)
c1 ' C (a gnd; 2e-6)
l1 ' L (a b; 1e-2, 0.3)
c2 ' C (b gnd; 1e-6)
r2 ' R (b gnd; 100)
src ' ISIN (a gnd; 0.1, 1e-3, 0.2)
"""


def test_seed_residual_is_the_hand_formula() -> None:
    """f = k x + mu v|v| + m a + F_c(t) at node 2 (docs/explanation/models.md#network)."""
    net = kit.example("spring_damper")
    assert net.nodes == ("2",)  # BASE node 1 removed
    rng = np.random.default_rng(3)
    for _ in range(5):
        x, v, a, t = rng.uniform(-1, 1, 4)
        f = net.residual(t, [x], [v], [a])
        hand = 20000 * x + 1000 * v * abs(v) + 0.1 * a - 1000 * math.sin(10 * t)
        assert f[0] == pytest.approx(hand, rel=1e-13)


def test_base_nodes_removed_and_flows_summed() -> None:
    net = kit.network(CHAIN)
    assert net.nodes == ("1", "2") and net.n_dof == 2
    assert (net.enodes[0] == [-1, 0]).all()
    x, v, a, t = np.array([0.01, -0.02]), np.array([0.3, -0.4]), np.array([2.0, 5.0]), 0.35
    f = net.residual(t, x, v, a)
    s = v[1] - v[0]
    src = 3 * math.sin(2 * math.pi * t / 0.7 + 0.4)
    f1 = 400 * x[0] + 2 * v[0] + 1.5 * a[0] + 300 * (x[0] - x[1]) - 7 * s * abs(s) - 1.25 - 2
    f2 = 300 * (x[1] - x[0]) + 7 * s * abs(s) + 0.5 * a[1] - src + 2
    np.testing.assert_allclose(f, [f1, f2], rtol=1e-13)


@pytest.mark.parametrize("text", [CHAIN, CIRCUIT], ids=["mechanical", "electrical"])
@pytest.mark.parametrize("var", range(3), ids=VARIABLES)
def test_jacobian_is_derivative_of_residual_in_z(text: str, var: int) -> None:
    net = kit.network(text)
    n = net.n_dof
    rng = np.random.default_rng(var)
    dt, t = 1e-3, 0.25
    x_prev, v_prev = rng.uniform(-0.1, 0.1, n), rng.uniform(-1, 1, n)
    x, v, a = (np.empty(n) for _ in range(3))
    z0 = rng.uniform(-1, 1, n) * (1e-3 if var == VAR_X else 1.0)

    def f_of_z(z):
        state_from_z(var, np.asarray(z, float), dt, x_prev, v_prev, x, v, a)
        return net.residual(t, x, v, a)

    state_from_z(var, z0, dt, x_prev, v_prev, x, v, a)
    cx, cv, ca = chain_coefficients(var, dt)
    f, J = net.jacobian(t, x, v, a, cx, cv, ca)
    np.testing.assert_allclose(f, f_of_z(z0), rtol=1e-14)
    # f is piecewise quadratic in z, so central differences are exact up to rounding: a
    # large step keeps the rounding of f (which carries i0, sources) small against J
    h = 1e-3 * (1e-3 if var == VAR_X else 1.0)
    fd = kit.fd_jacobian(f_of_z, z0, h)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-6 * np.abs(J).max())


@pytest.mark.parametrize("var", range(3), ids=VARIABLES)
def test_chain_coefficients_are_derivatives_of_the_integration_formulas(var: int) -> None:
    dt = 2.63e-3
    x_prev, v_prev = np.array([6.11e-5]), np.array([0.08509])
    out = [np.empty(1) for _ in range(3)]
    z = np.empty(1)
    state_from_z(VAR_V, np.array([0.17]), dt, x_prev, v_prev, *out)
    select_z(var, *out, z)
    coeffs = []
    for k in range(3):
        def comp(zz, k=k):
            o = [np.empty(1) for _ in range(3)]
            state_from_z(var, zz, dt, x_prev, v_prev, *o)
            return o[k]
        coeffs.append(kit.fd_jacobian(comp, z, 1e-6 * max(abs(z[0]), 1e-3))[0, 0])
    np.testing.assert_allclose(chain_coefficients(var, dt), coeffs, rtol=1e-6)
    # and the integration formulas hold for every variable:
    # a = (v - v_prev)/dt, x = x_prev + (v_prev + v) dt/2
    x, v, a = (o[0] for o in out)
    assert a == pytest.approx((v - v_prev[0]) / dt, rel=1e-12)
    assert x == pytest.approx(x_prev[0] + 0.5 * (v_prev[0] + v) * dt, rel=1e-12)


def test_with_params_changes_data_not_structure() -> None:
    net = kit.example("spring_damper")
    stiff = net.with_params("Пружина", k=40000.0)
    assert stiff.residual(0.0, [1e-3], [0], [0])[0] == pytest.approx(40.0)
    assert net.residual(0.0, [1e-3], [0], [0])[0] == pytest.approx(20.0)
    with pytest.raises(KeyError):
        net.with_params("Пружина", mu=1.0)
