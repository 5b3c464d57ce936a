"""Andrews' squeezer as a mechanism file (studies/mechanisms/andrews.toml: hinged bodies in
the built-in model's joint coordinates) against the hand-written model
solvers/models/andrews.py, whose equations were typed from the IVP Test Set
(docs/explanation/models.md#andrews): Phi, Phi_q, Phi_t, gamma, M, Q, energy and power to 1e-12
relative at random states, the same assembled state, and a whole run (dopri5 + Baumgarte)
that matches the hand-written run and the Test Set's published q(0.03). Also: hinged and
free bodies mixed (a double pendulum against the built-in ``manipulator``) and bad hinges
named by their key."""

from __future__ import annotations

import mechanisms_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.mechanisms.schema import MechanismError, read
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK

FILE = str(kit.MECHANISMS / "andrews.toml")

# IVP Test Set, andrews.f SOLN: q(0.03) computed with PSIDE at rtol = atol = 1e-14
# (the same published data as tests/integrators/dae_testkit.py)
Q_003 = np.array([
    0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
    -0.5347301163226948, 0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1,
])  # fmt: skip


def test_file_equations_equal_the_hand_written_andrews() -> None:
    ref, pr = kit.model("andrews")
    mech, pm = kit.model(FILE)
    assert tuple(mech.sizes(pm)) == tuple(ref.sizes(pr)) == (7, 6)
    q0r, v0r = ref.initial_state(pr)
    q0m, v0m = mech.initial_state(pm)
    np.testing.assert_allclose(q0m, q0r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v0m, v0r, rtol=0, atol=1e-12)
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = q0r + rng.normal(scale=0.7, size=7)
        v = rng.normal(scale=50.0, size=7)  # rad/s: the mechanism reaches ~1e3 rad/s
        t = float(rng.uniform(0, 0.03))
        a = kit.evaluate(ref, pr, q, v, t)
        b = kit.evaluate(mech, pm, q, v, t)
        for name in a:
            # relative to the entries' own size: M is ~1e-5 kg m^2, a floor of 1 would
            # hide every error in it
            scale = float(np.max(np.abs(a[name]))) or 1.0
            err = float(np.max(np.abs(a[name] - b[name]))) / scale
            assert err <= 1e-12, (name, err)


def test_a_wrong_pivot_is_caught_by_the_comparison(tmp_path) -> None:
    """The comparison can fail: body 4's pivot H moved by 1 % of zt changes M and Phi."""
    text = open(FILE).read().replace('H = ["zt - ta", "-tb"]', 'H = ["1.01*zt - ta", "-tb"]')
    assert "1.01*zt" in text
    path = tmp_path / "andrews_wrong.toml"
    path.write_text(text)
    ref, pr = kit.model("andrews")
    mech, pm = kit.model(str(path))
    q, _ = ref.initial_state(pr)
    v = np.full(7, 10.0)
    a = kit.evaluate(ref, pr, q, v, 0.0)
    b = kit.evaluate(mech, pm, q, v, 0.0)
    assert np.max(np.abs(a["phi"] - b["phi"])) > 1e-4
    assert np.max(np.abs(a["mass"] - b["mass"])) > 1e-3 * np.max(np.abs(a["mass"]))


