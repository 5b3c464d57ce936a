"""RADAU5: the 3-stage Radau IIA method of order 5 with step control (Hairer & Wanner).

Applied to the implicit-DAE view F(t, y, y') = 0 of the formulation
(``form_dae_residual``: y' - f(t, y) for the ODE forms, the index-3 and GGL residuals of
``index3`` and ``ggl``). With the collocation nodes c = ((4 - √6)/10, (4 + √6)/10, 1), the
Radau IIA matrix A and W = A^-1, the stage increments Z_i = Y_i - y_0 solve::

    F(t_0 + c_i h, y_0 + Z_i, (1/h) sum_j W_ij Z_j) = 0,    i = 1, 2, 3

and y_1 = y_0 + Z_3 (stiffly accurate). **Simplified Newton** with the matrix
I (x) J + (W / h) (x) B, J = dF/dy by forward differences and B = dF/dy'
(``form_dae_jac_yp``: I for the ODE forms, M(q) in the DAE forms' rows), both frozen at
the step start (the residuals stay exact). **Complex transformation** (Hairer & Wanner
1996, Sect. IV.8, eqs. (8.16)-(8.18); RADAU5's DECOMR / DECOMC / SLVRAD): with
W = T diag(gamma, [[alpha, beta], [-beta, alpha]]) T^-1 the 3N x 3N system splits into
one real N x N matrix (gamma / h) B + J and one complex N x N matrix ((alpha - i beta) / h)
B + J, one LU each per (J, h) (:func:`integ_r5_matrices`, :func:`integ_r5_solve`; the
real one is also the error estimate's E1). This needs only the same B in every stage
block, which freezing B provides; the iterates are those of the plain 3N system up to
round-off. Newton norms are taken on the untransformed corrections. Stopping
rule, rate estimate theta and divergence test as RADAU5: stop when
theta/(1 - theta) |dZ| <= fnewt, fnewt = max(10 eps/rtol', min(0.03, rtol'^(1/2))),
at most ``max_newton`` iterations; a failure halves h. A correction at the round-off of
the stage values (:func:`integ_r5_roundoff`) also ends Newton, converged: there theta is
~1 and the rate test would reject a converged step (fixed-step runs with a tiny
``fnewt``). Starting values: the previous
step's collocation polynomial extrapolated (zero on the first step and after a
post-step correction).

**Error estimate** (RADAU5 ESTRAD): err = E1^-1 B (y'_0 + (d_1 Z_1 + d_2 Z_2 + d_3 Z_3)/h)
with E1 = (u_1/h) B + J, u_1 = the real eigenvalue of W, d = (-(13 + 7√6)/3,
(-13 + 7√6)/3, -1/3); norm RMS over err_i / scal_i, scal_i = atol' + rtol' max(|y_0|,
|y_1|), divided by h for index-2 and h^2 for index-3 components (``form_dae_index``:
v and lam of index3, lam and mu of ggl; RADAU5's NIND2 / NIND3 rule: the estimate of an
index-2 component is multiplied by h, of an index-3 one by h^2, and the Newton norm uses
the same weights). The tolerances are transformed as in RADAU5, rtol' = 0.1 rtol^(2/3),
atol' = rtol' atol/rtol, except with index-3 components (index3): there rtol' = 0.1 rtol.
Why: the exponent 2/3 assumes the estimate is O(h^4) while the true local error is O(h^6),
so that tol' = tol^(2/3) on the estimate means tol on the error. On the index-3 form the
position error is of the estimate's own order (measured on Andrews: the step count grows
only as rtol'^-0.18 and the error tracks rtol' at 10-30 rtol', so with the exponent 2/3
the error / rtol grew from 96 at 1e-6 to 5700 at 1e-10); with the linear rule it is
8.0 / 22 / 37 at 1e-6 / 1e-8 / 1e-10 (docs/explanation/methods-implicit.md). With index-3 components
the default Newton tolerance is at least ``R5_INDEX3_FNEWT`` = 1e-3 (RADAU5's rule gives
3e-5 at rtol 1e-8 there, which the chain of four-bars ``nfourbar`` cannot reach: newton_failed
after 4 steps), and a correction that stops contracting is accepted when its index-1 part
is round-off and the whole is below the tolerance (:func:`integ_r5_stalled`). Step factor
1/quot, quot = max(1/8, min(5, err^(1/4)/fac)), fac = min(0.9, 0.9 (1 + 2 nit)/(newt
+ 2 nit)); after a rejection the next accepted step does not grow. **Jacobian reuse**
(RADAU5): after an accepted step J is kept when Newton contracted fast (theta <= ``thet``,
default 1e-3 as RADAU5's WORK(3); < 0 asks for a new J after every accepted step), and
then also the LU when the new step would change by a factor in [1, 1.2]; a rejected
step with a J from this step start reuses J. Steps land on the output times (as dopri5;
a step within 1e-8 h of one is stretched to it, so fixed steps that sum to an output time
do not end in a round-off sliver below h_min).
Counters: one residual = one ``rhs_evals``; ``newton_iters``; ``jac_evals`` (J matrices);
slot ``R5_C_LU`` (not stored) counts the (real, complex) LU pairs.

Not done (docs/explanation/methods-implicit.md): RADAU5's Newton iteration in the transformed
variables (here the corrections are transformed back every iteration: 9N flops), the
second error estimate of RADAU5 at the first and rejected steps, Gustafsson's predictive
controller, dense output (outputs are step points), a cheaper J (analytic derivatives;
J by forward differences costs N residuals, 60-70 % of all residuals at the default
``thet``; ``thet`` = 0.1, RADAU5's advice for costly J, cuts J 3-200x, but the error
at equal rtol grows too: at equal error it measured x1.0-1.6 faster, one run, so the
default stays RADAU5's, docs/performance.md).

References
----------
Hairer & Wanner, *Solving ODEs II*, 2nd ed., 1996, Sect. IV.5, IV.8 and VII.8; the
RADAU5 code (Hairer & Wanner, 1996 version).
"""

