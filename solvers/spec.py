"""Declarative specs of models, formulations and integrators (the registry's entries).

Every module in ``solvers/models``, ``solvers/formulations`` and ``solvers/integrators``
defines a module-level ``SPEC``; :mod:`solvers.registry` discovers them. Per-case values are
data: a spec's ``params`` fix the order of the float64 parameter vector (``p``, ``fp``,
``ip``) that kernels receive as an argument, never as closure constants
(docs/explanation/solver-contract.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Literal

import numpy as np

ParamKind = Literal["float", "int", "bool", "str"]


@dataclass(frozen=True)
class Param:
    """One parameter of a model, formulation or integrator.

    Attributes
    ----------
    name : registry key used in study files (``omega_n``, ``h``, ``rtol``).
    default : value used when a study does not set it; ``None`` means required.
    meaning : one line for ``mbstudy list`` (with the unit).
    kind : value type; ints and bools are passed to kernels as floats.
    positive : the value must be > 0.
    nonnegative : the value must be >= 0.
    choices : for ``str`` parameters, the allowed values; a ``str`` parameter is passed
        to kernels as the index of its value in ``choices``.
    minimum, maximum : inclusive bounds, where meaningful.
    """

    name: str
    default: float | int | bool | str | None
    meaning: str
    kind: ParamKind = "float"
    positive: bool = False
    nonnegative: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def check(self, value: object) -> str | None:
        """Return None if ``value`` is valid, else what was expected (for error messages)."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                return "a boolean (true or false)"
            return None
        if self.kind == "str":
            if not isinstance(value, str):
                return "a string"
            if self.choices and value not in self.choices:
                return "one of " + ", ".join(repr(c) for c in self.choices)
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "an integer" if self.kind == "int" else "a number"
        if self.kind == "int" and not (isinstance(value, int) or float(value).is_integer()):
            return "an integer"
        x = float(value)
        if not np.isfinite(x):
            return "a finite number"
        if self.positive and x <= 0:
            return "a number > 0"
        if self.nonnegative and x < 0:
            return "a number >= 0"
        if self.minimum is not None and x < self.minimum:
            return f"a number >= {self.minimum:g}"
        if self.maximum is not None and x > self.maximum:
            return f"a number <= {self.maximum:g}"
        return None

    def to_float(self, value: object) -> float:
        """Encode a validated value for a kernel's float64 parameter vector."""
        if self.kind == "str":
            return float(self.choices.index(value)) if self.choices else 0.0
        return float(value)  # type: ignore[arg-type]


def pack_params(params: tuple[Param, ...], values: dict[str, object]) -> np.ndarray:
    """Return the float64 parameter vector for ``values`` (defaults filled in).

    Raises
    ------
    KeyError
        If a required parameter (default None) is missing.
    """
    out = np.empty(len(params))
    for i, prm in enumerate(params):
        val = values.get(prm.name, prm.default)
        if val is None:
            raise KeyError(prm.name)
        out[i] = prm.to_float(val)
    return out


