"""``mbstudy run``: one case in-process, validated exactly like a study.

The command-line settings are turned into a one-case study text and go through the same
``parse_study`` -> ``expand_grid`` -> reference -> ``run_one`` path as ``launch``, so
``mbstudy run`` and a launched case give the same metrics (a test checks it).
"""

from __future__ import annotations

import json
import tomllib

from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.run.batch import pairs_to_dict, run_one
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.reference import compute_reference
from mbstudy.solvers.status import status_name


class RunInputError(ValueError):
    """A malformed --set (one line, names the setting)."""


def _toml_value(name: str, raw: str) -> str:
    """Return ``raw`` if it parses as one TOML value, else it quoted as a string."""
    try:
        tomllib.loads(f"x = {raw}")
        if "\n" in raw:
            raise tomllib.TOMLDecodeError("newline")
        return raw
    except tomllib.TOMLDecodeError:
        return '"' + raw.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_study_text(model, formulation, integrator, t_end, samples, settings) -> str:
    """The one-case study text for the given settings (NAME=VALUE strings)."""
    model_lines, run_lines = [], []
    for item in settings:
        if "=" not in item:
            raise RunInputError(f"--set {item!r}: expected NAME=VALUE")
        name, raw = (x.strip() for x in item.split("=", 1))
        if not name.replace("_", "").replace(".", "").isalnum():
            raise RunInputError(f"--set {item!r}: {name!r} is not a parameter name")
        value = _toml_value(name, raw)
        if name.startswith("model."):
            model_lines.append(f"{name[len('model.'):]} = {value}")
        else:
            run_lines.append(f"{name} = {value}")
    lines = ["[study]", 'name = "run"', f"model = {json.dumps(str(model))}",
             f"samples = {int(samples)}"]  # fmt: skip
    if t_end is not None:
        lines.append(f"t_end = {float(t_end)!r}")
    if model_lines:
        lines += ["[model]", *model_lines]
    lines += ["[[runs]]", f'formulation = "{formulation}"', f'integrator = "{integrator}"',
              *run_lines]
    return "\n".join(lines) + "\n"


def run_single(model, formulation, integrator, t_end, samples, settings) -> dict:
    """Run one case; return {'status', 'metrics', 'final': {'t', 'q', 'v'}}."""
    from mbstudy.solvers import registry

    registry.model(model)  # UnknownName with a suggestion; a mechanism file path loads
    for kind, name in (("formulation", formulation), ("integrator", integrator)):
        registry.get(kind, name)
    text = build_study_text(model, formulation, integrator, t_end, samples, settings)
    study = parse_study(text, source="mbstudy run")
    grid = expand_grid(study)
    key = grid.references[0]
    ref = study.reference
    reference = compute_reference(study.model, pairs_to_dict(key.model_params), ref.integrator,
                                  ref.formulation, pairs_to_dict(ref.params), key.t_end,
                                  key.samples)
    cp = grid.blocks[0].case_params(0)
    status, metrics, ser, error = run_one(cp, reference, ("q", "v"))
    final = {"t": None, "q": None, "v": None}
    if "q" in ser and ser["q"].size and status == 0:
        final = {"t": float(cp.t_end), "q": ser["q"][-1].tolist(), "v": ser["v"][-1].tolist()}
    return {"status": status_name(status), "metrics": metrics, "error": error, "final": final}
