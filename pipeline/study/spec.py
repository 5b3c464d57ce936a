"""The resolved study: :class:`StudyError` and the frozen dataclasses a study file becomes.

A study file (TOML) is validated by :mod:`mbstudy.pipeline.study.parse` into a
:class:`StudySpec` that holds one :class:`RunSpec` per ``[[runs]]`` block, a
:class:`ReferenceSpec`, an :class:`OutputSpec` and an optional :class:`ClusterSpec`. Every
mapping is a tuple of ``(name, value)`` pairs (:data:`Pairs`), so specs are picklable and
hashable. This module also names the vocabulary of the file format (sections, keys,
series).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mbstudy.solvers.api import Entry

__all__ = [
    "SECTIONS",
    "SERIES",
    "ClusterSpec",
    "MethodParamViews",
    "OutputSpec",
    "Pairs",
    "ReferenceSpec",
    "RunSpec",
    "StudyError",
    "StudySpec",
]

Pairs = tuple[tuple[str, Any], ...]

SECTIONS = ("study", "model", "reference", "runs", "search", "output", "cluster")
STUDY_KEYS = ("name", "model", "normalization", "t_end", "samples", "batch_size", "max_cases",
              "description")  # fmt: skip
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
RESERVED_RUN_NAMES = ("reference", "search")  # groups of the store (references; search blocks)




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



# --------------------------------------------------------------------------------------
# resolved specs


class MethodParamViews:
    """``formulation_dict`` / ``integrator_dict``: dict views of the ``formulation_params``
    and ``integrator_params`` pairs of a spec or a case (shared by
    :class:`ReferenceSpec` and :class:`mbstudy.pipeline.plan.grid.CaseParams`)."""

    formulation_params: Pairs
    integrator_params: Pairs

    @property
    def formulation_dict(self) -> dict[str, Any]:
        """``formulation_params`` as a dict."""
        return dict(self.formulation_params)

    @property
    def integrator_dict(self) -> dict[str, Any]:
        """``integrator_params`` as a dict."""
        return dict(self.integrator_params)


@dataclass(frozen=True)
class ReferenceSpec(MethodParamViews):
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
    batch_size : cases per batch = chunk length along ``case`` when the study file sets
        ``study.batch_size`` (clamped to the block); None for "auto": the planner
        (:func:`mbstudy.pipeline.plan.batches.auto_batch_size`) decides, and the store
        records what it used.
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
    batch_size: int | None = None
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
    overrides : the command line's ``KEY=VALUE`` overrides applied to the file before
        validation (:mod:`.overrides`), as typed; their effect is in the values above.
    entry : the model's registry entry, resolved once when the file was validated and
        passed on to every stage of the launch through :attr:`model_entry` (not pickled:
        a worker process resolves it again, once per spec it receives).
    searches : the ``[[search]]`` blocks in file order
        (:class:`mbstudy.pipeline.study.search_block.SearchSpec`).
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
    overrides: tuple[str, ...] = ()
    entry: Entry | None = field(default=None, compare=False, repr=False)

    @property
    def model_entry(self) -> Entry:
        """The model's registry entry: the one the loader resolved, else resolved now and
        kept (a spec unpickled in a worker process, or built without the loader)."""
        if self.entry is None:
            from mbstudy.solvers import api as solvers
            object.__setattr__(self, "entry", solvers.model(self.model))
        assert self.entry is not None
        return self.entry

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without :attr:`entry` (a module; the worker resolves its own)."""
        return {k: v for k, v in self.__dict__.items() if k != "entry"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__["entry"] = None
    searches: tuple = ()  # the [[search]] blocks (study/search_block.py SearchSpec)

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

