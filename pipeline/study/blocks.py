"""One ``[[runs]]`` block of a study file -> a resolved :class:`RunSpec`.

The steps, in order (each a function below): the methods (``formulation``,
``integrator``), the block's name, its window (``t_end``, ``samples``), its parameters in
file order (a list or a range table of ``study.ranges`` is an axis, a scalar is fixed,
``model.NAME`` addresses a model parameter), the zip groups, distinct values per
dimension, defaults and required parameters, the model / method compatibility, and for
fixed-step integrators that ``h`` divides the output interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mbstudy.pipeline.study.checks import (
    _BAD,
    _axis,
    _check_h,
    _Checker,
    _entry,
    _first_duplicate,
    _hint,
    _integer,
    _number,
    _param_value,
    _show,
    _table,
    _valid,
)
from mbstudy.pipeline.study.network_section import _NetworkInfo
from mbstudy.pipeline.study.ranges import expand_axis, is_range
from mbstudy.pipeline.study.sections import (
    _method_params,
    _param_of,
    _resolve_defaults,
    _takes,
)
from mbstudy.pipeline.study.spec import RESERVED_RUN_NAMES, RUN_KEYS, RunSpec
from mbstudy.solvers import api as solvers
from mbstudy.solvers.api import Param

_GROUP_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_NOT_PARAMS = ("name", "formulation", "integrator", "t_end", "samples", "zip")


@dataclass
class _Methods:
    """The block's formulation and integrator and the parameters each takes."""

    form: solvers.Entry
    integ: solvers.Entry
    fparams: dict[str, Param]
    iparams: dict[str, Param]
    owners: dict[str, tuple[str, ...]]


@dataclass
class _Params:
    """The block's parameters as read so far (file order)."""

    fixed: dict[str, Any] = field(default_factory=dict)
    model_fixed: dict[str, Any] = field(default_factory=dict)
    axes: dict[str, tuple] = field(default_factory=dict)


def _run_block(
    ck: _Checker,
    i: int,
    blk: Any,
    model_entry: solvers.Entry,
    model_params: dict[str, Any],
    study_t_end: float,
    study_samples: int,
    network: _NetworkInfo | None = None,
) -> RunSpec:
    """Validate block ``runs[i]`` (``model_params`` is unused: defaults come per case)."""
    pre = f"runs[{i}]"
    blk = _table(ck, pre, blk, "[[runs]]")
    model_spec = model_entry.spec
    mparams = {p.name: p for p in model_spec.params}
    if network is not None:  # element parameters of the netlist; the netlist is fixed
        mparams = dict(network.params)

    methods = _block_methods(ck, pre, blk)
    name = _block_name(ck, pre, blk, methods.form.name)
    t_end, samples = _block_window(ck, pre, blk, study_t_end, study_samples)
    params = _block_params(ck, pre, blk, methods, model_spec.name, mparams, network)
    zip_groups: tuple[tuple[str, ...], ...] = ()
    if "zip" in blk:  # validated before duplicates: duplicates are judged per dimension
        zip_groups = _zip_groups(ck, pre, blk["zip"], params.axes, params.fixed,
                                 params.model_fixed)  # fmt: skip
    _check_distinct(ck, pre, params.axes, zip_groups)

    form, integ = methods.form, methods.integ
    swept = frozenset(n for n in params.axes if not n.startswith("model."))
    f_res, i_res = _resolve_defaults(
        ck, pre, methods.fparams, methods.iparams, params.fixed, (form.name, integ.name), swept
    )
    why = solvers.compatibility(model_spec.name, form.name, integ.name)
    if why:
        ck.fail(f"{pre}.integrator", f"incompatible combination: {why}")
    _check_block_h(ck, pre, methods, params.axes, dict(i_res), t_end, samples)

    merged = dict(f_res)
    merged.update(i_res)
    model_pairs = tuple((f"model.{k}", v) for k, v in params.model_fixed.items())
    return RunSpec(
        name=name,
        formulation=form.name,
        integrator=integ.name,
        t_end=t_end,
        samples=samples,
        fixed=tuple(merged.items()) + model_pairs,
        axes=tuple(params.axes.items()),
        zip=zip_groups,
        batch_size=None,
        formulation_keys=tuple(methods.fparams),
        integrator_keys=tuple(methods.iparams),
    )


def _block_methods(ck: _Checker, pre: str, blk: dict) -> _Methods:
    for key in ("formulation", "integrator"):
        if key not in blk:
            valid = sorted(solvers.entries(key))
            ck.fail(
                f"{pre}.{key}", f"required key is missing (a registry {key} name){_valid(valid)}"
            )
    form = _entry(ck, f"{pre}.formulation", "formulation", blk["formulation"])
    integ = _entry(ck, f"{pre}.integrator", "integrator", blk["integrator"])
    fparams, iparams, owners = _method_params(form, integ)
    return _Methods(form, integ, fparams, iparams, owners)


