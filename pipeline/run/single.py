"""``mbstudy run``: one case, or a little grid, in-process, validated exactly like a study.

The command-line settings are turned into a one-block study text and go through the same
``parse_study`` -> ``expand_grid`` -> reference -> ``run_one`` path as ``launch``, so
``mbstudy run`` and a launched case give the same metrics (a test checks it). A value with
commas is an axis, as in a ``--set`` of ``launch`` (:func:`~mbstudy.pipeline.study.
overrides.parse_value`): ``--set omega_n=5,20,80`` runs three cases (:func:`run_grid`).
"""

from __future__ import annotations

import json
import math
import tomllib

from mbstudy.pipeline.plan.engines import choose_engines, record_interpreted
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.plan.memory import check_memory
from mbstudy.pipeline.run.batch import engine_kernel, pairs_to_dict, run_one
from mbstudy.pipeline.study.overrides import split_commas
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.api import compute_reference, status_name


class RunInputError(ValueError):
    """A malformed --set (one line, names the setting)."""


def _toml_value(name: str, raw: str) -> str:
    """Return ``raw`` if it parses as one TOML value, else it quoted as a string; commas
    outside brackets and quotes make a TOML array of such values (an axis)."""
    items = split_commas(raw)
    if len(items) > 1:
        return "[" + ", ".join(_toml_value(name, item.strip()) for item in items) + "]"
    try:
        tomllib.loads(f"x = {raw}")
        if "\n" in raw:
            raise tomllib.TOMLDecodeError("newline")
        return raw
    except tomllib.TOMLDecodeError:
        return '"' + raw.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_study_text(model, formulation, integrator, t_end, samples, settings,
                     normalization: str | None = None) -> str:  # fmt: skip
    """The one-case study text for the given settings (NAME=VALUE strings);
    ``normalization``: the study's ``normalization`` (a spatial mechanism file's mode)."""
    model_lines, run_lines = [], []
    for item in settings:
        if "=" not in item:
            raise RunInputError(f"--set {item!r}: expected NAME=VALUE")
        if not item.isprintable():
            raise RunInputError(f"--set {item!r}: control characters are not allowed")
        name, raw = (x.strip() for x in item.split("=", 1))
        if not name.replace("_", "").replace(".", "").isalnum():
            raise RunInputError(f"--set {item!r}: {name!r} is not a parameter name")
        value = _toml_value(name, raw)
        if name.startswith("model.") and not value.startswith("["):  # a list: a block axis
            model_lines.append(f"{name[len('model.'):]} = {value}")
        else:
            run_lines.append(f"{name} = {value}")
    lines = ["[study]", 'name = "run"', f"model = {json.dumps(str(model))}",
             f"samples = {int(samples)}"]  # fmt: skip
    if normalization is not None:
        lines.append(f"normalization = {json.dumps(str(normalization))}")
    if t_end is not None:
        lines.append(f"t_end = {float(t_end)!r}")
    if model_lines:
        lines += ["[model]", *model_lines]
    lines += ["[[runs]]", f'formulation = "{formulation}"', f'integrator = "{integrator}"',
              *run_lines]
    return "\n".join(lines) + "\n"


DEFAULT_SAMPLES = 301


def default_samples(t_end: float, h: float | None, cap: int = DEFAULT_SAMPLES) -> int:
    """The most output times, at most ``cap``, that a fixed step ``h`` fits: a fixed-step
    integrator lands on every output time, so h must divide t_end / (samples - 1), i.e.
    samples - 1 must divide the step count N = t_end / h. Returns 1 + the largest divisor
    of N not above cap - 1; ``cap`` when there is no step or N is not a whole number (the
    study check then reports h)."""
    if h is None or not h > 0 or not t_end > 0 or not math.isfinite(t_end / h):
        return cap  # h = 5e-324: no whole number of steps (the study check says so)
    n = round(t_end / h)
    if n < 1 or abs(n * h - t_end) > 1e-9 * t_end:
        return cap
    return 1 + max(d for d in range(1, min(n, cap - 1) + 1) if n % d == 0)


def _setting(settings, name: str) -> list[float] | None:
    """The values of setting ``name`` (several for an axis), None if absent or not numbers."""
    for item in settings:
        key, _, raw = item.partition("=")
        if key.strip() == name:
            try:
                return [float(x) for x in split_commas(raw)]
            except ValueError:
                return None
    return None


