"""qr through singular positions with an E3 window
(docs/explanation/methods.md#qr-through-singular-positions): the NumPy reference of
tests/qr_singular_testkit.py and the kernel's window (solvers/formulations/_qr_singular.py;
the sweep with the kernel is tests/formulations/test_qr.py::test_tolerance_sweep_open_cases).

References are independent of the code under test: the exact 1-DOF reductions of
``parallelogram`` and ``nfourbar`` (the branch acceleration f'(th) th'' + f''(th) th'^2,
th'' = -k cos th), finite differences of other model functions than the ones the E3 terms
use, and qr's own right-hand side (plain probe) outside the window.
"""

from __future__ import annotations

import numpy as np
import pytest
from mbstudy.solvers import model_entry
from mbstudy.solvers.compose import kernel_module
from mbstudy.solvers.formulations import qr
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import OK

from mbstudy import run_case
from tests.qr_singular_testkit import E3Window, Probe, crossing, exact_accel, singular_time

MODELS = ("parallelogram", "nfourbar")


def _model(name: str):
    spec = model_entry.model(name)
    return spec.module, pack_params(spec.params, {"n": 2} if name == "nfourbar" else {})


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    mod, p = _model(request.param)
    ts, _ = singular_time(mod, p)
    return request.param, mod, p, ts


def _exact_state(mod, p, t):
    q, v = mod.exact_reference(p, np.array([t]))
    return q[0], v[0]


def _perturbed_singular_state(model):
    """The exact state at t_s perturbed by 1e-13 (a raw state's drift), and the branch's
    exact acceleration at the unperturbed state."""
    name, mod, p, ts = model
    q, v = _exact_state(mod, p, ts)
    a_ex = exact_accel(name, p, q, v)
    rng = np.random.default_rng(2)
    return (q + 1e-13 * rng.standard_normal(q.size),
            v + 1e-13 * rng.standard_normal(q.size), a_ex)  # fmt: skip


def test_e3_terms_against_independent_differences(model) -> None:
    """At a regular position: D x = Phi_qq(v, x) (differences of phi_q) equals
    -gamma_v x / 2 (polarization of gamma; the constraints are scleronomic, gamma =
    -Phi_qq(v, v)), and g_3 = gamma_q v (differences of gamma) equals -Phi_qqq(v, v, v), the
    second difference of phi_q(q + h v) v."""
    name, mod, p, _ = model
    n, m = (int(x) for x in mod.sizes(p))
    e3 = E3Window(mod, p)
    q, v = _exact_state(mod, p, 0.3)
    D, g3, gamma_v = e3.e3_terms(q, v, 0.3)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.standard_normal(n)
        ref = -0.5 * gamma_v(x)
        assert np.abs(D @ x - ref).max() < 1e-9 * np.abs(ref).max(), name
    h = 1e-4
    J = np.zeros((m, n))
    phiq_v = []
    for s in (1.0, 0.0, -1.0):
        mod.phi_q(q + s * h * v, 0.3, p, J)
        phiq_v.append(J @ v)
    third = (phiq_v[0] - 2 * phiq_v[1] + phiq_v[2]) / h**2  # Phi_qqq(v, v, v) + O(h^2)
    assert np.abs(g3 + third).max() < 1e-6 * np.abs(third).max(), name


def test_e3_acceleration_at_the_singular_time(model) -> None:
    """At t_s (Phi_q loses rank), from the exact state perturbed by 1e-13 (a raw state's
    drift), the E3 acceleration is the branch's to ~1e-12 (order 2) while qr's index-1 acceleration
    (E2, the plain probe) is off by many orders of magnitude (5.7e8 m/s^2 measured on the
    parallelogram)."""
    name, mod, p, ts = model
    q, v, a_ex = _perturbed_singular_state(model)
    # t_s is known to ~1e-8 s (a minimum of s_min); order 0's bias is first order in it
    for order, tol in ((0, 1e-8), (2, 1e-11)):
        _, _, a, W, _, _ = E3Window(mod, p, order=order).evaluate(ts, q, v)
        assert W == 0.0
        assert np.abs(a - a_ex).max() < tol * np.abs(a_ex).max(), (name, order)
    _, _, a_plain = Probe(name, "plain", 3e-3).rhs(ts, q, v)
    assert np.abs(a_plain - a_ex).max() > 1.0


