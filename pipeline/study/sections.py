"""The sections of a study file other than ``[[runs]]`` and ``[cluster]``.

``[study]`` (name, model, batch_size, description), ``[model]`` (parameter overrides of a
registry model), ``[output]`` (store and sampled series) and ``[reference]`` (merged over
the model's default reference), plus the helpers the ``[[runs]]`` blocks share with the
reference: which parameters a formulation / integrator pair takes and filling defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mbstudy.pipeline.study.checks import (
    _BAD,
    _check_h,
    _Checker,
    _entry,
    _hint,
    _integer,
    _normalize,
    _param_value,
    _show,
    _string,
    _table,
    _unknown_keys,
    _valid,
)
from mbstudy.pipeline.study.spec import OUTPUT_KEYS, SERIES, OutputSpec, Pairs, ReferenceSpec
from mbstudy.solvers import api as solvers
from mbstudy.solvers.api import Param


def _study_name(ck: _Checker, study: dict) -> str:
    if "name" not in study:
        ck.fail("study.name", "required key is missing (the study's name, a string)")
    name = _string(ck, "study.name", study["name"], "a non-empty string")
    if ("/" in name or "\\" in name or name in (".", "..") or not name.isprintable()
            or len(name) > 100):
        ck.fail("study.name", "expected a name without path separators (at most 100"
                f" characters), found {_show(name)}")
    return name


def _study_model(ck: _Checker, study: dict) -> solvers.Entry:
    if "model" not in study:
        valid = sorted(solvers.entries("model"))
        ck.fail("study.model", f"required key is missing (a registry model name){_valid(valid)}")
    _entry(ck, "study.model", "model", study["model"])  # fails in one line on a bad name
    return solvers.model(study["model"])  # the one resolution of the launch (spec.entry)


def _study_model_or_file(ck: _Checker, study: dict, base_dir: Path | None) -> solvers.Entry:
    """``study.model``: a registry name, or a mechanism file (a path ending in ``.toml`` or
    containing a separator) relative to the study file's directory, resolved to an
    absolute path (workers elsewhere find it; the file's content enters ``spec_hash``).
    ``study.normalization`` (spatial files: ``"constraint"`` or ``"element"``) overrides
    the file's own normalization of the Euler parameters; the mode is part of the model's
    name (``PATH#normalization=element``), so of the study hash and the kernel key."""
    from mbstudy.solvers.api import (
        MechanismError,
        is_model_path,
        model_name,
        split_model_name,
    )

    value = study.get("model")
    if not (isinstance(value, str) and is_model_path(value)):
        if "normalization" in study:
            ck.fail("study.normalization", "the normalization of Euler parameters applies to"
                    f" spatial mechanism files only, not to model {_show(value)}")  # fmt: skip
        return _study_model(ck, study)
    value, mode = split_model_name(value)
    mode = study.get("normalization", mode)
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (Path(base_dir) if base_dir is not None else Path.cwd()) / path
    if not path.is_file():
        ck.fail("study.model", f"no such mechanism file {value!r} (resolved to {str(path)!r})")
    try:
        name = model_name(str(path.resolve()), mode)
    except MechanismError as exc:
        if exc.key == "normalization":
            ck.fail("study.normalization", f"{exc.message} (mechanism file {value})")
        ck.fail("study.model", str(exc))
    try:
        return solvers.model(name)
    except MechanismError as exc:
        ck.fail("study.model", str(exc))


def _batch_size(ck: _Checker, value: Any) -> int | None:
    if value == "auto" and isinstance(value, str):
        return None
    return _integer(ck, "study.batch_size", value, 1, 'an integer >= 1 or "auto"')


def _description(ck: _Checker, value: Any) -> str:
    if not isinstance(value, str):
        ck.fail("study.description", f"expected a string, found {_show(value)}")
    return value


def _model_section(ck: _Checker, model_spec: Any, section: Any) -> Pairs:
    section = _table(ck, "model", section, "[model] parameter overrides")
    params = {p.name: p for p in model_spec.params}
    valid = list(params)
    given: dict[str, Any] = {}
    for key, value in section.items():
        if key not in params:
            ck.report(
                f"model.{key}",
                f"unknown parameter of model {model_spec.name!r}{_hint(key, valid)}{_valid(valid)}",
            )
            continue
        if isinstance(value, list):
            ck.report(
                f"model.{key}",
                f"expected a single value (sweep a model parameter with model.{key} = [...] "
                f"in a [[runs]] block), found {_show(value)}",
            )
            continue
        v = ck.attempt(_param_value, ck, f"model.{key}", params[key], value)
        if v is not _BAD:
            given[key] = v
    out = []
    for prm in model_spec.params:
        if prm.name in given:
            out.append((prm.name, given[prm.name]))
        elif prm.default is None:
            ck.report(
                f"model.{prm.name}",
                f"required parameter of model {model_spec.name!r} ({prm.meaning}) is missing",
            )
        else:
            out.append((prm.name, _normalize(prm, prm.default)))
    return tuple(out)







def _local_store(ck: _Checker, store: str) -> str:
    """``output.store`` as a local path (:func:`.paths.local_store_folder`)."""
    from mbstudy.pipeline.study.paths import local_store_folder

    try:
        return str(local_store_folder(store))
    except ValueError as exc:
        ck.fail("output.store", str(exc))


def _output_section(ck: _Checker, section: Any, study_name: Any) -> OutputSpec:
    section = _table(ck, "output", section, "[output]")
    _unknown_keys(ck, "output", section, OUTPUT_KEYS)
    if "store" in section:
        store = _string(ck, "output.store", section["store"], "a store path or URL (a string)")
        if "://" not in store:  # a local path: ~ expanded, impossible paths refused now
            store = ck.attempt(_local_store, ck, store)
    elif isinstance(study_name, str):
        store = f"results/{study_name}.zarr"
    else:
        store = "results/study.zarr"
    series: list[str] = []
    if "series" in section:
        raw = section["series"]
        if not isinstance(raw, list):
            ck.fail(
                "output.series",
                f"expected a list of series names{_valid(SERIES)}, found {_show(raw)}",
            )
        for j, s in enumerate(raw):
            key = f"output.series[{j}]"
            if not isinstance(s, str):
                ck.report(
                    key, f"expected a series name (a string){_valid(SERIES)}, found {_show(s)}"
                )
            elif s not in SERIES:
                ck.report(key, f"unknown series {s!r}{_hint(s, SERIES)}{_valid(SERIES)}")
            elif s in series:
                ck.report(key, f"series {s!r} is listed twice")
            else:
                series.append(s)
    return OutputSpec(store=store, series=tuple(series))


def _method_params(
    form: Any, integ: Any
) -> tuple[dict[str, Param], dict[str, Param], dict[str, tuple[str, ...]]]:
    fparams = {p.name: p for p in form.spec.params}
    iparams = {p.name: p for p in integ.spec.params}
    owners: dict[str, tuple[str, ...]] = {}
    for n in fparams:
        owners[n] = ("formulation",)
    for n in iparams:
        owners[n] = (*owners.get(n, ()), "integrator")
    return fparams, iparams, owners


def _param_of(fparams: dict, iparams: dict, name: str) -> Param:
    return fparams[name] if name in fparams else iparams[name]


def _takes(form_name: str, fparams: dict, integ_name: str, iparams: dict) -> str:
    fp = ", ".join(fparams) or "no parameters"
    ip = ", ".join(iparams) or "no parameters"
    return f"formulation {form_name!r} takes {fp}; integrator {integ_name!r} takes {ip}"


def _reference_section(
    ck: _Checker,
    model_spec: Any,
    section: Any,
    windows: list[tuple[float, int]],
    extra_default: dict | None = None,
) -> ReferenceSpec:
    section = _table(ck, "reference", section, "[reference]")
    default = dict(model_spec.reference or {})
    default.update(extra_default or {})
    note = f" (the default reference of model {model_spec.name!r})"

    def pick(key: str) -> tuple[Any, str]:
        if key in section:
            return section[key], ""
        if key in default:
            return default[key], note
        ck.fail(
            f"reference.{key}",
            f"required key is missing (model {model_spec.name!r} has no default reference {key})",
        )

    integ_name, inote = pick("integrator")
    form_name, fnote = pick("formulation")
    integ = _entry(ck, "reference.integrator", "integrator", integ_name, inote)
    form = _entry(ck, "reference.formulation", "formulation", form_name, fnote)
    fparams, iparams, owners = _method_params(form, integ)
    values: dict[str, Any] = {}
    reserved = ("integrator", "formulation")
    for key, value in default.items():  # default params the chosen methods take
        if key in reserved or key in section or key not in owners:
            continue
        prm = _param_of(fparams, iparams, key)
        values[key] = ck.attempt(_param_value, ck, f"reference.{key}", prm, value)
    for key, value in section.items():
        if key in reserved:
            continue
        if key not in owners:
            valid = [*reserved, *owners]
            ck.report(
                f"reference.{key}",
                f"unknown parameter {key!r}{_hint(key, valid)} "
                f"({_takes(form.name, fparams, integ.name, iparams)})",
            )
            continue
        if isinstance(value, list | dict):
            ck.report(
                f"reference.{key}",
                f"expected a single value (the reference is one computation), found {_show(value)}",
            )
            continue
        prm = _param_of(fparams, iparams, key)
        values[key] = ck.attempt(_param_value, ck, f"reference.{key}", prm, value)
    f_res, i_res = _resolve_defaults(
        ck, "reference", fparams, iparams, values, (form.name, integ.name)
    )
    why = solvers.compatibility(model_spec.name, form.name, integ.name)
    if why:
        ck.fail("reference.integrator", f"incompatible reference: {why}")
    if "h" in dict(i_res):
        for t_end, samples in windows:
            _check_h(ck, "reference.h", integ.spec, (dict(i_res)["h"],), t_end, samples, False)
    merged = dict(f_res)
    merged.update(i_res)
    return ReferenceSpec(
        integrator=integ.name,
        formulation=form.name,
        params=tuple(merged.items()),
        formulation_params=f_res,
        integrator_params=i_res,
    )


def _resolve_defaults(
    ck: _Checker,
    prefix: str,
    fparams: dict[str, Param],
    iparams: dict[str, Param],
    values: dict[str, Any],
    names: tuple[str, str],
    swept: frozenset[str] = frozenset(),
) -> tuple[Pairs, Pairs]:
    """Fill defaults; report missing required params. Swept names are left out."""
    out = []
    for kind, params, owner in (
        ("formulation", fparams, names[0]),
        ("integrator", iparams, names[1]),
    ):
        res = []
        for pname, prm in params.items():
            if pname in swept:
                continue
            if pname in values:
                if values[pname] is not _BAD:
                    res.append((pname, values[pname]))
            elif prm.default is None:
                ck.report(
                    f"{prefix}.{pname}",
                    f"required parameter of {kind} {owner!r} ({prm.meaning}) is missing",
                )
            else:
                res.append((pname, _normalize(prm, prm.default)))
        out.append(tuple(res))
    return out[0], out[1]