def resolve_samples(model, integrator, t_end, samples, settings) -> tuple[int, str]:
    """(samples, note): the given count, or for a fixed-step integrator the most output
    times up to DEFAULT_SAMPLES that its ``h`` fits (the note says which was chosen)."""
    from mbstudy.solvers import api as solvers
    if samples is not None:
        return int(samples), ""
    spec = solvers.entry("integrator", integrator).spec
    steps = _setting(settings, "h")
    if not getattr(spec, "fixed_step", False) or not steps:
        return DEFAULT_SAMPLES, ""
    t = float(t_end) if t_end is not None else float(solvers.model(model).spec.t_end)
    # every step of an axis must land on the output times: the most that all of them fit
    n = min(default_samples(t, h) for h in steps)
    while n > 2 and any(default_samples(t, h, n) != n for h in steps):
        n -= 1
    if n == DEFAULT_SAMPLES:
        return n, ""
    hs = ", ".join(f"{h:g}" for h in steps)
    return n, (f"samples: {n} output times (h = {hs} divides the output interval "
               f"{t:g}/{n - 1}; {DEFAULT_SAMPLES} would not; set --samples to choose)")


def run_single(model, formulation, integrator, t_end, samples, settings,
               engine: str = "auto", normalization: str | None = None) -> dict:  # fmt: skip
    """Run one case; return {'status', 'metrics', 'final': {'t', 'q', 'v'}, 'samples',
    'note', 'engine', 'params'}. ``samples=None``: the default count that fits a fixed
    step (resolve_samples). ``engine``: ``auto``, ``compiled`` or ``python``, per kernel
    as in a launch (plan/engines.py); an interpreted case's ``wall_s`` is no kernel
    timing. ``normalization``: a spatial mechanism file's Euler-parameter normalization
    (the study key of the same name). Settings that sweep run the first case only
    (:func:`run_grid` runs them all)."""
    return run_grid(model, formulation, integrator, t_end, samples, settings, engine,
                    normalization, limit=1)[0]


def run_grid(model: str, formulation: str, integrator: str, t_end: float | None,
             samples: int | None, settings: list[str], engine: str = "auto",
             normalization: str | None = None, limit: int | None = None) -> list[dict]:  # fmt: skip
    """Run every case of the settings' grid (``omega_n=5,20,80``: three cases) in file
    order, at most ``limit``; one dict per case as :func:`run_single` returns, with
    ``'params'``: the case's swept values (``{}`` for one case). One reference per
    distinct reference key (a swept model parameter needs one each), as in a launch."""
    from mbstudy.solvers import api as solvers
    solvers.model(model)  # UnknownName with a suggestion; a mechanism file path loads
    for kind, name in (("formulation", formulation), ("integrator", integrator)):
        solvers.entry(kind, name)
    samples, note = resolve_samples(model, integrator, t_end, samples, settings)
    text = build_study_text(model, formulation, integrator, t_end, samples, settings,
                            normalization)
    study = parse_study(text, source="mbstudy run")
    grid = expand_grid(study)
    check_memory(study, grid)  # run in this process: the same bound as a worker's
    ref = study.reference
    choices = choose_engines(study, grid, engine)
    record_interpreted(choices)
    engines = {t: c.engine for t, c in choices.items()}
    ref_t = (study.model, ref.formulation, ref.integrator)
    case_t = (study.model, formulation, integrator)
    if engines[case_t] == "python":
        note = (note + "\n" if note else "") + (
            f"engine: the case ran interpreted ({choices[case_t].reason}): same numbers,"
            " but wall_s is no kernel timing; --engine compiled for timings")
    block = grid.blocks[0]
    references: dict[int, object] = {}
    results = []
    for i in range(block.n_cases if limit is None else min(limit, block.n_cases)):
        cp = block.case_params(i)
        if cp.ref_index not in references:
            key = grid.references[cp.ref_index]
            references[cp.ref_index] = compute_reference(
                study.model, pairs_to_dict(key.model_params), ref.integrator, ref.formulation,
                pairs_to_dict(ref.params), key.t_end, key.samples,
                kernel=engine_kernel(engines[ref_t], *ref_t))  # fmt: skip
        status, metrics, ser, error = run_one(cp, references[cp.ref_index], ("q", "v"),
                                              engine_kernel(engines[case_t], *case_t))
        final = {"t": None, "q": None, "v": None}
        if "q" in ser and ser["q"].size and status == 0:
            final = {"t": float(cp.t_end), "q": ser["q"][-1].tolist(),
                     "v": ser["v"][-1].tolist()}  # fmt: skip
        results.append({"status": status_name(status), "metrics": metrics, "error": error,
                        "final": final, "samples": samples, "note": note,
                        "engine": engines[case_t], "params": cp.coords_dict})  # fmt: skip
    return results
