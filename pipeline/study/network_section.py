"""The ``[model]`` section of a netlist model (``solvers/models/network.py``).

A netlist model takes ``netlist`` (a file, relative to the study file's directory) and
fixed ``ELEMENT.PARAM`` overrides; the element parameters a ``[[runs]]`` block may sweep
come from the netlist itself (the model module's ``study_element_params`` hook), and the
reference defaults from every ``delta_l`` the runs use (``study_reference_defaults``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mbstudy.pipeline.study.checks import _BAD, _Checker, _param_value, _show, _table
from mbstudy.pipeline.study.references import FileRefused, read_regular_file
from mbstudy.pipeline.study.spec import Pairs, RunSpec
from mbstudy.solvers import api as solvers
from mbstudy.solvers.api import Param


@dataclass(frozen=True)
class _NetworkInfo:
    """Element parameters of a netlist model (``solvers/models/network.py`` hooks)."""

    path: str
    params: dict[str, Param]
    module: Any

    def unknown(self, key: str) -> str:
        return self.module.unknown_element_param(self.path, key)


def _flatten(section: dict, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in section.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out += _flatten(value, f"{name}.")
        else:
            out.append((name, value))
    return out


def _network_model_section(
    ck: _Checker, model_entry: solvers.Entry, section: Any, base_dir: Path | None
) -> tuple[Pairs, _NetworkInfo]:
    """[model] of a netlist model: ``netlist`` (relative to the study file) and fixed
    ``ELEMENT.PARAM`` overrides; returns (model params, the netlist's element params)."""
    section = _table(ck, "model", section, "[model] parameter overrides")
    module = model_entry.module
    if "netlist" not in section:
        ck.fail(
            "model.netlist",
            f"required parameter of model {model_entry.name!r} is missing "
            "(the netlist file, relative to the study file's directory)",
        )
    raw = section["netlist"]
    if not isinstance(raw, str) or not raw:
        ck.fail("model.netlist", f"expected a netlist file path (a string), found {_show(raw)}")
    path = Path(raw)
    if not path.is_absolute():
        path = (Path(base_dir) if base_dir is not None else Path.cwd()) / path
    path = path.resolve()
    try:
        read_regular_file(path)  # a FIFO would block the netlist reader forever
        params = module.study_element_params(path)
    except FileRefused as exc:
        ck.fail("model.netlist", f"cannot read netlist {raw!r}: {exc}")
    except Exception as exc:  # OSError, NetlistError: one line either way
        text = " ".join(str(exc).split())
        ck.fail("model.netlist", f"cannot read netlist {raw!r}: {text}")
    info = _NetworkInfo(str(path), params, module)
    out: list[tuple[str, Any]] = [("netlist", str(path))]
    for name, value in _flatten({k: v for k, v in section.items() if k != "netlist"}):
        key = f"model.{name}"
        if name not in params:
            ck.report(key, info.unknown(name))
            continue
        if isinstance(value, list):
            ck.report(
                key,
                f"expected a single value (sweep an element parameter with {key} = [...] "
                f"in a [[runs]] block), found {_show(value)}",
            )
            continue
        v = ck.attempt(_param_value, ck, key, params[name], value)
        if v is not _BAD:
            out.append((name, v))
    return tuple(out), info



def _network_reference_defaults(model_entry: solvers.Entry, runs: list[RunSpec]) -> dict:
    """Reference defaults of a netlist model from every delta_l the runs use."""
    hook = getattr(model_entry.module, "study_reference_defaults", None)
    if hook is None:
        return {}
    values: list[float] = []
    for run in runs:
        fixed = dict(run.fixed)
        if "delta_l" in fixed:
            values.append(float(fixed["delta_l"]))
        values += [float(x) for x in dict(run.axes).get("delta_l", ())]
    return hook(values)

