"""Study files: parse and validate a TOML study into a frozen :class:`StudySpec`.

A study file names a mechanism, the methods to compare and the values to sweep::

    studies/NAME.toml --load_study--> StudySpec --plan.grid.expand_grid--> Grid

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
  values, because they fix which case sits at which index of the store: reordering
  fixed keys, sections, zip members or ``[[runs]]`` blocks leaves the hash unchanged;
  reordering two axes of a block changes the case order and so the hash (the case ids
  stay the same).
* ``spec_hash`` covers ``study.batch_size`` as written: an explicit size (clamped to each
  block) is in it, ``"auto"`` is recorded as ``None``; the automatic sizes are the
  planner's (:mod:`mbstudy.pipeline.plan.batches`) and are recorded in the store.

The work is split by job: :mod:`.spec` (the dataclasses and :class:`StudyError`),
:mod:`.checks` (the error collector and value checkers), :mod:`.sections` (``[study]``,
``[model]``, ``[output]``, ``[reference]``), :mod:`.network_section`,
:mod:`.cluster_section`, :mod:`.blocks` (one ``[[runs]]`` block) and :mod:`.hashing`
(``spec_hash``), :mod:`.overrides` (``--set`` on the command line, applied to the parsed
document first); this module reads the file and puts the sections together.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mbstudy.pipeline.study.blocks import _run_block
from mbstudy.pipeline.study.checks import (
    _BAD,
    _Checker,
    _hint,
    _integer,
    _number,
    _show,
    _table,
    _unknown_keys,
    _valid,
)
from mbstudy.pipeline.study.cluster_section import _cluster_section
from mbstudy.pipeline.study.hashing import canonical_payload, compute_spec_hash
from mbstudy.pipeline.study.network_section import (
    _network_model_section,
    _network_reference_defaults,
    _NetworkInfo,
)
from mbstudy.pipeline.study.overrides import apply_overrides, blame
from mbstudy.pipeline.study.sections import (
    _batch_size,
    _description,
    _model_section,
    _output_section,
    _reference_section,
    _study_model_or_file,
    _study_name,
)
from mbstudy.pipeline.study.spec import (
    DEFAULT_MAX_CASES,
    DEFAULT_SAMPLES,
    SECTIONS,
    SERIES,
    STUDY_KEYS,
    ClusterSpec,
    OutputSpec,
    ReferenceSpec,
    RunSpec,
    StudyError,
    StudySpec,
)

__all__ = [
    "SECTIONS",
    "SERIES",
    "ClusterSpec",
    "OutputSpec",
    "ReferenceSpec",
    "RunSpec",
    "StudyError",
    "StudySpec",
    "canonical_payload",
    "check_study",
    "compute_spec_hash",
    "load_study",
    "parse_study",
]


# --------------------------------------------------------------------------------------
# entry points


def load_study(path: str | Path, force: bool = False, overrides: Sequence[str] = ()) -> StudySpec:
    """Read and validate a study file.

    Parameters
    ----------
    path : str or Path
        The TOML study file.
    force : bool
        Accept more cases than ``study.max_cases``.
    overrides : KEY=VALUE strings set in the file's document before validation
        (:mod:`.overrides`; the command line's ``--set``).

    Returns
    -------
    StudySpec

    Raises
    ------
    StudyError
        At the first problem (file unreadable, TOML syntax, any invalid value).
    """
    text, source, base = _read(path)
    return parse_study(text, source=source, base_dir=base, force=force, overrides=overrides)


def parse_study(
    text: str,
    source: str = "<string>",
    base_dir: Path | None = None,
    force: bool = False,
    overrides: Sequence[str] = (),
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
    overrides : KEY=VALUE strings (:mod:`.overrides`), recorded in ``StudySpec.overrides``.

    Raises
    ------
    StudyError
        At the first problem.
    """
    spec = _parse(text, source, base_dir, force, _Checker(source, collect=False), overrides)
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
    """The text of a study file, read under the rules of every file a study refers to
    (:func:`~mbstudy.pipeline.study.references.read_regular_file`: a regular file of at
    most 4 MiB of strict UTF-8; a FIFO or a device is refused without blocking)."""
    from mbstudy.pipeline.study.references import FileRefused, read_regular_file

    path = Path(path)
    try:
        text = read_regular_file(path)
    except FileRefused as exc:
        raise StudyError(str(path), "(file)", f"cannot read the study file: {exc}") from None
    return text, str(path), path.resolve().parent


# --------------------------------------------------------------------------------------
# the parser


def _parse(
    text: str,
    source: str,
    base_dir: Path | None,
    force: bool,
    ck: _Checker,
    overrides: Sequence[str] = (),
) -> StudySpec | None:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        ck.report("(toml)", f"malformed TOML: {exc}")
        return None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        ck.report("(toml)", "malformed TOML: arrays or inline tables nested too deeply")
        return None
    doc, applied = apply_overrides(doc, overrides, source)
    try:
        spec = _parse_doc(doc, text, source, base_dir, force, ck)
    except StudyError as err:
        raise blame(err, applied) from None
    ck.errors[:] = [blame(e, applied) for e in ck.errors]
    if spec is None or not applied:
        return spec
    return replace(spec, overrides=tuple(o.text for o in applied))


def _parse_doc(
    doc: dict,
    text: str,
    source: str,
    base_dir: Path | None,
    force: bool,
    ck: _Checker,
) -> StudySpec | None:
    for key in doc:
        if key not in SECTIONS:
            ck.report(key, f"unknown section {key!r}{_hint(key, SECTIONS)}{_valid(SECTIONS)}")

    # [study] ------------------------------------------------------------------------
    study = doc.get("study")
    if study is None:
        ck.fail("study", "the [study] section is required (with name and model)")
    study = _table(ck, "study", study, "[study]")
    _unknown_keys(ck, "study", study, STUDY_KEYS)

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
    if runs_raw is None and "search" in doc:
        runs_raw = []  # a study of search blocks only
    elif runs_raw is None:
        ck.fail("runs", "at least one [[runs]] block is required")
    if isinstance(runs_raw, dict):
        ck.fail("runs", "expected an array of tables ([[runs]], double brackets), found [runs]")
    if not isinstance(runs_raw, list) or (not runs_raw and "search" not in doc):
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

    # [[search]] -------------------------------------------------------------------------
    searches = _search_blocks(ck, doc, study_ok, model_entry, model_params, t_end, samples,
                              names_seen)  # fmt: skip

    # [reference] ------------------------------------------------------------------------
    reference: Any = _BAD
    if study_ok:
        # the windows of the grid blocks and of the search blocks (their cases are
        # measured against a reference too: pipeline/run/search.py)
        windows = sorted({(r.t_end, r.samples) for r in runs}
                         | {(s.base.t_end, s.base.samples) for s in searches or ()}
                         or {(t_end, samples)})  # fmt: skip
        extra_default = _network_reference_defaults(model_entry, runs) if network else {}
        reference = ck.attempt(
            _reference_section, ck, model_spec, doc.get("reference", {}), windows,
            extra_default,
        )  # fmt: skip

    # case budget --------------------------------------------------------------------------
    n_refs = sum(_reference_count(r) for r in runs)  # reference tasks count as cases
    total = sum(r.n_cases for r in runs) + n_refs
    if total > FORCE_MAX_CASES:
        ck.report(
            "study.max_cases",
            f"the study has {total:,} cases and references; more than {FORCE_MAX_CASES:,} is"
            f" refused even with force (its store alone would hold about"
            f" {total * MIN_CASE_BYTES / 2**30:,.0f} GiB of metrics); split the study",
        )
    elif max_cases is not _BAD and total > max_cases and not force:
        ck.report(
            "study.max_cases",
            f"the study has {total - n_refs:,} cases and up to {n_refs:,} references, more"
            f" than max_cases = {max_cases:,}; raise study.max_cases or load with force",
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
        or searches is None
    ):
        return None  # only reachable in collect mode

    # an explicit batch size, clamped to each block; "auto" (None) is left to the planner
    if batch_size is not None:
        runs = [replace(run, batch_size=min(batch_size, run.n_cases)) for run in runs]

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
        entry=model_entry,
        searches=tuple(searches),
    )
    return replace(spec, spec_hash=compute_spec_hash(spec))



