"""DAE forms: the one vocabulary of how a formulation presents the equations of motion to
an integrator, and the one function that decides whether a (model, formulation,
integrator) triple can run (docs/explanation/solver-contract.md#dae-forms-and-compatibility).

Each formulation's ``SPEC.form`` names one form of :data:`FORMS`; each integrator's
``SPEC.forms`` lists the forms it accepts (``SPEC.forms_reason`` says why not the others);
a model may restrict the forms (``ModelSpec.forms``, with ``forms_reason``) and declares
the kind of its equations (``ModelSpec.equations``), which an integrator takes when it is
in ``IntegratorSpec.equations``. :func:`incompatibility` reads these declarations and
nothing else; no module keeps a list of method names for compatibility, so a new
formulation with a declared form runs with exactly the integrators that declare that form.

A leaf: it imports only the specs (the registry, itself a leaf, calls it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mbstudy.solvers.spec import FormulationSpec, IntegratorSpec, ModelSpec


@dataclass(frozen=True)
class Form:
    """One DAE form.

    Attributes
    ----------
    name : the vocabulary key (``FormulationSpec.form``, ``IntegratorSpec.forms``).
    meaning : what the equations are and which template functions of the solver contract
        the formulation supplies for them.
    dae : the integrator solves an implicit system F(t, y, y') = 0 whose multipliers are
        unknowns of the step (no acceleration level: ``form_rhs`` only starts it).
    needs : what kind of integrator the form needs, for the refusal message of an
        integrator that does not say itself why it refuses ("" for the ODE forms).
    """

    name: str
    meaning: str
    dae: bool = False
    needs: str = ""


FORMS: dict[str, Form] = {
    f.name: f
    for f in (
        Form(
            "index1-ode",
            "the model's index-1 ODE unchanged: lam from the acceleration-level constraint, "
            "u = 0, no extra state (form_rhs). It adds nothing to the model's equations, so "
            "an integrator that treats the constraints itself (hermite's node multipliers, "
            "the element network's implicit scheme) takes this form only",
        ),
        Form(
            "stabilized-ode",
            "an index-1 ODE whose right-hand side feeds back the constraint drift "
            "(u != 0: Baumgarte terms, an observer, a penalty or augmented-Lagrangian "
            "iteration), possibly with extra states (form_rhs, form_n_extra, form_init)",
        ),
        Form(
            "nullspace-ode",
            "an ODE whose constraint corrections live inside the right-hand side (the QR "
            "null-space pre-correction: form_rhs, form_output_state); the integrated raw "
            "state is never reset, so a multistep history stays valid",
        ),
        Form(
            "post-step-projection",
            "the index-1 ODE (form_rhs) plus a correction of the state after every accepted "
            "step (form_post_step, form_has_post_step): it resets the state, so an "
            "integrator that keeps a history of past states cannot take it",
        ),
        Form(
            "index3-dae",
            "the index-3 DAE: position constraint Phi = 0, lam an unknown of the step "
            "(form_dae_residual, form_dae_jac_yp, form_dae_index; form_rhs and form_init "
            "only start it)",
            dae=True,
            needs="an implicit DAE integrator (the multipliers are unknowns of the step)",
        ),
        Form(
            "index2-ggl-dae",
            "the stabilized index-2 DAE of Gear, Gupta and Leimkuhler: velocity constraint "
            "with lam, position constraint with a second multiplier mu (form_dae_residual, "
            "form_dae_jac_yp, form_dae_index)",
            dae=True,
            needs="an implicit DAE integrator for index-2 systems",
        ),
    )
}

#: The ODE forms: what an explicit ODE integrator takes besides post-step projection.
ODE_FORMS = ("index1-ode", "stabilized-ode", "nullspace-ode")
#: The forms of an integrator that declares none (``IntegratorSpec.forms = None``).
DEFAULT_INTEGRATOR_FORMS = (*ODE_FORMS, "post-step-projection")

#: The kinds of equations a model has (``ModelSpec.equations``).
EQUATIONS = {
    "multibody": "M(q) a + Phi_q^T lam = Q with constraints Phi (solvers/models contract)",
    "element-network": "an element network (solvers/elements), run by its own kernel",
}


def is_dae_form(form: str) -> bool:
    """True for a form whose multipliers are unknowns of the integrator's step."""
    return form in FORMS and FORMS[form].dae


def integrator_forms(spec: IntegratorSpec) -> tuple[str, ...]:
    """The forms ``spec`` accepts (its declaration, or the ODE integrator's default)."""
    return DEFAULT_INTEGRATOR_FORMS if spec.forms is None else spec.forms


def declaration_error(spec: ModelSpec | FormulationSpec | IntegratorSpec) -> str | None:
    """Why ``spec`` declares a form or equation kind outside the vocabulary, or None."""
    if isinstance(spec, FormulationSpec):
        named = (spec.form,)
    elif isinstance(spec, IntegratorSpec):
        named = integrator_forms(spec)
    else:
        named = spec.forms or ()
    bad = [f for f in named if f not in FORMS]
    if bad:
        return (f"{spec.name!r} declares unknown DAE form {bad[0]!r}"
                f" (valid: {', '.join(FORMS)})")  # fmt: skip
    kinds = spec.equations if isinstance(spec, IntegratorSpec) else (
        (spec.equations,) if isinstance(spec, ModelSpec) else ())  # fmt: skip
    bad = [k for k in kinds if k not in EQUATIONS]
    if bad:
        return (f"{spec.name!r} declares unknown equations {bad[0]!r}"
                f" (valid: {', '.join(EQUATIONS)})")  # fmt: skip
    return None


def _names(specs: Iterable[FormulationSpec | IntegratorSpec]) -> str:
    return ", ".join(s.name for s in specs) or "none registered"


def incompatibility(
    model: ModelSpec | str,
    formulation: FormulationSpec,
    integrator: IntegratorSpec,
    formulations: Iterable[FormulationSpec] = (),
    integrators: Iterable[IntegratorSpec] = (),
) -> str | None:
    """Return None if the triple can run, else why not, naming what is allowed.

    The decision reads only the declarations, in this order (the first failing one is the
    reason): the formulation's form is one the integrator accepts (``IntegratorSpec.forms``);
    the model declares a regular mass matrix if the integrator inverts it
    (``IntegratorSpec.needs_regular_mass``, ``ModelSpec.regular_mass``); it takes the
    model's kind of equations (``IntegratorSpec.equations``); the model allows the form
    (``ModelSpec.forms``).
    ``formulations`` and ``integrators`` (every registered one) only make the allowed
    lists of the messages. ``model`` given as a name is a mechanism file's model (no
    entry of the registry): multibody equations, every form.
    """
    formulations = tuple(formulations)
    integrators = tuple(integrators)
    spec = model if isinstance(model, ModelSpec) else None
    why = (declaration_error(formulation) or declaration_error(integrator)
           or (declaration_error(spec) if spec is not None else None))  # fmt: skip
    if why:
        return why
    name = spec.name if spec is not None else str(model)
    equations = spec.equations if spec is not None else "multibody"
    form = formulation.form
    accepted = integrator_forms(integrator)
    if form not in accepted:
        if integrator.forms_reason or not FORMS[form].needs:
            ok = [f for f in formulations if f.form in accepted]
            reason = f": {integrator.forms_reason}" if integrator.forms_reason else ""
            return (
                f"integrator {integrator.name!r} does not take formulation {formulation.name!r}"
                f" (DAE form {form}; it takes {', '.join(accepted)}){reason}"
                f" (allowed: {_names(ok)})"
            )
        ok = [i for i in integrators if form in integrator_forms(i)]
        return (
            f"formulation {formulation.name!r} ({form}) needs {FORMS[form].needs}; "
            f"{integrator.name!r} is not one (allowed: {_names(ok)})"
        )
    if integrator.needs_regular_mass and not (spec is not None and spec.regular_mass):
        return (
            f"integrator {integrator.name!r} inverts the mass matrix; model {name!r} does"
            " not declare a regular one (ModelSpec.regular_mass: the spatial top's is"
            " singular, a mechanism file's is not assumed regular)"
        )
    if equations not in integrator.equations:
        ok = [i for i in integrators if equations in i.equations]
        return (
            f"model {name!r} has {equations} equations ({EQUATIONS.get(equations, '?')}); "
            f"integrator {integrator.name!r} does not take them (allowed: {_names(ok)})"
        )
    if spec is not None and spec.forms is not None and form not in spec.forms:
        ok = [f for f in formulations if f.form in spec.forms]
        reason = f" {spec.forms_reason}:" if spec.forms_reason else ""
        return (
            f"model {name!r}{reason} formulation must be one of DAE form"
            f" {', '.join(spec.forms)} (allowed: {_names(ok)}), not {formulation.name!r}"
        )
    return None
