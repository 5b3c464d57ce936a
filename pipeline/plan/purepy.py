"""Run a model's Python-level functions without numba: the launcher's checks.

The launcher checks every parameter set of a study (``initial_state`` must assemble) and
reads model sizes for the store template. Calling the jitted model functions for that
would make the launcher initialise numba (``load_additional_registries``, about 0.3 s on
a quiet machine, seconds under load) and load their cache entries, although the launcher
never runs a kernel: the workers do. :func:`pure_python` returns a copy of a function in
which every numba dispatcher it reaches (directly, through the module globals of the
functions it calls, or through closure cells) is replaced by its ``py_func``, so the
check runs the same code as plain Python and numba is never initialised in the launcher.

The same conversion gives the *interpreted engine* of tiered execution
(:func:`pure_kernel`): a generated kernel module (package ``mbstudy_kernels``, see
solvers/compose/; importing it compiles nothing) whose dispatchers are all replaced by
their Python functions runs the very code numba would compile, statement for statement,
on NumPy arrays and scalars, about 200-400x slower per step (docs/performance.md) but
with no compile at all. A launch uses it for a kernel that is not cached when its cases
cost less interpreted than the compile would (mbstudy.pipeline.run.engines).
"""

from __future__ import annotations

import time
import types
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from mbstudy.pipeline import private_api

if TYPE_CHECKING:
    from mbstudy.solvers.api import Entry

_PACKAGES = ("mbstudy.solvers.",)  # functions of these packages are followed into


def _is_dispatcher(obj: Any) -> bool:
    return private_api.is_numba_dispatcher(obj)  # numba is imported, not initialised


class _Converter:
    def __init__(self) -> None:
        self.funcs: dict[int, types.FunctionType] = {}
        self.globals: dict[int, dict] = {}
        self.keep: list = []  # the originals, so that their ids stay unique

    def value(self, obj: Any) -> Any:
        if _is_dispatcher(obj):
            return self.function(obj.py_func)
        if isinstance(obj, types.FunctionType) and (obj.__module__ or "").startswith(_PACKAGES):
            return self.function(obj)
        return obj

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        key = id(fn)
        if key in self.funcs:
            return self.funcs[key]
        self.keep.append(fn)
        gkey = id(fn.__globals__)
        fill = gkey not in self.globals
        if fill:  # registered before it is filled: functions that call each other
            self.globals[gkey] = dict(fn.__globals__)
        g = self.globals[gkey]
        closure = None
        if fn.__closure__:
            closure = tuple(types.CellType() for _ in fn.__closure__)
        out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, closure)
        out.__kwdefaults__ = fn.__kwdefaults__
        out.__qualname__ = fn.__qualname__
        out.__doc__ = fn.__doc__
        self.funcs[key] = out
        if fill:
            for name, val in fn.__globals__.items():
                if not name.startswith("__"):
                    g[name] = self.value(val)
        for new_cell, cell in zip(closure or (), fn.__closure__ or (), strict=True):
            try:
                new_cell.cell_contents = self.value(cell.cell_contents)
            except ValueError:  # an empty cell stays empty
                pass
        return out


MODEL_FUNCTIONS = ("sizes", "mass", "forces", "phi", "phi_q", "phi_t", "gamma", "energy",
                   "power", "initial_state", "potential", "forces_conservative")  # fmt: skip


def pure_model(module):
    """A view of a model module (``SPEC``, ``SINGULAR_MASS``, ``GAUGE_DOF`` and the
    contract's functions) whose functions run as plain Python: the model checks need no
    compiled code."""
    from types import SimpleNamespace

    funcs = {name: pure_python(getattr(module, name)) for name in MODEL_FUNCTIONS
             if hasattr(module, name)}  # fmt: skip
    singular = getattr(module, "SINGULAR_MASS", False)
    gauge = getattr(module, "GAUGE_DOF", 0)
    return SimpleNamespace(SPEC=module.SPEC, SINGULAR_MASS=singular, GAUGE_DOF=gauge, **funcs)


@cache
def pure_kernel(model: str, formulation: str, integrator: str):
    """The kernel of a (model, formulation, integrator) triple, interpreted: a
    :class:`mbstudy.solvers.runner.Kernel` whose ``common_run``, ``common_state_size`` and
    ``model_sizes`` are the generated module's functions with every numba dispatcher they
    reach (templates, the model's functions, ``solvers/linalg.py``) replaced by its
    ``py_func``. Composing
    and converting it costs well under a second; nothing is compiled or read from numba's
    cache. Once per process and triple; its ``compile_s`` is that conversion time."""
    from mbstudy.solvers.api import Kernel, composed_kernel

    t0 = time.perf_counter()
    module = composed_kernel(model, formulation, integrator)
    conv = _Converter()
    view = types.SimpleNamespace(
        __name__=module.__name__,
        common_run=conv.function(module.common_run.py_func),
        common_state_size=conv.function(module.common_state_size.py_func),
        model_sizes=conv.function(module.model_sizes.py_func),
    )
    return Kernel(view, time.perf_counter() - t0, model, formulation, integrator)


def pure_python(fn):
    """``fn`` (a function or a numba dispatcher) with every numba dispatcher it reaches
    replaced by its ``py_func``: calling it never compiles, loads or initialises numba."""
    conv = _Converter()
    if _is_dispatcher(fn):
        return conv.function(fn.py_func)
    if isinstance(fn, types.FunctionType):
        return conv.function(fn)
    return fn


def model_sizes(model: str | Entry, model_params: dict) -> tuple[int, int]:
    """(n coordinates, m constraint equations) of a registry model (its name, or the entry
    a launch resolved once and passes on) with these parameters, from its ``sizes`` run as
    plain Python (the launcher does not initialise numba)."""
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import pack_params

    entry = solvers.resolve(model)
    n, m = _pure_cached(entry.module.sizes)(pack_params(entry.params, dict(model_params)))
    return int(n), int(m)


@lru_cache(maxsize=64)
def _pure_cached(fn):
    """:func:`pure_python` of ``fn`` once per function object (converting costs ~15 ms)."""
    return pure_python(fn)


def declared_absent_metrics(model: str | Entry, model_params: dict) -> dict[str, str]:
    """The metrics a model cannot have, with the reason
    (:func:`mbstudy.solvers.metrics.absent_metrics`): the store records them per block
    (attribute ``absent_metrics``) so that their NaN is declared, never silent. Runs the
    model's ``angle_mask`` and ``sizes`` as plain Python (no numba in the launcher)."""
    import numpy as np
    from mbstudy.solvers import api as solvers
    from mbstudy.solvers.api import absent_metrics, pack_params

    entry = solvers.resolve(model)
    network = hasattr(entry.module, "run_network_case")
    p = pack_params(entry.params, dict(model_params))
    angles = getattr(entry.module, "angle_mask", None)  # a plugin model may leave it out
    mask = None if angles is None else np.asarray(_pure_cached(angles)(p), dtype=bool)
    if network:
        multipliers = False
    elif hasattr(entry.module, "sizes"):
        multipliers = model_sizes(entry, model_params)[1] > 0
    else:
        multipliers = True  # nothing to declare from
    return absent_metrics(entry.spec, mask, multipliers=multipliers)
