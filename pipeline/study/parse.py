"""Study files: parse and validate a TOML study into a frozen :class:`StudySpec`.

A study file names a mechanism, the methods to compare and the values to sweep
(DESIGN.md, "Study file")::

    studies/NAME.toml --load_study--> StudySpec --pipeline.grid.expand_grid--> Grid

Validation is complete before anything runs: every key is checked against the registry
(:mod:`solvers.registry`) and the first problem raises :class:`StudyError`, whose text is
one line ``"{source}: {key}: {message}"`` naming the key path (``runs[1].omega_o``,
``study.t_end``, ``output.series[2]``), what was expected and what was found, with the
closest valid name for typos. :func:`check_study` returns every problem instead of the
first. Loading never writes anything.

Resolved values
---------------
Every mapping is a tuple of ``(name, value)`` pairs (picklable, hashable); resolved
parameter sets (defaults filled in) follow the registry spec's order, values given in the
file follow the file's order. Values are normalised by the parameter's kind: ``float``
parameters are Python floats (``5`` and ``5.0`` are the same value, ``-0.0`` is ``0.0``),
``int`` parameters ints, ``bool`` bools, ``str`` strings.

Choices made where the brief is silent (recorded here and in the report)
------------------------------------------------------------------------
* ``[reference]`` is merged over the model's default reference: a key given in the file
  wins; parameters of the default that the chosen formulation / integrator do not take
  are dropped (a default ``rtol`` does not break ``integrator = "rk4"``), while such
  parameters given in the file are errors.
* A key taken by both the formulation and the integrator sets both.
* In a zip group one member may repeat values (``xi = [1.0, 1.0, 0.5]`` zipped with
  ``omega_n``); the *rows* of the group must be distinct.
* A run may not be named ``reference`` (the store's reference group).
* Model axes take their place in the axis order where TOML puts the block's ``model``
  table: at the first ``model.NAME`` key of the block (dotted keys build one table), or
  where a ``[runs.model]`` sub-table is written (after the block's other keys).
* ``output.store`` is kept as written (a relative path is relative to the current
  directory of the command, not to the study file; ``base_dir`` is recorded for tools
  that want the file's directory).
* ``spec_hash`` includes the order of the swept dimensions of each block and their
  values, because they fix which case sits at which index of the store (exactly like the
  batch size fixes the chunks): reordering fixed keys, sections, zip members or
  ``[[runs]]`` blocks leaves the hash unchanged; reordering two axes of a block changes
  the case order and so the hash (the case ids stay the same).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from mbstudy.solvers import registry
from mbstudy.solvers.registry import UnknownName, closest
from mbstudy.solvers.spec import IntegratorSpec, Param

__all__ = [
    "SECTIONS",
    "SERIES",
    "ClusterSpec",
    "OutputSpec",
    "ReferenceSpec",
    "RunSpec",
    "StudyError",
    "StudySpec",
    "check_study",
    "load_study",
    "parse_study",
]

Pairs = tuple[tuple[str, Any], ...]

SECTIONS = ("study", "model", "reference", "runs", "output", "cluster")
STUDY_KEYS = ("name", "model", "t_end", "samples", "batch_size", "max_cases", "description")
RUN_KEYS = ("name", "formulation", "integrator", "t_end", "samples", "zip", "model")
OUTPUT_KEYS = ("store", "series")
CLUSTER_KEYS = (
    "kind",
    "queue",
    "account",
    "cores",
    "memory",
    "walltime",
    "jobs",
    "processes",
    "job_extra",
    "worker_lifetime",
)
CLUSTER_KINDS = ("slurm", "pbs")
SERIES = (
    "phi_norm",
    "dphi_norm",
    "ddphi_norm",
    "energy",
    "energy_balance",
    "q",
    "v",
    "input_norm",
    "lam",
)
DEFAULT_SAMPLES = 301
DEFAULT_MAX_CASES = 10**7
H_RTOL = 1e-9  # h must divide the output interval to this relative tolerance
RESERVED_RUN_NAMES = ("reference",)

_GROUP_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|PB|KIB|MIB|GIB|TIB|PIB)$", re.IGNORECASE)
_WALLTIME = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")
_LIFETIME = re.compile(
    r"^\d+(\.\d+)?\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)$",
    re.IGNORECASE,
)
HASH_FORMAT = "mbstudy-study-v1"


# --------------------------------------------------------------------------------------
# errors


class StudyError(Exception):
    """A study file that cannot be run.

    Attributes
    ----------
    source : str
        The study file's path (or ``"<string>"``).
    key : str
        Key path of the offending value: ``"runs[1].omega_o"``, ``"study.t_end"``,
        ``"output.series[2]"``, ``"(toml)"`` for syntax errors, ``"(file)"`` when the file
        cannot be read.
    message : str
        What was expected and what was found (one line).
    """

    def __init__(self, source: str, key: str, message: str) -> None:
        self.source = str(source)
        self.key = str(key)
        self.message = re.sub(r"\s*[\r\n]+\s*", " ", str(message)).strip()
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"

    def __reduce__(self) -> tuple:
        return (StudyError, (self.source, self.key, self.message))


class _Bad:
    """Sentinel for a value whose validation failed (collect mode only)."""

    def __repr__(self) -> str:
        return "<invalid>"


_BAD = _Bad()


class _Checker:
    """Raises the first error, or (``collect=True``) records every error and goes on."""

    def __init__(self, source: str, collect: bool) -> None:
        self.source = source
        self.collect = collect
        self.errors: list[StudyError] = []

    def fail(self, key: str, message: str) -> NoReturn:
        raise StudyError(self.source, key, message)

    def report(self, key: str, message: str) -> None:
        err = StudyError(self.source, key, message)
        if not self.collect:
            raise err
        self.errors.append(err)

    def attempt(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StudyError as err:
            if not self.collect:
                raise
            self.errors.append(err)
            return _BAD


def _show(value: Any, limit: int = 60) -> str:
    """TOML-like one-line rendering of a found value, for messages."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, dict):
        text = "a table {" + ", ".join(str(k) for k in value) + "}"
    elif isinstance(value, list | tuple):
        text = "[" + ", ".join(_show(v, limit) for v in value) + "]"
    else:
        text = str(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _hint(name: str, valid: list[str] | tuple[str, ...]) -> str:
    best = closest(name, valid)
    return f"; did you mean {best!r}?" if best else ""


def _valid(valid: list[str] | tuple[str, ...]) -> str:
    return f" (valid: {', '.join(valid)})" if valid else " (none are valid here)"


# --------------------------------------------------------------------------------------
# resolved specs


@dataclass(frozen=True)
class ReferenceSpec:
    """How the reference trajectory is computed (once per :class:`ReferenceKey`).

    Attributes
    ----------
    integrator, formulation : registry names.
    params : every parameter of the formulation then the integrator, defaults filled in
        (spec order; a name both take appears once).
    formulation_params, integrator_params : the same split by owner.
    """

    integrator: str
    formulation: str
    params: Pairs
    formulation_params: Pairs = ()
    integrator_params: Pairs = ()

    @property
    def params_dict(self) -> dict[str, Any]:
        """``params`` as a dict."""
        return dict(self.params)

    @property
    def formulation_dict(self) -> dict[str, Any]:
        """``formulation_params`` as a dict."""
        return dict(self.formulation_params)

    @property
    def integrator_dict(self) -> dict[str, Any]:
        """``integrator_params`` as a dict."""
        return dict(self.integrator_params)


@dataclass(frozen=True)
class RunSpec:
    """One ``[[runs]]`` block, resolved.

    Attributes
    ----------
    name : group name in the store.
    formulation, integrator : registry names.
    t_end, samples : the block's interval end and number of output times.
    fixed : every non-swept parameter of the formulation then the integrator, defaults
        filled in (spec order), followed by the block's fixed model overrides as
        ``model.NAME`` (file order).
    axes : swept parameters in file order, ``(name, values)``; model axes are named
        ``model.NAME``.
    zip : validated zip groups (axis names, as in the file).
    batch_size : cases per batch = chunk length along ``case`` (resolved; "auto" is
        estimated by :func:`pipeline.grid.auto_batch_size`).
    formulation_keys, integrator_keys : parameter names of the formulation and of the
        integrator (spec order), so that parameters can be routed without the registry.
    """

    name: str
    formulation: str
    integrator: str
    t_end: float
    samples: int
    fixed: Pairs
    axes: tuple[tuple[str, tuple], ...]
    zip: tuple[tuple[str, ...], ...]
    batch_size: int = 1
    formulation_keys: tuple[str, ...] = ()
    integrator_keys: tuple[str, ...] = ()

    @property
    def fixed_dict(self) -> dict[str, Any]:
        """``fixed`` as a dict."""
        return dict(self.fixed)

    @property
    def axes_dict(self) -> dict[str, tuple]:
        """``axes`` as a dict (file order)."""
        return dict(self.axes)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Swept names in file order."""
        return tuple(name for name, _ in self.axes)

    def dim_groups(self) -> tuple[tuple[str, ...], ...]:
        """Names of each product dimension in case order (a zip group is one dimension).

        A zip group sits at the position of its member that comes first in the file; its
        names are in file order.
        """
        group_of: dict[str, tuple[str, ...]] = {}
        for group in self.zip:
            for name in group:
                group_of[name] = group
        out: list[tuple[str, ...]] = []
        seen: set[str] = set()
        order = self.axis_names
        for name in order:
            if name in seen:
                continue
            group = group_of.get(name, (name,))
            members = tuple(n for n in order if n in group)
            seen.update(members)
            out.append(members)
        return tuple(out)

    @property
    def shape(self) -> tuple[int, ...]:
        """Length of each product dimension."""
        lengths = self.axes_dict
        return tuple(len(lengths[g[0]]) for g in self.dim_groups())

    @property
    def n_cases(self) -> int:
        """Number of cases of the block."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class OutputSpec:
    """``[output]``: the store path (as written, not resolved) and the sampled series."""

    store: str
    series: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterSpec:
    """``[cluster]``: a dask-jobqueue cluster (unset fields are None)."""

    kind: str
    queue: str | None = None
    account: str | None = None
    cores: int | None = None
    memory: str | None = None
    walltime: str | None = None
    jobs: int | None = None
    processes: int | None = None
    job_extra: tuple[str, ...] = ()
    worker_lifetime: str | None = None


@dataclass(frozen=True)
class StudySpec:
    """A validated study.

    Attributes
    ----------
    name, description : from ``[study]``.
    model : registry model name.
    t_end, samples : study defaults for every block (blocks may override).
    batch_size : the study option; None means "auto" (each block's resolved batch size is
        ``RunSpec.batch_size``).
    max_cases : the case budget checked at load time.
    model_params : every model parameter, ``[model]`` overrides and defaults (spec order).
    reference : how the reference is computed.
    runs : the ``[[runs]]`` blocks in file order.
    output, cluster : ``[output]`` and ``[cluster]`` (None when absent).
    text : the study file's text.
    source : the file's path (``"<string>"`` for :func:`parse_study` by default).
    base_dir : directory of the study file (absolute).
    spec_hash : sha256 hex of the canonical JSON of everything that affects results
        (see :func:`canonical_payload`).
    """

    name: str
    description: str
    model: str
    t_end: float
    samples: int
    batch_size: int | None
    max_cases: int
    model_params: Pairs
    reference: ReferenceSpec
    runs: tuple[RunSpec, ...]
    output: OutputSpec
    cluster: ClusterSpec | None
    text: str
    source: str
    base_dir: str
    spec_hash: str

    @property
    def model_dict(self) -> dict[str, Any]:
        """``model_params`` as a dict."""
        return dict(self.model_params)

    @property
    def n_cases(self) -> int:
        """Total number of cases over all blocks."""
        return sum(run.n_cases for run in self.runs)

    def run(self, name: str) -> RunSpec:
        """Return the block named ``name``."""
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)


