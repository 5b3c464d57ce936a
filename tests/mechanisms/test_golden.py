"""Golden tests: built-in models written as mechanism files (studies/mechanisms/) give the
same equations as the hand-written models (Phi, Phi_q, Phi_t, gamma, M, Q, energy to 1e-12
at random states, the same assembled initial state), and a whole run through run_case
agrees to round-off. The hand-written models are the independent source: their equations
were derived by hand and checked against published data (tests/models)."""

from __future__ import annotations

import mechanisms_testkit as kit
import numpy as np
import pytest

CASES = [
    ("fourbar", {}, "fourbar.toml", 0),
    # the N four-bar file is written for any N ([sizes] N, [[repeat]]); N = 2 as shipped
    ("nfourbar", {"n": 2}, "nfourbar.toml", 0),
    ("nfourbar", {"n": 1}, "nfourbar.toml", 1),
    ("nfourbar", {"n": 3}, "nfourbar.toml", 3),
    ("nfourbar", {"n": 4}, "nfourbar.toml", 4),
]


def _file(file: str, size: int, tmp_path) -> str:
    """The shipped file, or (size > 0) a copy with [sizes] N = size."""
    path = kit.MECHANISMS / file
    if not size:
        return str(path)
    text = path.read_text()
    assert "\nN = 2\n" in text
    out = tmp_path / f"N{size}_{file}"
    out.write_text(text.replace("\nN = 2\n", f"\nN = {size}\n"))
    return str(out)


@pytest.mark.parametrize(("builtin", "values", "file", "size"), CASES)
def test_file_model_equals_hand_written_model(
    builtin: str, values: dict, file: str, size: int, tmp_path
) -> None:
    ref, pr = kit.model(builtin, **values)
    mech, pm = kit.model(_file(file, size, tmp_path))
    assert tuple(ref.sizes(pr)) == tuple(mech.sizes(pm))
    q0r, v0r = ref.initial_state(pr)
    q0m, v0m = mech.initial_state(pm)
    np.testing.assert_allclose(q0m, q0r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v0m, v0r, rtol=0, atol=1e-12)
    rng = np.random.default_rng(7)
    n = q0r.size
    for _ in range(20):
        q = q0r + rng.normal(scale=0.5, size=n)
        v = rng.normal(scale=3.0, size=n)
        t = float(rng.uniform(0, 2))
        a = kit.evaluate(ref, pr, q, v, t)
        b = kit.evaluate(mech, pm, q, v, t)
        for name in a:
            scale = max(1.0, float(np.max(np.abs(a[name]))))
            err = float(np.max(np.abs(a[name] - b[name]))) / scale
            assert err <= 1e-12, (name, err)


def test_a_wrong_file_is_caught_by_the_comparison(tmp_path) -> None:
    """The comparison can fail: a coupler 1 % longer differs from the built-in four-bar."""
    text = (kit.MECHANISMS / "fourbar.toml").read_text().replace("L3 = 0.40", "L3 = 0.404")
    path = tmp_path / "fourbar_wrong.toml"
    path.write_text(text)
    ref, pr = kit.model("fourbar")
    mech, pm = kit.model(str(path))
    q, _ = ref.initial_state(pr)
    v = np.ones(q.size)
    a = kit.evaluate(ref, pr, q, v, 0.0)
    b = kit.evaluate(mech, pm, q, v, 0.0)
    assert np.max(np.abs(a["phi"] - b["phi"])) > 1e-4


@pytest.mark.parametrize("file", ["fourbar.toml", "nfourbar.toml", "slider_crank.toml"])
def test_fused_constraint_terms_equal_the_four_functions(file: str) -> None:
    mod, p = kit.model(str(kit.MECHANISMS / file))
    from mbstudy.solvers import model_entry

    fused = model_entry.model(str(kit.MECHANISMS / file)).module.constraint_terms.py_func
    n, m = (int(x) for x in mod.sizes(p))
    rng = np.random.default_rng(3)
    q0, _ = mod.initial_state(p)
    for _ in range(5):
        q = q0 + rng.normal(scale=0.3, size=n)
        v = rng.normal(size=n)
        t = float(rng.uniform())
        ph, G, pt, gam = np.zeros(m), np.zeros((m, n)), np.zeros(m), np.zeros(m)
        fused(q, v, t, p, ph, G, pt, gam)
        sep = kit.evaluate(mod, p, q, v, t)
        assert np.array_equal(ph, sep["phi"])
        assert np.array_equal(G, sep["phi_q"])
        assert np.array_equal(pt, sep["phi_t"])
        assert np.array_equal(gam, sep["gamma"])


def test_energy_balance_of_the_driven_slider_crank() -> None:
    """dE/dt = power along the motion: E(q, v) of the slider-crank with the torque and the
    damper, checked by a central difference along an accelerated state (index-1 solve)."""
    mod, p = kit.model(str(kit.MECHANISMS / "slider_crank.toml"))
    q, v = mod.initial_state(p)
    v = v.copy()
    n, m = (int(x) for x in mod.sizes(p))

    def accel(q, v):
        e = kit.evaluate(mod, p, q, v, 0.0)
        K = np.block([[e["mass"], e["phi_q"].T], [e["phi_q"], np.zeros((m, m))]])
        sol = np.linalg.solve(K, np.concatenate([e["forces"], e["gamma"]]))
        return sol[:n]

    # a consistent moving state: one explicit half step is enough for the derivative test
    a = accel(q, v)
    h = 1e-5
    dE = (mod.energy(q + h * v + 0.5 * h * h * a, v + h * a, 0.0, p)
          - mod.energy(q - h * v + 0.5 * h * h * a, v - h * a, 0.0, p)) / (2 * h)  # fmt: skip
    assert abs(dE - mod.power(q, v, 0.0, p)) <= 1e-6 * max(1.0, abs(dE))
    assert abs(mod.power(q, v, 0.0, p)) == 0.0  # at rest the torque does no work yet
    v2 = np.zeros(n)
    v2[2] = 3.0
    from mbstudy.solvers.assembly import assemble_velocity

    v2 = assemble_velocity(mod.phi_q, mod.phi_t, q, v2, np.array([2]), p, m)
    a2 = accel(q, v2)
    dE2 = (mod.energy(q + h * v2 + 0.5 * h * h * a2, v2 + h * a2, 0.0, p)
           - mod.energy(q - h * v2 + 0.5 * h * h * a2, v2 - h * a2, 0.0, p)) / (2 * h)  # fmt: skip
    P = mod.power(q, v2, 0.0, p)
    assert P != 0.0
    assert abs(dE2 - P) <= 1e-5 * max(1.0, abs(P))
