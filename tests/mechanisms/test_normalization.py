"""The normalization element of spatial mechanism files (seed 003): Euler parameters e
not normalized, every element through x = e/|e|, a radial inertia m_u and flow M_u
instead of the constraint row e^T e - 1.

Checked against independent facts, not against the element's own output:
* at states on |e| = 1 with e^T edot = 0 the element model's index-1 accelerations equal
  the constraint model's (which test_spatial checks against the hand-written ``top``):
  both give e^T a = -|edot|^2 and the same tangential motion;
* gauge invariance: scaling e and edot by c scales the accelerations by c (the physics
  depends on x and xdot only);
* the radial equation is m_u Lddot = -M_u Ldot (L = |e|), so a perturbed Ldot decays as
  Ldot0 exp(-M_u t/m_u): a whole run is compared with that exact solution, and the same
  bound on |L - 1| fails without the flow (M_u = 0, L = 1 + Ldot0 t);
* a whole run's x(t) equals the constraint mode's e(t) to the integration tolerance;
* check-model's finite-difference checks pass, with M positive definite.
"""

from __future__ import annotations

import subprocess

import mechanisms_testkit as kit
import numpy as np
import pytest
from mbstudy.pipeline.cli.app import app
from mbstudy.pipeline.plan.purepy import pure_kernel
from mbstudy.solvers.mechanisms import MechanismError, model_name
from mbstudy.solvers.mechanisms.checks import run_checks
from mbstudy.solvers.runner import run_case
from typer.testing import CliRunner

from tests.conftest import mbstudy_command

TOP = str(kit.MECHANISMS / "top.toml")
TOP_EL = TOP + "#normalization=element"
SSC = str(kit.MECHANISMS / "spatial_slider_crank.toml")


def _tangent_state(rng, n_e: int = 4) -> tuple[np.ndarray, np.ndarray]:
    e = rng.normal(size=n_e)
    e /= np.linalg.norm(e)
    edot = rng.normal(size=n_e) * 5.0
    edot -= e * (e @ edot)
    return e, edot


