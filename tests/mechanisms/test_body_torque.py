"""Spatial torques given in the body frame (``frame = "body"``): the generalized force
2 L^T n' checked by virtual work against a finite body-frame rotation (quaternion
product, no L or E matrices), the reaction on a second body, and two physical cases
integrated with scipy on the index-1 form of the generated (uncompiled) equations:

* a constant body torque n' = (0, 0, tau) on a free body at rest spins it about the
  fixed axis A(e0) z' with omega'_z = tau t / J3, angle tau t^2 / (2 J3) (analytic);
* the torque-free symmetric body (J1 = J2) keeps its energy and its angular momentum
  A J' omega' in space, and omega' precesses about z' at the analytic rate
  (J3 - J1) / J1 omega'_z (Euler's equations; Goldstein, Classical Mechanics, 5.6),
  and its Euler parameters stay on the normalization e.e = 1 (the body's constraint row,
  whose normal makes the augmented matrix regular although M e = 0: check-model's
  semi-definite mass check, which fails without that normal).
"""

from __future__ import annotations

import mechanisms_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.mechanisms.schema import MechanismError
from scipy.integrate import solve_ivp

FREE = """
[mechanism]
name = "free_body"
dimension = 3
gravity = [0, 0, 0]

[parameters]
J1 = {J1}
J2 = {J2}
J3 = {J3}
tau = {tau}

[bodies.b]
mass = 2.0
inertia = ["J1", "J2", "J3"]
guess = [0, 0, 0, 1, 0, 0, 0]
{extra}
"""

TORQUE = """
[[forces]]
type = "torque"
body = "b"
frame = "body"
value = [0, 0, "tau"]
"""