MAX_NAME = 100  # block and study names become file names (255 bytes on most file systems)


def _block_name(ck: _Checker, pre: str, blk: dict, default: str) -> str:
    name = blk.get("name", default)
    if not isinstance(name, str) or not _GROUP_NAME.fullmatch(name) or len(name) > MAX_NAME:
        ck.fail(
            f"{pre}.name",
            f"expected a group name of letters, digits, '_' and '-' (at most {MAX_NAME}),"
            f" found {_show(name)}",
        )
    if name in RESERVED_RUN_NAMES:
        ck.fail(
            f"{pre}.name",
            f"{name!r} is reserved for the store's reference group; choose another name",
        )
    return name


def _block_window(
    ck: _Checker, pre: str, blk: dict, study_t_end: float, study_samples: int
) -> tuple[float, int]:
    t_end = study_t_end
    if "t_end" in blk:
        t_end = _number(
            ck,
            f"{pre}.t_end",
            blk["t_end"],
            "a number > 0 (one t_end per block; use another block for another)",
        )
    samples = study_samples
    if "samples" in blk:
        samples = _integer(
            ck, f"{pre}.samples", blk["samples"], 2, "an integer >= 2 (one value per block)"
        )
    return t_end, samples


def _block_params(
    ck: _Checker,
    pre: str,
    blk: dict,
    methods: _Methods,
    model_name: str,
    mparams: dict[str, Param],
    network: _NetworkInfo | None,
) -> _Params:
    """Every parameter key of the block, in file order: axes and fixed values."""
    out = _Params()
    fparams, iparams = methods.fparams, methods.iparams
    valid_keys = [*RUN_KEYS, *methods.owners]
    for key, value in blk.items():
        kpath = f"{pre}.{key}"
        if key in _NOT_PARAMS:
            continue
        if key == "model":
            if not isinstance(value, dict):
                ck.report(
                    kpath,
                    "expected a table of model parameters (model.NAME = value or [values]); "
                    f"the model itself is set once in [study], found {_show(value)}",
                )
                continue
            for mname, mval in value.items():
                _model_item(ck, out, f"{kpath}.{mname}", mname, mval, model_name, mparams,
                            network)  # fmt: skip
            continue
        if key.startswith("model."):  # a quoted "model.NAME" key
            _model_item(ck, out, kpath, key[len("model.") :], value, model_name, mparams,
                        network)  # fmt: skip
            continue
        if key not in methods.owners:
            ck.report(
                kpath,
                f"unknown parameter {key!r}{_hint(key, valid_keys)} "
                f"({_takes(methods.form.name, fparams, methods.integ.name, iparams)})",
            )
            continue
        prm = _param_of(fparams, iparams, key)
        if is_range(value):  # { start, stop, num } and the other range forms
            value = ck.attempt(expand_axis, ck, kpath, value)
            if value is _BAD:
                out.fixed[key] = _BAD
                continue
        if isinstance(value, list):
            axis = ck.attempt(_axis, ck, kpath, prm, value)
            if axis is not _BAD:
                out.axes[key] = axis
            else:
                out.fixed[key] = _BAD  # reported; keeps "required" checks quiet
        else:
            out.fixed[key] = ck.attempt(_param_value, ck, kpath, prm, value)
        if key in iparams and key in fparams:
            _check_shared_param(ck, kpath, key, value, iparams[key], methods.integ.name)
    return out


def _check_shared_param(
    ck: _Checker, kpath: str, key: str, value: Any, other: Param, integ_name: str
) -> None:
    """A key both methods take sets both: it must suit the integrator's spec as well."""
    vals = value if isinstance(value, list) else [value]
    for j, v in enumerate(vals):
        why = other.check(v)
        if why is not None:
            sub = f"{kpath}[{j}]" if isinstance(value, list) else kpath
            ck.report(
                sub,
                f"expected {why} for integrator {integ_name!r}'s {key}, found {_show(v)}",
            )


def _model_item(
    ck: _Checker,
    out: _Params,
    mkey: str,
    mname: str,
    value: Any,
    model_name: str,
    mparams: dict[str, Param],
    network: _NetworkInfo | None,
) -> None:
    """One ``model.NAME`` key of a block (``model.ELEMENT.PARAM`` for a netlist)."""
    if network is not None and isinstance(value, dict) and not is_range(value):
        # model.ELEMENT.PARAM
        for sub, sval in value.items():
            _model_item(ck, out, f"{mkey}.{sub}", f"{mname}.{sub}", sval, model_name, mparams,
                        network)  # fmt: skip
        return
    if network is not None and mname not in mparams:
        if mname == "netlist":
            ck.report(mkey, 'the netlist is set once, in [model] (netlist = "FILE")')
        else:
            ck.report(mkey, network.unknown(mname))
        return
    if mname not in mparams:
        valid = list(mparams)
        ck.report(
            mkey,
            f"unknown parameter of model {model_name!r}{_hint(mname, valid)}{_valid(valid)}",
        )
        return
    if is_range(value):
        value = ck.attempt(expand_axis, ck, mkey, value)
        if value is _BAD:
            return
    if isinstance(value, list):
        axis = ck.attempt(_axis, ck, mkey, mparams[mname], value)
        if axis is not _BAD:
            out.axes[f"model.{mname}"] = axis
    else:
        v = ck.attempt(_param_value, ck, mkey, mparams[mname], value)
        if v is not _BAD:
            out.model_fixed[mname] = v


