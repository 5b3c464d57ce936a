"""mbstudy: distributed parameter studies of numerical methods for constrained multibody
dynamics.

The distribution installs one import package, ``mbstudy``, with two layers:

- ``mbstudy.solvers``: the numerical core (mechanisms, constraint formulations,
  integrators, metrics); plain NumPy/numba, usable from a notebook.
- ``mbstudy.pipeline``: study files, grids, the Dask launch, the Zarr store, analysis and
  the command line.

In the source repository ``pipeline/`` and ``solvers/`` sit at the top level beside this
folder; an installed copy has them inside it. When this package is imported from a
checkout (``python -m pytest`` in the repository), the repository root is added to the
package's search path so that ``mbstudy.pipeline`` and ``mbstudy.solvers`` resolve to the
checkout's folders, exactly as an editable install would.
"""


# Importing this package loads only ``os`` (everything else on first use, ``__getattr__``):
# ``python -m mbstudy`` and the console script install their Ctrl-C guard
# (pipeline/cli/interrupts.py) before any heavy import.
import os

_HERE = os.path.dirname(os.path.realpath(__file__))
_ROOT = os.path.dirname(_HERE)
if not os.path.isdir(os.path.join(_HERE, "pipeline")) and os.path.isfile(
    os.path.join(_ROOT, "pipeline", "__init__.py")
):
    __path__.append(_ROOT)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mbstudy")
    except PackageNotFoundError:  # a checkout that was never installed
        return "0+unknown"


def open_results(store, group=None, stacked=False):
    """Block ``group`` of ``store`` as an xarray Dataset, or the whole store as an
    ``xarray.DataTree`` without ``group`` (see ``mbstudy.pipeline``)."""
    from mbstudy.pipeline import open_results as _open

    return _open(store, group, stacked=stacked)


def run_case(*args, **kwargs):
    """One case without Dask (``mbstudy.solvers.runner.run_case``)."""
    from mbstudy.solvers.runner import run_case as _run

    return _run(*args, **kwargs)


_STAGES = ("plan", "warm", "report", "PlanSummary", "WarmSummary", "ReportSummary")


def __getattr__(name: str):
    """``__version__`` and the public stages, computed or imported on first use
    (``import mbstudy`` stays light):
    ``mbstudy.launch`` is :func:`mbstudy.pipeline.run.launch.launch` (-> ``LaunchSummary``);
    ``plan``, ``warm`` and ``report`` (-> ``PlanSummary``, ``WarmSummary``,
    ``ReportSummary``) are those of :mod:`mbstudy.pipeline.stages`."""
    if name == "__version__":
        globals()["__version__"] = version = _version()
        return version
    if name in ("launch", "LaunchSummary"):
        from mbstudy.pipeline.run import launch as _launch

        return getattr(_launch, name)
    if name in _STAGES:
        from mbstudy.pipeline import stages

        return getattr(stages, name)
    raise AttributeError(f"module 'mbstudy' has no attribute {name!r}")


__all__ = [
    "LaunchSummary",
    "PlanSummary",
    "ReportSummary",
    "WarmSummary",
    "__version__",
    "launch",
    "open_results",
    "plan",
    "report",
    "run_case",
    "warm",
]