# --------------------------------------------------------------------------------------
# entry points


def load_study(path: str | Path, force: bool = False) -> StudySpec:
    """Read and validate a study file.

    Parameters
    ----------
    path : str or Path
        The TOML study file.
    force : bool
        Accept more cases than ``study.max_cases``.

    Returns
    -------
    StudySpec

    Raises
    ------
    StudyError
        At the first problem (file unreadable, TOML syntax, any invalid value).
    """
    text, source, base = _read(path)
    return parse_study(text, source=source, base_dir=base, force=force)


def parse_study(
    text: str,
    source: str = "<string>",
    base_dir: Path | None = None,
    force: bool = False,
) -> StudySpec:
    """Validate the text of a study file.

    Parameters
    ----------
    text : str
        TOML text.
    source : str
        Name used in error messages and kept in ``StudySpec.source``.
    base_dir : Path, optional
        Directory the study belongs to (default: the current directory).
    force : bool
        Accept more cases than ``study.max_cases``.

    Raises
    ------
    StudyError
        At the first problem.
    """
    spec = _parse(text, source, base_dir, force, _Checker(source, collect=False))
    assert isinstance(spec, StudySpec)
    return spec


def check_study(path: str | Path, force: bool = False) -> list[str]:
    """Return every problem of a study file (empty if it is valid), one line each.

    Later checks that depend on an invalid value are skipped, so fixing the listed problems
    can reveal new ones; a TOML syntax error is the only error reported for its file.
    """
    try:
        text, source, base = _read(path)
    except StudyError as err:
        return [str(err)]
    checker = _Checker(source, collect=True)
    try:
        _parse(text, source, base, force, checker)
    except StudyError as err:  # an error raised outside any attempt()
        checker.errors.append(err)
    return [str(e) for e in checker.errors]


