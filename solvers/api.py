"""The public interface of ``solvers`` for the pipeline: every name the pipeline uses.

``pipeline`` imports from this module and from no other module of ``solvers``
(tests/test_layering.py), so what the pipeline depends on is this list, and the modules
behind it (the registry, the kernel cache, the runner, the metrics, the mechanism-file
reader) can be reorganised without touching the pipeline. Names are looked up when used
(:pep:`562` module ``__getattr__``): importing this module imports no numerical code, and
a study's parse does not load numba.

The groups, each from the module named (read its docstring for the contract):

- registry (``solvers/registry.py``, ``solvers/model_entry.py``, ``solvers/spec.py``):
  ``Entry``, ``UnknownName``, ``KINDS``, ``closest``, ``entries``, ``entry``, ``model``,
  ``resolve``, ``formulation``, ``integrator``, ``compatibility``; specs ``Param``,
  ``IntegratorSpec``, ``pack_params``;
- DAE forms (``solvers/forms.py``): the vocabulary ``FORMS``, ``is_dae_form``;
- running cases (``solvers/runner.py``, ``solvers/reference.py``): ``run_case``,
  ``CaseResult``, ``Kernel``, ``composed_kernel``, ``load_kernel``, ``initial_state``,
  ``compute_reference``, ``combine_reference``, ``reference_params``;
- metrics and status codes (``solvers/metrics.py``, ``solvers/status.py``);
- kernel caches (``solvers/kernel_cache.py``, ``solvers/loader.py``);
- mechanism files and labels (``solvers/mechanisms/``, ``solvers/model_labels.py``,
  ``solvers/textfiles.py``, ``solvers/assembly.py``);
- the worked example of the seed-003 step rule (``solvers/worked_examples.py``).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# public name -> (module under mbstudy.solvers, its name there)
_SOURCES: dict[str, tuple[str, str]] = {}


def _add(module: str, *names: str, **renamed: str) -> None:
    for name in names:
        _SOURCES[name] = (module, name)
    for public, inner in renamed.items():
        _SOURCES[public] = (module, inner)


_add("spec", "Entry", "IntegratorSpec", "Param", "pack_params")
_add("registry", "KINDS", "UnknownName", "closest", "compatibility", "entries", "formulation",
     "integrator", entry="get")  # fmt: skip
_add("model_entry", "model", "resolve")
_add("forms", "FORMS", "is_dae_form")
_add("runner", "CaseResult", "Kernel", "composed_kernel", "initial_state", "load_kernel",
     "run_case")  # fmt: skip
_add("reference", "combine_reference", "compute_reference", "reference_params")
_add("metrics", "ACCURACY_METRICS", "COUNTER_METRICS", "FLOAT_METRICS", "METRIC_MEANINGS",
     "METRIC_UNITS", "Reference", "SERIES_MEANINGS", "SERIES_UNITS", "TIME_METRICS",
     "VECTOR_SERIES", "absent_metrics", "compute_metrics", "sample_series")  # fmt: skip
_add("status", "ERROR", "OK", "STATUS_MEANINGS", "STATUS_NAMES", "describe_failures",
     "status_name")  # fmt: skip
_add("kernel_cache", "add_interpreted_seconds", "kernel_dir", "secure_dirs",
     kernel_cache_key="current_key", kernel_interpreted_seconds="interpreted_seconds",
     kernel_inventory="inventory", kernel_is_cached="is_cached",
     numba_cache_totals="numba_totals", prune_kernel_cache="prune")  # fmt: skip
_add("loader", "UnsafeCacheDir", "check_cache_dirs")
_add("mechanisms", "MechanismError", "is_model_path", "model_name", "split_model_name")
_add("mechanisms.checks", "run_checks")
_add("model_labels", "constraint_labels", "coordinate_labels")
_add("textfiles", "FileRefused", "MAX_FILE_BYTES", "read_regular_file")
_add("assembly", "AssemblyError")
_add("worked_examples", "seed003_step3")

__all__ = sorted(_SOURCES)


def __getattr__(name: str) -> Any:
    """``name`` read from its module at each use (not kept here: a test that replaces a
    registry function for a while is seen through ``api`` too)."""
    try:
        module, inner = _SOURCES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(import_module(f"mbstudy.solvers.{module}"), inner)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCES))

