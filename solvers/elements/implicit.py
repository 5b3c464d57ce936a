"""The seed-003 implicit integrator for element networks (numba-compiled).

One time step i (seed 003 §2.13–2.18, Fig. 2.4; docs/explanation/methods.md#implicit):

1. **Predictor** (explicit, [I] consistent with the seed's v3⁰ = 0.24081, a3⁰ = 59.21)::

       v⁰ = v_{i-1} + a_{i-1} dt,   a⁰ = a_{i-1},   x⁰ = x_{i-1} + v_{i-1} dt + a_{i-1} dt²/2

   (x⁰ is also x_{i-1} + (v_{i-1} + v⁰) dt/2, so the predictor satisfies the formulas of step 2).
2. **Newton** on the flow balance f(z) = sum_e A_e^T F_e = 0 at t_i = t_{i-1} + dt, in the
   solution variable z ∈ {x, v, a} (seed: v). Iteration k evaluates f(z^k) and df/dz
   (re-evaluated every iteration, as in the example), solves df/dz Δz = -f, sets
   z^{k+1} = z^k + Δz and recomputes the other two variables from the integration formulas::

       a_i = (v_i - v_{i-1}) / dt,   x_i = x_{i-1} + (v_{i-1} + v_i) dt / 2

   It stops when **both** ``max|f(z^k)| < delta_f`` and ``max|Δz| < delta_z`` (seed
   §2.14–2.15; max-norm over DOFs, docs/explanation/methods.md#implicit [I]); after ``max_newton``
   iterations without that the attempt fails and is retried with dt/4 ([I]: the seed
   does not say; docs/explanation/methods.md#implicit "treat non-convergence as a step rejection").
3. **Local error** (seed §2.16): ``l = max_n |v⁰_n - v_n| / 2``.
4. **Step rule** (seed §2.17, docs/explanation/methods.md#implicit) with ρ = delta_l / l::

       ρ < 0.25:         dt_rec = c dt ρ
       0.25 <= ρ <= 7:   dt_rec = c dt sqrt(ρ)
       ρ > 7:            dt_rec = 4 c dt   if cap, else c dt sqrt(ρ)

   ``cap`` defaults to **False**: the seed *states* the 4c branch but its own numbers
   (the recommended 0.264e-3 s after the retried step 3, ρ ≈ 29, and its dt3 =
   2.63e-3 after step 2, ρ ≈ 53) follow c dt sqrt(ρ)
   (docs/reference/elements.md#seed-inconsistencies, item 3) 5.3). ``cap = True`` gives the rule as
   written. ``dt_rec`` is then limited to ``dt_max``.
5. **Rejection** (seed §2.16–2.18): if l > delta_l the step is repeated from the same
   start state with dt = dt_rec; otherwise it is accepted and dt_rec is the next step.
   A recommended step below ``dt_min`` ends the run with ``STEP_FLOOR`` (or with the
   failure that forced it: ``NEWTON_FAILED``, ``SINGULAR``, ``NAN``).

The scheme is Newmark with γ = 1, β = 1/2, i.e. backward Euler in v: first order,
L-stable, numerically dissipative (docs/explanation/methods.md#implicit). The error estimate is the
Milne device for backward Euler with an explicit-Euler predictor: both have local error
dt²/2 · v'' with opposite signs, so |v⁰ - v|/2 estimates the corrector's error.

Kernels take arrays only (network arrays, state, ``ip`` parameter vector, output
buffers), never closures over per-case values, and return status codes of
:mod:`solvers.status`; they never raise (docs/explanation/solver-contract.md). Work counters use the
slots of :mod:`solvers.status`: ``C_STEPS`` accepted steps, ``C_REJECTED`` rejected
attempts (error test or Newton failure), ``C_NEWTON`` Newton iterations, ``C_RHS`` and
``C_JAC`` residual and Jacobian assemblies (one each per Newton iteration, plus the
start-up solve for a0).

Integrator parameters (:data:`PARAMS`, packed into ``ip`` in this order by
:func:`pack_implicit_params`): delta_l, c, cap, dt0, dt_min, dt_max, delta_f, delta_z,
max_newton, variable, max_steps.

References
----------
Seed 003 §2.3–2.5 (residual, solution variable, (2.8)), §2.13–2.18 (worked step 3,
Newton, local error, step correction, retry), Fig. 2.4a–c (step and iteration flow);
docs/explanation/methods.md#implicit; docs/explanation/models.md#network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from mbstudy.solvers.elements._linalg import lu_solve_inplace
from mbstudy.solvers.elements.assembly import (
    VAR_A,
    VAR_V,
    VAR_X,
    VARIABLES,
    assemble,
    chain_coefficients,
    select_z,
    state_from_z,
)
from mbstudy.solvers.elements.library import EVAL_OK
from mbstudy.solvers.spec import Param, pack_params
from mbstudy.solvers.status import (
    C_JAC,
    C_NEWTON,
    C_REJECTED,
    C_RHS,
    C_STEPS,
    DIVERGED,
    DIVERGENCE_BOUND,
    ERROR,
    N_COUNTERS,
    NAN,
    NEWTON_FAILED,
    OK,
    SINGULAR,
    STEP_BUDGET,
    STEP_FLOOR,
)
from numba import njit

PARAMS: tuple[Param, ...] = (
    Param("delta_l", 1e-3, "allowed local error of v, l = |v_pred - v_corr|/2 (seed: 0.001)",
          positive=True),
    Param("c", 0.8, "step-rule safety factor c (seed: 0.8)", positive=True, maximum=1.0),
    Param("cap", False, "use the seed's stated 4c cap for delta_l/l > 7 (its numbers do not)",
          kind="bool"),
    Param("dt0", 1e-3, "first step tried (s)", positive=True),
    Param("dt_min", 1e-12, "step floor: a smaller recommended step ends with step_floor (s)",
          positive=True),
    Param("dt_max", 0.0, "largest step (s); 0 = no limit", nonnegative=True),
    Param("delta_f", 1e-6, "Newton test |f| < delta_f (flow units, max-norm)", positive=True),
    Param("delta_z", 1e-8, "Newton test |dz| < delta_z (units of the solution variable)",
          positive=True),
    Param("max_newton", 10, "Newton iterations per attempt", kind="int", minimum=1),
    Param("variable", "v", "Newton solution variable z (seed: v)", kind="str",
          choices=VARIABLES),
    Param("max_steps", 1_000_000, "accepted-step budget (step_budget status)", kind="int",
          minimum=1),
)
"""Integrator parameters, in ``ip`` slot order (spec :class:`solvers.spec.Param`)."""

IP_DELTA_L, IP_C, IP_CAP, IP_DT0, IP_DT_MIN, IP_DT_MAX = range(6)
IP_DELTA_F, IP_DELTA_Z, IP_MAX_NEWTON, IP_VARIABLE, IP_MAX_STEPS = range(6, 11)
N_IP = 11

NEWTON_SHRINK = 0.25
"""Step factor after a failed Newton attempt ([I]; the seed gives none)."""
N_TRACE = 8
"""Columns of a Newton trace row, see :func:`newton_correct`."""
N_HIST = 5
"""Columns of a step-history row: t_i, dt_i, l_i, dt_rec, Newton iterations."""


def pack_implicit_params(values: Mapping[str, object] | None = None) -> np.ndarray:
    """Validate integrator parameters and return the ``ip`` vector (defaults filled).

    Parameters
    ----------
    values : name -> value for some of :data:`PARAMS`.

    Raises
    ------
    ValueError
        For an unknown name or an invalid value (the message names what was expected).
    """
    values = dict(values or {})
    names = [p.name for p in PARAMS]
    for key in values:
        if key not in names:
            raise ValueError(f"unknown integrator parameter {key!r} (valid: {', '.join(names)})")
    for prm in PARAMS:
        if prm.name in values:
            why = prm.check(values[prm.name])
            if why is not None:
                raise ValueError(f"integrator parameter {prm.name!r} must be {why}")
    return pack_params(PARAMS, values)


# ---------------------------------------------------------------------------------------
# one step: predictor, Newton corrector, error estimate, step rule


@njit(cache=True)
def predict(dt, x_prev, v_prev, a_prev, xp, vp, ap):
    """Fill the explicit predictor (docs/explanation/methods.md#implicit [I]) into ``xp, vp,
    ap``."""
    for i in range(x_prev.shape[0]):
        vp[i] = v_prev[i] + a_prev[i] * dt
        ap[i] = a_prev[i]
        xp[i] = x_prev[i] + v_prev[i] * dt + 0.5 * a_prev[i] * dt * dt


@njit(cache=True)
def newton_correct(etype, enodes, eparams, t, dt, x_prev, v_prev, var, delta_f, delta_z,
                   max_iter, x, v, a, z, f, J, dz, trace, cnt):
    """Newton iteration of one step on the flow balance (seed 003 §2.14–2.15).

    Parameters
    ----------
    etype, enodes, eparams : network arrays.
    t : the new time t_i (sources are evaluated there).
    dt : step size.
    x_prev, v_prev : (n,) start state of the step.
    var : solution variable (VAR_X, VAR_V, VAR_A).
    delta_f, delta_z : both tests must hold: max|f(z^k)| < delta_f and max|Δz| < delta_z.
    max_iter : iteration limit.
    x, v, a : (n,) in: the starting point (the predictor; evaluated as given, so an
        inconsistent x⁰ such as the seed's 46.5e-5 is possible); out: the last iterate.
    z, f, dz : (n,) workspace. J : (n, n) workspace.
    trace : (k, N_TRACE) out, row k = iteration k+1: ``[max|f(z^k)|, max|Δz|, f_0,
        (df/dz)_00, Δz_0, x_0, v_0, a_0]`` (index 0 = DOF 0, after the update); rows
        beyond ``trace.shape[0]`` are not written (pass shape (0, N_TRACE) for none).
    cnt : int64 counters (C_NEWTON, C_RHS, C_JAC incremented).

    Returns
    -------
    (status, n_iter) : OK, NEWTON_FAILED, SINGULAR, NAN or ERROR; iterations done.
    """
    cx, cv, ca = chain_coefficients(var, dt)
    select_z(var, x, v, a, z)
    n = z.shape[0]
    for k in range(max_iter):
        st = assemble(etype, enodes, eparams, t, x, v, a, cx, cv, ca, f, J, True)
        cnt[C_RHS] += 1
        cnt[C_JAC] += 1
        cnt[C_NEWTON] += 1
        if st != EVAL_OK:
            return ERROR, k + 1
        fn = 0.0
        for i in range(n):
            if not math.isfinite(f[i]):
                return NAN, k + 1
            fn = max(fn, abs(f[i]))
            dz[i] = -f[i]
        j00 = J[0, 0]
        if not lu_solve_inplace(J, dz):
            return SINGULAR, k + 1
        dn = 0.0
        for i in range(n):
            z[i] += dz[i]
            dn = max(dn, abs(dz[i]))
        state_from_z(var, z, dt, x_prev, v_prev, x, v, a)
        if k < trace.shape[0]:
            trace[k, 0] = fn
            trace[k, 1] = dn
            trace[k, 2] = f[0]
            trace[k, 3] = j00
            trace[k, 4] = dz[0]
            trace[k, 5] = x[0]
            trace[k, 6] = v[0]
            trace[k, 7] = a[0]
        if not math.isfinite(dn):
            return NAN, k + 1
        if fn < delta_f and dn < delta_z:
            return OK, k + 1
    return NEWTON_FAILED, max_iter


@njit(cache=True)
def local_error(vp, v):
    """Return l = max_n |v_pred - v_corr| / 2 (seed 003 §2.16)."""
    lmax = 0.0
    for i in range(v.shape[0]):
        lmax = max(lmax, 0.5 * abs(vp[i] - v[i]))
    return lmax


@njit(cache=True)
def step_rule(dt, lerr, delta_l, c, cap):
    """Recommended step from the local error (seed 003 §2.17; docs/explanation/methods.md#implicit).

    Parameters
    ----------
    dt : the step just tried. lerr : its local error l. delta_l : allowed local error.
    c : safety factor (seed 0.8). cap : apply the 4c branch for ρ > 7.

    Returns
    -------
    float
        c dt ρ (ρ < 0.25), c dt √ρ (0.25 <= ρ <= 7 and, without cap, ρ > 7), 4 c dt
        (ρ > 7 with cap); ρ = delta_l / l (∞ if l = 0, which gives ∞ without the cap).
    """
    if lerr <= 0.0:
        return 4.0 * c * dt if cap else math.inf
    rho = delta_l / lerr
    if rho < 0.25:
        return c * dt * rho
    if rho > 7.0 and cap:
        return 4.0 * c * dt
    return c * dt * math.sqrt(rho)


@njit(cache=True)
def implicit_step(etype, enodes, eparams, t_prev, dt, x_prev, v_prev, a_prev, ip,
                  x, v, a, xp, vp, ap, z, f, J, dz, trace, cnt):
    """One attempt of step i: predictor, Newton, local error, recommended step.

    Parameters
    ----------
    t_prev, dt : start time and size of the attempt (the new time is t_prev + dt).
    x_prev, v_prev, a_prev : (n,) start state.
    ip : integrator parameter vector (:data:`PARAMS` order).
    x, v, a : (n,) out: corrected state (the last iterate if Newton failed).
    xp, vp, ap : (n,) out: predictor.
    z, f, dz, J, trace, cnt : as for :func:`newton_correct`.

    Returns
    -------
    (status, l, dt_rec, n_iter) : Newton status; local error (NaN unless OK); the
        recommended next (or retry) step, limited to dt_max (dt·NEWTON_SHRINK if Newton
        failed); Newton iterations.
    """
    predict(dt, x_prev, v_prev, a_prev, xp, vp, ap)
    x[:] = xp
    v[:] = vp
    a[:] = ap
    st, nit = newton_correct(
        etype, enodes, eparams, t_prev + dt, dt, x_prev, v_prev, int(ip[IP_VARIABLE]),
        ip[IP_DELTA_F], ip[IP_DELTA_Z], int(ip[IP_MAX_NEWTON]), x, v, a, z, f, J, dz,
        trace, cnt,
    )
    if st != OK:
        return st, math.nan, dt * NEWTON_SHRINK, nit
    lerr = local_error(vp, v)
    dt_rec = step_rule(dt, lerr, ip[IP_DELTA_L], ip[IP_C], ip[IP_CAP] != 0.0)
    if ip[IP_DT_MAX] > 0.0 and dt_rec > ip[IP_DT_MAX]:
        dt_rec = ip[IP_DT_MAX]
    return OK, lerr, dt_rec, nit


@njit(cache=True)
def consistent_acceleration(etype, enodes, eparams, t, x, v, a, delta_f, max_iter, cnt):
    """Solve f(x, v, a, t) = 0 for a at fixed x, v (start-up; [I], the seed has none).

    Newton with (c_x, c_v, c_a) = (0, 0, 1), i.e. on df/da = sum of inertias. Networks
    with a massless node have a singular df/da; then ``a`` is left as given.

    Returns
    -------
    int
        OK, SINGULAR, NEWTON_FAILED, NAN or ERROR (``a`` updated in place only if OK).
    """
    n = x.shape[0]
    f = np.empty(n)
    J = np.empty((n, n))
    da = np.empty(n)
    a_try = a.copy()
    for _ in range(max_iter):
        st = assemble(etype, enodes, eparams, t, x, v, a_try, 0.0, 0.0, 1.0, f, J, True)
        cnt[C_RHS] += 1
        cnt[C_JAC] += 1
        if st != EVAL_OK:
            return ERROR
        fn = 0.0
        for i in range(n):
            if not math.isfinite(f[i]):
                return NAN
            fn = max(fn, abs(f[i]))
            da[i] = -f[i]
        if fn < delta_f:
            a[:] = a_try
            return OK
        if not lu_solve_inplace(J, da):
            return SINGULAR
        for i in range(n):
            a_try[i] += da[i]
    return NEWTON_FAILED


# ---------------------------------------------------------------------------------------
# the run


@njit(cache=True)
def _write_outputs(k, t_out, t_prev, h, x_prev, v_prev, a_prev, x, v, a, X, V, A):
    """Dense output on (t_prev, t_prev + h]: v linear, x its exact integral, a linear.

    x and v are the scheme's own interpolant: within a step v is linear and x is its
    trapezoidal integral (docs/explanation/methods.md#implicit), so both are continuous and exact at
    the step points. The scheme's a = (v_i - v_{i-1})/dt is constant on the step; it is
    interpolated linearly between a_{i-1} and a_i instead (same O(dt) accuracy) so that
    at a step point every output equals the Newton solution there, whichever side of the
    point the output time falls on in floating point.
    """
    t_new = t_prev + h
    n_out = t_out.shape[0]
    while k + 1 < n_out and t_out[k + 1] <= t_new:
        k += 1
        s = t_out[k] - t_prev
        r = s / h
        for i in range(x.shape[0]):
            dv = v[i] - v_prev[i]
            X[k, i] = x_prev[i] + v_prev[i] * s + 0.5 * dv * s * r
            V[k, i] = v_prev[i] + dv * r
            A[k, i] = a_prev[i] + (a[i] - a_prev[i]) * r
    return k


@njit(cache=True)
def implicit_run(etype, enodes, eparams, t0, x, v, a, t_out, ip, X, V, A, hist, cnt):
    """Integrate an element network from t0 to t_out[-1] (seed 003; module docstring).

    Parameters
    ----------
    etype, enodes, eparams : network arrays (:mod:`solvers.elements.library`).
    t0 : start time.
    x, v, a : (n,) initial state (a: e.g. from :func:`consistent_acceleration`; it only
        enters the first predictor); advanced in place to the last accepted state.
    t_out : (n_out,) increasing output times, t_out[0] >= t0; rows with t_out <= t0 get
        the initial state.
    ip : (N_IP,) integrator parameters (:func:`pack_implicit_params`).
    X, V, A : (n_out, n) out, state at the output times (dense output of the scheme).
    hist : (n_hist, N_HIST) out, accepted step j -> row j (while j < n_hist):
        ``[t_i, dt_i, l_i, dt_rec, newton_iters]``.
    cnt : (N_COUNTERS,) int64 work counters, incremented.

    Returns
    -------
    (status, k_reached, t_reached) : status code (:mod:`solvers.status`), index of the
        last output row written, time of the last accepted state.
    """
    n = x.shape[0]
    n_out = t_out.shape[0]
    t_end = t_out[n_out - 1]
    dt_min = ip[IP_DT_MIN]
    max_steps = int(ip[IP_MAX_STEPS])
    x_prev = x.copy()
    v_prev = v.copy()
    a_prev = a.copy()
    xp = np.empty(n)
    vp = np.empty(n)
    ap = np.empty(n)
    z = np.empty(n)
    f = np.empty(n)
    dz = np.empty(n)
    J = np.empty((n, n))
    trace = np.empty((0, N_TRACE))

    k = -1
    while k + 1 < n_out and t_out[k + 1] <= t0:
        k += 1
        for i in range(n):
            X[k, i] = x[i]
            V[k, i] = v[i]
            A[k, i] = a[i]
    t = t0
    dt = ip[IP_DT0]
    if ip[IP_DT_MAX] > 0.0 and dt > ip[IP_DT_MAX]:
        dt = ip[IP_DT_MAX]
    n_acc = 0
    while t < t_end:
        if n_acc >= max_steps:
            return STEP_BUDGET, k, t
        # the last step lands on t_end exactly (and never leaves a sliver below dt_min)
        last = t + dt >= t_end or t_end - (t + dt) < dt_min
        h = t_end - t if last else dt
        st, lerr, dt_rec, nit = implicit_step(
            etype, enodes, eparams, t, h, x_prev, v_prev, a_prev, ip, x, v, a,
            xp, vp, ap, z, f, J, dz, trace, cnt,
        )
        if st != OK or lerr > ip[IP_DELTA_L]:
            # rejection: repeat from the same start state with the recommended step
            cnt[C_REJECTED] += 1
            if dt_rec < dt_min:
                x[:] = x_prev
                v[:] = v_prev
                a[:] = a_prev
                return (STEP_FLOOR if st == OK else st), k, t
            dt = dt_rec
            continue
        for i in range(n):
            if not (math.isfinite(x[i]) and math.isfinite(v[i]) and math.isfinite(a[i])):
                return NAN, k, t
            if abs(x[i]) > DIVERGENCE_BOUND or abs(v[i]) > DIVERGENCE_BOUND or (
                abs(a[i]) > DIVERGENCE_BOUND
            ):
                return DIVERGED, k, t
        k = _write_outputs(k, t_out, t, h, x_prev, v_prev, a_prev, x, v, a, X, V, A)
        if n_acc < hist.shape[0]:
            hist[n_acc, 0] = t_end if last else t + h
            hist[n_acc, 1] = h
            hist[n_acc, 2] = lerr
            hist[n_acc, 3] = dt_rec
            hist[n_acc, 4] = nit
        t = t_end if last else t + h
        n_acc += 1
        cnt[C_STEPS] += 1
        x_prev[:] = x
        v_prev[:] = v
        a_prev[:] = a
        # accepted: l <= delta_l, so ρ >= 1 and dt_rec >= c·dt; never try below the floor
        dt = max(dt_rec, dt_min)
    return OK, k, t


def new_counters() -> np.ndarray:
    """Return a zeroed int64 counter array of length ``N_COUNTERS``."""
    return np.zeros(N_COUNTERS, dtype=np.int64)


__all__ = [
    "IP_CAP",
    "IP_DELTA_F",
    "IP_DELTA_L",
    "IP_DELTA_Z",
    "IP_DT0",
    "IP_DT_MAX",
    "IP_DT_MIN",
    "IP_MAX_NEWTON",
    "IP_MAX_STEPS",
    "IP_VARIABLE",
    "NEWTON_SHRINK",
    "N_HIST",
    "N_IP",
    "N_TRACE",
    "PARAMS",
    "VAR_A",
    "VAR_V",
    "VAR_X",
    "consistent_acceleration",
    "implicit_run",
    "implicit_step",
    "local_error",
    "new_counters",
    "newton_correct",
    "pack_implicit_params",
    "predict",
    "step_rule",
]
