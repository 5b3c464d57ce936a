"""Generalized-α for index-3 multibody systems (Arnold & Brüls 2007), fixed step.

Unknowns of step n -> n+1 (h fixed, t_{n+1} = t0 + (n+1) h): q, v, the acceleration
q'' and the multipliers lam at t_{n+1}, plus the algorithmic acceleration a::

    M(q_{n+1}) q''_{n+1} + Phi_q(q_{n+1})^T lam_{n+1} = Q(q_{n+1}, v_{n+1}, t_{n+1})
    Phi(q_{n+1}, t_{n+1}) = 0
    (1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) q''_{n+1} + alpha_f q''_n
    q_{n+1} = q_n + h v_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}
    v_{n+1} = v_n + h (1 - gamma) a_n + h gamma a_{n+1}

with, from the spectral radius at infinity rho_inf in [0, 1] (Chung & Hulbert 1993),
alpha_m = (2 rho_inf - 1)/(rho_inf + 1), alpha_f = rho_inf/(rho_inf + 1),
gamma = 1/2 + alpha_f - alpha_m, beta = (gamma + 1/2)^2 / 4: second order, unconditionally
stable, high-frequency dissipation set by rho_inf (1: none, 0: asymptotic annihilation).

**Newton** (Arnold & Brüls 2007, Algorithm 1) on the correction dq of q_{n+1}, with
dv = gamma' dq, dq'' = beta' dq, gamma' = gamma / (h beta),
beta' = (1 - alpha_m) / (h^2 beta (1 - alpha_f)). The equilibrium rows are divided by
beta' and the multiplier correction is solved for as dlam / beta' (the usual scaling
of the constraint rows by h^2 beta; Bottasso, Bauchau & Cardona 2007): the iteration
matrix::

    [ M + (gamma' C_t + K_t) / beta'   Phi_q^T ] [ dq         ]     [ r_q / beta' ]
    [ Phi_q                            0       ] [ dlam/beta' ] = - [ Phi         ]

stays well conditioned as h -> 0 (its condition number is bounded in h, where the
unscaled one grows like h^-4). It is kept as three parts: M and Phi_q, which the
residual evaluates anyway (exact, at the point where the matrix is assembled), and
D = (gamma' C_t + K_t) / beta', taken column by column from forward differences of
r_q = M q'' + Phi_q^T lam - Q along (dq_j, gamma' dq_j, beta' dq_j) (one residual per
column, minus M: K_t = d(M q'' + Phi_q^T lam - Q)/dq and C_t = -dQ/dv exactly to first
order). D is O(h) (damping) and O(h^2) (stiffness) against M and changes slowly, so it is
**kept** across steps; M and Phi_q, which carry the O(1) part and turn with the
mechanism, are re-read at each step's predictor and the matrix refactored (one LU of
size n + m per step, no extra residuals). D is re-evaluated at the next step when a
step's iteration contracted slower than THETA_FD (0.1), the rate theta =
|dq_k| / |dq_{k-1}| measured above the round-off floor; an iteration on a kept D that
contracts by less than NEWTON_RATE (or diverges) redoes the step with a new D at the
predictor (``rejected``); a failure with a new D ends the case with ``newton_failed``.
(Before the Newton rework the whole matrix was kept across steps until the contraction fell
below 0.5: 6-10 iterations per step and ~100 matrices per second of motion on the
four-bar, Phi_q being stale; now ~2 iterations per step at h <= 1e-3 and one D per
run there, the refactorization costing about three iterations.)

The predictor extrapolates q'' and lam linearly from the two last steps (held at the
first step). Newton stops when the error left in the acceleration is small,
beta' e <= newton_tol (1 + max|q''|), with e = theta / (1 - theta) max|dq| once a rate
theta is measured (the estimate of Hairer & Wanner 1996, Sect. IV.8) and e = max|dq|
before, or when max|dq| reaches the round-off floor 4 eps (1 + max|q|) (a test on dq
alone, 1e-12 (1 + max|q|), measured: left q'' errors of ~1e-3 at h = 1.25e-4 on the
four-bar and an error floor of 5e-6 in q). Counters: one residual = one ``rhs_evals``;
``newton_iters``; ``jac_evals`` = evaluations of D by differences (the per-step
refactorizations with fresh M and Phi_q are not counted there).

**Cost** (benchmarks/genalpha_exudyn.py, four-bar index3, t_end = 1 s, CPU
time): per step, genalpha (rho_inf 0.8) before /
after this scheme and Exudyn 1.13.6's generalized-alpha (rho_inf 0.9, modified Newton):
Newton iterations 10.1 / 3.2 / 7.0 at h = 5e-3 and 6.5 / 2.0 / 6.3 at h = 1.6e-4; CPU
time at equal error 2.5-3.9x / 3.9-4.3x less than Exudyn's over errors 1e-2 .. 1e-5
(loaded 2-core machine, medians of 3 / 5 repeats; docs/performance.md).

**Start**: q''(t0) and lam(t0) from the index-1 solve; the algorithmic acceleration
starts at a_0 = q''(t0) + (alpha_m - alpha_f) h q'''(t0) (q''' by a forward difference of
the index-1 acceleration along the motion), the start that keeps order 2 in q, v **and**
lam (Arnold & Brüls 2007, Sect. 4: with a_0 = q''(t0) lam has an O(h) error in the first
steps that decays like rho_inf^n only). The drive work W is integrated by the trapezoidal
rule (order 2).

``hht`` and ``newmark`` are this kernel with other coefficients: their modules are data
(a SPEC and ``GA_SCHEME``, the parameter mapping of :func:`integ_ga_setup`); only the
formulation ``index3`` is accepted.

References
----------
Arnold & Brüls (2007), Multibody Syst Dyn 18:185-202; Chung & Hulbert (1993), J. Appl.
Mech. 60:371-375; Bottasso, Bauchau & Cardona (2007), SIAM J. Sci. Comput. 29:397-414;
Hairer & Wanner, *Solving ODEs II*, 2nd ed. (1996), Sect. IV.8 (Newton's stopping test).
"""

