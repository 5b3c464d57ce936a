"""The exact one-degree-of-freedom reduction shared by the parallelogram-branch models.

On the parallelogram branch every crank has the same angle th and the couplers translate,
so the motion reduces to th'' = -k cos th with k = G_eff / I_eff
(docs/explanation/models.md#parallelogram).
"""

from __future__ import annotations

import numpy as np


def reduced_solution(
    k: float, th0: float, om0: float, t_out: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Solve th'' = -k cos th from (th0, om0) at t = 0; return th, th' at ``t_out``.

    DOP853 at rtol 1e-13, atol 1e-15 with dense output (docs/explanation/models.md#nfourbar [D]).
    """
    t_out = np.asarray(t_out, dtype=float)
    t_end = float(np.max(t_out)) if t_out.size else 0.0
    if t_end <= 0.0:
        return np.full(t_out.shape, th0), np.full(t_out.shape, om0)
    from scipy.integrate import solve_ivp  # lazy: scipy.integrate costs ~1 s per process

    sol = solve_ivp(
        lambda t, y: [y[1], -k * np.cos(y[0])],
        (0.0, t_end),
        [th0, om0],
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
        dense_output=True,
    )
    y = sol.sol(t_out)
    return y[0], y[1]
