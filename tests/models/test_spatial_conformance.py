"""Every spatial model (Euler parameters) under every formulation x integrator pair the
registry accepts: status ok, every constraint, energy and multiplier metric finite, and
each of them equal to what NumPy recomputes outside the kernel from the stored q, v, W.

The models: the built-in ``top`` (M singular), the shipped spatial mechanism files and a
user's spatial double pendulum written from docs/explanation/mechanisms.md alone, each file in both
normalization modes (constraint rows e^T e = 1: M singular; the normalization element: M
regular). The index-3 and GGL forms once returned NaN levels here with status ok: their
diagnostics inverted M, which Euler parameters normalized by a constraint make singular.

The references share only the model functions with the kernel (run as plain Python,
:func:`mbstudy.pipeline.plan.purepy.pure_model`): Phi, Phi_q v + Phi_t and E at the
stored samples, the work W of the drives from the stored state, and the multipliers of
the index-1 system [M Phi_q^T; Phi_q 0] [a; lam] = [Q; gamma] solved by NumPy
(:func:`_multiplier_bound`). Runs are short and interpreted (the generated kernel's own code,
no compile); one compiled run per integrator family checks the machine code.
"""

from __future__ import annotations

from pathlib import Path

import models_testkit as kit
import numpy as np
import pytest
from mbstudy.pipeline.plan.purepy import pure_kernel, pure_model
from mbstudy.solvers import model_entry, registry
from mbstudy.solvers.metrics import ACCURACY_METRICS, SERIES_NAMES, compute_metrics, sample_series
from mbstudy.solvers.runner import CaseResult, run_case
from mbstudy.solvers.spec import pack_params
from mbstudy.solvers.status import OK, status_name

MECHANISMS = Path(__file__).resolve().parents[2] / "studies" / "mechanisms"

# A user's file, written from docs/explanation/mechanisms.md: two rods on spherical joints (14
# coordinates; 6 joint rows and 2 normalizations). Conservative: gravity only.
DOUBLE_PENDULUM = """\
[mechanism]
name = "spatial_double_pendulum"
dimension = 3
gravity = [0.0, 0.0, "-g"]
t_end = 1.0

[parameters]
L = 0.5
m = 1.0
g = 9.81
theta0 = 0.6
w0 = 2.0

[ground]
points = { O = [0, 0, 0] }

[bodies.rod1]
mass = "m"
inertia = ["m*L**2/12", "m*L**2/12", 1e-4]
points = { T = [0, 0, "L/2"], B = [0, 0, "-L/2"] }
guess = [0, "L/2*sin(theta0)", "-L/2*cos(theta0)", "cos(theta0/2)", "sin(theta0/2)", 0, 0]

[bodies.rod2]
mass = "m"
inertia = ["m*L**2/12", "m*L**2/12", 1e-4]
points = { T = [0, 0, "L/2"], B = [0, 0, "-L/2"] }
guess = [0, "L*sin(theta0)", "-1.5*L*cos(theta0)", 1, 0, 0, 0]

[[joints]]
type = "spherical"
at = ["rod1.T", "ground.O"]

[[joints]]
type = "spherical"
at = ["rod2.T", "rod1.B"]

[initial]
fix = { "rod1.e1" = "sin(theta0/2)", "rod1.e2" = 0, "rod1.e3" = 0, "rod2.e1" = 0, \
"rod2.e2" = 0, "rod2.e3" = 0 }
speed = { "rod1.e1" = 0, "rod1.e2" = 0, "rod1.e3" = "w0/2", "rod2.e1" = 0, \
"rod2.e2" = 0, "rod2.e3" = 0 }
"""
USER_FILE = "<user>/spatial_double_pendulum.toml"  # stands for the file written below
ELEMENT = "#normalization=element"

# model key -> the end of its runs (s): the spatial slider-crank (21 coordinates, 20
# constraints) runs interpreted ~30x slower per step than the top, so it runs shorter
MODELS = {
    "top": 0.05,
    f"{MECHANISMS}/top.toml": 0.05,
    f"{MECHANISMS}/top.toml{ELEMENT}": 0.05,
    USER_FILE: 0.05,
    USER_FILE + ELEMENT: 0.05,
    f"{MECHANISMS}/spatial_slider_crank.toml": 0.01,
    f"{MECHANISMS}/spatial_slider_crank.toml{ELEMENT}": 0.01,
}
SAMPLES = 3

# The penalty factor of penalty and auglag is in mass units ("scale with M"): the default
# 1e7 suits kilogram bodies; the top's M is ~0.1 kg m^2, and with the normalization rows
# as constraints the implicit scheme's Newton fails at 1e7 (newton_failed, a status, not
# a NaN metric). A representative setting scales it: 1e5.
FORMULATION_PARAMS = {"penalty": {"alpha": 1e5}, "auglag": {"alpha": 1e5}}