def test_whole_run_matches_the_hand_written_run_and_the_test_set() -> None:
    kw = dict(t_end=0.03, samples=11, formulation_params={},
              integrator_params={"rtol": 1e-10, "atol": 1e-10})  # fmt: skip
    a = run_case("andrews", "baumgarte", "dopri5", **kw)
    b = run_case(FILE, "baumgarte", "dopri5", **kw)
    assert a.status == b.status == OK
    # the same step sequence (accepted, rejected, right-hand sides)
    assert tuple(a.counters[:3]) == tuple(b.counters[:3])
    # the two runs differ by the rounding of the equations only (measured: 1.3e-14
    # relative over Y, velocities up to ~1.4e3 rad/s; 4e-15 on q(0.03))
    assert float(np.max(np.abs(a.Y - b.Y))) <= 1e-12 * float(np.max(np.abs(a.Y)))
    qa, qb = a.Y[-1, :7], b.Y[-1, :7]
    # both reach the published PSIDE solution to the run's tolerance (measured 9.1e-10)
    for q in (qa, qb):
        assert float(np.max(np.abs(q - Q_003))) <= 1e-9 * float(np.max(np.abs(Q_003)))
    assert a.lam is not None and b.lam is not None
    np.testing.assert_allclose(b.lam, a.lam, rtol=0, atol=1e-11 * float(np.max(np.abs(a.lam))))


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('hinge = ["F", "b1.F"]', 'hinge = ["X", "b1.F"]', "bodies.b2.hinge[0]"),
        ('hinge = ["F", "b1.F"]', 'hinge = ["F", "b9.F"]', "bodies.b2.hinge[1]"),
        ('hinge = ["A", "ground.A"]\nguess = [0.48', 'hinge = ["A", "b4.E"]\nguess = [0.48',
         "bodies.b4.hinge[1]"),  # the loop b4 -> b5 -> b4 is found at b4
        ('hinge = ["F", "b1.F"]\nguess = [0.0]', 'hinge = ["F", "b1.F"]\nguess = [0.0, 1.0]',
         "bodies.b2.guess"),
        ('fix = { "b1.angle"', 'fix = { "b1.theta"', "initial.fix.b1.theta"),
    ],
)  # fmt: skip
def test_bad_hinges_name_the_key(tmp_path, old: str, new: str, key: str) -> None:
    text = open(FILE).read()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new))
    with pytest.raises(MechanismError) as info:
        read(path)
    assert info.value.key == key, str(info.value)


MIXED = """
[mechanism]
name = "pendulum_mixed"
dimension = 2
gravity = [0.0, "-g"]
[parameters]
m1 = 1.3
m2 = 0.7
L1 = 1.1
L2 = 0.9
g = 9.81
[ground]
points = { O = [0, 0] }
[bodies.link1]                  # hinged: one coordinate, its angle from +x
mass = "m1"
inertia = "m1*L1**2/12"
points = { O = ["-L1/2", 0], T = ["L1/2", 0] }
hinge = ["O", "ground.O"]
guess = [0.3]
[bodies.link2]                  # free: (x, y, theta), on link 1's tip by a revolute joint
mass = "m2"
inertia = "m2*L2**2/12"
points = { P = ["-L2/2", 0] }
guess = [1.0, 0.5, 0.2]
[[joints]]
type = "revolute"
at = ["link2.P", "link1.T"]
"""


def test_hinged_and_free_bodies_mix_as_the_absolute_double_pendulum(tmp_path) -> None:
    """Link 1 hinged (1 coordinate), link 2 free (3) against the built-in ``manipulator``
    (both links free, 6 coordinates; independent hand-written equations) at
    corresponding states: the same energy, and the same accelerations of link 2 and of
    link 1's angle from the two index-1 solves (gravity, q-dependent mass)."""
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED)
    vals = {"m1": 1.3, "m2": 0.7, "L1": 1.1, "L2": 0.9}
    ref, pr = kit.model("manipulator", **vals)
    mech, pm = kit.model(str(path))
    assert tuple(mech.sizes(pm)) == (4, 2)
    rng = np.random.default_rng(9)
    for _ in range(10):
        th1, th2, w1, w2 = rng.uniform(-3, 3, size=4)
        r1 = 0.55 * np.array([np.cos(th1), np.sin(th1)])
        r2 = 2 * r1 + 0.45 * np.array([np.cos(th2), np.sin(th2)])
        v1 = 0.55 * w1 * np.array([-np.sin(th1), np.cos(th1)])
        v2 = 2 * v1 + 0.45 * w2 * np.array([-np.sin(th2), np.cos(th2)])
        qr = np.array([*r1, th1, *r2, th2])
        vr = np.array([*v1, w1, *v2, w2])
        qm = np.array([th1, *r2, th2])
        vm = np.array([w1, *v2, w2])
        Er, Em = ref.energy(qr, vr, 0.0, pr), mech.energy(qm, vm, 0.0, pm)
        assert abs(Er - Em) <= 1e-12 * max(1.0, abs(Er))
        ar = kit.index1(ref, pr, qr, vr)
        am = kit.index1(mech, pm, qm, vm)
        np.testing.assert_allclose(am, ar[[2, 3, 4, 5]], rtol=0,
                                   atol=1e-10 * max(1.0, float(np.max(np.abs(ar)))))  # fmt: skip