def _model(tmp_path, name: str, text: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return kit.model(str(path))


def _rot(e: np.ndarray) -> np.ndarray:
    """A(e) of docs/explanation/mechanisms.md (e0 the scalar part)."""
    e0, v = e[0], e[1:]
    sk = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return (e0 * e0 - v @ v) * np.eye(3) + 2 * np.outer(v, v) + 2 * e0 * sk


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion product a b (scalar first)."""
    return np.concatenate([[a[0] * b[0] - a[1:] @ b[1:]],
                           a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:])])  # fmt: skip


def _body_turn(e: np.ndarray, axis: int, s: float) -> np.ndarray:
    """e turned by the angle s about its own body axis ``axis``: A(e') = A(e) R(s)."""
    u = np.zeros(3)
    u[axis] = 1.0
    return _qmul(e, np.concatenate([[np.cos(s / 2)], np.sin(s / 2) * u]))


def _omega_body(e: np.ndarray, edot: np.ndarray) -> np.ndarray:
    """omega' from A^T Adot (skew), by a central difference in time (independent of L)."""
    h = 1e-6
    Ad = (_rot(e + h * edot) - _rot(e - h * edot)) / (2 * h)
    W = _rot(e).T @ Ad
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def test_body_torque_does_the_virtual_work_of_a_body_frame_rotation(tmp_path) -> None:
    extra = TORQUE.replace('[0, 0, "tau"]', "[0.3, -1.1, 0.7]")
    mod, p = _model(tmp_path, "torque", FREE.format(J1=1.0, J2=2.0, J3=3.0, tau=0.0, extra=extra))
    rng = np.random.default_rng(5)
    n_body = np.array([0.3, -1.1, 0.7])
    for _ in range(5):
        e = rng.normal(size=4)
        e /= np.linalg.norm(e)
        q = np.concatenate([rng.normal(size=3), e])
        # a body-frame turn about axis k must do the work n'_k per unit angle
        for k in range(3):
            # the convention: A(e e_s) = A(e) A(e_s), a turn about the body axis k
            turn = _rot(_body_turn(np.array([1.0, 0, 0, 0]), k, 0.1))
            assert np.allclose(_rot(_body_turn(e, k, 0.1)), _rot(e) @ turn, atol=1e-14)
            h = 1e-6
            de = (_body_turn(e, k, h) - _body_turn(e, k, -h)) / (2 * h)
            v = np.concatenate([np.zeros(3), de])
            # Q at rest: without the velocity (gyroscopic) terms, the torque's part only
            Q0 = kit.evaluate(mod, p, q, 0 * v, 0.0)["forces"]
            assert abs(Q0 @ v - n_body[k]) <= 1e-8, (k, Q0 @ v, n_body[k])
            assert abs(kit.evaluate(mod, p, q, v, 0.0)["power"][0] - n_body[k]) <= 1e-8


def test_relative_body_torque_acts_on_both_bodies(tmp_path) -> None:
    """bodies = [a, b], frame = "body": n' in a's frame on a, -A_a n' on b; the power is
    (A_a n') . (omega_a - omega_b) (omega_b from A_b^T Adot_b, not from E)."""
    text = """
[mechanism]
name = "two"
dimension = 3
[bodies.a]
mass = 1.0
inertia = [1, 2, 3]
guess = [0, 0, 0, 1, 0, 0, 0]
[bodies.b]
mass = 1.0
inertia = [1, 2, 3]
guess = [1, 0, 0, 1, 0, 0, 0]
[[forces]]
type = "torque"
bodies = ["a", "b"]
frame = "body"
value = [0.5, 0.2, -0.4]
"""
    mod, p = _model(tmp_path, "two", text)
    rng = np.random.default_rng(2)
    n_body = np.array([0.5, 0.2, -0.4])
    for _ in range(5):
        ea, eb = (x / np.linalg.norm(x) for x in rng.normal(size=(2, 4)))
        da, db = rng.normal(size=(2, 4))
        da -= ea * (ea @ da)
        db -= eb * (eb @ db)
        q = np.concatenate([np.zeros(3), ea, np.ones(3), eb])
        v = np.concatenate([rng.normal(size=3), da, rng.normal(size=3), db])
        wa = _rot(ea) @ _omega_body(ea, da)
        wb = _rot(eb) @ _omega_body(eb, db)
        expected = (_rot(ea) @ n_body) @ (wa - wb)
        assert abs(mod.power(q, v, 0.0, p) - expected) <= 1e-8 * max(1.0, abs(expected))


def _integrate(mod, p, q0, v0, t):
    n = q0.size

    def rhs(_, y):
        return np.concatenate([y[n:], kit.index1(mod, p, y[:n], y[n:])])

    sol = solve_ivp(rhs, (0.0, t[-1]), np.concatenate([q0, v0]), method="DOP853",
                    t_eval=t, rtol=1e-11, atol=1e-12)  # fmt: skip
    assert sol.success
    return sol.y[:n].T, sol.y[n:].T


def _state(e0: np.ndarray, w_body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q = (0, e0), v = (0, edot) with edot = 1/2 e0 (0, omega') (quaternion kinematics)."""
    edot = 0.5 * _qmul(e0, np.concatenate([[0.0], w_body]))
    return np.concatenate([np.zeros(3), e0]), np.concatenate([np.zeros(3), edot])


def test_constant_body_torque_spins_up_a_free_body_as_analytic(tmp_path) -> None:
    J3, tau = 3.0, 0.6
    mod, p = _model(tmp_path, "spin", FREE.format(J1=1.0, J2=2.0, J3=J3, tau=tau, extra=TORQUE))
    e0 = np.array([np.cos(0.4), np.sin(0.4) * 0.6, np.sin(0.4) * 0.8, 0.0])  # tilted
    q0, v0 = _state(e0, np.zeros(3))
    t = np.linspace(0.0, 2.0, 11)
    q, v = _integrate(mod, p, q0, v0, t)
    for k, tk in enumerate(t):
        angle = tau * tk**2 / (2 * J3)
        A_exact = _rot(e0) @ _rot(np.array([np.cos(angle / 2), 0, 0, np.sin(angle / 2)]))
        assert np.max(np.abs(_rot(q[k, 3:]) - A_exact)) <= 1e-8, tk
        w = _omega_body(q[k, 3:], v[k, 3:])
        np.testing.assert_allclose(w, [0, 0, tau * tk / J3], atol=1e-6)
    # the global-frame torque (0, 0, tau) on the tilted body turns it about the space z
    # instead: the two frames differ, so the test can fail
    extra = TORQUE.replace('frame = "body"', 'frame = "global"')
    glob = FREE.format(J1=1.0, J2=2.0, J3=J3, tau=tau, extra=extra)
    mg, pg = _model(tmp_path, "spin_global", glob)
    qg, _ = _integrate(mg, pg, q0, v0, t)
    assert np.max(np.abs(_rot(qg[-1, 3:]) - _rot(q[-1, 3:]))) > 1e-2


def test_torque_free_symmetric_body_keeps_energy_momentum_and_precession(tmp_path) -> None:
    J1, J3 = 1.0, 2.0
    mod, p = _model(tmp_path, "free", FREE.format(J1=J1, J2=J1, J3=J3, tau=0.0, extra=""))
    w0 = np.array([1.0, 0.5, 3.0])
    e0 = np.array([1.0, 0.2, -0.1, 0.3])
    e0 /= np.linalg.norm(e0)
    q0, v0 = _state(e0, w0)
    t = np.linspace(0.0, 3.0, 16)
    q, v = _integrate(mod, p, q0, v0, t)
    J = np.diag([J1, J1, J3])
    H0 = _rot(e0) @ J @ w0
    E0 = mod.energy(q0, v0, 0.0, p)
    assert abs(E0 - 0.5 * w0 @ J @ w0) <= 1e-12 * E0
    rate = (J3 - J1) / J1 * w0[2]
    for k, tk in enumerate(t):
        w = _omega_body(q[k, 3:], v[k, 3:])
        assert abs(mod.energy(q[k], v[k], tk, p) - E0) <= 1e-9 * E0
        assert abs(q[k, 3:] @ q[k, 3:] - 1.0) <= 1e-9  # the normalization row holds
        np.testing.assert_allclose(_rot(q[k, 3:]) @ J @ w, H0, atol=1e-7)
        c, s = np.cos(rate * tk), np.sin(rate * tk)
        # J1 w1' = (J1 - J3) w2 w3, J1 w2' = (J3 - J1) w3 w1: w' turns at +rate about z'
        w_exact = [w0[0] * c - w0[1] * s, w0[0] * s + w0[1] * c, w0[2]]
        np.testing.assert_allclose(w, w_exact, atol=1e-6)


def test_body_frame_is_spatial_only(tmp_path) -> None:
    text = (kit.MECHANISMS / "slider_crank.toml").read_text()
    assert 'type = "torque"' in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('type = "torque"', 'type = "torque"\nframe = "body"'))
    with pytest.raises(MechanismError) as info:
        kit.model(str(path))
    assert info.value.key.endswith(".frame")


def test_normalization_row_and_semi_definite_mass_in_the_checks(tmp_path) -> None:
    """A free spatial body: its one constraint row is the normalization e.e - 1 (Phi_q row
    (0, 0, 0, 2e)); M is singular along e (M e = 0) and check-model accepts it as positive
    semi-definite with a regular augmented matrix. Without the normalization's normal in
    Phi_q the augmented matrix is singular and the same check fails."""
    from types import SimpleNamespace

    from mbstudy.solvers.mechanisms.checks import run_checks

    mod, p = _model(tmp_path, "free", FREE.format(J1=1.0, J2=1.0, J3=2.0, tau=0.0, extra=""))
    rng = np.random.default_rng(4)
    e = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), e])
    out = kit.evaluate(mod, p, q, np.zeros(7), 0.0)
    np.testing.assert_allclose(out["phi"], [e @ e - 1], rtol=1e-14)
    np.testing.assert_allclose(out["phi_q"], [np.concatenate([np.zeros(3), 2 * e])], rtol=1e-14)
    assert np.max(np.abs(out["mass"] @ np.concatenate([np.zeros(3), e]))) <= 1e-14
    checks = {c.name: c for c in run_checks(mod, p)}
    assert all(c.ok for c in checks.values()), checks
    assert "semi-definite" in checks["mass matrix"].detail

    def phi_q_without_normal(q, t, p, G):
        G[:, :] = 0.0
        G[0, 0] = 1.0  # a row that does not see the Euler parameters

    broken = SimpleNamespace(**{k: getattr(mod, k) for k in dir(mod) if not k.startswith("__")})
    broken.phi_q = phi_q_without_normal
    bad = {c.name: c for c in run_checks(broken, p)}
    assert not bad["mass matrix"].ok, bad["mass matrix"].detail
