"""BDF/NDF: variable-order (1-5), variable-step backward differentiation in the style of
MATLAB's ode15s (Shampine & Reichelt 1997).

Applied to the implicit-DAE view F(t, y, y') = 0 of the formulation
(``form_dae_residual``: y' - f(t, y) for the ODE forms, the residuals of ``index3`` and
``ggl``). The history is the array of backward differences D = [y_n, ∇y_n, ..., ∇^{k+2}y_n]
of the quasi-constant-step formulation (Shampine & Reichelt 1997, Sect. 2.3). A step of
order k and size h from t_n predicts y^(0) = sum_{m=0}^k ∇^m y_n and solves the NDF
(eq. (2.4) of the paper, y' from the formula itself)::

    sum_{m=1}^k (1/m) ∇^m y_{n+1} - kappa_k gamma_k (y_{n+1} - y^(0)) = h y'_{n+1},
    F(t_{n+1}, y_{n+1}, y'_{n+1}) = 0,

in the unknown d = y_{n+1} - y^(0): y_{n+1} = y^(0) + d, y'_{n+1} = (psi + d)/c with
psi = (1/alpha_k) sum_{m=1}^k gamma_m ∇^m y_n, c = h/alpha_k, alpha_k = (1 - kappa_k)
gamma_k, gamma_k = sum_{j=1}^k 1/j, and the NDF coefficients kappa = (-0.1850, -1/9,
-0.0823, -0.0415, 0) (``ndf = 1``, as ode15s) or kappa = 0 (``ndf = 0``: the BDFs).
For an ODE form this is ode15s's corrector d = c f(t, y^(0) + d) - psi. **Newton** on
the iteration matrix A = J + B/c, J = dF/dy by
forward differences (:func:`integ_dae_jacobian`) at the last accepted point, B = dF/dy'
(``form_dae_jac_yp``: I for the ODE forms, diag(I, M, 1, 0) for the DAE forms; for an ODE
form A = (I - c f_y)/c, ode15s's matrix). Stopping and divergence tests as ode15s/scipy:
rate = |dd_i|/|dd_{i-1}|, converged when rate/(1 - rate) |dd| < newton_tol =
max(10 eps/rtol, min(0.03, rtol^(1/2))), failed when rate >= 1 or the predicted final
correction exceeds the tolerance within ``max_newton`` iterations, unless the increment
has reached its round-off floor: its index-1 components below 1 % of the error
tolerance (``BDF_NEWTON_FLOOR``) and the whole increment below 10 % of it (0.1 in the
weights); then the iterate is accepted. That floor matters for the multipliers of the DAE
forms at tight atol: a round-off delta in Phi(q) moves mu (ggl) by about
delta/(h |Phi_q|^2), as fast as its weight atol/h grows, so on Andrews the increment of
lam and mu stalls near 1e-3 weight units at atol 1e-10 and near 0.015 at 1e-12, whatever
h (measured), above scipy's newton_tol of 2e-5 (10 eps/rtol); with a 1 % floor on the
whole increment every step at 1e-12 failed (ggl ended newton_failed after 2 steps), while
the positions' increments were at 2e-4 weight units. **Jacobian reuse**: J
is kept from step to step; a Newton failure with an old J refreshes J at the same h, with
a current J it halves h. A new LU of A whenever h or k change.

**Error test**: err = |E_k d|, E_k = kappa_k gamma_k + 1/(k+1), RMS over
d_i / scal_i with scal_i = atol + rtol max(|y_n,i|, |y_n+1,i|) **divided by h^(idx_i - 1)**
for the algebraic variables (``form_dae_index``: v and lam of index3 have index 2 and 3,
lam and mu of ggl index 2; :func:`integ_dae_scale`, the rule radau5 uses). Why scaled and
not excluded: the BDF local error of an index-2 (index-3) component is O(h^k) (O(h^(k-1)))
rather than O(h^(k+1)) (Brenan, Campbell & Petzold 1996, Sect. 3.2; Hairer & Wanner 1996,
Sect. VII.3), so dividing its weight by h^(idx-1) gives the same power of h as the
differential components and keeps the step controller consistent, while a lam that jumps
(impact-like forces) is still seen; excluding lam and mu (as DASSL/IDA do optionally)
would leave a step failing Newton the only control of them. **Index-3 forms** (index3):
the tolerances are multiplied by ``BDF_INDEX3_TOL`` = 0.003 inside the kernel (never below
``BDF_INDEX3_TOL_FLOOR`` = 3e-13, nor above the user's). The local error test does not
bound the propagated position error of the index-3 form: on Andrews the error / rtol grew
from 290 at 1e-6 to 1400 at 1e-10 (error ~ rtol^0.7). The factor is a measured calibration,
not a theorem: with it error / rtol is 0.8 / 3.2 / 26 at 1e-6 / 1e-8 / 1e-10, still growing
slowly (docs/explanation/methods-implicit.md); at 1e-13 the index-3 iteration diverges (round-off of
the multipliers grows as eps/h^2), hence the floor.

**Step and order** (ode15s): a rejected step shrinks by max(0.2, safety err^(-1/(k+1)));
after k + 1 steps of equal size the errors of orders k - 1 (E_{k-1} ∇^k y), k and k + 1
(E_{k+1} ∇^{k+2} y) give the factors err_j^(-1/(j+1)); the largest picks the new order
and step (at most 10x), safety = 0.9 (2 max_newton + 1)/(2 max_newton + iterations).
A step change rescales D by (R U)^T (Shampine & Reichelt 1997, Sect. 2.3:
D <- (R(rho) U)^T D, R_ij = prod_{l=1}^i (l - 1 - rho j)/l, U = R(1)). The order stays in
[``min_order``, ``max_order``]: a run starts at order 1 and, while below ``min_order``,
raises the order after every k + 1 equal steps; ``min_order == max_order`` fixes the order
after the start (the convergence tests). Outputs between steps come from the difference
interpolant y(t_{n+1} + s h) = sum_j ∇^j y_{n+1} prod_{i<j} (s + i)/(i + 1), the
last step lands on t_end. A step below ``h_min`` ends the case with the reason of the
failures since the last accepted step: ``newton_failed``, ``nan`` or the formulation's
status, ``step_floor`` when the error test shrank it. Counters: one residual = one
``rhs_evals``; ``newton_iters``; ``jac_evals`` (J matrices).

Not done (docs/explanation/methods-implicit.md): ode15s's initial-step heuristic (``h0`` or 1e-6),
the mass-matrix-dependent Jacobian update rule, a separate LU counter.

References
----------
Shampine, L. F., Reichelt, M. W. (1997), The MATLAB ODE Suite, SIAM J. Sci. Comput.
18:1-22; Klopfenstein (1971) and Shampine (1980) for the NDFs; Hairer & Wanner,
*Solving ODEs II*, 2nd ed., 1996, Sect. III.5 and VII.3; scipy.integrate.BDF (the same
algorithm, used here as an independent cross-check).
"""

