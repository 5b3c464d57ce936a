"""Independent references shared by the tests and the benchmarks (a test kit).

- :func:`python_rhs`: the Baumgarte-stabilized index-1 equations (docs/explanation/methods.md (0.1),
  u = -omega_n^2 phi - 2 xi omega_n phi_dot) as a plain Python right-hand side for
  ``scipy.integrate.solve_ivp``: the model's compiled functions and ``np.linalg.solve``
  on the augmented matrix, no formulation or integrator of mbstudy involved;
- :func:`exudyn_fourbar_system`, :func:`exudyn_settings`: the four-bar as Exudyn's own
  multibody system (three RigidBody2D, four RevoluteJoint2D, gravity) and its solver
  settings, an implementation that shares no code with mbstudy.

Used by tests/integrators/test_dop853.py, tests/integrators/test_genalpha.py and
benchmarks/work_precision.py.
"""

from __future__ import annotations

import numpy as np


def python_rhs(model: str, prob: dict):
    """f(t, y) for y = [q, v]: the Baumgarte index-1 equations with np.linalg.solve."""
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.spec import pack_params

    entry = model_entry.model(model)
    mod = entry.module
    p = pack_params(entry.params, {})
    n, m = (int(x) for x in mod.sizes(p))
    kp = prob["omega_n"] ** 2
    kd = 2.0 * prob["xi"] * prob["omega_n"]
    M = np.zeros((n, n))
    Q = np.zeros(n)
    G = np.zeros((m, n))
    ph = np.zeros(m)
    pt = np.zeros(m)
    gam = np.zeros(m)
    K = np.zeros((n + m, n + m))

    def f(t, y):
        q = y[:n]
        v = y[n:]
        mod.mass(q, p, M)
        mod.forces(q, v, t, p, Q)
        mod.phi(q, t, p, ph)
        mod.phi_q(q, t, p, G)
        mod.phi_t(q, t, p, pt)
        mod.gamma(q, v, t, p, gam)
        u = -kp * ph - kd * (G @ v + pt)
        K[:n, :n] = M
        K[:n, n:] = G.T
        K[n:, :n] = G
        x = np.linalg.solve(K, np.concatenate([Q, gam + u]))
        return np.concatenate([v, x[:n]])

    q0, v0 = mod.initial_state(p)
    return f, np.concatenate([q0, v0]), n


def exudyn_fourbar_system(exu):
    """The four-bar in Exudyn (three RigidBody2D, four RevoluteJoint2D, gravity), assembled:
    (mbs, q_of) with q_of() the absolute coordinates [x2 y2 th2 ...] after a solve."""
    import exudyn.itemInterface as eii
    from mbstudy.solvers import model_entry
    from mbstudy.solvers.models import fourbar
    from mbstudy.solvers.spec import pack_params

    p = pack_params(model_entry.model("fourbar").params, {})
    q0, v0 = fourbar.initial_state(p)
    L1, L2, L3, L4, m2, m3, m4, g = (float(x) for x in p[:8])
    lengths, masses = (L2, L3, L4), (m2, m3, m4)
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(eii.ObjectGround())
    nodes, markers = [], []
    for b in range(3):
        nd = mbs.AddNode(eii.NodeRigidBody2D(
            referenceCoordinates=list(q0[3 * b : 3 * b + 3]),
            initialVelocities=list(v0[3 * b : 3 * b + 3])))  # fmt: skip
        body = mbs.AddObject(eii.ObjectRigidBody2D(
            mass=masses[b], inertia=masses[b] * lengths[b] ** 2 / 12.0,
            nodeNumber=nd))  # fmt: skip
        half = 0.5 * lengths[b]
        tail = mbs.AddMarker(
            eii.MarkerBodyPosition(bodyNumber=body, localPosition=[-half, 0.0, 0.0])
        )
        tip = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=body, localPosition=[half, 0.0, 0.0]))
        mass_marker = mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=body))
        mbs.AddLoad(eii.LoadMassProportional(markerNumber=mass_marker, loadVector=[0.0, -g, 0.0]))
        nodes.append(nd)
        markers.append((tail, tip))
    gA = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    gD = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[L1, 0.0, 0.0]))
    for pair in ((gA, markers[0][0]), (markers[0][1], markers[1][0]),
                 (markers[1][1], markers[2][1]), (markers[2][0], gD)):  # fmt: skip
        mbs.AddObject(eii.ObjectJointRevolute2D(markerNumbers=list(pair)))
    mbs.Assemble()

    def q_of() -> np.ndarray:
        return np.concatenate([
            np.asarray(mbs.GetNodeOutput(nd, exu.OutputVariableType.Coordinates))
            + np.asarray(q0[3 * b : 3 * b + 3]) for b, nd in enumerate(nodes)
        ])  # fmt: skip

    return mbs, q_of


def exudyn_settings(exu, t_end: float, steps: int):
    """Exudyn's simulation settings for a run of ``steps`` fixed steps over [0, t_end] with
    its default dynamic solver, silent and writing no solution file."""
    s = exu.SimulationSettings()
    s.timeIntegration.endTime = t_end
    s.timeIntegration.numberOfSteps = int(steps)
    s.timeIntegration.verboseMode = 0
    s.solution.file.write = False
    s.show.computationTime = False
    s.show.statistics = False
    return s