import numpy as np
from mbstudy.solvers.formulations._common import common_solve_index1
from mbstudy.solvers.kernel_names import (
    model_forces,
    model_mass,
    model_phi,
    model_phi_q,
    model_power,
    model_sizes,
)
from mbstudy.solvers.linalg import lu_factor, lu_solve, state_status
from mbstudy.solvers.spec import IntegratorSpec, Param
from mbstudy.solvers.status import (
    C_JAC,
    C_NEWTON,
    C_REJECTED,
    C_RHS,
    C_STEPS,
    DIVERGENCE_BOUND,
    NAN,
    NEWTON_FAILED,
    OK,
)
from mbstudy.solvers.workspace import WS_A, WS_LAM, WS_M, WS_PHI_Q, WS_Q, WS_U

NEWTON_RATE = 0.5
"""A Newton iteration with a kept D must shrink the correction at least this much."""
THETA_FD = 0.1
"""A step that contracted slower than this takes a new D by differences at the next step."""
GA_EPS = 2.220446049250313e-16
GA_FD_REL = 1.4901161193847656e-08
"""Relative forward-difference increment of the iteration matrix, sqrt(machine epsilon)."""

NEWTON_PARAMS = (
    Param("newton_tol", 1e-10, "Newton stops at beta' max|dq| <= newton_tol (1 + max|q''|) "
          "(acceleration level, -) or at the round-off floor of q", positive=True),
    Param("max_newton", 20, "Newton iteration limit per step", kind="int", minimum=1),
)

SPEC = IntegratorSpec(
    name="genalpha",
    summary="generalized-alpha for index-3 DAEs (Arnold & Bruls 2007), fixed step, rho_inf",
    params=(
        Param("h", 1e-3, "step size (s)", positive=True),
        Param("rho_inf", 0.8, "spectral radius at infinite frequency (-)", minimum=0.0,
              maximum=1.0),
        *NEWTON_PARAMS,
    ),
    fixed_step=True,
    adaptive=False,
    forms=("index3-dae",),
    forms_reason="generalized-alpha solves the index-3 system: the multipliers are unknowns of its "
    "step, it has no ODE or index-2 mode",
    order=2,
    source="Arnold & Bruls 2007; Chung & Hulbert 1993",
)