def _read(path: str | Path) -> tuple[str, str, Path]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StudyError(str(path), "(file)", f"cannot read the study file: {reason}") from None
    return text, str(path), path.resolve().parent


# --------------------------------------------------------------------------------------
# value checks


def _table(ck: _Checker, key: str, value: Any, how: str) -> dict:
    if not isinstance(value, dict):
        ck.fail(key, f"expected a table ({how}), found {_show(value)}")
    return value


def _number(ck: _Checker, key: str, value: Any, what: str = "a number > 0") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        ck.fail(key, f"expected {what}, found {_show(value)}")
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        ck.fail(key, f"expected {what}, found {_show(value)}")
    return x + 0.0


def _integer(ck: _Checker, key: str, value: Any, minimum: int, what: str = "") -> int:
    what = what or f"an integer >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        ck.fail(key, f"expected {what}, found {_show(value)}")
    return int(value)


def _string(ck: _Checker, key: str, value: Any, what: str = "a string") -> str:
    if not isinstance(value, str) or not value:
        ck.fail(key, f"expected {what}, found {_show(value)}")
    return value


def _normalize(prm: Param, value: Any) -> Any:
    """Return a validated value in its canonical Python type."""
    if prm.kind == "float":
        return float(value) + 0.0
    if prm.kind == "int":
        return int(value)
    return value