def _search_blocks(ck, doc, study_ok, model_entry, model_params, t_end, samples,
                   names_seen) -> list | None:  # fmt: skip
    """The ``[[search]]`` blocks (:mod:`.search_block`); None when one is invalid."""
    from mbstudy.pipeline.study.search_block import search_block

    raw = doc.get("search")
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        ck.fail("search", f"expected [[search]] blocks (double brackets), found {_show(raw)}")
    if not study_ok:
        return None
    out = []
    for i, blk in enumerate(raw):
        got = ck.attempt(search_block, ck, i, blk, model_entry, dict(model_params), t_end,
                         samples)  # fmt: skip
        if got is _BAD:
            continue
        if got.name in names_seen:
            ck.report(f"search[{i}].name", f"duplicate block name {got.name!r}; give each"
                      " [[runs]] and [[search]] block a distinct name")
            continue
        names_seen[got.name] = i
        out.append(got)
    return out if len(out) == len(raw) else None


def _reference_count(run) -> int:
    """Upper bound of the references a block needs: one per combination of the values of
    its dimensions that sweep a model parameter (each is one more solve and one more store
    group, so they count toward ``max_cases``)."""
    axes = run.axes_dict
    count = 1
    for group in run.dim_groups():
        if any(name.startswith("model.") for name in group):
            count *= len(axes[sorted(group)[0]])
    return count


# Beyond this many cases even ``force`` is refused: every case costs at least its metrics
# (~30 float64) in the store and a coordinate row in the template, so such a study is a
# mistake, not a plan (the launcher's memory is bounded per chunk below it).
FORCE_MAX_CASES = 10**8
MIN_CASE_BYTES = 256