GA_SCHEME = 0
"""How the integrator parameters map onto (alpha_m, alpha_f, beta, gamma): 0 generalized-α
from rho_inf (this module), 1 HHT-α from alpha (hht.py), 2 Newmark's beta and gamma
(newmark.py). hht and newmark are this kernel with their own GA_SCHEME: data, no code."""


def integ_ga_setup(ip):
    """(h, alpha_m, alpha_f, beta, gamma, newton_tol, max_newton) for ``GA_SCHEME``:

    - 0, ip[1] = rho_inf: alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1),
      gamma = 1/2 + alpha_f - alpha_m, beta = (gamma + 1/2)^2 / 4 (Chung & Hulbert 1993);
    - 1, ip[1] = alpha (HHT): alpha_m = 0, alpha_f = -alpha, beta = (1 - alpha)^2 / 4,
      gamma = 1/2 - alpha (Arnold & Brüls 2007, Sect. 2);
    - 2, ip[1:3] = (beta, gamma) (Newmark): alpha_m = alpha_f = 0.
    """
    if GA_SCHEME == 1:
        alpha = ip[1]
        return (ip[0], 0.0, -alpha, 0.25 * (1.0 - alpha) ** 2, 0.5 - alpha, ip[ip.size - 2],
                int(ip[ip.size - 1]))
    if GA_SCHEME == 2:
        return ip[0], 0.0, 0.0, ip[1], ip[2], ip[ip.size - 2], int(ip[ip.size - 1])
    rho = ip[1]
    am = (2.0 * rho - 1.0) / (rho + 1.0)
    af = rho / (rho + 1.0)
    gamma = 0.5 + af - am
    beta = 0.25 * (gamma + 0.5) ** 2
    return ip[0], am, af, beta, gamma, ip[ip.size - 2], int(ip[ip.size - 1])


def integ_ga_residual(q, v, qdd, lam, t, p, ws, rq, ph):
    """rq = M(q) q'' + Phi_q(q)^T lam - Q(q, v, t), ph = Phi(q, t)."""
    M = ws[WS_M]
    Q = ws[WS_Q]
    G = ws[WS_PHI_Q]
    n = q.size
    m = lam.size
    model_mass(q, p, M)
    model_forces(q, v, t, p, Q)
    model_phi_q(q, t, p, G)
    model_phi(q, t, p, ph)
    for i in range(n):
        s = -Q[i]
        for j in range(n):
            s += M[i, j] * qdd[j]
        for k in range(m):
            s += G[k, i] * lam[k]
        rq[i] = s


def integ_ga_matrix(q, v, qdd, lam, t, p, ws, rq, bp, gp, fd, S, D, qt, vt, at, rt, pt):
    """Scaled iteration matrix (module docstring) into S from M(q), Phi_q(q) (in ``ws``
    from the residual at q) and D = (gamma' C_t + K_t) / beta', the rest of the leading
    block, which ``fd`` re-evaluates by forward differences (rq: residual at (q, v, q''));
    else D is the one of an earlier step. Returns the residual evaluations made."""
    M = ws[WS_M]
    G = ws[WS_PHI_Q]
    n = q.size
    m = lam.size
    if fd:
        for j in range(n):
            qt[j] = q[j]
            vt[j] = v[j]
            at[j] = qdd[j]
        for j in range(n):
            d = GA_FD_REL * max(abs(q[j]), 1.0)
            qt[j] = q[j] + d
            d = qt[j] - q[j]
            vt[j] = v[j] + gp * d
            at[j] = qdd[j] + bp * d
            integ_ga_residual(qt, vt, at, lam, t, p, ws, rt, pt)
            qt[j] = q[j]
            vt[j] = v[j]
            at[j] = qdd[j]
            for i in range(n):
                D[i, j] = (rt[i] - rq[i]) / (d * bp)
        model_mass(q, p, M)
        model_phi_q(q, t, p, G)
        for i in range(n):
            for j in range(n):
                D[i, j] -= M[i, j]
    for i in range(n):
        for j in range(n):
            S[i, j] = M[i, j] + D[i, j]
    for k in range(m):
        for j in range(n):
            S[n + k, j] = G[k, j]
            S[j, n + k] = G[k, j]
        for j in range(m):
            S[n + k, n + j] = 0.0
    return n if fd else 0


