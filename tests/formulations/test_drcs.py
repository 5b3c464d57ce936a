"""DRCS (seed 004, docs/explanation/methods.md#drcs): observer, closed loop, order, the four-bar
baseline."""

from __future__ import annotations

import formulations_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.compose import kernel_module
from mbstudy.solvers.formulations import drcs
from mbstudy.solvers.metrics import compute_metrics
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import OK, status_name

N, M = 9, 8  # four-bar


@pytest.fixture(scope="module")
def kernel():
    return kernel_module("fourbar", "drcs", "rk4")


def fparams(**values) -> np.ndarray:
    return pack_params(drcs.SPEC.params, values)


def test_spec_and_state_size(kernel) -> None:
    assert registry.formulation("drcs").module is drcs
    assert [p.name for p in drcs.SPEC.params] == ["omega_n", "xi", "omega_o"]
    p = kit.model_params("fourbar")
    assert kernel.common_state_size(p, fparams()) == 2 * N + 1 + 3 * M


def _observer_blocks(kernel, omega_o: float):
    """Jacobians of the kernel's observer rhs for one channel (it is linear): by columns."""
    one = np.ones(1)
    zero = np.zeros(1)
    out = np.zeros(3)

    def rhs(ph, xh, u):
        kernel.form_observer_rhs(ph, xh, u, omega_o, 1, out)
        return out.copy()

    jx = np.column_stack([rhs(zero, e, zero) for e in np.eye(3)])
    jy = rhs(one, np.zeros(3), zero)
    ju = rhs(zero, np.zeros(3), one)
    return jx, jy, ju


@pytest.mark.parametrize("omega_o", [20.0, 200.0])
def test_observer_error_poles_at_minus_omega_o(kernel, omega_o: float) -> None:
    """eig(A_e - L_e C_e) = -omega_o (triple), read off the kernel's own observer rhs."""
    jx, jy, ju = _observer_blocks(kernel, omega_o)
    A, B, C, L, _ = drcs.observer_matrices(omega_o)
    np.testing.assert_allclose(jx, A - L @ C, rtol=1e-15, atol=0)
    np.testing.assert_allclose(jy, L[:, 0], rtol=1e-15)
    np.testing.assert_allclose(ju, B[:, 0], rtol=0, atol=0)
    # characteristic polynomial (s + omega_o)^3; a triple root is ill-conditioned as an
    # eigenvalue (error ~ eps^(1/3)), the coefficients are not
    np.testing.assert_allclose(np.poly(jx), np.poly([-omega_o] * 3), rtol=1e-12)
    assert np.allclose(np.linalg.eigvals(jx), -omega_o, rtol=1e-4)


@pytest.mark.parametrize(("omega_n", "xi", "omega_o"), [(5.0, 1.0, 20.0), (20.0, 0.5, 100.0)])
def test_linear_closed_loop_separation(kernel, omega_n, xi, omega_o) -> None:
    """Channel y'' = u with the kernel's law and observer: poles {-w_n (x2), -w_o (x3)}.

    For xi != 1 the Baumgarte pair is -xi w_n +- i w_n sqrt(1 - xi^2), which checks the
    gain parameterization Kd = 2 xi omega_n (docs/explanation/methods.md#drcs).
    """
    jx, jy, ju = _observer_blocks(kernel, omega_o)
    u = np.zeros(1)
    K = np.zeros(3)
    for j, e in enumerate(np.eye(3)):
        kernel.form_law(e, omega_n**2, 2 * xi * omega_n, 1, u)
        K[j] = u[0]
    np.testing.assert_allclose(K, [-(omega_n**2), -2 * xi * omega_n, -1.0])
    Acl = np.zeros((5, 5))
    Acl[0, 1] = 1.0
    Acl[1, 2:] = K  # y'' = u = K x_hat (d = 0)
    Acl[2:, 0] = jy  # innovation from y
    Acl[2:, 2:] = jx + np.outer(ju, K)
    expected = np.poly(np.r_[np.roots([1.0, 2 * xi * omega_n, omega_n**2]), [-omega_o] * 3])
    np.testing.assert_allclose(np.poly(Acl), expected.real, rtol=1e-11)


def test_consistent_observer_initialization(kernel) -> None:
    """y_hat = phi(q0), ydot_hat = phi_q v0 + phi_t, d_hat = 0 (docs/explanation/methods.md#drcs),
    off the manifold too."""
    rng = np.random.default_rng(4)
    p = kit.model_params("fourbar")
    q0, v0 = model_entry.model("fourbar").module.initial_state(p)
    q = q0 + 1e-3 * rng.standard_normal(N)
    v = v0 + 1e-2 * rng.standard_normal(N)
    fp = fparams()
    ws = kernel.form_alloc(N, M, fp)
    y = np.zeros(2 * N + 1 + 3 * M)
    y[:N], y[N : 2 * N] = q, v
    assert kernel.form_init(0.0, y, p, fp, ws) == OK
    o = 2 * N + 1
    np.testing.assert_allclose(y[o : o + M], kit.phi_of("fourbar", q[None], [0.0], p)[0])
    np.testing.assert_allclose(y[o + M : o + 2 * M], kit.phi_q_of("fourbar", q, 0.0, p) @ v)
    assert np.all(y[o + 2 * M :] == 0.0)