import numpy as np
from mbstudy.solvers.integrators import _dae, _step_control
from mbstudy.solvers.integrators._dae import (  # noqa: F401 (templates, constants)
    DAE_EPS,
    DAE_FD_REL,
    integ_dae_jacobian,
    integ_dae_lu,
    integ_dae_max_index,
    integ_dae_newton_tol,
    integ_dae_norm,
    integ_dae_scale,
    integ_dae_start,
)
from mbstudy.solvers.integrators._step_control import integ_ctl_step_to_output
from mbstudy.solvers.kernel_names import (
    form_dae_index,
    form_dae_jac_yp,
    form_dae_residual,
    form_dae_yp0,
    form_has_post_step,
    form_post_step,
    model_sizes,
)
from mbstudy.solvers.linalg import lu_solve, state_status
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
    STEP_BUDGET,
    STEP_FLOOR,
)

SHARED_TEMPLATES = (_dae, _step_control)

_S6 = float(np.sqrt(6.0))
_A = np.array(
    [
        [(88 - 7 * _S6) / 360, (296 - 169 * _S6) / 1800, (-2 + 3 * _S6) / 225],
        [(296 + 169 * _S6) / 1800, (88 + 7 * _S6) / 360, (-2 - 3 * _S6) / 225],
        [(16 - _S6) / 36, (16 + _S6) / 36, 1 / 9],
    ]
)
_W = np.linalg.inv(_A)
R5_C1 = float((4 - _S6) / 10)
R5_C2 = float((4 + _S6) / 10)
R5_W11, R5_W12, R5_W13 = (float(x) for x in _W[0])
R5_W21, R5_W22, R5_W23 = (float(x) for x in _W[1])
R5_W31, R5_W32, R5_W33 = (float(x) for x in _W[2])
R5_DD1 = float(-(13 + 7 * _S6) / 3)
R5_DD2 = float((-13 + 7 * _S6) / 3)
R5_DD3 = -1.0 / 3.0
R5_U1 = float(30.0 / (6.0 + 81.0 ** (1.0 / 3.0) - 9.0 ** (1.0 / 3.0)))
"""gamma, the real eigenvalue of W (RADAU5's U1)."""
_CNO = ((12.0 - 81.0 ** (1.0 / 3.0) + 9.0 ** (1.0 / 3.0)) / 60.0) ** 2 + (
    (81.0 ** (1.0 / 3.0) + 9.0 ** (1.0 / 3.0)) * np.sqrt(3.0) / 60.0) ** 2
R5_ALPH = float((12.0 - 81.0 ** (1.0 / 3.0) + 9.0 ** (1.0 / 3.0)) / 60.0 / _CNO)
R5_BETA = float((81.0 ** (1.0 / 3.0) + 9.0 ** (1.0 / 3.0)) * np.sqrt(3.0) / 60.0 / _CNO)
"""alpha +- i beta, the complex pair of eigenvalues of W (RADAU5's ALPH, BETA)."""