def _param_value(ck: _Checker, key: str, prm: Param, value: Any) -> Any:
    expected = prm.check(value)
    if expected is not None:
        ck.fail(key, f"expected {expected} for {prm.name} ({prm.meaning}), found {_show(value)}")
    return _normalize(prm, value)


def _axis(ck: _Checker, key: str, prm: Param, values: list) -> tuple:
    """Validate each value of an axis (duplicates are checked per dimension later)."""
    if not values:
        ck.fail(key, f"expected a non-empty list of values for {prm.name}, found []")
    out = []
    for j, value in enumerate(values):
        out.append(_param_value(ck, f"{key}[{j}]", prm, value))
    return tuple(out)


def _first_duplicate(values: tuple) -> tuple[int, int] | None:
    seen: dict[Any, int] = {}
    for j, value in enumerate(values):
        token = (type(value).__name__, value)
        if token in seen:
            return seen[token], j
        seen[token] = j
    return None


def _entry(ck: _Checker, key: str, kind: str, name: Any, note: str = "") -> registry.Entry:
    if not isinstance(name, str):
        valid = sorted(registry.entries(kind))
        ck.fail(key, f"expected a {kind} name (a string){_valid(valid)}, found {_show(name)}")
    try:
        return registry.get(kind, name)
    except UnknownName as exc:
        hint = f"; did you mean {exc.suggestion!r}?" if exc.suggestion else ""
        ck.fail(key, f"unknown {kind} {name!r}{note}{hint}{_valid(exc.valid)}")


def _check_h(
    ck: _Checker,
    key: str,
    integ: IntegratorSpec,
    h_values: tuple,
    t_end: float,
    samples: int,
    indexed: bool,
) -> None:
    """A fixed-step integrator steps exactly h: h must divide t_end/(samples-1)."""
    if not integ.fixed_step:
        return
    interval = t_end / (samples - 1)
    for j, h in enumerate(h_values):
        if isinstance(h, bool) or not isinstance(h, int | float) or h <= 0:
            continue  # reported by the parameter check
        ratio = interval / h
        k = round(ratio)
        if k < 1 or abs(ratio - k) > H_RTOL * k:
            sub = f"{key}[{j}]" if indexed else key
            ck.report(
                sub,
                f"integrator {integ.name!r} steps exactly h, so h must divide the output "
                f"interval t_end/(samples-1) = {t_end:g}/{samples - 1} = {interval:.10g}; "
                f"found h = {h:g} (interval/h = {ratio:.10g}); use h = interval/k "
                f"(e.g. {interval / max(1, math.ceil(ratio)):.10g}) or change samples",
            )


# --------------------------------------------------------------------------------------
# the parser