def test_e3_bias_is_removed_order_by_order() -> None:
    """nfourbar (its branch has a soft jerk, the parallelogram's has none), exact states
    4, 2, 1 ms before t_s inside a wide window (mu = 1e-2, W = 0): E3's error
    a_E3 - a = B j is first order in the distance to t_s (2.3e-3 m/s^2 at 1 ms), the
    corrections of order 1 and 2 make it second (6.9e-6) and third order (1.3e-9): halving
    the distance divides the errors by about 2, 4 and 8 or more."""
    mod, p = _model("nfourbar")
    ts, _ = singular_time(mod, p)
    errs = {0: [], 1: [], 2: []}
    for tau in (4e-3, 2e-3, 1e-3):
        q, v = _exact_state(mod, p, ts - tau)
        a_ex = exact_accel("nfourbar", p, q, v)
        for order in errs:
            _, _, a, W, _, _ = E3Window(mod, p, mu=1e-2, order=order).evaluate(ts - tau, q, v)
            assert W == 0.0
            errs[order].append(np.abs(a - a_ex).max())
    e0, e1, e2 = (np.array(errs[k]) for k in (0, 1, 2))
    assert 1e-3 < e0[2] < 1e-2 and np.all((1.8 < e0[:2] / e0[1:]) & (e0[:2] / e0[1:] < 2.2)), e0
    assert e1[2] < 1e-5 and np.all((3.5 < e1[:2] / e1[1:]) & (e1[:2] / e1[1:] < 4.5)), e1
    assert e2[2] < 1e-8 and np.all(e2[:2] / e2[1:] > 7.0), e2


def test_tangent_equation_along_v_is_not_noisy_near_ts() -> None:
    """1e-7 s before t_s, raw states perturbed by 1e-13: with the tangent equation along
    the SVD's V2 (gap s_min to the soft directions) the acceleration error is ~3e-8,
    along v it stays at the round-off of the perturbation."""
    mod, p = _model("nfourbar")
    ts, _ = singular_time(mod, p)
    t = ts - 1e-7
    q, v = _exact_state(mod, p, t)
    a_ex = exact_accel("nfourbar", p, q, v)
    rng = np.random.default_rng(0)
    err = {True: 0.0, False: 0.0}
    for _ in range(5):
        dq, dv = 1e-13 * rng.standard_normal((2, q.size))
        for vtan in err:
            a = E3Window(mod, p, vtan=vtan).rhs(t, q + dq, v + dv)[2]
            err[vtan] = max(err[vtan], np.abs(a - a_ex).max())
    assert err[True] < 1e-10 < 1e-9 < err[False], err


def test_outside_the_window_it_is_qr(model) -> None:
    """Away from t_s the window is closed (W = 1, no E3 evaluation) and the corrected state
    and acceleration are qr's (the plain probe, another code path) to round-off."""
    name, mod, p, ts = model
    rng = np.random.default_rng(1)
    for t in (0.2, ts - 0.05, ts + 0.05):
        q, v = _exact_state(mod, p, t)
        q = q + 1e-12 * rng.standard_normal(q.size)  # a raw state's drift at rtol 1e-10
        v = v + 1e-12 * rng.standard_normal(q.size)
        qc, vc, a, W, ae3, _ = E3Window(mod, p).evaluate(t, q, v)
        assert W == 1.0 and ae3 is None
        qp, vp, ap = Probe(name, "plain", 3e-3).rhs(t, q, v)
        np.testing.assert_allclose(qc, qp, rtol=0, atol=1e-14)
        np.testing.assert_allclose(vc, vp, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a, ap, rtol=0, atol=1e-11)


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
@pytest.mark.parametrize("rtol", [1e-10, 1e-12])
def test_crossing_at_tight_tolerances(model, method, rtol) -> None:
    """The singular-crossing acceptance on the NumPy reference (scipy's DOP853 / RK45, t_end = 2 s
    through t_s ~ 0.714 s, atol = 1e-2 rtol): the run ends, |phi| at the corrected samples
    is at round-off and the error against the exact reduction is below 100 rtol (qr's
    right-hand side itself stalls at t_s here,
    docs/explanation/methods.md#redundant-and-singular)."""
    name, mod, p, _ = model
    pr = Probe(name, "e3j2", 3e-3)
    sol, qc, err = crossing(pr, method, rtol)
    assert sol is not None and sol.success and sol.t[-1] == 2.0, name
    m = int(mod.sizes(p)[1])
    ph = np.zeros(m)
    for k, tk in enumerate(sol.t):
        mod.phi(qc[k], tk, p, ph)
        assert np.abs(ph).max() < 1e-13
    assert err.max() < 100 * rtol, (name, method, rtol, err.max())