def _eigvec(lam):
    """The eigenvector of W for the eigenvalue lam, third component 1."""
    K = _W - lam * np.eye(3)
    return np.append(np.linalg.solve(K[:2, :2], -K[:2, 2]), 1.0)


_T = np.column_stack([_eigvec(R5_U1), _eigvec(R5_ALPH + 1j * R5_BETA).real,
                      _eigvec(R5_ALPH + 1j * R5_BETA).imag]).real  # fmt: skip
_TI = np.linalg.inv(_T)
# W = T diag(gamma, [[alpha, beta], [-beta, alpha]]) T^-1 (Hairer & Wanner IV.8, (8.15))
R5_T11, R5_T12, R5_T13 = (float(x) for x in _T[0])
R5_T21, R5_T22, R5_T23 = (float(x) for x in _T[1])
R5_T31, R5_T32, R5_T33 = (float(x) for x in _T[2])
R5_TI11, R5_TI12, R5_TI13 = (float(x) for x in _TI[0])
R5_TI21, R5_TI22, R5_TI23 = (float(x) for x in _TI[1])
R5_TI31, R5_TI32, R5_TI33 = (float(x) for x in _TI[2])
R5_THET = 0.001
R5_TOL_EXP = 2.0 / 3.0
"""RADAU5's tolerance transformation rtol' = 0.1 rtol^R5_TOL_EXP (ODE forms, ggl); with
index-3 components the exponent is 1 (module docstring)."""
R5_INDEX3_FNEWT = 1e-3
"""The smallest default Newton tolerance with index-3 components (module docstring)."""
R5_ROUND_FAC = 16.0
"""A Newton correction below R5_ROUND_FAC eps |stage values| is round-off: converged."""
R5_C_LU = 6
"""Counter slot of the (real, complex) LU pairs: a kernel diagnostic for benchmarks, one
of the slots ``status.COUNTER_NAMES`` leaves unnamed (not stored)."""

SPEC = IntegratorSpec(
    name="radau5",
    summary="RADAU5: 3-stage Radau IIA (order 5), simplified Newton, step control; ODE "
    "forms and index3 / ggl",
    params=(
        *_dae.DAE_STEP_PARAMS,
        Param("max_newton", 7, "Newton iteration limit per step", kind="int", minimum=1),
        Param("fnewt", 0.0, "Newton stopping tolerance in units of the error weights; 0 = "
              "RADAU5's max(10 eps/rtol', min(0.03, rtol'^(1/2)))", nonnegative=True),
        Param("thet", R5_THET, "keep J after an accepted step whose Newton rate theta is "
              "<= thet (RADAU5's WORK(3)); < 0: a new J after every accepted step"),
    ),
    fixed_step=False,
    adaptive=True,
    # every form: ODE forms, post-step projection (a one-step method) and both DAE forms
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection",
           "index3-dae", "index2-ggl-dae"),
    order=5,
    source="Hairer & Wanner II, IV.5, IV.8, VII.8 (RADAU5)",
)


def integ_r5_w(i, j):
    """Entry (i, j) of W = A^-1 of the 3-stage Radau IIA method."""
    if i == 0:
        return R5_W11 if j == 0 else (R5_W12 if j == 1 else R5_W13)
    if i == 1:
        return R5_W21 if j == 0 else (R5_W22 if j == 1 else R5_W23)
    return R5_W31 if j == 0 else (R5_W32 if j == 1 else R5_W33)


def integ_r5_c(i):
    """Collocation node c_i."""
    return R5_C1 if i == 0 else (R5_C2 if i == 1 else 1.0)


def integ_r5_matrices(J, B, h, E1, piv1, E2, piv2):
    """The simplified-Newton matrix I (x) J + (W / h) (x) B of the stage system, block-
    diagonalised by T (Hairer & Wanner IV.8, (8.16)-(8.18); RADAU5's DECOMR / DECOMC):
    E1 = (gamma / h) B + J (real, also the error estimate's matrix) and E2 = ((alpha -
    i beta) / h) B + J (complex); LU both in place; status."""
    ny = J.shape[0]
    g = R5_U1 / h
    cr = R5_ALPH / h
    ci = -R5_BETA / h
    for a in range(ny):
        for b in range(ny):
            x = B[a, b]
            E1[a, b] = g * x + J[a, b]
            E2[a, b] = (cr * x + J[a, b]) + 1j * (ci * x)
    st = integ_dae_lu(E1, piv1, ny)
    if st != OK:
        return st
    return integ_dae_lu(E2, piv2, ny)


