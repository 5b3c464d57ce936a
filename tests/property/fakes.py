"""A tiny fake registry for the study and grid tests (independent of the real solvers).

``install(monkeypatch)`` replaces :func:`solvers.registry.entries`, which every other
registry function goes through, with the entries below.

Models: ``toy`` (sizes depend on ``n_links``; default reference ode45 + plain) and
``bare`` (a required parameter ``k``, no default reference). Formulations (each declares
its DAE form, solvers/forms.py): ``plain`` (index1-ode), ``stab`` (omega_n, xi;
stabilized-ode), ``obs`` (omega_n, xi, omega_o required; stabilized-ode), ``proj`` (tol,
also an ``implicit`` parameter; post-step-projection). Integrators: ``rk`` (fixed step, h
required), ``ode45`` (adaptive), ``vi`` (fixed step, form index1-ode only, so ``plain``
only; order), ``implicit`` (adaptive, tol); ``rk``, ``ode45`` and ``implicit`` take the
default forms of an ODE integrator.
"""

from __future__ import annotations

import types

from mbstudy.solvers import registry
from mbstudy.solvers.registry import Entry
from mbstudy.solvers.spec import FormulationSpec, IntegratorSpec, ModelSpec, Param


def _module(name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


def _toy_sizes(p):
    links = int(p[2])
    return 3 * links, 2 * links


MODELS = {
    "toy": ModelSpec(
        name="toy",
        summary="a toy mechanism",
        params=(
            Param("L", 1.0, "length (m)", positive=True),
            Param("mass", 2.0, "mass (kg)", positive=True),
            Param("n_links", 2, "number of links", kind="int", minimum=1),
            Param("label", "a", "variant", kind="str", choices=("a", "b", "c")),
            Param("damped", False, "damping on", kind="bool"),
        ),
        t_end=3.0,
        reference={"integrator": "ode45", "formulation": "plain", "rtol": 1e-10},
    ),
    "bare": ModelSpec(
        name="bare",
        summary="a model with a required parameter and no default reference",
        params=(Param("k", None, "stiffness (N/m)", positive=True),),
        t_end=1.0,
    ),
}
FORMULATIONS = {
    "plain": FormulationSpec("plain", "no stabilization", (), form="index1-ode"),
    "stab": FormulationSpec(
        "stab",
        "Baumgarte-like",
        (
            Param("omega_n", 5.0, "natural frequency (rad/s)", positive=True),
            Param("xi", 1.0, "damping ratio", positive=True),
        ),
        form="stabilized-ode",
    ),
    "obs": FormulationSpec(
        "obs",
        "observer",
        (
            Param("omega_n", 5.0, "natural frequency (rad/s)", positive=True),
            Param("xi", 1.0, "damping ratio", positive=True),
            Param("omega_o", None, "observer bandwidth (rad/s)", positive=True),
        ),
        form="stabilized-ode",
    ),
    "proj": FormulationSpec(
        "proj",
        "projection",
        (Param("tol", 1e-10, "projection tolerance", positive=True),),
        form="post-step-projection",
    ),
}
INTEGRATORS = {
    "rk": IntegratorSpec(
        "rk",
        "fixed-step RK",
        (Param("h", None, "step size (s)", positive=True),),
        fixed_step=True,
        order=4,
    ),
    "ode45": IntegratorSpec(
        "ode45",
        "adaptive",
        (
            Param("rtol", 1e-6, "relative tolerance", positive=True),
            Param("atol", 1e-9, "absolute tolerance", positive=True),
            Param("max_steps", 100000, "step budget", kind="int", minimum=1),
        ),
        adaptive=True,
    ),
    "vi": IntegratorSpec(
        "vi",
        "variational",
        (
            Param("h", None, "step size (s)", positive=True),
            Param("order", 2, "Hermite order", kind="int", minimum=2, maximum=3),
        ),
        fixed_step=True,
        forms=("index1-ode",),
    ),
    "implicit": IntegratorSpec(
        "implicit",
        "implicit Newton",
        (
            Param("h0", 1e-3, "initial step (s)", positive=True),
            Param("tol", 1e-8, "Newton tolerance", positive=True),
        ),
        adaptive=True,
    ),
}


def fake_entries() -> dict[str, dict[str, Entry]]:
    """Return the fake registry tables by kind."""
    return {
        "model": {
            "toy": Entry("model", MODELS["toy"], _module("fake_toy", sizes=_toy_sizes)),
            "bare": Entry("model", MODELS["bare"], _module("fake_bare", sizes=lambda p: (4, 3))),
        },
        "formulation": {
            name: Entry(
                "formulation",
                spec,
                _module(f"fake_{name}"),
            )
            for name, spec in FORMULATIONS.items()
        },
        "integrator": {
            name: Entry("integrator", spec, _module(f"fake_{name}"))
            for name, spec in INTEGRATORS.items()
        },
    }


_TABLES = fake_entries()


def entries(kind: str) -> dict[str, Entry]:
    """Drop-in for :func:`solvers.registry.entries`."""
    if kind not in _TABLES:
        raise ValueError(f"kind must be one of {registry.KINDS}, not {kind!r}")
    return _TABLES[kind]


def install(monkeypatch) -> None:
    """Make the registry serve the fake entries for one test."""
    monkeypatch.setattr(registry, "entries", entries)
