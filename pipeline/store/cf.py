"""CF attributes that make a store describe itself to any xarray or Zarr user.

Applied to a block's group once, when the store template is written (nothing here is
touched by batch tasks). Conventions followed (CF 1.10, sections 1-3):

- every metric and series array has ``units`` (UDUNITS strings) and ``long_name``
  (``solvers.metrics``: METRIC_MEANINGS / METRIC_UNITS, SERIES_MEANINGS / SERIES_UNITS);
- ``status`` is a flag variable: ``flag_values`` and space-separated ``flag_meanings``
  (``solvers.status.STATUS_NAMES``), with the long meanings in ``flag_descriptions``;
- ``engine`` is a flag variable too (0 ``compiled``, 1 ``python``: the case ran on the
  generated kernel interpreted, so its ``wall_s`` is no kernel timing; plan/engines.py);
- the ``constraint`` and ``coord`` dimensions of vector series get label arrays of the
  same name (``JOINT.ROW`` and ``BODY.COORDINATE`` for every model that names them,
  solvers/solvers.py; else ``c0, c1, ...`` and ``q0, q1, ...``), which xarray reads
  as dimension coordinates;
- the group attribute ``coordinates`` lists the grid axes and per-case identifiers, so
  ``xr.open_zarr(path, group=BLOCK)`` opens them as coordinates, not data variables;
- model, formulation, integrator and every fixed (not swept) parameter are block
  attributes (``fixed_parameters``, plus one ``param_NAME`` attribute each).

``consolidate(path, group)`` writes Zarr's consolidated metadata for one group (and the
root), so plain ``xr.open_zarr`` reads one document and does not warn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from mbstudy.solvers.api import (
    COUNTER_METRICS,
    FLOAT_METRICS,
    METRIC_MEANINGS,
    METRIC_UNITS,
    SERIES_MEANINGS,
    SERIES_UNITS,
    STATUS_MEANINGS,
    STATUS_NAMES,
)

if TYPE_CHECKING:
    from mbstudy.solvers.api import Entry

CASE_COORDS = ("case_id", "ref_index")


def constraint_labels(model: str | Entry, m: int) -> list[str]:
    """Labels of the ``m`` constraint rows (``crank-ground.x``, ``top.e_norm``; else
    ``c0..``): :func:`mbstudy.solvers.model_labels.constraint_labels`."""
    from mbstudy.solvers import api as solvers
    return solvers.constraint_labels(model, m)


def coordinate_labels(model: str | Entry, n: int, model_params: dict[str, Any] | None = None,
                      swept: tuple[str, ...] = ()) -> list[str]:
    """Labels of the ``n`` coordinates of q and v (``crank.theta``, ``rod1.e0``, a
    network's ``2.x``; else ``q0..``): :func:`mbstudy.solvers.model_labels.coordinate_labels`."""
    from mbstudy.solvers import api as solvers
    return solvers.coordinate_labels(model, n, model_params, swept)


def fixed_parameters(block) -> dict[str, Any]:
    """Every parameter of a block that is not a grid axis: formulation and integrator
    parameters by name, model parameters set by the study as ``model.NAME``."""
    axes = set(block.axis_names)
    out: dict[str, Any] = {}
    for pairs in (block.formulation_params, block.integrator_params):
        for k, v in pairs:
            if k not in axes:
                out[k] = _plain(v)
    for k, v in block.model_params:
        if f"model.{k}" not in axes:
            out[f"model.{k}"] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


_FIXED_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "done": {"long_name": "every array of the case's batch was written"},
    "error": {"long_name": "exception text of a case with status error"},
    "t": {"long_name": "output time", "units": "s", "standard_name": "time"},
    "case_id": {"long_name": "stable case identifier (hash of its parameters)"},
    "ref_index": {"long_name": "index of the case's reference under reference/"},
    "engine": {
        "long_name": "engine that ran the case's kernel",
        "flag_values": [0, 1],
        "flag_meanings": "compiled python",
        "flag_descriptions": [
            "numba-compiled kernel: wall_s is the kernel's time",
            "the same generated kernel interpreted as Python: same numbers, wall_s"
            " is not comparable with compiled cases",
        ],
    },
}


def array_attributes(name: str, block) -> dict[str, Any]:
    """The CF attributes of a block's array ``name`` (metric, series, flag, coordinate or
    grid axis), given to zarr when the array is created so that its metadata is written
    once; ``{}`` for a name with none."""
    if name in FLOAT_METRICS or name in COUNTER_METRICS:
        return {"long_name": METRIC_MEANINGS.get(name, name), "units": METRIC_UNITS[name]}
    if name in SERIES_MEANINGS:
        return {"long_name": SERIES_MEANINGS[name], "units": SERIES_UNITS[name]}
    if name == "status":
        codes = sorted(STATUS_NAMES)
        return {
            "long_name": "outcome of the case",
            "flag_values": [int(c) for c in codes],
            "flag_meanings": " ".join(STATUS_NAMES[c] for c in codes),
            "flag_descriptions": [STATUS_MEANINGS[c] for c in codes],
        }
    if name in _FIXED_ATTRIBUTES:
        return dict(_FIXED_ATTRIBUTES[name])
    if name in block.axis_names:
        return {"long_name": f"grid axis {name}"}
    return {}


def describe_block(g, block, model: str | Entry) -> None:
    """Write the label arrays and the group's CF attributes of one block group ``g`` (zarr
    Group); its arrays got theirs when they were created (:func:`array_attributes`).
    ``model``: the study's model entry, resolved once by the launch (or its name)."""
    names = {name for name, _ in g.arrays()}
    # Names that depend on a model parameter (a network's netlist) come from the block's
    # first case; model_labels drops them when that parameter is a swept axis.
    params, swept = dict(block.model_params), tuple(block.axis_names)
    for name, dim, labeller in (
        ("lam", "constraint", lambda k: constraint_labels(model, k)),
        ("q", "coord", lambda k: coordinate_labels(model, k, params, swept)),
        ("v", "coord", lambda k: coordinate_labels(model, k, params, swept)),
    ):
        if name in names and dim not in names:
            width = int(g[name].shape[-1])
            from mbstudy.pipeline.store.codecs import WRITE_EVERY_CHUNK, checksum_codecs

            a = g.create_array(dim, shape=(width,), dtype=str, fill_value="",
                               dimension_names=(dim,), compressors=checksum_codecs(),
                               config=WRITE_EVERY_CHUNK,
                               attributes={"long_name": f"{dim} row label"})  # fmt: skip
            a[:] = np.array(labeller(width), dtype=str)
            names.add(dim)
    fixed = fixed_parameters(block)
    g.attrs.update(
        {
            "model": model if isinstance(model, str) else model.name,
            "fixed_parameters": fixed,
            **{f"param_{k}": v for k, v in fixed.items()},
            "coordinates": " ".join([*CASE_COORDS, *block.axis_names]),
            "Conventions": "CF-1.10",
        }
    )


def consolidate(path, group: str | None = None) -> None:
    """Write consolidated metadata of ``group`` (a block) or of the root of the store."""
    import warnings

    import zarr
    from mbstudy.pipeline.store.location import location

    with warnings.catch_warnings():  # zarr 3 flags consolidated metadata as not yet in
        warnings.simplefilter("ignore")  # the v3 spec; xarray reads it all the same
        store = location(path).zarr_store()  # a folder or an object-store prefix
        zarr.consolidate_metadata(store, path=group or "", zarr_format=3)