def integ_r5_solve(E1, piv1, E2, piv2, dZ, w):
    """dZ <- (I (x) J + (W / h) (x) B)^-1 dZ with the factors of :func:`integ_r5_matrices`:
    V = (T^-1 (x) I) dZ, E1 V_1 = V_1 and E2 (V_2 + i V_3) = V_2 + i V_3, dZ = (T (x) I) V
    (RADAU5's SLVRAD, applied in the untransformed variables). w: complex (N,) buffer."""
    ny = w.size
    for a in range(ny):
        z1 = dZ[a]
        z2 = dZ[ny + a]
        z3 = dZ[2 * ny + a]
        dZ[a] = R5_TI11 * z1 + R5_TI12 * z2 + R5_TI13 * z3
        w[a] = (R5_TI21 * z1 + R5_TI22 * z2 + R5_TI23 * z3) + 1j * (
            R5_TI31 * z1 + R5_TI32 * z2 + R5_TI33 * z3)
    lu_solve(E1, piv1, dZ, ny)
    lu_solve(E2, piv2, w, ny)
    for a in range(ny):
        v1 = dZ[a]
        v2 = w[a].real
        v3 = w[a].imag
        dZ[a] = R5_T11 * v1 + R5_T12 * v2 + R5_T13 * v3
        dZ[ny + a] = R5_T21 * v1 + R5_T22 * v2 + R5_T23 * v3
        dZ[2 * ny + a] = R5_T31 * v1 + R5_T32 * v2 + R5_T33 * v3


def integ_r5_stage(i, t, h, y, Z, yt, ypt):
    """yt = y + Z_i, ypt = (1/h) sum_j W_ij Z_j; returns t + c_i h."""
    ny = y.size
    w0 = integ_r5_w(i, 0) / h
    w1 = integ_r5_w(i, 1) / h
    w2 = integ_r5_w(i, 2) / h
    for a in range(ny):
        yt[a] = y[a] + Z[i * ny + a]
        ypt[a] = w0 * Z[a] + w1 * Z[ny + a] + w2 * Z[2 * ny + a]
    return t + integ_r5_c(i) * h


def integ_r5_extrapolate(Zold, ratio, Z):
    """Starting values: the previous step's collocation polynomial (nodes 0, c1, c2, 1,
    values 0, Z1, Z2, Z3) at 1 + c_i ratio, minus the new start y_0 = y_old + Z3."""
    ny = Z.size // 3
    x1 = R5_C1
    x2 = R5_C2
    for i in range(3):
        s = 1.0 + integ_r5_c(i) * ratio
        l1 = s * (s - x2) * (s - 1.0) / (x1 * (x1 - x2) * (x1 - 1.0))
        l2 = s * (s - x1) * (s - 1.0) / (x2 * (x2 - x1) * (x2 - 1.0))
        l3 = s * (s - x1) * (s - x2) / (1.0 * (1.0 - x1) * (1.0 - x2))
        for a in range(ny):
            Z[i * ny + a] = (l1 * Zold[a] + l2 * Zold[ny + a] + l3 * Zold[2 * ny + a]
                             - Zold[2 * ny + a])


def integ_r5_roundoff(y, Z, scal):
    """R5_ROUND_FAC eps times the RMS of max(|y|, |y + Z_i|) / scal: the size, in the
    error weights, of a Newton correction that is round-off of the stage values."""
    ny = y.size
    s = 0.0
    for a in range(ny):
        big = abs(y[a])
        for i in range(3):
            big = max(big, abs(y[a] + Z[i * ny + a]))
        r = big / scal[a]
        s += r * r
    return R5_ROUND_FAC * DAE_EPS * np.sqrt(s / ny)