import numpy as np
from mbstudy.solvers.integrators import _dae
from mbstudy.solvers.integrators._dae import (
    integ_dae_jacobian,
    integ_dae_lu,
    integ_dae_max_index,
    integ_dae_newton_tol,
    integ_dae_norm,
    integ_dae_norm_index1,
    integ_dae_scale,
    integ_dae_start,
)
from mbstudy.solvers.kernel_names import (
    form_dae_index,
    form_dae_jac_yp,
    form_dae_residual,
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

SHARED_TEMPLATES = (_dae,)

BDF_MAXK = 5
# NDF coefficients kappa_k, k = 0..5 (Shampine & Reichelt 1997, Table 1; kappa_0 unused)
BDF_KAPPA = (0.0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0.0)
# a Newton increment that stops contracting below this fraction of the error tolerance is
# at its round-off floor and accepted (module docstring)
BDF_NEWTON_FLOOR = 0.01
# ... its index-1 components, that is; the whole increment must be below this (the
# multipliers' round-off is not eps |value|, module docstring)
BDF_NEWTON_STALL = 0.1
# the tolerances of a formulation with index-3 components (index3) are multiplied by this
# factor inside the kernel, so that the position error is proportional to rtol (module
# docstring: the local error test on an index-3 DAE lets the global error grow as
# rtol^0.7; measured on Andrews' squeezer, docs/explanation/methods-implicit.md)
BDF_INDEX3_TOL = 0.003
# ... but never below this (or the user's rtol, if smaller): at 1e-13 the index-3 iteration on
# Andrews diverges (the multipliers' round-off grows as eps/h^2), at 3e-13 it runs
BDF_INDEX3_TOL_FLOOR = 3e-13

SPEC = IntegratorSpec(
    name="bdf",
    summary="BDF/NDF of orders 1-5 (ode15s), variable step and order, Newton with "
    "Jacobian reuse; ODE forms and index3 / ggl",
    params=(
        *_dae.DAE_STEP_PARAMS,
        Param("max_newton", 4, "Newton iteration limit per step", kind="int", minimum=1),
        Param("max_order", 5, "highest order", kind="int", minimum=1, maximum=5),
        Param("min_order", 1, "lowest order once reached, capped at max_order (= max_order: "
              "fixed order)", kind="int", minimum=1, maximum=5),
        Param("ndf", 1, "1: NDF coefficients kappa (ode15s default), 0: plain BDF",
              kind="int", minimum=0, maximum=1),
    ),
    fixed_step=False,
    adaptive=True,
    # the ODE forms (qr's corrections live inside the right-hand side: the integrated raw
    # state is never reset) and the two DAE forms (solvers/forms.py)
    forms=("index1-ode", "stabilized-ode", "nullspace-ode", "index3-dae", "index2-ggl-dae"),
    forms_reason="a post-step correction (projection) would reset BDF's difference history "
    "at every step",
    order=5,
    source="Shampine & Reichelt 1997 (ode15s); Hairer & Wanner II, III.5, VII.3",
)


def integ_bdf_change(D, order, factor, R, U, Dt):
    """Rescale the differences D[:order+1] to the step h*factor: D <- (R U)^T D
    (Shampine & Reichelt 1997, Sect. 2.3)."""
    ny = D.shape[1]
    for pass_ in range(2):
        rho = factor if pass_ == 0 else 1.0
        X = R if pass_ == 0 else U
        for j in range(order + 1):
            X[0, j] = 1.0
        for i in range(1, order + 1):
            X[i, 0] = 0.0
            for j in range(1, order + 1):
                X[i, j] = X[i - 1, j] * (i - 1 - rho * j) / i
    for j in range(order + 1):
        for a in range(ny):
            Dt[j, a] = 0.0
    for j in range(order + 1):
        for i in range(order + 1):
            ru = 0.0
            for m in range(order + 1):
                ru += R[i, m] * U[m, j]
            if ru != 0.0:
                for a in range(ny):
                    Dt[j, a] += ru * D[i, a]
    for j in range(order + 1):
        for a in range(ny):
            D[j, a] = Dt[j, a]


def integ_bdf_interp(D, order, t, h, te, out):
    """out = the difference interpolant of the last step (ending at t, size h) at te."""
    ny = out.size
    for a in range(ny):
        out[a] = D[0, a]
    prod = 1.0
    for j in range(order):
        prod *= (te - (t - h * j)) / (h * (1.0 + j))
        for a in range(ny):
            out[a] += D[j + 1, a] * prod


def integ_bdf_matrix(J, B, c, A, piv):
    """A = J + B / c, LU in place; status."""
    ny = J.shape[0]
    for a in range(ny):
        for b in range(ny):
            A[a, b] = J[a, b] + B[a, b] / c
    return integ_dae_lu(A, piv, ny)


def integ_bdf_errnorm(const, D, row, scal):
    """|const * D[row]| in the RMS norm of the weights scal."""
    ny = scal.size
    s = 0.0
    for a in range(ny):
        r = const * D[row, a] / scal[a]
        s += r * r
    return np.sqrt(s / ny)


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate through every output time; see the module docstring and
    docs/explanation/solver-contract.md."""
    rtol = ip[0]
    atol = ip[1]
    h_max = ip[3] if ip[3] > 0.0 else np.inf
    h_min = ip[4]
    max_steps = int(ip[5])
    nit = int(ip[6])
    max_order = min(max(int(ip[7]), 1), BDF_MAXK)
    min_order = min(max(int(ip[8]), 1), max_order)
    ndf = ip[9] > 0.5
    ny = y.size
    nm = model_sizes(p)
    idx = np.zeros(ny, dtype=np.int64)
    form_dae_index(nm[0], nm[1], fp, idx)
    if integ_dae_max_index(idx) >= 3:
        fac = max(BDF_INDEX3_TOL, min(1.0, BDF_INDEX3_TOL_FLOOR / rtol))
        rtol *= fac
        atol *= fac
    kap = np.zeros(BDF_MAXK + 1)
    gam = np.zeros(BDF_MAXK + 1)
    alf = np.zeros(BDF_MAXK + 1)
    econ = np.zeros(BDF_MAXK + 1)
    for j in range(BDF_MAXK + 1):
        if j > 0:
            gam[j] = gam[j - 1] + 1.0 / j
        kap[j] = BDF_KAPPA[j] if ndf else 0.0
        alf[j] = (1.0 - kap[j]) * gam[j]
        econ[j] = kap[j] * gam[j] + 1.0 / (j + 1.0)
    D = np.zeros((BDF_MAXK + 3, ny))
    R = np.zeros((BDF_MAXK + 1, BDF_MAXK + 1))
    U = np.zeros((BDF_MAXK + 1, BDF_MAXK + 1))
    Dt = np.zeros((BDF_MAXK + 1, ny))
    J = np.zeros((ny, ny))
    B = np.zeros((ny, ny))
    A = np.zeros((ny, ny))
    piv = np.zeros(ny, dtype=np.int64)
    yp = np.zeros(ny)
    ypred = np.zeros(ny)
    psi = np.zeros(ny)
    d = np.zeros(ny)
    dy = np.zeros(ny)
    yt = np.zeros(ny)
    ypt = np.zeros(ny)
    rt = np.zeros(ny)
    r0 = np.zeros(ny)
    scal = np.zeros(ny)
    st, t, t_end, h = integ_dae_start(t_out, y, Y, yp, p, fp, ws, cnt, ip[2], h_max)
    if st != OK:
        return st, 0
    for a in range(ny):
        D[0, a] = y[a]
        D[1, a] = h * yp[a]
    newton_tol = integ_dae_newton_tol(rtol)
    order = 1
    n_equal = 0
    need_jac = True
    jac_cur = False
    lu_ok = False
    why = OK  # why the steps since the last accepted one failed (status at the floor)
    k = 1
    while k < t_out.size:
        if cnt[C_STEPS] + cnt[C_REJECTED] >= max_steps:
            return STEP_BUDGET, k - 1
        if need_jac:
            for a in range(ny):
                y[a] = D[0, a]
            st = form_dae_residual(t, y, yp, p, fp, r0, ws)
            cnt[C_RHS] += 1
            if st == OK:
                st, ne = integ_dae_jacobian(t, y, yp, r0, J, yt, rt, p, fp, ws)
                cnt[C_RHS] += ne
                cnt[C_JAC] += 1
            if st == OK:
                st = form_dae_jac_yp(t, y, p, fp, B, ws)
            if st != OK:
                return st, k - 1
            need_jac = False
            jac_cur = True
            lu_ok = False
        hn = min(h, h_max)
        last = t + hn >= t_end - 1e-14 * abs(t_end)
        if last:
            hn = t_end - t
        if hn != h:
            integ_bdf_change(D, order, hn / h, R, U, Dt)
            h = hn
            n_equal = 0
            lu_ok = False
        if h < h_min:
            return (STEP_FLOOR if why == OK else why), k - 1
        t_new = t_end if last else t + h
        c = h / alf[order]
        for a in range(ny):
            s = D[0, a]
            q = 0.0
            for m in range(1, order + 1):
                s += D[m, a]
                q += gam[m] * D[m, a]
            ypred[a] = s
            psi[a] = q / alf[order]
        if not lu_ok:
            st = integ_bdf_matrix(J, B, c, A, piv)
            if st != OK:
                cnt[C_REJECTED] += 1
                if not jac_cur:
                    need_jac = True
                    continue
                integ_bdf_change(D, order, 0.5, R, U, Dt)
                h *= 0.5
                n_equal = 0
                if h < h_min:
                    return st, k - 1
                continue
            lu_ok = True
        integ_dae_scale(ypred, ypred, rtol, atol, idx, h, scal)
        # Newton on d (module docstring)
        conv = False
        dyn_old = 0.0
        rate = 0.0
        n_iter = 0
        for a in range(ny):
            d[a] = 0.0
            yt[a] = ypred[a]
        for it in range(nit):
            for a in range(ny):
                ypt[a] = (psi[a] + d[a]) / c
            st = form_dae_residual(t_new, yt, ypt, p, fp, rt, ws)
            cnt[C_RHS] += 1
            if st != OK:
                why = st
                break
            for a in range(ny):
                dy[a] = -rt[a]
            lu_solve(A, piv, dy, ny)
            cnt[C_NEWTON] += 1
            n_iter = it + 1
            dyn = integ_dae_norm(dy, scal, 0, ny)
            if not np.isfinite(dyn):
                why = NAN
                break
            if it > 0:
                rate = dyn / dyn_old
                if rate >= 1.0 or rate ** (nit - it) / (1.0 - rate) * dyn > newton_tol:
                    dyn1 = integ_dae_norm_index1(dy, scal, idx)
                    if dyn > BDF_NEWTON_STALL or dyn1 > BDF_NEWTON_FLOOR:
                        break
                    rate = 0.0  # stagnation at the round-off floor (module docstring)
            for a in range(ny):
                yt[a] += dy[a]
                d[a] += dy[a]
            if dyn == 0.0 or (it > 0 and rate / (1.0 - rate) * dyn < newton_tol):
                conv = True
                break
            dyn_old = dyn
        if not conv:
            if why == OK:
                why = NEWTON_FAILED
            if not jac_cur:
                need_jac = True
                continue
            cnt[C_REJECTED] += 1
            integ_bdf_change(D, order, 0.5, R, U, Dt)
            h *= 0.5
            n_equal = 0
            lu_ok = False
            continue
        safety = 0.9 * (2.0 * nit + 1.0) / (2.0 * nit + n_iter)
        for a in range(ny):
            y[a] = D[0, a]
        integ_dae_scale(y, yt, rtol, atol, idx, h, scal)
        err = econ[order] * integ_dae_norm(d, scal, 0, ny)
        if not np.isfinite(err):
            return NAN, k - 1
        if err > 1.0:
            why = OK
            cnt[C_REJECTED] += 1
            factor = max(0.2, safety * err ** (-1.0 / (order + 1)))
            integ_bdf_change(D, order, factor, R, U, Dt)
            h *= factor
            n_equal = 0
            lu_ok = False
            continue
        # accept: update the differences (∇^{k+2}, ∇^{k+1} = d, then the lower ones)
        why = OK
        cnt[C_STEPS] += 1
        n_equal += 1
        t = t_new
        jac_cur = False
        for a in range(ny):
            D[order + 2, a] = d[a] - D[order + 1, a]
            D[order + 1, a] = d[a]
        for i in range(order, -1, -1):
            for a in range(ny):
                D[i, a] += D[i + 1, a]
        for a in range(ny):
            yp[a] = (psi[a] + d[a]) / c
            y[a] = D[0, a]
        st = state_status(y, DIVERGENCE_BOUND)
        if st != OK:
            return st, k - 1
        while k < t_out.size and (last or t_out[k] <= t):
            integ_bdf_interp(D, order, t, h, t_out[k], yt)  # = y_{n+1} at te = t
            for a in range(ny):
                Y[k, a] = yt[a]
            k += 1
        if last:
            break
        # order and step selection after order + 1 equal steps (ode15s)
        if n_equal < order + 1:
            continue
        fm = 0.0
        if order > min_order:
            em = integ_bdf_errnorm(econ[order - 1], D, order, scal)
            fm = em ** (-1.0 / order) if em > 0.0 else np.inf
        f0 = err ** (-1.0 / (order + 1)) if err > 0.0 else np.inf
        fp_ = 0.0
        if order < max_order:
            ep = integ_bdf_errnorm(econ[order + 1], D, order + 2, scal)
            fp_ = ep ** (-1.0 / (order + 2)) if ep > 0.0 else np.inf
        if order < min_order:
            f0 = 0.0
            fm = 0.0
        delta = 0
        best = f0
        if fm > best:
            delta = -1
            best = fm
        if fp_ > best:
            delta = 1
            best = fp_
        order += delta
        factor = min(10.0, safety * best)
        if factor != 1.0:
            integ_bdf_change(D, order, factor, R, U, Dt)
            h *= factor
        n_equal = 0
        lu_ok = False
    for a in range(ny):
        y[a] = D[0, a]
    return OK, t_out.size - 1