def integ_ga_step(y, y0, qdd, qdd0, acc, acc0, qdd1, lam1, ext, t1, h, am, af, beta, gamma,
                  tol, max_newton, fd, p, ws, S, D, piv, x, rq, ph, qt, vt, at, rt, pt, cnt):
    """One step from the state in y0 (q, v, W, lam), q''_n in qdd0 and a_n in acc0 (and
    q''_{n-1}, lam_{n-1} in qdd1, lam1 for the predictor when ext = 1); the new state
    into y, qdd, acc. The matrix is assembled at the predictor from the current M, Phi_q
    and D, a new D by differences when ``fd`` (else the kept one), and factored.
    Returns (status, contraction rate)."""
    n = qdd.size
    m = ph.size
    ol = 2 * n + 1
    bp = (1.0 - am) / (h * h * beta * (1.0 - af))
    gp = gamma / (h * beta)
    q = y[:n]
    v = y[n : 2 * n]
    lam = y[ol : ol + m]
    # predictor: q''_{n+1} and lam_{n+1} extrapolated linearly from steps n-1, n
    for i in range(n):
        qdd[i] = qdd0[i] + ext * (qdd0[i] - qdd1[i])
        acc[i] = (af * qdd0[i] - am * acc0[i] + (1.0 - af) * qdd[i]) / (1.0 - am)
        v[i] = y0[n + i] + h * ((1.0 - gamma) * acc0[i] + gamma * acc[i])
        q[i] = y0[i] + h * y0[n + i] + h * h * ((0.5 - beta) * acc0[i] + beta * acc[i])
    for k in range(m):
        lam[k] = y0[ol + k] + ext * (y0[ol + k] - lam1[k])
    d_prev = np.inf
    theta = 0.0
    for it in range(max_newton):
        integ_ga_residual(q, v, qdd, lam, t1, p, ws, rq, ph)
        cnt[C_RHS] += 1
        cnt[C_NEWTON] += 1
        if it == 0:
            if fd:
                cnt[C_JAC] += 1
            cnt[C_RHS] += integ_ga_matrix(q, v, qdd, lam, t1, p, ws, rq, bp, gp, fd, S, D,
                                          qt, vt, at, rt, pt)
            st = lu_factor(S, piv, n + m)
            if st != OK:
                return st, theta
        for i in range(n):
            x[i] = -rq[i] / bp
        for k in range(m):
            x[n + k] = -ph[k]
        lu_solve(S, piv, x, n + m)
        dn = 0.0
        qn = 0.0
        for i in range(n):
            q[i] += x[i]
            v[i] += gp * x[i]
            qdd[i] += bp * x[i]
            dn = max(dn, abs(x[i]))
            qn = max(qn, abs(q[i]))
        for k in range(m):
            lam[k] += bp * x[n + k]
        if not np.isfinite(dn):
            return NAN, theta
        qddn = 0.0
        for i in range(n):
            qddn = max(qddn, abs(qdd[i]))
        # the error left after this iteration, theta / (1 - theta) |dq| for a contraction
        # rate theta (Hairer & Wanner 1996, IV.8), |dq| until a rate is measured above
        # the round-off floor of q
        floor = 4.0 * GA_EPS * (1.0 + qn)
        est = dn
        if it > 0 and d_prev > 1e3 * floor:
            th = dn / d_prev
            theta = max(theta, th)
            if th < 1.0:
                est = th / (1.0 - th) * dn
        # acceleration level (q'' moves by beta' dq, beta' ~ 1/h^2: a test on dq alone
        # leaves q'' errors that the next steps carry), or the round-off floor of q
        if est * bp <= tol * (1.0 + qddn) or dn <= floor:
            for i in range(n):
                acc[i] = (af * qdd0[i] - am * acc0[i] + (1.0 - af) * qdd[i]) / (1.0 - am)
            return OK, theta
        # a kept D must contract fast; a new one only must not diverge
        if it > 0 and dn > (1.0 if fd else NEWTON_RATE) * d_prev:
            return NEWTON_FAILED, theta
        d_prev = dn
    return NEWTON_FAILED, theta


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time (on the grid t0 + j h); see the module
    docstring and docs/explanation/solver-contract.md."""
    h, am, af, beta, gamma, tol, max_newton = integ_ga_setup(ip)
    ny = y.size
    nm = model_sizes(p)
    n = nm[0]
    m = nm[1]
    ol = 2 * n + 1
    y0 = y.copy()
    qdd = np.zeros(n)
    qdd0 = np.zeros(n)
    acc = np.zeros(n)
    acc0 = np.zeros(n)
    qdd1 = np.zeros(n)
    lam1 = np.zeros(m)
    ext = 0.0
    S = np.zeros((n + m, n + m))
    D = np.zeros((n, n))
    piv = np.zeros(n + m, dtype=np.int64)
    x = np.zeros(n + m)
    rq = np.zeros(n)
    ph = np.zeros(m)
    qt = np.zeros(n)
    vt = np.zeros(n)
    at = np.zeros(n)
    rt = np.zeros(n)
    pt = np.zeros(m)
    u = ws[WS_U]
    u[:] = 0.0
    t0 = t_out[0]
    for i in range(ny):
        Y[0, i] = y[i]
    # consistent start: q''(t0), lam(t0) from the index-1 solve, a_0 shifted by
    # (alpha_m - alpha_f) h q'''(t0) (module docstring)
    st = common_solve_index1(y[:n], y[n : 2 * n], t0, p, u, ws)
    cnt[C_RHS] += 1
    if st != OK:
        return st, 0
    for i in range(n):
        qdd0[i] = ws[WS_A][i]
    for k in range(m):
        y[ol + k] = ws[WS_LAM][k]
    dt = 1e-3 * h
    for i in range(n):
        qt[i] = y[i] + dt * y[n + i] + 0.5 * dt * dt * qdd0[i]
        vt[i] = y[n + i] + dt * qdd0[i]
    st = common_solve_index1(qt, vt, t0 + dt, p, u, ws)
    cnt[C_RHS] += 1
    if st != OK:
        return st, 0
    for i in range(n):
        acc0[i] = qdd0[i] + (am - af) * h * (ws[WS_A][i] - qdd0[i]) / dt
    pw0 = model_power(y[:n], y[n : 2 * n], t0, p)
    fd = True
    j = 0
    for k in range(1, t_out.size):
        j_end = int(np.rint((t_out[k] - t0) / h))
        while j < j_end:
            t1 = t0 + (j + 1) * h
            for i in range(ny):
                y0[i] = y[i]
            st, theta = integ_ga_step(y, y0, qdd, qdd0, acc, acc0, qdd1, lam1, ext, t1, h,
                                      am, af, beta, gamma, tol, max_newton, fd, p, ws, S,
                                      D, piv, x, rq, ph, qt, vt, at, rt, pt, cnt)
            if st != OK and not fd:
                # a kept D failed: a new one at the predictor, and the step again
                cnt[C_REJECTED] += 1
                for i in range(ny):
                    y[i] = y0[i]
                fd = True
                st, theta = integ_ga_step(y, y0, qdd, qdd0, acc, acc0, qdd1, lam1, ext, t1,
                                          h, am, af, beta, gamma, tol, max_newton, fd, p,
                                          ws, S, D, piv, x, rq, ph, qt, vt, at, rt, pt, cnt)
            if st != OK:
                for i in range(ny):
                    y[i] = y0[i]
                return st, k - 1
            fd = theta > THETA_FD  # a new D at the next step if this one contracted slowly
            pw1 = model_power(y[:n], y[n : 2 * n], t1, p)
            y[2 * n] = y0[2 * n] + 0.5 * h * (pw0 + pw1)
            pw0 = pw1
            for i in range(n):
                qdd1[i] = qdd0[i]
                qdd0[i] = qdd[i]
                acc0[i] = acc[i]
            for i in range(m):
                lam1[i] = y0[ol + i]
            ext = 1.0
            cnt[C_STEPS] += 1
            j += 1
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
        for i in range(ny):
            Y[k, i] = y[i]
    return OK, t_out.size - 1
