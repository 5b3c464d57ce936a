"""Compatibility follows from the declared DAE forms, decided in one place
(solvers/forms.py; docs/explanation/solver-contract.md#dae-forms-and-compatibility).

(a) over every built-in model x formulation x integrator, what the registry accepts equals
a table computed here from the declarations by plain set membership; (b) known triples,
each with its reason from the methods themselves; (c) a new formulation with a declared
form runs with exactly the integrators that declare that form; (d) no module of solvers/
keeps a list of method names (the lists this design replaced).
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from mbstudy.solvers import forms, registry
from mbstudy.solvers.spec import Entry, FormulationSpec

REPO = Path(__file__).resolve().parent.parent


def _declared_accepts(model, formulation, integrator) -> bool:
    """The decision recomputed from the declarations alone (set membership)."""
    accepted = integrator.forms if integrator.forms is not None else (
        "index1-ode", "stabilized-ode", "nullspace-ode", "post-step-projection")  # fmt: skip
    return (
        model.equations in integrator.equations
        and (not integrator.needs_regular_mass or model.regular_mass)
        and formulation.form in accepted
        and (model.forms is None or formulation.form in model.forms)
    )


def test_every_builtin_declares_forms_of_the_vocabulary():
    for kind in ("formulation", "integrator", "model"):
        for name, entry in registry.entries(kind).items():
            assert forms.declaration_error(entry.spec) is None, (kind, name)
    for name, entry in registry.entries("formulation").items():
        assert entry.spec.form in forms.FORMS, name
    for name, entry in registry.entries("integrator").items():
        assert entry.spec.forms, f"integrator {name!r} declares no forms explicitly"


def test_registry_decision_is_the_table_of_the_declarations():
    models = registry.entries("model")
    formulations = registry.entries("formulation")
    integrators = registry.entries("integrator")
    accepted = 0
    for m, f, i in itertools.product(models, formulations, integrators):
        expected = _declared_accepts(models[m].spec, formulations[f].spec, integrators[i].spec)
        why = registry.compatibility(m, f, i)
        assert (why is None) == expected, (m, f, i, why)
        accepted += expected
    # neither everything nor nothing: the table discriminates
    assert 0 < accepted < len(models) * len(formulations) * len(integrators)


def test_the_conformance_matrix_and_the_runner_use_the_same_decision():
    from mbstudy.pipeline.analysis.conformance import MatrixModel, refusal

    for m, f, i in [("fourbar", "index3", "rk4"), ("fourbar", "ggl", "radau5"),
                    ("network", "baumgarte", "implicit"), ("network", "none", "implicit")]:
        assert refusal(MatrixModel(m, m), f, i) == registry.compatibility(m, f, i)
    from mbstudy.solvers import runner

    with pytest.raises(ValueError, match="has no constraints"):
        runner.run_case("network", "baumgarte", "implicit", t_end=0.1, samples=2)


def test_known_triples():
    # an explicit RK method has no equation for the multipliers of the index-3 DAE
    why = registry.compatibility("fourbar", "index3", "rk4")
    assert why and "'rk4' is not one" in why
    assert "allowed: bdf, genalpha, hht, newmark, radau5" in why
    # RADAU5 solves index-2 (and index-3) DAEs (Hairer & Wanner II, VII.8)
    assert registry.compatibility("fourbar", "ggl", "radau5") is None
    # a projection after each step would reset BDF's backward-difference history
    why = registry.compatibility("fourbar", "projection", "bdf")
    assert why and "difference history" in why and "allowed:" in why
    assert "projection" not in why.split("allowed:")[1]
    # an element network has no constraints to stabilize
    why = registry.compatibility("network", "baumgarte", "implicit")
    assert why and "no constraints" in why and "allowed: none" in why
    # the network's own kernel is the implicit scheme's
    why = registry.compatibility("network", "none", "rk4")
    assert why and "allowed: implicit" in why
    # the variational integrator imposes Phi = 0 itself
    assert registry.compatibility("pendulum", "none", "hermite") is None
    assert "allowed: none" in registry.compatibility("pendulum", "drcs", "hermite")


@pytest.mark.parametrize("form", sorted(forms.FORMS))
def test_a_new_formulation_runs_with_the_integrators_declaring_its_form(monkeypatch, form):
    real = {k: dict(registry.entries(k)) for k in registry.KINDS}
    none = real["formulation"]["none"]
    spec = FormulationSpec("plugin_form", "a formulation added later", (), form=form)
    real["formulation"]["plugin_form"] = Entry("formulation", spec, none.module)
    monkeypatch.setattr(registry, "entries", lambda kind: real[kind])
    takers = {
        name for name, e in real["integrator"].items() if form in (e.spec.forms or ())
    }
    accepted = {
        name for name in real["integrator"]
        if registry.compatibility("fourbar", "plugin_form", name) is None
    }
    assert accepted == takers
    # and an integrator refusing it names, among the allowed, only takers of the form
    for name in set(real["integrator"]) - takers:
        why = registry.compatibility("fourbar", "plugin_form", name)
        if "needs" in why:
            allowed = why.rsplit("(allowed: ", 1)[1].rstrip(")").split(", ")
            assert set(allowed) == takers, (name, why)


def test_an_undeclared_form_is_refused_with_the_vocabulary(monkeypatch):
    real = {k: dict(registry.entries(k)) for k in registry.KINDS}
    none = real["formulation"]["none"]
    real["formulation"]["none"] = replace(none, spec=replace(none.spec, form="index7"))
    monkeypatch.setattr(registry, "entries", lambda kind: real[kind])
    why = registry.compatibility("fourbar", "none", "rk4")
    assert why and "unknown DAE form 'index7'" in why and "index1-ode" in why


def _method_names() -> set[str]:
    """Names a closed-world list would hold: formulations, integrators and models (an
    integrator's list of supported models was replaced by ModelSpec.regular_mass)."""
    return (set(registry.entries("formulation")) | set(registry.entries("integrator"))
            | set(registry.entries("model")))  # fmt: skip


def _string_collections(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                yield node, [e.value for e in node.elts]


def test_no_module_of_solvers_keeps_a_list_of_method_names():
    names = _method_names()
    bad = []
    for path in sorted((REPO / "solvers").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node, values in _string_collections(tree):
            if all(v in names for v in values):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} {values}")
    assert not bad, bad


def test_the_ast_check_finds_the_lists_it_forbids():
    """The check above fails on the kinds of list this design replaced."""
    names = _method_names()
    for src in ('BDF_FORMULATIONS = ("none", "baumgarte", "qr", "index3", "ggl")',
                'DAE_INTEGRATORS = ("radau5", "bdf")',
                'SPEC = IntegratorSpec(name="x", formulations=("index3",))',
                'SPEC = IntegratorSpec(name="hermite", models=("andrews", "fourbar"))'):
        found = [v for _, v in _string_collections(ast.parse(src)) if all(x in names for x in v)]
        assert found, src


def test_the_dae_forms_are_those_of_index3_and_ggl():
    """certify skips the acceleration-level check for a DAE form (the integrator's own a):
    exactly the two formulations whose multipliers are unknowns of the step."""
    dae = {name for name, e in registry.entries("formulation").items()
           if forms.is_dae_form(e.spec.form)}  # fmt: skip
    assert dae == {"index3", "ggl"}


def test_a_plugin_model_with_an_unknown_equation_kind_is_refused_by_name(monkeypatch):
    real = {k: dict(registry.entries(k)) for k in registry.KINDS}
    fourbar = real["model"]["fourbar"]
    real["model"]["fourbar"] = replace(fourbar, spec=replace(fourbar.spec, equations="fluid"))
    monkeypatch.setattr(registry, "entries", lambda kind: real[kind])
    why = registry.compatibility("fourbar", "none", "rk4")
    assert why and "unknown equations 'fluid'" in why and "multibody" in why


@pytest.mark.parametrize("declared", [True, False])
def test_hermite_takes_a_model_by_its_declared_mass_not_its_name(monkeypatch, declared):
    """A model runs with the integrator that inverts M exactly when it declares a regular
    mass matrix: the top (singular M) declared regular is accepted, the four-bar not
    declaring it is refused, each with the reason naming the declaration."""
    real = {k: dict(registry.entries(k)) for k in registry.KINDS}
    for name in ("top", "fourbar"):
        entry = real["model"][name]
        real["model"][name] = replace(entry, spec=replace(entry.spec, regular_mass=declared))
    monkeypatch.setattr(registry, "entries", lambda kind: real[kind])
    for name in ("top", "fourbar"):
        why = registry.compatibility(name, "none", "hermite")
        if declared:
            assert why is None, why
        else:
            assert why and "regular" in why and f"model {name!r}" in why, why
    assert registry.compatibility("fourbar", "none", "rk4") is None  # rk4 does not invert M


def test_the_conformance_matrix_is_the_table_of_the_declarations():
    """The matrix spans shipped mechanism files too: a file's model is multibody, takes
    every form and is not named in any integrator's ``models``."""
    from mbstudy.pipeline.analysis import conformance
    from mbstudy.solvers.spec import ModelSpec

    models = registry.entries("model")
    formulations = registry.entries("formulation")
    integrators = registry.entries("integrator")
    accepted, refused = conformance.matrix()
    assert accepted and refused
    for triple, ok in [*((t, True) for t in accepted), *((t, False) for t, _ in refused)]:
        name = triple.model.name
        model = models[name].spec if name in models else ModelSpec(name, "file", (), 1.0)
        expected = _declared_accepts(model, formulations[triple.formulation].spec,
                                     integrators[triple.integrator].spec)  # fmt: skip
        assert ok == expected, (triple.model.label, triple.formulation, triple.integrator)