def _baumgarte_phi(phi0, dphi0, omega_n, xi, t):
    """Solution of phi'' + 2 xi w phi' + w^2 phi = 0 (per channel), xi <= 1."""
    t = np.asarray(t)[:, None]
    if xi == 1.0:
        return (phi0 + (dphi0 + omega_n * phi0) * t) * np.exp(-omega_n * t)
    wd = omega_n * np.sqrt(1.0 - xi**2)
    return np.exp(-xi * omega_n * t) * (
        phi0 * np.cos(wd * t) + (dphi0 + xi * omega_n * phi0) / wd * np.sin(wd * t)
    )


@pytest.mark.parametrize("xi", [1.0, 0.5])
def test_closed_loop_recovers_baumgarte_dynamics(xi: float) -> None:
    """With d = 0 and the consistent observer, phi(t) obeys Baumgarte's equation exactly.

    The index-1 solve enforces phi'' = u at every right-hand side, so the channel is
    exactly y'' = u, d = 0, the estimation error stays 0 and u = -Kp phi - Kd phi'. Started
    off the manifold (|phi0| ~ 1e-3), phi(t) must follow the analytic Baumgarte decay to
    the integration accuracy and d_hat must stay ~0 (dopri5, tight tolerance).
    """
    rng = np.random.default_rng(0)
    p = kit.model_params("fourbar")
    q0, v0 = model_entry.model("fourbar").module.initial_state(p)
    q0 = q0 + 1e-3 * rng.standard_normal(N)
    v0 = v0 + 1e-2 * rng.standard_normal(N)
    omega_n, omega_o = 5.0, 20.0
    res = run_case(
        "fourbar", "drcs", "dopri5", t_end=2.0, samples=201, q0=q0, v0=v0,
        formulation_params={"omega_n": omega_n, "xi": xi, "omega_o": omega_o},
        integrator_params={"rtol": 1e-11, "atol": 1e-13},
    )  # fmt: skip
    assert res.status == OK, status_name(res.status)
    phi = kit.phi_of("fourbar", res.q, res.t, p)
    phi0 = phi[0]
    dphi0 = kit.phi_q_of("fourbar", q0, 0.0, p) @ v0
    exact = _baumgarte_phi(phi0, dphi0, omega_n, xi, res.t)
    assert np.abs(phi0).max() > 1e-4
    assert np.abs(phi - exact).max() < 1e-9 * max(1.0, np.abs(phi0).max() / 1e-3)
    o = 2 * N + 1
    xh = res.Y[:, o:]
    np.testing.assert_allclose(xh[:, :M], phi, atol=1e-10)  # y_hat tracks phi
    assert np.abs(xh[:, 2 * M :]).max() < 1e-6  # d_hat ~ 0 (omega_o^3 = 8000 x error)
    # |u| of the diagnostics is the full input -Kp y_hat - Kd ydot_hat - d_hat
    u = -(omega_n**2) * xh[:, :M] - 2 * xi * omega_n * xh[:, M : 2 * M] - xh[:, 2 * M :]
    np.testing.assert_allclose(res.D[:, 4], np.linalg.norm(u, axis=1), rtol=1e-12, atol=0)


def test_convergence_order_rk4() -> None:
    errs = kit.rk4_errors("drcs", kit.fourbar_reference())
    kit.assert_order4(errs)


def _baseline(formulation: str, **fparams) -> dict[str, float]:
    p = kit.model_params("fourbar")
    res = run_case(
        "fourbar", formulation, "rk4", t_end=5.0, samples=501,
        formulation_params={"omega_n": 5.0, "xi": 1.0, **fparams},
        integrator_params={"h": 0.0025},
    )  # fmt: skip
    assert res.status == OK, status_name(res.status)
    return compute_metrics(res, None, model_entry.model("fourbar").module.angle_mask(p))


def test_fourbar_baseline_matches_design_measurement() -> None:
    """Measured with an independent NumPy implementation (same four-bar data): Baumgarte
    rms_phi ~ 4.2e-8; DRCS (omega_o = 20) 0.62x its rms_phi and 1.5x its velocity RMS."""
    base = _baseline("baumgarte")
    dr = _baseline("drcs", omega_o=20.0)
    assert 3.5e-8 < base["rms_phi"] < 5.0e-8, base["rms_phi"]
    assert 0.5 < dr["rms_phi"] / base["rms_phi"] < 0.75
    assert 1.3 < dr["rms_dphi"] / base["rms_dphi"] < 1.7
    assert dr["rhs_evals"] == base["rhs_evals"] == 4 * 2000  # RK4 stages unchanged


@pytest.mark.parametrize(
    ("h", "omega_o", "runs"),
    [(0.02, 100.0, False), (0.01, 200.0, False), (0.01, 100.0, True), (0.02, 50.0, True),
     (0.005, 200.0, True)],
)  # fmt: skip
def test_rk4_failure_pattern_h_omega_o(h: float, omega_o: float, runs: bool) -> None:
    """RK4 + DRCS fails at h omega_o = 2 and runs at h omega_o = 1 (seed 004 row 25;
    also measured with the NumPy code), where Baumgarte runs at every one of these steps."""
    res = run_case(
        "fourbar", "drcs", "rk4", t_end=5.0, samples=251,
        formulation_params={"omega_n": 5.0, "xi": 1.0, "omega_o": omega_o},
        integrator_params={"h": h},
    )  # fmt: skip
    assert (res.status == OK) == runs, status_name(res.status)
    if not runs:
        assert res.k_reached < 250
    base = run_case("fourbar", "baumgarte", "rk4", t_end=5.0, samples=251,
                    integrator_params={"h": h})  # fmt: skip
    assert base.status == OK