# --- the kernel's window (solvers/formulations/_qr_singular.py) ---------------------------


def _kernel_rhs(name: str, t: float, q: np.ndarray, v: np.ndarray, **fpar):
    """The qr kernel's right-hand side: (a, ws) at the raw state (q, v)."""
    mod, p = _model(name)
    k = kernel_module(name, "qr", "rk4")
    fp = pack_params(qr.SPEC.params, fpar)
    n, m = (int(x) for x in mod.sizes(p))
    ws = k.form_alloc(n, m, fp)
    y = np.zeros(2 * n + 1)
    y[:n], y[n : 2 * n] = q, v
    dy = np.zeros_like(y)
    assert k.form_rhs(float(t), y, p, fp, dy, ws) == 0
    return dy[n : 2 * n].copy(), ws, k


def test_kernel_jacobi_svd_against_numpy(model) -> None:
    """The window's SVD of Phi_q (LAPACK, solvers/svd.py): singular values as numpy's to 1e-14
    relative, Phi_q = U S V^T for the non-zero ones, U orthogonal."""
    name, mod, p, _ = model
    q, v = _exact_state(mod, p, 0.3)
    _, ws, k = _kernel_rhs(name, 0.3, q, v)
    sw = ws[qr.QRW_SING]
    r = k.form_sw_svd(q, 0.3, p, sw, 1e-10)
    n, m = (int(x) for x in mod.sizes(p))
    J = np.zeros((m, n))
    mod.phi_q(q, 0.3, p, J)
    s_ref = np.linalg.svd(J, compute_uv=False)
    s, U, V = sw[k.SW_S], sw[k.SW_Z], sw[k.SW_V]
    np.testing.assert_allclose(s[:r], s_ref[:r], rtol=1e-13)
    np.testing.assert_allclose(U.T @ U, np.eye(m), atol=1e-14)
    np.testing.assert_allclose((U[:, :r] * s[:r]) @ V[:, :r].T, J, atol=1e-14)


def test_kernel_window_at_the_singular_time(model) -> None:
    """At t_s from a state perturbed by 1e-13, the kernel with sing_mu = 3e-3 and with the
    default (1.5e-3) gives the branch's acceleration (exact reduction) to 1e-11 relative;
    qr without the window (sing_mu = 0) is off by more than 1 m/s^2."""
    name, _, _, ts = model
    q, v, a_ex = _perturbed_singular_state(model)
    for fpar in ({"sing_mu": 3e-3}, {}):
        a, _, _ = _kernel_rhs(name, ts, q, v, **fpar)
        assert np.abs(a - a_ex).max() < 1e-11 * np.abs(a_ex).max(), (name, fpar)
    a0, _, _ = _kernel_rhs(name, ts, q, v, sing_mu=0.0)
    assert np.abs(a0 - a_ex).max() > 1.0, name


def test_kernel_window_bias_and_reference() -> None:
    """nfourbar 1 ms before t_s (inside the window, W = 0): the kernel's acceleration is the
    branch's to the NumPy reference's accuracy (third order bias: 1.3e-9 m/s^2)."""
    mod, p = _model("nfourbar")
    ts, _ = singular_time(mod, p)
    q, v = _exact_state(mod, p, ts - 1e-3)
    a_ex = exact_accel("nfourbar", p, q, v)
    a, ws, k = _kernel_rhs("nfourbar", ts - 1e-3, q, v, sing_mu=3e-3)
    assert ws[qr.QRW_SING][k.SW_INFO][1] == 0.0  # W
    err = np.abs(a - a_ex).max()
    ref = np.abs(E3Window(mod, p).rhs(ts - 1e-3, q, v)[2] - a_ex).max()
    assert err < 3e-9 and ref < 3e-9, (err, ref)