def _parse(
    text: str,
    source: str,
    base_dir: Path | None,
    force: bool,
    ck: _Checker,
) -> StudySpec | None:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        ck.report("(toml)", f"malformed TOML: {exc}")
        return None

    for key in doc:
        if key not in SECTIONS:
            ck.report(key, f"unknown section {key!r}{_hint(key, SECTIONS)}{_valid(SECTIONS)}")

    # [study] ------------------------------------------------------------------------
    study = doc.get("study")
    if study is None:
        ck.fail("study", "the [study] section is required (with name and model)")
    study = _table(ck, "study", study, "[study]")
    for key in study:
        if key not in STUDY_KEYS:
            ck.report(
                f"study.{key}",
                f"unknown key {key!r}{_hint(key, STUDY_KEYS)}{_valid(STUDY_KEYS)}",
            )

    name = ck.attempt(_study_name, ck, study)
    model_entry = ck.attempt(_study_model_or_file, ck, study, base_dir)
    model_spec = None if model_entry is _BAD else model_entry.spec
    default_t_end = float(model_spec.t_end) if model_spec is not None else 1.0
    t_end = default_t_end
    if "t_end" in study:
        t_end = ck.attempt(_number, ck, "study.t_end", study["t_end"])
    samples = DEFAULT_SAMPLES
    if "samples" in study:
        samples = ck.attempt(_integer, ck, "study.samples", study["samples"], 2)
    batch_size: Any = None
    if "batch_size" in study:
        batch_size = ck.attempt(_batch_size, ck, study["batch_size"])
    max_cases = DEFAULT_MAX_CASES
    if "max_cases" in study:
        max_cases = ck.attempt(_integer, ck, "study.max_cases", study["max_cases"], 1)
    description = ""
    if "description" in study:
        description = ck.attempt(_description, ck, study["description"])

    # [model] ------------------------------------------------------------------------
    model_params: Any = _BAD
    network: _NetworkInfo | None = None
    if model_spec is not None and hasattr(model_entry.module, "study_element_params"):
        got = ck.attempt(_network_model_section, ck, model_entry, doc.get("model", {}), base_dir)
        if got is not _BAD:
            model_params, network = got
    elif model_spec is not None:
        model_params = ck.attempt(_model_section, ck, model_spec, doc.get("model", {}))
    elif "model" in doc:
        ck.attempt(_table, ck, "model", doc["model"], "[model] parameter overrides")

    # [output], [cluster] ----------------------------------------------------------------
    output = ck.attempt(_output_section, ck, doc.get("output", {}), name)
    cluster = None
    if "cluster" in doc:
        cluster = ck.attempt(_cluster_section, ck, doc["cluster"])

    # [[runs]] ---------------------------------------------------------------------------
    runs_raw = doc.get("runs")
    if runs_raw is None:
        ck.fail("runs", "at least one [[runs]] block is required")
    if isinstance(runs_raw, dict):
        ck.fail("runs", "expected an array of tables ([[runs]], double brackets), found [runs]")
    if not isinstance(runs_raw, list) or not runs_raw:
        ck.fail("runs", f"expected at least one [[runs]] block, found {_show(runs_raw)}")

    study_ok = not any(v is _BAD for v in (t_end, samples, model_params)) and (
        model_spec is not None
    )
    runs: list[RunSpec] = []
    names_seen: dict[str, int] = {}
    for i, blk in enumerate(runs_raw):
        if not study_ok:
            # the block's defaults are unknown: check only what does not depend on them
            if not isinstance(blk, dict):
                ck.report(f"runs[{i}]", f"expected a table ([[runs]]), found {_show(blk)}")
            continue
        run = ck.attempt(
            _run_block, ck, i, blk, model_entry, dict(model_params), t_end, samples, network
        )
        if run is _BAD:
            continue
        if run.name in names_seen:
            ck.report(
                f"runs[{i}].name",
                f"duplicate run name {run.name!r} (also runs[{names_seen[run.name]}]); "
                "give each [[runs]] block a distinct name",
            )
            continue
        names_seen[run.name] = i
        runs.append(run)

    # [reference] ------------------------------------------------------------------------
    reference: Any = _BAD
    if study_ok:
        windows = sorted({(r.t_end, r.samples) for r in runs} or {(t_end, samples)})
        extra_default = _network_reference_defaults(model_entry, runs) if network else {}
        reference = ck.attempt(
            _reference_section, ck, model_spec, doc.get("reference", {}), windows,
            extra_default, getattr(model_entry, "module", None),
        )  # fmt: skip

    # case budget --------------------------------------------------------------------------
    total = sum(r.n_cases for r in runs)
    if max_cases is not _BAD and total > max_cases and not force:
        ck.report(
            "study.max_cases",
            f"the study has {total:,} cases, more than max_cases = {max_cases:,}; "
            "raise study.max_cases or load with force",
        )

    if (
        ck.errors
        or any(
            v is _BAD
            for v in (
                name,
                t_end,
                samples,
                batch_size,
                max_cases,
                description,
                model_params,
                output,
                cluster,
                reference,
            )
        )
        or len(runs) != len(runs_raw)
    ):
        return None  # only reachable in collect mode

    # batch sizes (auto: the cost model of pipeline.grid) ----------------------------------
    from mbstudy.pipeline.plan.grid import auto_batch_size  # lazy: grid imports this module

    resolved = []
    for run in runs:
        if batch_size is None:
            bs = auto_batch_size(model_spec.name, model_params, run)
        else:
            bs = min(batch_size, run.n_cases)
        resolved.append(replace(run, batch_size=bs))
    runs = resolved

    base = Path(base_dir) if base_dir is not None else Path.cwd()
    spec = StudySpec(
        name=name,
        description=description,
        model=model_spec.name,
        t_end=t_end,
        samples=samples,
        batch_size=batch_size,
        max_cases=max_cases,
        model_params=model_params,
        reference=reference,
        runs=tuple(runs),
        output=output,
        cluster=cluster,
        text=text,
        source=source,
        base_dir=str(base.resolve()) if not base.is_absolute() else str(base),
        spec_hash="",
    )
    return replace(spec, spec_hash=compute_spec_hash(spec))


