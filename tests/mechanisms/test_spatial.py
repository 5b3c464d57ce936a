"""Spatial mechanism files: the heavy top as a file (a body in position and Euler
parameters on a spherical joint, 7 coordinates) against the built-in ``top`` (the Euler
parameters alone, 4 coordinates). At corresponding states (the same Euler parameters and
rates; the file's position follows from the joint) the energies agree to 1e-12 and the
index-1 accelerations of the Euler parameters to 1e-10: M, Q (gyroscopic terms), Phi_q
and gamma of the file model are consistent with the hand-written model."""

from __future__ import annotations

import mechanisms_testkit as kit
import numpy as np
from mbstudy.solvers.assembly import assemble, assemble_velocity


def _corresponding(mech, pm, e: np.ndarray, edot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """File state with Euler parameters e, rates edot: position and its rate from the joint."""
    n, m = (int(x) for x in mech.sizes(pm))
    q = np.zeros(n)
    q[3:7] = e
    eidx = np.arange(3, 7)
    q = assemble(mech.phi, mech.phi_q, q, eidx, pm, m)
    v = np.zeros(n)
    v[3:7] = edot
    v = assemble_velocity(mech.phi_q, mech.phi_t, q, v, eidx, pm, m)
    return q, v


def test_top_file_equals_the_built_in_top_at_random_states() -> None:
    ref, pr = kit.model("top")
    mech, pm = kit.model(str(kit.MECHANISMS / "top.toml"))
    q0r, v0r = ref.initial_state(pr)
    q0m, v0m = mech.initial_state(pm)
    np.testing.assert_allclose(q0m[3:7], q0r, atol=1e-12)
    np.testing.assert_allclose(v0m[3:7], v0r, atol=1e-12)
    rng = np.random.default_rng(11)
    for _ in range(10):
        e = rng.normal(size=4)
        e /= np.linalg.norm(e)
        edot = rng.normal(size=4) * 5.0
        edot -= e * (e @ edot)  # tangent to |e| = 1
        q, v = _corresponding(mech, pm, e, edot)
        E_ref = ref.energy(e, edot, 0.0, pr)
        E_file = mech.energy(q, v, 0.0, pm)
        assert abs(E_ref - E_file) <= 1e-12 * max(1.0, abs(E_ref))
        a_ref = kit.index1(ref, pr, e, edot)
        a_file = kit.index1(mech, pm, q, v)[3:7]
        assert np.max(np.abs(a_ref - a_file)) <= 1e-10 * max(1.0, np.max(np.abs(a_ref)))


def test_a_wrong_inertia_is_caught() -> None:
    """The comparison can fail: the inertia taken about O instead of the centre of mass."""
    import tempfile
    from pathlib import Path

    text = (kit.MECHANISMS / "top.toml").read_text()
    text = text.replace('inertia = ["A - m*l**2", "A - m*l**2", "C"]', 'inertia = ["A", "A", "C"]')
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "top_wrong.toml"
        path.write_text(text)
        ref, pr = kit.model("top")
        mech, pm = kit.model(str(path))
        e = np.array([0.9, 0.3, 0.2, 0.1])
        e /= np.linalg.norm(e)
        edot = np.array([0.0, 1.0, -2.0, 3.0])
        edot -= e * (e @ edot)
        q, v = _corresponding(mech, pm, e, edot)
        assert abs(ref.energy(e, edot, 0.0, pr) - mech.energy(q, v, 0.0, pm)) > 1e-3