def _state(mod, p, e: np.ndarray, edot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top file state with Euler parameters e (any norm), rates edot; the position from the
    spherical joint at O: r = -A(x) s_O, its rate by differentiating along edot."""
    q = np.zeros(7)
    q[3:7] = e
    ph = np.zeros(int(mod.sizes(p)[1]))
    mod.phi(q, 0.0, p, ph)  # phi = r + A s_O at r = 0
    q[:3] = -ph[:3]
    v = np.zeros(7)
    v[3:7] = edot
    G = np.zeros((ph.size, 7))
    mod.phi_q(q, 0.0, p, G)
    v[:3] = -G[:3, 3:7] @ edot  # phi_q v = 0 with the r block the identity
    return q, v


def test_element_accelerations_equal_the_constraint_model_on_the_unit_sphere() -> None:
    con, pc = kit.model(TOP)
    el, pe = kit.model(TOP_EL)
    assert int(con.sizes(pc)[1]) == 4 and int(el.sizes(pe)[1]) == 3
    assert con.SINGULAR_MASS and not el.SINGULAR_MASS and el.GAUGE_DOF == 1
    # the same start: the assembly adds e^T e - 1 (|e| = 1, e^T edot = 0)
    for a, b in zip(el.initial_state(pe), con.initial_state(pc), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
    rng = np.random.default_rng(5)
    for _ in range(6):
        e, edot = _tangent_state(rng)
        qc, vc = _state(con, pc, e, edot)
        qe, ve = _state(el, pe, e, edot)
        np.testing.assert_allclose(qe, qc, atol=1e-14)
        assert abs(el.energy(qe, ve, 0.0, pe) - con.energy(qc, vc, 0.0, pc)) <= 1e-12 * abs(
            con.energy(qc, vc, 0.0, pc)
        )
        a_c = kit.index1(con, pc, qc, vc)
        a_e = kit.index1(el, pe, qe, ve)
        assert np.max(np.abs(a_e - a_c)) <= 1e-10 * np.max(np.abs(a_c))


def test_gauge_invariance_and_the_radial_equation() -> None:
    el, pe = kit.model(TOP_EL)
    names = [p.name for p in kit.model_entry.model(TOP_EL).params]
    m_u, M_u = pe[names.index("m_u")], pe[names.index("M_u")]
    assert m_u > 0 and M_u > 0
    rng = np.random.default_rng(7)
    for c in (0.5, 1.7):
        e, edot = _tangent_state(rng)
        edot = edot + 0.3 * e  # a radial rate too: Ldot = 0.3
        q1, v1 = _state(el, pe, e, edot)
        qc, vc = _state(el, pe, c * e, c * edot)
        a1 = kit.index1(el, pe, q1, v1)
        ac = kit.index1(el, pe, qc, vc)
        # the rotation's accelerations scale with e; r, rdot and rddot do not change
        np.testing.assert_allclose(ac[3:7], c * a1[3:7], rtol=0, atol=1e-10 * np.abs(a1).max())
        np.testing.assert_allclose(ac[:3], a1[:3], rtol=0, atol=1e-10 * np.abs(a1).max())
        # m_u Lddot = -M_u Ldot, Lddot = (|edot|^2 + e^T a)/L - (e^T edot)^2/L^3
        ee, ed, a = qc[3:7], vc[3:7], ac[3:7]
        L = np.linalg.norm(ee)
        Ldot = ee @ ed / L
        Lddot = (ed @ ed + ee @ a) / L - (ee @ ed) ** 2 / L**3
        assert abs(m_u * Lddot + M_u * Ldot) <= 1e-10 * M_u * abs(Ldot)


@pytest.mark.parametrize("path", [TOP, SSC])
def test_check_model_passes_in_element_mode_with_a_definite_mass(path: str) -> None:
    mod, p = kit.model(model_name(path, "element"))
    checks = {c.name: c for c in run_checks(mod, p)}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert "eigenvalues in" in checks["mass matrix"].detail  # definite, not semi-definite
    assert "held by the normalization element" in checks["degrees of freedom"].detail


def test_a_bad_mode_names_its_key_and_planar_files_have_none(tmp_path) -> None:
    with pytest.raises(MechanismError, match="normalization: expected one of"):
        model_name(TOP, "elem")
    with pytest.raises(MechanismError, match="spatial mechanisms"):
        model_name(str(kit.MECHANISMS / "fourbar.toml"), "element")
    # the file's own key: element mode without an override, the same model name
    own = tmp_path / "top_el.toml"
    own.write_text((kit.MECHANISMS / "top.toml").read_text().replace(
        'dimension = 3', 'dimension = 3\nnormalization = "element"'))  # fmt: skip
    assert model_name(str(own), "element") == str(own)
    mod, p = kit.model(str(own))
    assert int(mod.sizes(p)[1]) == 3
    other = model_name(str(own), "constraint")
    assert other == f"{own}#normalization=constraint"
    mod, p = kit.model(other)
    assert int(mod.sizes(p)[1]) == 4 and mod.SINGULAR_MASS
    bad = tmp_path / "bad.toml"
    bad.write_text(own.read_text().replace('"element"', '"elements"'))
    with pytest.raises(MechanismError, match=r"mechanism\.normalization: expected one of"):
        kit.model(str(bad))


def test_check_model_cli_normalization() -> None:
    out = subprocess.run([*mbstudy_command(), "check-model", TOP, "--normalization", "element"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "normalization element (3 constraints)" in out.stdout
    out = subprocess.run([*mbstudy_command(), "check-model", TOP, "--normalization", "elemnt"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("mbstudy: error: --normalization:")
    assert "did you mean 'element'" in lines[0] and out.stdout == ""
    for model, words in (("top", "spatial mechanism files only"),
                         (str(kit.MECHANISMS / "fourbar.toml"), "spatial mechanisms")):
        res = CliRunner().invoke(app, ["check-model", model, "--normalization", "element"])
        assert res.exit_code == 2 and "--normalization" in res.output and words in res.output


# -- whole runs (interpreted engine: the generated kernel's code, no compile) --------------
T_END = 0.2
SAMPLES = 21


def _run(model, form, integ, ip, **kw):
    return run_case(model, form, integ, t_end=T_END, samples=SAMPLES, integrator_params=ip,
                    kernel=pure_kernel(model, form, integ), **kw)  # fmt: skip


def test_element_run_follows_the_constraint_run() -> None:
    """dopri5 at rtol 1e-10: x = e/|e| of the element run equals e of the constraint run
    (projection, the same tolerance) to 1e-8; the energy balance E - E0 - W closes."""
    ip = {"rtol": 1e-10, "atol": 1e-12}
    con = _run(TOP, "projection", "dopri5", ip)
    el = _run(TOP_EL, "projection", "dopri5", ip)
    assert con.status == el.status == 0
    e = el.q[:, 3:7]
    L = np.linalg.norm(e, axis=1)
    x = e / L[:, None]
    assert np.max(np.abs(x - con.q[:, 3:7])) <= 1e-8
    assert np.max(np.abs(el.q[:, :3] - con.q[:, :3])) <= 1e-8
    assert np.max(np.abs(L - 1.0)) <= 1e-9
    balance = el.D[:, 3] - el.D[0, 3] - el.work
    assert np.max(np.abs(balance)) <= 1e-8 * abs(el.D[0, 3])


def test_a_perturbed_norm_rate_decays_as_the_exact_solution() -> None:
    """v0 += Ldot0 e: exactly Ldot(t) = Ldot0 exp(-M_u t/m_u) and L(t) = 1 + Ldot0 m_u/M_u
    (1 - exp(-M_u t/m_u)). The run matches it; the bound on |L - 1| that the element keeps
    fails without its flow (M_u = 0: L = 1 + Ldot0 t)."""
    entry = kit.model_entry.model(TOP_EL)
    mod, p = kit.model(TOP_EL)
    names = [prm.name for prm in entry.params]
    m_u, M_u = p[names.index("m_u")], p[names.index("M_u")]
    q0, v0 = mod.initial_state(p)
    Ldot0 = 0.05
    v0 = v0.copy()
    v0[3:7] += Ldot0 * q0[3:7]
    ip = {"rtol": 1e-10, "atol": 1e-12}
    res = _run(TOP_EL, "none", "dopri5", ip, q0=q0, v0=v0)
    assert res.status == 0
    t = res.t
    e, ed = res.q[:, 3:7], res.v[:, 3:7]
    L = np.linalg.norm(e, axis=1)
    Ldot = np.einsum("ij,ij->i", e, ed) / L
    rate = M_u / m_u
    np.testing.assert_allclose(Ldot, Ldot0 * np.exp(-rate * t), rtol=0, atol=1e-8 * Ldot0)
    L_exact = 1 + Ldot0 / rate * (1 - np.exp(-rate * t))
    np.testing.assert_allclose(L, L_exact, rtol=0, atol=1e-8)
    bound = 1.05 * Ldot0 / rate  # the element's limit of |L - 1|
    assert np.max(np.abs(L - 1)) <= bound
    free = _run(TOP_EL, "none", "dopri5", ip, q0=q0, v0=v0, model_params={"M_u": 0.0})
    L_free = np.linalg.norm(free.q[:, 3:7], axis=1)
    np.testing.assert_allclose(L_free, 1 + Ldot0 * t, rtol=0, atol=1e-8)
    assert np.max(np.abs(L_free - 1)) > bound  # without the flow the norm drifts away


def test_spatial_slider_crank_runs_in_element_mode() -> None:
    """A closed spatial loop in element mode, baumgarte + rk4: the joints hold, the norms
    stay at 1, x follows the constraint mode's run."""
    fp = {"omega_n": 20.0, "xi": 1.0}
    model = model_name(SSC, "element")
    kw = dict(t_end=0.06, samples=7, integrator_params={"h": 0.002}, formulation_params=fp)
    el = run_case(model, "baumgarte", "rk4", kernel=pure_kernel(model, "baumgarte", "rk4"), **kw)
    con = run_case(SSC, "baumgarte", "rk4", kernel=pure_kernel(SSC, "baumgarte", "rk4"), **kw)
    assert el.status == con.status == 0 and el.m == con.m - 3
    assert np.max(el.D[:, 0]) <= 1e-8  # |phi| of the joints
    for b in range(3):
        e = el.q[:, 7 * b + 3 : 7 * b + 7]
        L = np.linalg.norm(e, axis=1)
        assert np.max(np.abs(L - 1)) <= 1e-9
        assert np.max(np.abs(e / L[:, None] - con.q[:, 7 * b + 3 : 7 * b + 7])) <= 1e-6
    assert np.max(np.abs(el.q[:, 14:17] - con.q[:, 14:17])) <= 1e-8
    assert abs(el.q[-1, 14] - el.q[0, 14]) > 1e-4  # the slider moved


# -- the mode in studies, kernel keys and stores ------------------------------------------
STUDY = """
[study]
name = "norm_e2e"
model = "top.toml"
{mode}
t_end = 0.04
samples = 5

[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-8
atol = 1e-10

[[runs]]
name = "b"
formulation = "baumgarte"
integrator = "rk4"
h = 0.005
omega_n = 20.0
xi = 1.0

[output]
store = "out.zarr"
series = ["phi_norm", "q"]
"""


def _study(tmp_path, mode: str):
    (tmp_path / "top.toml").write_text((kit.MECHANISMS / "top.toml").read_text())
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(mode=mode))
    return path