def _study_name(ck: _Checker, study: dict) -> str:
    if "name" not in study:
        ck.fail("study.name", "required key is missing (the study's name, a string)")
    name = _string(ck, "study.name", study["name"], "a non-empty string")
    if "/" in name or "\\" in name or name in (".", "..") or not name.isprintable():
        ck.fail("study.name", f"expected a name without path separators, found {_show(name)}")
    return name


def _study_model(ck: _Checker, study: dict) -> registry.Entry:
    if "model" not in study:
        valid = sorted(registry.entries("model"))
        ck.fail("study.model", f"required key is missing (a registry model name){_valid(valid)}")
    return _entry(ck, "study.model", "model", study["model"])


def _study_model_or_file(ck: _Checker, study: dict, base_dir: Path | None) -> registry.Entry:
    """``study.model``: a registry name, or a mechanism file (a path ending in ``.toml`` or
    containing a separator) relative to the study file's directory, resolved to an
    absolute path (workers elsewhere find it; the file's content enters ``spec_hash``)."""
    from mbstudy.solvers.mechanisms import MechanismError, is_model_path

    value = study.get("model")
    if not (isinstance(value, str) and is_model_path(value)):
        return _study_model(ck, study)
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (Path(base_dir) if base_dir is not None else Path.cwd()) / path
    if not path.is_file():
        ck.fail("study.model", f"no such mechanism file {value!r} (resolved to {str(path)!r})")
    try:
        return registry.model(str(path.resolve()))
    except MechanismError as exc:
        ck.fail("study.model", str(exc))


def model_file_payload(model: str) -> dict[str, Any]:
    """What the study hash covers of a model defined by a file: its text and sha256
    (empty for registry names), so an edited mechanism file is a different study."""
    from mbstudy.solvers.mechanisms import is_model_path

    if not is_model_path(model):
        return {}
    try:
        raw = Path(model).read_bytes()
    except OSError:
        return {"model_file_sha256": None}
    return {"model_file_sha256": hashlib.sha256(raw).hexdigest()}


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
    ck: _Checker, model_entry: registry.Entry, section: Any, base_dir: Path | None
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
        params = module.study_element_params(path)
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


def _model_methods_check(module: Any, form_name: str, integ_name: str) -> str | None:
    """A model module's own restriction on methods (``check_compatible_methods``)."""
    check = getattr(module, "check_compatible_methods", None)
    return check(form_name, integ_name) if check is not None else None


def _network_reference_defaults(model_entry: registry.Entry, runs: list[RunSpec]) -> dict:
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


def _output_section(ck: _Checker, section: Any, study_name: Any) -> OutputSpec:
    section = _table(ck, "output", section, "[output]")
    for key in section:
        if key not in OUTPUT_KEYS:
            ck.report(
                f"output.{key}",
                f"unknown key {key!r}{_hint(key, OUTPUT_KEYS)}{_valid(OUTPUT_KEYS)}",
            )
    if "store" in section:
        store = _string(ck, "output.store", section["store"], "a store path or URL (a string)")
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


