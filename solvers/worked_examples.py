"""Public entry points for the seeds' worked examples (used by pipeline/reproduction.py).

Seed 003's worked example (docs/explanation/models.md#network, docs/reference/elements.md): step 3
of the spring-damper
network through the project's implicit step (:func:`solvers.elements.implicit.implicit_step`,
seed 003 §2.13-2.18) — the rejected attempt, the retry at the recommended step, and the
step recommended after it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def seed003_step3(
    netlist: Path,
    t2: float,
    x2: float,
    v2: float,
    a2: float,
    dt3: float,
    delta_l: float,
    c: float,
    delta_f: float,
    delta_z: float,
) -> list[float]:
    """Step 3 of seed 003's example from the state (t2, x2, v2, a2) after step 2.

    Returns
    -------
    [l1, delta_l / l1, dt_new, t2 + dt_new, x3, v3, a3, dt_next]: the local error of the
    attempt with ``dt3``, its ratio to the tolerance, the recommended step, the time reached
    by the retry, the retry's state and the step recommended after it.
    """
    from mbstudy.solvers.elements import build_network, load_netlist
    from mbstudy.solvers.elements.implicit import N_TRACE, implicit_step, new_counters
    from mbstudy.solvers.elements.implicit import pack_implicit_params as pack

    net = build_network(load_netlist(Path(netlist)))
    ip = pack({"delta_l": delta_l, "c": c, "delta_f": delta_f, "delta_z": delta_z})

    def attempt(dt: float):
        x, v, a, xp, vp, ap, z, f, dz = (np.empty(1) for _ in range(9))
        _st, lerr, dt_rec, _ = implicit_step(
            net.etype, net.enodes, net.eparams, t2, dt,
            np.array([x2]), np.array([v2]), np.array([a2]), ip,
            x, v, a, xp, vp, ap, z, f, np.empty((1, 1)), dz,
            np.empty((0, N_TRACE)), new_counters(),
        )  # fmt: skip
        return float(lerr), float(dt_rec), (float(x[0]), float(v[0]), float(a[0]))

    l1, dt_new, _ = attempt(dt3)
    _l2, dt_next, (x3, v3, a3) = attempt(dt_new)
    return [l1, delta_l / l1, dt_new, t2 + dt_new, x3, v3, a3, dt_next]