# The metrics every case must have finite: all but the trajectory errors e_*, which
# need a reference run (not asked for here).
LEVEL_METRICS = tuple(name for name in ACCURACY_METRICS if not name.startswith("e_"))


def _pairs(model: str) -> list[tuple[str, str]]:
    forms = sorted(registry.entries("formulation"))
    integs = sorted(registry.entries("integrator"))
    return [(f, i) for f in forms for i in integs if registry.compatibility(model, f, i) is None]


CASES = [(key, f, i) for key in MODELS for f, i in _pairs(key)]


@pytest.fixture(scope="module")
def user_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("user") / "spatial_double_pendulum.toml"
    path.write_text(DOUBLE_PENDULUM)
    return str(path)


def _name(key: str, user_file: str) -> str:
    return key.replace(USER_FILE, user_file)


def _run(name: str, form: str, integ: str, t_end: float, compiled: bool) -> CaseResult:
    kernel = None if compiled else pure_kernel(name, form, integ)
    return run_case(name, form, integ, t_end=t_end, samples=SAMPLES, kernel=kernel,
                    formulation_params=FORMULATION_PARAMS.get(form))  # fmt: skip


# The multipliers within 1 % of the index-1 reactions at the same state (measured at
# most 2e-3: genalpha, first order in lam with its defaults over these short runs from a
# consistent start), 2 % for the seed's implicit scheme (backward Euler in v, first order
# under its delta_l step control: 4.6e-3 on the double pendulum over 0.05 s), 50 % for
# newmark: its defaults (the trapezoidal rule) leave the multiplier error alternating in
# sign with an O(t) amplitude that does not converge with h
# (docs/explanation/methods-implicit.md#newmark; measured 5e-2 and 1.4e-1 at t = 0.05 s)
ACCURACY = {"implicit": 2e-2, "newmark": 0.5}


def _multiplier_bound(mod, p, q, v, t, lam, ddphi: float, form: str) -> tuple[float, ...]:
    """(|lam - lam_1|_inf, the bound the stored acceleration level implies, |lam_1|_inf)
    at one sample.

    Every formulation reports a pair (a, lam) with M a + Phi_q^T lam = Q and
    |Phi_q a - gamma| = r the stored acceleration level (Baumgarte's input, the penalty
    defect, the DAE multipliers' error). Then K [a; lam] = [Q; gamma + r_vec] with K the
    augmented matrix, so lam - lam_1 = (K^-1)_{lam,lam} r_vec and |lam - lam_1| <=
    |(K^-1)_{lam,lam}|_2 r. The DAE forms' diagnostics regularize a singular M with
    c Phi_q^T Phi_q (docs/explanation/methods-implicit.md#diagnostics-of-the-dae-forms), which moves
    lam by c r_vec: the bound gains c r. Round-off adds 100 eps cond |lam_1| with cond
    the condition of the matrix the kernel factors: K, or M + alpha Phi_q^T Phi_q for
    penalty and auglag (~1e8 with the top's alpha: their multipliers carry ~1e-8).
    """
    n = q.size
    M = kit.mass(mod, q, p)
    G = kit.phi_q(mod, q, t, p)
    m = G.shape[0]
    K = np.block([[M, G.T], [G, np.zeros((m, m))]])
    rhs = np.concatenate([kit.forces(mod, q, v, t, p), kit.gamma(mod, q, v, t, p)])
    lam1 = np.linalg.solve(K, rhs)[n:]
    gain = float(np.linalg.norm(np.linalg.inv(K)[n:, n:], 2))
    if form in ("index3", "ggl") and np.linalg.matrix_rank(M) < n:
        gain += float(np.max(np.abs(M)) / np.max(np.sum(G * G, axis=0)))
    cond = np.linalg.cond(K)
    if form in FORMULATION_PARAMS:
        cond = np.linalg.cond(M + FORMULATION_PARAMS[form]["alpha"] * G.T @ G)
    err = float(np.max(np.abs(lam - lam1)))
    ref = float(np.max(np.abs(lam1)))
    return err, gain * ddphi + 100 * np.finfo(float).eps * cond * ref, ref