def _cluster_section(ck: _Checker, section: Any) -> ClusterSpec:
    section = _table(ck, "cluster", section, "[cluster]")
    for key in section:
        if key not in CLUSTER_KEYS:
            ck.report(
                f"cluster.{key}",
                f"unknown key {key!r}{_hint(key, CLUSTER_KEYS)}{_valid(CLUSTER_KEYS)}",
            )
    if "kind" not in section:
        ck.fail("cluster.kind", 'required key is missing ("slurm" or "pbs")')
    kind = section["kind"]
    if kind not in CLUSTER_KINDS or not isinstance(kind, str):
        hint = _hint(kind, CLUSTER_KINDS) if isinstance(kind, str) else ""
        ck.fail("cluster.kind", f'expected "slurm" or "pbs"{hint}, found {_show(kind)}')
    out: dict[str, Any] = {"kind": kind}
    for key in ("queue", "account"):
        if key in section:
            out[key] = ck.attempt(_string, ck, f"cluster.{key}", section[key])
    for key in ("cores", "jobs", "processes"):
        if key in section:
            out[key] = ck.attempt(_integer, ck, f"cluster.{key}", section[key], 1)
    if "memory" in section:
        mem = section["memory"]
        if not isinstance(mem, str) or not _MEMORY.match(mem.strip()):
            ck.report(
                "cluster.memory", f'expected a size like "4GB" or "512MiB", found {_show(mem)}'
            )
        else:
            out["memory"] = mem.strip()
    if "walltime" in section:
        wt = section["walltime"]
        if not isinstance(wt, str) or not _WALLTIME.match(wt):
            ck.report(
                "cluster.walltime", f'expected "HH:MM:SS" (e.g. "01:30:00"), found {_show(wt)}'
            )
        else:
            out["walltime"] = wt
    if "job_extra" in section:
        extra = section["job_extra"]
        if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
            ck.report("cluster.job_extra", f"expected a list of strings, found {_show(extra)}")
        else:
            out["job_extra"] = tuple(extra)
    if "worker_lifetime" in section:
        lt = section["worker_lifetime"]
        if not isinstance(lt, str) or not _LIFETIME.match(lt.strip()):
            ck.report(
                "cluster.worker_lifetime",
                f'expected a duration like "55m", "2h" or "3600s", found {_show(lt)}',
            )
        else:
            out["worker_lifetime"] = lt.strip()
    cores, procs = out.get("cores"), out.get("processes")
    if isinstance(cores, int) and isinstance(procs, int) and procs > cores:
        ck.report(
            "cluster.processes",
            f"expected at most cores = {cores} worker processes per job, found {procs}",
        )
    out = {k: v for k, v in out.items() if v is not _BAD}
    return ClusterSpec(**out)


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
    model_module: Any = None,
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
    why = registry.compatibility(model_spec.name, form.name, integ.name)
    if not why:
        why = _model_methods_check(model_module, form.name, integ.name)
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