def test_the_mode_is_part_of_the_study_hash_and_the_kernel_key(tmp_path) -> None:
    from mbstudy.pipeline.run.single import build_study_text
    from mbstudy.pipeline.study.parse import load_study, parse_study
    from mbstudy.solvers import model_entry

    plain = load_study(_study(tmp_path, ""))
    same = load_study(_study(tmp_path, 'normalization = "constraint"'))
    el = load_study(_study(tmp_path, 'normalization = "element"'))
    assert plain.spec_hash == same.spec_hash and plain.model == same.model
    assert el.spec_hash != plain.spec_hash and el.model == plain.model + "#normalization=element"
    assert model_entry.kernel_key(el.model) != model_entry.kernel_key(plain.model)
    assert model_entry.model(el.model).spec.name == el.model
    # the model name written out in the study is the same study
    named = _study(tmp_path, "")
    named.write_text(named.read_text().replace('"top.toml"', '"top.toml#normalization=element"'))
    assert load_study(named).spec_hash == el.spec_hash
    # mbstudy run --normalization writes the same study key
    text = build_study_text(str(tmp_path / "top.toml"), "none", "rk4", 0.04, 5, ["h=0.005"],
                            "element")  # fmt: skip
    assert parse_study(text, source="run").model == el.model


@pytest.mark.parametrize(
    ("model", "mode", "words"),
    [
        ("top.toml", '"elem"', "did you mean 'element'"),
        ("top.toml", "1", "expected one of"),
        ("fourbar.toml", '"element"', "spatial mechanisms (dimension = 3) only"),
        ("top", '"element"', "spatial mechanism files only"),
    ],
)
def test_a_bad_study_normalization_exit_2_one_line(tmp_path, model, mode, words) -> None:
    (tmp_path / "fourbar.toml").write_text((kit.MECHANISMS / "fourbar.toml").read_text())
    path = _study(tmp_path, f"normalization = {mode}")
    path.write_text(path.read_text().replace('model = "top.toml"', f'model = "{model}"'))
    res = CliRunner().invoke(app, ["plan", str(path)])
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert "s.toml: study.normalization:" in lines[0] and words in lines[0]
    assert not (tmp_path / "out.zarr").exists()


@pytest.mark.slow
@pytest.mark.cluster
def test_a_store_of_one_mode_refuses_the_other(tmp_path) -> None:
    from mbstudy.pipeline import open_results
    from mbstudy.pipeline.run.launch import launch
    from mbstudy.pipeline.store.zarr_store import ResultStore, StoreError

    study = _study(tmp_path, 'normalization = "element"')
    store = tmp_path / "out.zarr"
    launch(study, store=store, workers=1, quiet=True, echo=lambda s: None)
    attrs = ResultStore.open(store).root_attrs()
    assert attrs["model_file_text"] == (kit.MECHANISMS / "top.toml").read_text()
    ds = open_results(store, "b")
    assert int((ds.status == 0).sum()) == 1
    q = ds.q.values.reshape(-1, 7)
    assert np.max(np.abs(np.linalg.norm(q[:, 3:7], axis=1) - 1)) <= 1e-6
    study.write_text(STUDY.format(mode='normalization = "constraint"'))
    with pytest.raises(StoreError, match="another study"):
        launch(study, store=store, workers=1, quiet=True, echo=lambda s: None)