@dataclass(frozen=True)
class ModelSpec:
    """A mechanism (``solvers/models/NAME.py``).

    The module supplies numba-compiled functions of (q, v, t, p) (see
    ``docs/explanation/solver-contract.md``) and the Python function ``initial_state(p)``.

    Attributes
    ----------
    name : registry key.
    summary : one line for ``mbstudy list``.
    params : model parameters (overridable with ``[model]`` or ``model.NAME`` axes).
    t_end : the benchmark's usual interval end (s), used when a study omits t_end.
    conservative : energy is conserved (``de_max`` is meaningful).
    driven : drives do work (``du_max`` is meaningful).
    energy : the model defines an energy function; False (element networks) declares
        ``de_max``, ``de_first``, ``de_last`` and ``du_max`` absent
        (:func:`mbstudy.solvers.metrics.absent_metrics`), never a silent NaN.
    constant_mass : M does not depend on q.
    reference : default ``[reference]`` table for studies on this model.
    source : where the data come from (a docs/explanation/models.md section, papers).
    constraint_labels : optional name of each constraint row, ``JOINT.ROW`` (e.g.
        ``"crank-ground.x"``), the labels of the store's ``constraint`` dimension; models
        whose row count depends on their parameters leave it empty (and may define
        ``constraint_names(m)``; solvers/model_labels.py).
    coordinate_labels : optional name of each coordinate, ``BODY.COORDINATE`` (e.g.
        ``"crank.theta"``), the labels of the store's ``coord`` dimension (as above:
        ``coordinate_names(n)`` for a model of variable size).
    equations : the kind of its equations, a key of :data:`solvers.forms.EQUATIONS`
        (``"multibody"``; ``"element-network"`` for a netlist); an integrator runs the
        model only if it declares that kind (``IntegratorSpec.equations``).
    forms : the DAE forms (:data:`solvers.forms.FORMS`) a formulation may have on this
        model; None = every form.
    forms_reason : why the other forms are refused (completes "model NAME ...: ").
    regular_mass : M(q) is regular on the model's configurations, so an integrator that
        inverts it may run the model (``IntegratorSpec.needs_regular_mass``). False also
        means "not declared" (the spatial top's M = 4 L^T J L is singular; a mechanism
        file or a plugin model that does not say is not assumed regular).
    """

    name: str
    summary: str
    params: tuple[Param, ...]
    t_end: float
    conservative: bool = True
    driven: bool = False
    energy: bool = True
    constant_mass: bool = True
    reference: dict = field(default_factory=dict)
    source: str = ""
    constraint_labels: tuple[str, ...] = ()
    coordinate_labels: tuple[str, ...] = ()
    equations: str = "multibody"
    forms: tuple[str, ...] | None = None
    forms_reason: str = ""
    regular_mass: bool = False


@dataclass(frozen=True)
class FormulationSpec:
    """How the constraints enter the equations of motion (``solvers/formulations/NAME.py``).

    Attributes
    ----------
    name, summary, params : as for models.
    extra_states : short description of states the formulation adds ("" if none).
    form : its DAE form, a key of :data:`solvers.forms.FORMS` (which template functions
        it supplies; the integrators that take it declare the form,
        :func:`solvers.forms.incompatibility`). Every formulation must declare one.
    """

    name: str
    summary: str
    params: tuple[Param, ...]
    extra_states: str = ""
    source: str = ""
    form: str = ""


@dataclass(frozen=True)
class IntegratorSpec:
    """A time integrator (``solvers/integrators/NAME.py``).

    Attributes
    ----------
    name, summary, params : as for models.
    fixed_step : steps of exactly ``h`` from t0; the output interval t_end/(samples-1)
        must then be an integer multiple of ``h``.
    adaptive : has error control (counts rejected steps).
    forms : the DAE forms it accepts (keys of :data:`solvers.forms.FORMS`); None = an ODE
        integrator's (:data:`solvers.forms.DEFAULT_INTEGRATOR_FORMS`: the ODE forms and
        post-step projection). The formulations it takes follow from their forms.
    forms_reason : why it refuses the other forms (for the refusal message; "" when the
        form's own ``needs`` says it).
    equations : the kinds of model equations it runs (:data:`solvers.forms.EQUATIONS`).
    needs_regular_mass : it inverts the mass matrix, so it runs only the models that
        declare a regular one (``ModelSpec.regular_mass``).
    order : classical order of accuracy (for convergence tests), 0 if not applicable.
    """

    name: str
    summary: str
    params: tuple[Param, ...]
    fixed_step: bool = False
    adaptive: bool = False
    forms: tuple[str, ...] | None = None
    forms_reason: str = ""
    equations: tuple[str, ...] = ("multibody",)
    needs_regular_mass: bool = False
    order: int = 0
    source: str = ""


@dataclass(frozen=True)
class Entry:
    """A registry entry: the spec and the module that implements it (built-in, plugin or
    generated from a mechanism file). Defined here, beside the specs, so that the modules
    that make entries (``solvers.registry``, ``solvers.mechanisms.codegen``) import it
    from a leaf and not from each other."""

    kind: str
    spec: ModelSpec | FormulationSpec | IntegratorSpec
    module: ModuleType

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def params(self) -> tuple[Param, ...]:
        return self.spec.params