def _run_block(
    ck: _Checker,
    i: int,
    blk: Any,
    model_entry: registry.Entry,
    model_params: dict[str, Any],
    study_t_end: float,
    study_samples: int,
    network: _NetworkInfo | None = None,
) -> RunSpec:
    pre = f"runs[{i}]"
    blk = _table(ck, pre, blk, "[[runs]]")
    model_spec = model_entry.spec
    mparams = {p.name: p for p in model_spec.params}
    if network is not None:  # element parameters of the netlist; the netlist is fixed
        mparams = dict(network.params)

    # methods
    for key in ("formulation", "integrator"):
        if key not in blk:
            valid = sorted(registry.entries(key))
            ck.fail(
                f"{pre}.{key}", f"required key is missing (a registry {key} name){_valid(valid)}"
            )
    form = _entry(ck, f"{pre}.formulation", "formulation", blk["formulation"])
    integ = _entry(ck, f"{pre}.integrator", "integrator", blk["integrator"])
    fparams, iparams, owners = _method_params(form, integ)

    # name
    name = blk.get("name", form.name)
    if not isinstance(name, str) or not _GROUP_NAME.match(name):
        ck.fail(
            f"{pre}.name",
            f"expected a group name of letters, digits, '_' and '-', found {_show(name)}",
        )
    if name in RESERVED_RUN_NAMES:
        ck.fail(
            f"{pre}.name",
            f"{name!r} is reserved for the store's reference group; choose another name",
        )

    # window
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

    # parameters, in file order
    fixed: dict[str, Any] = {}
    model_fixed: dict[str, Any] = {}
    axes: dict[str, tuple] = {}
    valid_keys = [*RUN_KEYS, *owners]

    def model_item(mkey: str, mname: str, value: Any) -> None:
        if network is not None and isinstance(value, dict):  # model.ELEMENT.PARAM
            for sub, sval in value.items():
                model_item(f"{mkey}.{sub}", f"{mname}.{sub}", sval)
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
                f"unknown parameter of model {model_spec.name!r}{_hint(mname, valid)}"
                f"{_valid(valid)}",
            )
            return
        if isinstance(value, list):
            axis = ck.attempt(_axis, ck, mkey, mparams[mname], value)
            if axis is not _BAD:
                axes[f"model.{mname}"] = axis
        else:
            v = ck.attempt(_param_value, ck, mkey, mparams[mname], value)
            if v is not _BAD:
                model_fixed[mname] = v

    for key, value in blk.items():
        kpath = f"{pre}.{key}"
        if key in ("name", "formulation", "integrator", "t_end", "samples", "zip"):
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
                model_item(f"{kpath}.{mname}", mname, mval)
            continue
        if key.startswith("model."):  # a quoted "model.NAME" key
            model_item(kpath, key[len("model.") :], value)
            continue
        if key not in owners:
            ck.report(
                kpath,
                f"unknown parameter {key!r}{_hint(key, valid_keys)} "
                f"({_takes(form.name, fparams, integ.name, iparams)})",
            )
            continue
        prm = _param_of(fparams, iparams, key)
        if isinstance(value, list):
            axis = ck.attempt(_axis, ck, kpath, prm, value)
            if axis is not _BAD:
                axes[key] = axis
            else:
                fixed[key] = _BAD  # reported; keeps "required" checks quiet
        else:
            fixed[key] = ck.attempt(_param_value, ck, kpath, prm, value)
        if key in iparams and key in fparams:
            other = iparams[key]
            vals = value if isinstance(value, list) else [value]
            for j, v in enumerate(vals):
                why = other.check(v)
                if why is not None:
                    sub = f"{kpath}[{j}]" if isinstance(value, list) else kpath
                    ck.report(
                        sub,
                        f"expected {why} for integrator {integ.name!r}'s {key}, found {_show(v)}",
                    )

    # zip groups (validated before duplicates: duplicates are judged per dimension)
    zip_groups: tuple[tuple[str, ...], ...] = ()
    if "zip" in blk:
        zip_groups = _zip_groups(ck, pre, blk["zip"], axes, fixed, model_fixed)
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

    # defaults, required parameters
    swept = frozenset(n for n in axes if not n.startswith("model."))
    f_res, i_res = _resolve_defaults(
        ck, pre, fparams, iparams, fixed, (form.name, integ.name), swept
    )

    # compatibility
    why = registry.compatibility(model_spec.name, form.name, integ.name)
    if not why:
        why = _model_methods_check(getattr(model_entry, "module", None), form.name, integ.name)
    if why:
        ck.fail(f"{pre}.integrator", f"incompatible combination: {why}")

    # fixed-step integrators: h divides the output interval
    if "h" in iparams and integ.spec.fixed_step:
        if "h" in axes:
            _check_h(ck, f"{pre}.h", integ.spec, axes["h"], t_end, samples, True)
        elif "h" in dict(i_res):
            _check_h(ck, f"{pre}.h", integ.spec, (dict(i_res)["h"],), t_end, samples, False)

    merged = dict(f_res)
    merged.update(i_res)
    fixed_pairs = tuple(merged.items()) + tuple((f"model.{k}", v) for k, v in model_fixed.items())
    return RunSpec(
        name=name,
        formulation=form.name,
        integrator=integ.name,
        t_end=t_end,
        samples=samples,
        fixed=fixed_pairs,
        axes=tuple(axes.items()),
        zip=zip_groups,
        formulation_keys=tuple(fparams),
        integrator_keys=tuple(iparams),
    )


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


def canonical_payload(spec: StudySpec) -> dict[str, Any]:
    """Return what ``spec_hash`` covers, as JSON-ready data.

    Covered: the model and its resolved parameters, t_end, samples, the resolved
    reference, the sampled series (as a set), and every block (sorted by name) fully
    resolved: methods, window, fixed parameters, the swept dimensions in case order
    (members of a zip group sorted by name) with their values, and the batch size.
    Not covered: comments, whitespace, key order, the order of ``[[runs]]`` blocks,
    the study's name and description, max_cases, ``output.store``, ``[cluster]``.
    """
    blocks = []
    for run in sorted(spec.runs, key=lambda r: r.name):
        axes = run.axes_dict
        dims = []
        for group in run.dim_groups():
            members = sorted(group)
            dims.append({"names": members, "values": [list(axes[n]) for n in members]})
        blocks.append(
            {
                "name": run.name,
                "formulation": run.formulation,
                "integrator": run.integrator,
                "t_end": run.t_end,
                "samples": run.samples,
                "fixed": dict(run.fixed),
                "dims": dims,
                "batch_size": run.batch_size,
            }
        )
    ref = spec.reference
    return {
        "format": HASH_FORMAT,
        "model": spec.model,
        "model_params": dict(spec.model_params),
        "t_end": spec.t_end,
        "samples": spec.samples,
        "reference": {
            "integrator": ref.integrator,
            "formulation": ref.formulation,
            "formulation_params": dict(ref.formulation_params),
            "integrator_params": dict(ref.integrator_params),
        },
        "series": sorted(spec.output.series),
        "blocks": blocks,
        **model_file_payload(spec.model),
    }


def compute_spec_hash(spec: StudySpec) -> str:
    """sha256 hex digest of :func:`canonical_payload` as canonical JSON."""
    text = json.dumps(
        canonical_payload(spec),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()