def integ_r5_stalled(y, Z, dZ, scal, idx, dyno):
    """A Newton correction that stopped contracting is at its round-off floor: its index-1
    components at the round-off of the stage values (as :func:`integ_r5_roundoff`) and the
    whole correction below the error tolerance (dyno <= 1 in the weights). The algebraic
    components' round-off is not eps |value|: a round-off delta in Phi moves lam by about
    delta / (h^2 |Phi_q|^2), as fast as its weight grows, so it can sit above fnewt."""
    if dyno > 1.0:
        return False
    ny = y.size
    s = 0.0
    r0 = 0.0
    for a in range(ny):
        if idx[a] != 1:
            continue
        big = abs(y[a])
        for i in range(3):
            big = max(big, abs(y[a] + Z[i * ny + a]))
            r = dZ[i * ny + a] / scal[a]
            s += r * r
        r = big / scal[a]
        r0 += r * r
    return np.sqrt(s / (3 * ny)) <= R5_ROUND_FAC * DAE_EPS * np.sqrt(r0 / ny)


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time; see the module docstring and
    docs/explanation/solver-contract.md."""
    quot_ta = ip[1] / ip[0]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    nit = int(ip[6])
    ny = y.size
    nm = model_sizes(p)
    idx = np.zeros(ny, dtype=np.int64)
    form_dae_index(nm[0], nm[1], fp, idx)
    # RADAU5's tolerance transformation; exponent 1 with index-3 components (docstring)
    index3 = integ_dae_max_index(idx) >= 3
    rtol = 0.1 * ip[0] ** (1.0 if index3 else R5_TOL_EXP)
    atol = rtol * quot_ta
    yp0 = np.zeros(ny)
    Z = np.zeros(3 * ny)
    dZ = np.zeros(3 * ny)
    Zold = np.zeros(3 * ny)
    J = np.zeros((ny, ny))
    B = np.zeros((ny, ny))
    E1 = np.zeros((ny, ny))
    piv1 = np.zeros(ny, dtype=np.int64)
    E2 = np.zeros((ny, ny), dtype=np.complex128)
    piv2 = np.zeros(ny, dtype=np.int64)
    wc = np.zeros(ny, dtype=np.complex128)
    yt = np.zeros(ny)
    ypt = np.zeros(ny)
    rt = np.zeros(ny)
    r0 = np.zeros(ny)
    y1 = np.zeros(ny)
    scal = np.zeros(ny)
    cont = np.zeros(ny)
    st, t, t_end, h = integ_dae_start(t_out, y, Y, yp0, p, fp, ws, cnt, ip[2], h_max)
    if st != OK:
        return st, 0
    fnewt = ip[7] if ip[7] > 0.0 else integ_dae_newton_tol(rtol)
    if index3 and ip[7] <= 0.0:
        fnewt = max(fnewt, R5_INDEX3_FNEWT)
    thet = ip[8]
    need_jac = True
    jac_fresh = False
    h_lu = -1.0
    first = True
    reject = False
    have_old = False
    h_old = h
    faccon = 1.0
    theta = 1.0
    k = 1
    while k < t_out.size:
        if cnt[C_STEPS] + cnt[C_REJECTED] >= max_steps:
            return STEP_BUDGET, k - 1
        if t + h * (1.0 + 1e-8) >= t_out[k]:
            h = t_out[k] - t  # within round-off of the output time (fixed steps: t sums h)
        h, last, too_small = integ_ctl_step_to_output(t, h, t_out[k], h_min)
        if too_small:
            return STEP_FLOOR, k - 1
        if need_jac:
            st = form_dae_residual(t, y, yp0, p, fp, r0, ws)
            cnt[C_RHS] += 1
            if st == OK:
                st, ne = integ_dae_jacobian(t, y, yp0, r0, J, yt, rt, p, fp, ws)
                cnt[C_RHS] += ne
                cnt[C_JAC] += 1
            if st == OK:
                st = form_dae_jac_yp(t, y, p, fp, B, ws)
            if st != OK:
                return st, k - 1
            need_jac = False
            jac_fresh = True
            h_lu = -1.0
        if h != h_lu:
            st = integ_r5_matrices(J, B, h, E1, piv1, E2, piv2)
            cnt[R5_C_LU] += 1
            h_lu = h
            if st != OK:
                cnt[C_REJECTED] += 1
                h *= 0.5
                h_lu = -1.0
                reject = True
                if h < h_min:
                    return st, k - 1
                continue
        if have_old:
            integ_r5_extrapolate(Zold, h / h_old, Z)
        else:
            for i in range(3 * ny):
                Z[i] = 0.0
        integ_dae_scale(y, y, rtol, atol, idx, h, scal)
        # simplified Newton (module docstring)
        faccon = max(faccon, DAE_EPS) ** 0.8
        theta = abs(thet)
        newt = 0
        dyno_old = 1.0
        thq_old = 1.0
        ok = False
        fail = OK
        while True:
            if newt >= nit:
                fail = NEWTON_FAILED
                break
            for i in range(3):
                ti = integ_r5_stage(i, t, h, y, Z, yt, ypt)
                st = form_dae_residual(ti, yt, ypt, p, fp, rt, ws)
                cnt[C_RHS] += 1
                if st != OK:
                    fail = st
                    break
                for a in range(ny):
                    dZ[i * ny + a] = -rt[a]
            if fail != OK:
                break
            integ_r5_solve(E1, piv1, E2, piv2, dZ, wc)
            newt += 1
            cnt[C_NEWTON] += 1
            dyno = 0.0
            for i in range(3):
                for a in range(ny):
                    r = dZ[i * ny + a] / scal[a]
                    dyno += r * r
            dyno = np.sqrt(dyno / (3 * ny))
            if not np.isfinite(dyno):
                fail = NAN
                break
            if dyno <= integ_r5_roundoff(y, Z, scal):
                # the correction is round-off of the stage values: converged (the rate
                # test below would see theta ~ 1 there and reject the step)
                for i in range(3 * ny):
                    Z[i] += dZ[i]
                ok = True
                break
            if newt > 1:
                thq = dyno / dyno_old
                theta = thq if newt == 2 else np.sqrt(thq * thq_old)
                thq_old = thq
                stall = theta >= 0.99
                if not stall:
                    faccon = theta / (1.0 - theta)
                    dyth = faccon * dyno * theta ** (nit - 1 - newt) / fnewt
                    stall = dyth >= 1.0
                if stall:
                    if integ_r5_stalled(y, Z, dZ, scal, idx, dyno):
                        for i in range(3 * ny):
                            Z[i] += dZ[i]
                        ok = True
                        break
                    fail = NEWTON_FAILED
                    break
            dyno_old = max(dyno, DAE_EPS)
            for i in range(3 * ny):
                Z[i] += dZ[i]
            if faccon * dyno <= fnewt:
                ok = True
                break
        if not ok:
            cnt[C_REJECTED] += 1
            reject = True
            h *= 0.5
            if h < h_min:
                return fail, k - 1
            if not jac_fresh:
                need_jac = True
            continue
        # error estimate (RADAU5 ESTRAD)
        for a in range(ny):
            yt[a] = yp0[a] + (R5_DD1 * Z[a] + R5_DD2 * Z[ny + a] + R5_DD3 * Z[2 * ny + a]) / h
        for a in range(ny):
            s = 0.0
            for b in range(ny):
                s += B[a, b] * yt[b]
            cont[a] = s
        lu_solve(E1, piv1, cont, ny)
        for a in range(ny):
            y1[a] = y[a] + Z[2 * ny + a]
        integ_dae_scale(y, y1, rtol, atol, idx, h, scal)
        err = max(integ_dae_norm(cont, scal, 0, ny), 1e-10)
        if not np.isfinite(err):
            cnt[C_REJECTED] += 1
            reject = True
            h *= 0.25
            if not jac_fresh:
                need_jac = True
            continue
        fac = min(0.9, 0.9 * (1.0 + 2.0 * nit) / (newt + 2.0 * nit))
        quot = max(0.125, min(5.0, err ** 0.25 / fac))
        hnew = h / quot
        if err < 1.0:
            t = t_out[k] if last else t + h
            for a in range(ny):
                y[a] = y1[a]
                yp0[a] = (R5_W31 * Z[a] + R5_W32 * Z[ny + a] + R5_W33 * Z[2 * ny + a]) / h
            for i in range(3 * ny):
                Zold[i] = Z[i]
            h_old = h
            have_old = True
            jac_fresh = False
            cnt[C_STEPS] += 1
            if form_has_post_step():
                st = form_post_step(t, y, p, fp, ws, cnt)
                if st != OK:
                    return st, k - 1
                st = form_dae_yp0(t, y, p, fp, yp0, ws)
                cnt[C_RHS] += 1
                if st != OK:
                    return st, k - 1
                have_old = False
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
            if last:
                for i in range(ny):
                    Y[k, i] = y[i]
                k += 1
            if reject:
                hnew = min(hnew, h)
            reject = False
            first = False
            hnew = min(hnew, h_max)
            if theta <= thet and hnew / h >= 1.0 and hnew / h <= 1.2:
                hnew = h  # keep J and the LU
            elif theta > thet:
                need_jac = True
            h = hnew
        else:
            cnt[C_REJECTED] += 1
            h = 0.1 * h if first else hnew
            reject = True
            if not jac_fresh:
                need_jac = True
    return OK, t_out.size - 1