def test_kernel_outside_the_window_is_qr_bit_for_bit(model) -> None:
    """Away from t_s (and with sing_mu = 0 everywhere) the window changes nothing: the
    right-hand side with sing_mu = 3e-3 equals qr's without it bit for bit."""
    name, mod, p, ts = model
    rng = np.random.default_rng(4)
    for t in (0.2, ts - 0.05, ts + 0.05):
        q, v = _exact_state(mod, p, t)
        q = q + 1e-10 * rng.standard_normal(q.size)
        v = v + 1e-10 * rng.standard_normal(q.size)
        a1, ws, k = _kernel_rhs(name, t, q, v, sing_mu=3e-3)
        assert ws[qr.QRW_SING][k.SW_INFO][1] == 1.0
        a0, _, _ = _kernel_rhs(name, t, q, v, sing_mu=0.0)
        assert np.array_equal(a0, a1)


def test_kernel_svd_near_singular_nfourbar_n10() -> None:
    """nfourbar with N = 10 (k = 10 soft singular values) 1e-6 s before t_s, where
    s_min ~ 1e-6 s_max (the narrow position window): the window's SVD (LAPACK through
    solvers/svd.py) against numpy's (another LAPACK build): every singular value to
    1e-14 s_max, the soft left subspace and the null space of the hard rows (the E3
    system's N) to 1e-12 in the projector, Phi_q = U S V^T, U and V orthogonal."""
    spec = model_entry.model("nfourbar")
    mod, p = spec.module, pack_params(spec.params, {"n": 10})
    ts, _ = singular_time(mod, p)
    t = ts - 1e-6
    q = mod.exact_reference(p, np.array([t]))[0][0]
    k = kernel_module("nfourbar", "qr", "rk4")
    n, m = (int(x) for x in mod.sizes(p))
    sw = k.form_alloc(n, m, pack_params(qr.SPEC.params, {}))[qr.QRW_SING]
    r = k.form_sw_svd(q, t, p, sw, 1e-10)
    assert r == m == n - 1
    J = np.zeros((m, n))
    mod.phi_q(q, t, p, J)
    U_ref, s_ref, Vt_ref = np.linalg.svd(J)
    s, U, V = sw[k.SW_S], sw[k.SW_Z], sw[k.SW_V]
    assert 1e-7 < s[-1] / s[0] < 1e-5  # near-singular
    np.testing.assert_allclose(s, s_ref, rtol=0, atol=1e-14 * s_ref[0])
    soft = int(np.sum(s_ref < 10 * 3e-3 * s_ref[0]))  # the window's k at sing_mu = 3e-3
    assert soft == 10
    h = m - soft
    for got, ref in ((U[:, h:], U_ref[:, h:]), (V[:, h:], Vt_ref[h:].T)):
        assert np.abs(got @ got.T - ref @ ref.T).max() < 1e-12
    np.testing.assert_allclose(U.T @ U, np.eye(m), atol=1e-14)
    np.testing.assert_allclose(V.T @ V, np.eye(n), atol=1e-14)
    np.testing.assert_allclose((U * s) @ V[:, :m].T, J, atol=1e-14 * s_ref[0])


def test_kernel_window_crosses_nfourbar_n10() -> None:
    """nfourbar with N = 10 (n = 63, ten soft directions at t_s ~ 0.71 s), dopri5 at rtol
    1e-10 with sing_mu = 3e-3 through the crossing: status ok and the error against the
    exact reduction below 100 rtol at the 11 samples (0.9 rtol measured)."""
    spec = model_entry.model("nfourbar")
    rtol = 1e-10
    res = run_case("nfourbar", "qr", "dopri5", t_end=1.0, samples=11, model_params={"n": 10},
                   formulation_params={"sing_mu": 3e-3},
                   integrator_params={"rtol": rtol, "atol": 1e-2 * rtol})  # fmt: skip
    assert res.status == OK
    q_ex, _ = spec.module.exact_reference(pack_params(spec.params, {"n": 10}), res.t)
    assert np.abs(res.q - q_ex).max() < 100 * rtol