def check_case(name: str, form: str, integ: str, res: CaseResult) -> None:
    """The conformance checks of one run (see the module docstring)."""
    assert res.status == OK, f"{name} {form} {integ}: {status_name(res.status)} {res.error}"
    metrics = compute_metrics(res, None, np.zeros(res.n, dtype=bool))
    bad = [k for k in LEVEL_METRICS if not np.isfinite(metrics[k])]
    assert not bad, f"{form} {integ}: NaN metrics {bad}"
    series = sample_series(res, SERIES_NAMES)
    bad = [k for k, s in series.items() if not np.all(np.isfinite(s))]
    assert not bad, f"{form} {integ}: NaN series {bad}"

    entry = model_entry.model(name)
    mod = pure_model(entry.module)
    p = pack_params(entry.params, {})
    n, m = kit.dims(mod, p)
    assert (res.n, res.m) == (n, m)
    q, v, W, t = res.q, res.v, res.work, res.t
    phi = np.array([np.linalg.norm(kit.phi(mod, q[k], t[k], p)) for k in range(t.size)])
    dphi = np.array([
        np.linalg.norm(kit.phi_q(mod, q[k], t[k], p) @ v[k] + kit.phi_t(mod, q[k], t[k], p))
        for k in range(t.size)
    ])  # fmt: skip
    E = np.array([mod.energy(q[k], v[k], t[k], p) for k in range(t.size)])
    # Same functions, other evaluation order (compiled) or the same (interpreted): the
    # levels agree to round-off of O(1) terms (coordinates and Euler parameters <= 1):
    # 1e-13 absolute, 1e-9 relative where a level is large (the penalty's drift)
    np.testing.assert_allclose(series["phi_norm"], phi, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(series["dphi_norm"], dphi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(metrics["max_phi"], phi.max(), rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(metrics["rms_phi"], np.sqrt(np.mean(phi**2) / m), rtol=1e-9,
                               atol=1e-13)  # fmt: skip
    np.testing.assert_allclose(metrics["rms_dphi"], np.sqrt(np.mean(dphi**2) / m), rtol=1e-9,
                               atol=1e-12)  # fmt: skip
    scale = max(1.0, float(np.max(np.abs(E))))
    np.testing.assert_allclose(series["energy"], E, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(metrics["de_max"], np.max(np.abs(E - E[0])), rtol=0,
                               atol=2e-12 * scale)  # fmt: skip
    np.testing.assert_allclose(metrics["du_max"], np.max(np.abs(E - E[0] - W)), rtol=0,
                               atol=2e-12 * scale)  # fmt: skip

    if form in ("index3", "ggl"):
        # the first sample holds lam(t0) of the index-1 solve: the acceleration it implies
        # is the index-1 one (through the regularized M too), so the acceleration level is
        # round-off of gamma's terms times the solve's condition (<= 1e4): 1e-9 |gamma|
        g0 = float(np.linalg.norm(kit.gamma(mod, q[0], v[0], t[0], p)))
        assert series["ddphi_norm"][0] <= 1e-9 * max(1.0, g0), series["ddphi_norm"][0]
    # the multipliers: consistent with the stored acceleration level and close to the
    # index-1 reactions (ACCURACY)
    lam = res.lam
    assert lam is not None and lam.shape == (t.size, m)
    for k in range(t.size):
        err, bound, ref = _multiplier_bound(mod, p, q[k], v[k], t[k], lam[k],
                                            series["ddphi_norm"][k], form)  # fmt: skip
        assert err <= bound, (form, integ, k, err, bound)
        assert err <= ACCURACY.get(integ, 1e-2) * ref, (form, integ, k, err / ref)


@pytest.mark.parametrize(("key", "form", "integ"), CASES,
                         ids=[f"{k.rsplit('/', 1)[-1]}-{f}-{i}" for k, f, i in CASES])  # fmt: skip
def test_every_accepted_pair_conforms(key: str, form: str, integ: str, user_file: str) -> None:
    name = _name(key, user_file)
    # the seed's implicit scheme takes ~5x the steps of the others (dt ~3e-4 s on the
    # top) and a Jacobian per Newton iteration: a shorter run keeps it near their cost
    t_end = MODELS[key] * (0.4 if integ == "implicit" else 1.0)
    check_case(name, form, integ, _run(name, form, integ, t_end, compiled=False))


# One compiled kernel per integrator family (the built-in top, the smallest kernel)
COMPILED = [
    ("index3", "genalpha"),  # genalpha, hht, newmark
    ("ggl", "radau5"),
    ("index3", "bdf"),
    ("projection", "implicit"),
    ("baumgarte", "dopri5"),  # the explicit Runge-Kutta methods
]


@pytest.mark.parametrize(("form", "integ"), COMPILED)
def test_compiled_runs_conform(form: str, integ: str) -> None:
    check_case("top", form, integ, _run("top", form, integ, 0.2, compiled=True))


def test_the_matrix_covers_every_accepted_pair() -> None:
    """The parametrization is the registry's own list: nothing accepted is left out."""
    for key in MODELS:
        assert {(f, i) for k, f, i in CASES if k == key} == set(_pairs(key))
    assert {("index3", "genalpha"), ("ggl", "radau5")} <= set(_pairs("top"))
