"""Templates shared by the implicit DAE integrators radau5 and bdf (not a registry entry).

Both solve F(t, y, y') = 0, the implicit-DAE view of every formulation
(``form_dae_residual``; y' - f(t, y) for the ODE forms, the residuals of index3 and
ggl), with Newton iterations on matrices built from J = dF/dy (forward differences,
:func:`integ_dae_jacobian`) and B = dF/dy' (``form_dae_jac_yp``: I for the ODE forms,
diag(I, M, 1, 0) for the DAE forms). Their error tests divide the weights of index-k
components by h^(k-1) (:func:`integ_dae_scale`; Hairer & Wanner 1996, Sect. VII.8 and
the RADAU5 code's NIND2/NIND3 option).
"""

import numpy as np
from mbstudy.solvers.kernel_names import form_dae_residual, form_dae_yp0
from mbstudy.solvers.linalg import lu_factor_rtol
from mbstudy.solvers.spec import Param
from mbstudy.solvers.status import C_RHS, OK, SINGULAR

DAE_FD_REL = 1.4901161193847656e-08
"""Relative forward-difference increment of J = dF/dy, sqrt(machine epsilon)."""


DAE_EPS = 2.220446049250313e-16
"""Machine epsilon (double), as RADAU5's UROUND."""

# The step-control parameters of both drivers, in the order of their ``ip`` slots 0-5
DAE_STEP_PARAMS = (
    Param("rtol", 1e-8, "relative error tolerance (-)", positive=True),
    Param("atol", 1e-10, "absolute error tolerance (state units)", positive=True),
    Param("h0", 0.0, "initial step (s); 0 = 1e-6", nonnegative=True),
    Param("h_max", 0.0, "largest step (s); 0 = no limit", nonnegative=True),
    Param("h_min", 1e-14, "step floor (s): smaller steps end the case (step_floor)",
          nonnegative=True),
    Param("max_steps", 1_000_000, "step budget (accepted + rejected)", kind="int",
          minimum=1),
)


def integ_dae_newton_tol(rtol):
    """RADAU5's default Newton stopping tolerance in units of the error weights,
    max(10 eps / rtol, min(0.03, rtol^(1/2))) (Hairer & Wanner II, IV.8)."""
    return max(10.0 * DAE_EPS / rtol, min(0.03, np.sqrt(rtol)))


def integ_dae_start(t_out, y, Y, yp, p, fp, ws, cnt, h0, h_max):
    """The start both drivers share: output row 0 is y; y'(t0) from the formulation
    (``form_dae_yp0``, counted as one residual evaluation); the first step h0 (1e-6 when
    not given), capped by h_max and by the interval. Returns (status, t0, t_end, h)."""
    for i in range(y.size):
        Y[0, i] = y[i]
    t = t_out[0]
    t_end = t_out[t_out.size - 1]
    st = form_dae_yp0(t, y, p, fp, yp, ws)
    cnt[C_RHS] += 1
    h = h0 if h0 > 0.0 else 1e-6
    h = min(h, h_max, t_end - t)
    return st, t, t_end, h


def integ_dae_jacobian(t, y, yp, r0, J, yt, rt, p, fp, ws):
    """J = dF/dy at (t, y, y') by forward differences (r0 = F(t, y, y')); returns
    (status, residual evaluations)."""
    ny = y.size
    for j in range(ny):
        yt[j] = y[j]
    for j in range(ny):
        yt[j] = y[j] + DAE_FD_REL * max(abs(y[j]), 1e-5)
        d = yt[j] - y[j]
        st = form_dae_residual(t, yt, yp, p, fp, rt, ws)
        yt[j] = y[j]
        if st != OK:
            return st, j + 1
        for i in range(ny):
            J[i, j] = (rt[i] - r0[i]) / d
    return OK, ny


def integ_dae_scale(y0, y1, rtol, atol, idx, h, scal):
    """scal_i = (atol + rtol max(|y0_i|, |y1_i|)) / h^(idx_i - 1) (h < 1 relaxes the
    algebraic components of index 2 and 3)."""
    hh = min(h, 1.0)
    for i in range(y0.size):
        s = atol + rtol * max(abs(y0[i]), abs(y1[i]))
        if idx[i] == 2:
            s /= hh
        elif idx[i] >= 3:
            s /= hh * hh
        scal[i] = s


def integ_dae_max_index(idx):
    """The highest differential index among the components (1 for the ODE forms)."""
    k = 1
    for i in range(idx.size):
        k = max(k, idx[i])
    return k


def integ_dae_norm_index1(x, scal, idx):
    """RMS of x_i / scal_i over the index-1 components only (the others count as zero):
    the part of a Newton increment that the error test weighs at full tolerance."""
    s = 0.0
    for i in range(idx.size):
        if idx[i] == 1:
            r = x[i] / scal[i]
            s += r * r
    return np.sqrt(s / idx.size)


def integ_dae_norm(x, scal, off, ny):
    """RMS of x[off:off+ny] / scal."""
    s = 0.0
    for i in range(ny):
        r = x[off + i] / scal[i]
        s += r * r
    return np.sqrt(s / ny)


def integ_dae_lu(A, piv, n):
    """LU with partial pivoting of A[:n, :n] in place (``linalg.lu_factor_rtol`` with a
    zero relative pivot threshold); SINGULAR only for an exactly zero or a non-finite
    pivot (LAPACK's dgetrf rule). The iteration matrices of index-3 systems have
    condition numbers ~ h^-3 and pivots far below 1e-13 max|A| that are not round-off
    (``linalg.lu_factor``'s relative test would call them singular). A NaN entry that
    reaches a pivot passes the factorisation's comparisons, so the pivots of U are
    checked afterwards."""
    st = lu_factor_rtol(A, piv, n, 0.0)
    if st != OK:
        return st
    for k in range(n):
        if not np.isfinite(A[k, k]):
            return SINGULAR
    return OK
