"""Classic fixed-step fourth-order Runge–Kutta (Kutta 1901).

Steps of exactly ``h`` from t0 on the grid t_j = t0 + j h (no accumulation of rounding
in t); output times lie on that grid (the study validation checks that ``h`` divides the
output interval). After every step the formulation's post-step correction runs
(projection), then the state is checked for NaN and divergence. 4 right-hand sides per
step.

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.1, Table 1.2.
"""

from mbstudy.solvers.spec import IntegratorSpec, Param

SPEC = IntegratorSpec(
    name="rk4",
    summary="classic fixed-step fourth-order Runge-Kutta",
    params=(
        Param("h", 1e-3, "step size (s)", positive=True),
        Param("max_steps", 100_000_000, "step budget (status step_budget when exhausted)",
              kind="int", minimum=1),
    ),
    fixed_step=True,
    adaptive=False,
    order=4,
    source="Kutta 1901; Hairer, Nørsett & Wanner I, Sect. II.1",
)


def integ_run(y, t_out, p, fp, ip, ws, Y, cnt):
    """Integrate from t_out[0] through every output time; see docs/solver-contract.md."""
    h = ip[0]
    max_steps = int(ip[1])
    ny = y.size
    k1 = np.empty(ny)
    k2 = np.empty(ny)
    k3 = np.empty(ny)
    k4 = np.empty(ny)
    yt = np.empty(ny)
    for i in range(ny):
        Y[0, i] = y[i]
    t0 = t_out[0]
    j = 0
    for k in range(1, t_out.size):
        j_end = int(np.rint((t_out[k] - t0) / h))
        while j < j_end:
            if cnt[C_STEPS] >= max_steps:
                return STEP_BUDGET, k - 1
            t = t0 + j * h
            st = form_rhs(t, y, p, fp, k1, ws)
            if st != OK:
                return st, k - 1
            for i in range(ny):
                yt[i] = y[i] + 0.5 * h * k1[i]
            st = form_rhs(t + 0.5 * h, yt, p, fp, k2, ws)
            if st != OK:
                return st, k - 1
            for i in range(ny):
                yt[i] = y[i] + 0.5 * h * k2[i]
            st = form_rhs(t + 0.5 * h, yt, p, fp, k3, ws)
            if st != OK:
                return st, k - 1
            for i in range(ny):
                yt[i] = y[i] + h * k3[i]
            st = form_rhs(t + h, yt, p, fp, k4, ws)
            if st != OK:
                return st, k - 1
            for i in range(ny):
                y[i] += h / 6.0 * (k1[i] + 2.0 * (k2[i] + k3[i]) + k4[i])
            cnt[C_RHS] += 4
            cnt[C_STEPS] += 1
            j += 1
            st = form_post_step(t0 + j * h, y, p, fp, ws, cnt)
            if st != OK:
                return st, k - 1
            st = state_status(y, DIVERGENCE_BOUND)
            if st != OK:
                return st, k - 1
        for i in range(ny):
            Y[k, i] = y[i]
    return OK, t_out.size - 1