def _check_distinct(
    ck: _Checker, pre: str, axes: dict[str, tuple], zip_groups: tuple[tuple[str, ...], ...]
) -> None:
    """The values of an axis, and the rows of a zip group, must be distinct."""
    zipped = {n for g in zip_groups for n in g}
    for aname, values in axes.items():
        if aname in zipped:
            continue
        dup = _first_duplicate(values)
        if dup is not None:
            ck.report(
                f"{pre}.{aname}[{dup[1]}]",
                f"duplicate value {_show(values[dup[1]])} (also at index {dup[0]}); "
                "the values of an axis must be distinct",
            )
    for g, group in enumerate(zip_groups):
        rows = tuple(zip(*(axes[n] for n in group), strict=True))
        dup = _first_duplicate(tuple(tuple((type(x).__name__, x) for x in r) for r in rows))
        if dup is not None:
            combo = ", ".join(f"{n} = {_show(v)}" for n, v in zip(group, rows[dup[1]], strict=True))
            ck.report(
                f"{pre}.zip[{g}]",
                f"duplicate combination ({combo}) at positions {dup[0]} and {dup[1]}; "
                "the rows of a zip group must be distinct",
            )


def _check_block_h(
    ck: _Checker,
    pre: str,
    methods: _Methods,
    axes: dict[str, tuple],
    i_res: dict[str, Any],
    t_end: float,
    samples: int,
) -> None:
    """Fixed-step integrators: every h of the block divides the output interval."""
    integ = methods.integ.spec
    if "h" not in methods.iparams or not integ.fixed_step:
        return
    if "h" in axes:
        _check_h(ck, f"{pre}.h", integ, axes["h"], t_end, samples, True)
    elif "h" in i_res:
        _check_h(ck, f"{pre}.h", integ, (i_res["h"],), t_end, samples, False)


def _zip_groups(
    ck: _Checker,
    pre: str,
    raw: Any,
    axes: dict[str, tuple],
    fixed: dict[str, Any],
    model_fixed: dict[str, Any],
) -> tuple[tuple[str, ...], ...]:
    example = 'e.g. zip = [["omega_n", "xi"]]'
    if not isinstance(raw, list):
        ck.fail(
            f"{pre}.zip", f"expected a list of lists of axis names ({example}), found {_show(raw)}"
        )
    if raw and all(isinstance(x, str) for x in raw):
        ck.fail(
            f"{pre}.zip",
            f"expected a list of lists of axis names ({example}); "
            f"found a flat list {_show(raw)}, write [{_show(raw)}]",
        )
    groups: list[tuple[str, ...]] = []
    where: dict[str, int] = {}
    axis_names = list(axes)
    for g, group in enumerate(raw):
        gkey = f"{pre}.zip[{g}]"
        if not isinstance(group, list) or not group:
            ck.fail(gkey, f"expected a non-empty list of axis names, found {_show(group)}")
        members: list[str] = []
        for j, n in enumerate(group):
            key = f"{gkey}[{j}]"
            if not isinstance(n, str):
                ck.fail(key, f"expected an axis name (a string), found {_show(n)}")
            if n not in axes:
                if n in fixed or n.removeprefix("model.") in model_fixed:
                    ck.fail(
                        key,
                        f"{n!r} is not an axis of this block (it has a single value); "
                        f"zip takes axis names ({', '.join(axis_names) or 'none'})",
                    )
                ck.fail(
                    key,
                    f"{n!r} is not an axis of this block{_hint(n, axis_names)} "
                    f"(axes: {', '.join(axis_names) or 'none'})",
                )
            if n in where:
                ck.fail(
                    key,
                    f"{n!r} is already in zip group {where[n]}; an axis may be in "
                    "at most one zip group",
                )
            where[n] = g
            members.append(n)
        lengths = {n: len(axes[n]) for n in members}
        if len(set(lengths.values())) > 1:
            found = ", ".join(f"{n}: {k}" for n, k in lengths.items())
            ck.fail(gkey, f"expected the axes of a zip group to have equal lengths, found {found}")
        groups.append(tuple(members))
    return tuple(groups)


# --------------------------------------------------------------------------------------
# the hash
