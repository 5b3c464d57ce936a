"""One ``[[search]]`` block of a study file -> a resolved :class:`SearchSpec`.

A search block asks a question instead of listing a grid::

    [[search]]
    name = "edge"
    formulation = "baumgarte"
    integrator = "rk4"
    xi = [0.5, 1.0]                       # a list: one search per value
    h = { log = [1e-4, 0.05] }            # continuous axes: bounds only
    omega_n = { log = [1.0, 2000.0] }
    goal = { boundary = "status" }        # or { boundary = "rms_phi", at = 1e-3 }
    budget = 400                          # cases at most, per search

Continuous axes are ``{ log = [a, b] }`` or ``{ lin = [a, b] }`` (no ``num``: a range
with ``num`` is a list axis, expanded as in a ``[[runs]]`` block). Lists and fixed values
are validated exactly as in ``[[runs]]``: the block is checked by
:func:`mbstudy.pipeline.study.blocks._run_block` with each continuous axis replaced by
its two bounds, so every parameter check, default and method-compatibility rule is the
same. Goals (docs/guide/search.md):

- ``{ boundary = "status" }``: where the status changes between ok and not ok;
- ``{ boundary = METRIC, at = X }``: where METRIC crosses X;
- ``{ minimize = METRIC }`` / ``{ maximize = METRIC }``: the optimum over the one
  continuous axis, per combination of the list axes;
- ``{ refine = METRIC, tol = T }``: METRIC against the one continuous axis sampled until
  the loss of every interval is below T.

A boundary in two continuous axes is a curve: the first continuous axis in the file is
the one crossed, bracketed for ``lines`` values of the second. Fixed-step integrators get
a continuous ``h`` snapped to a divisor of the output interval (:func:`snap_h`): the value
run is the value stored.

Errors are the one-line ``"{file}: search[i].KEY: message"`` of every study key (unknown
goal, a metric that does not exist, a discrete axis given as bounds, a budget below what
the goal needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mbstudy.pipeline.study.checks import _Checker, _hint, _integer, _show, _valid
from mbstudy.pipeline.study.spec import RunSpec, StudyError

__all__ = [
    "GOALS",
    "SEARCH_KEYS",
    "ContinuousAxis",
    "SearchSpec",
    "search_block",
    "snap_h",
]

GOALS = ("boundary", "minimize", "maximize", "refine")
# keys of a search block beyond those of a [[runs]] block
SEARCH_ONLY_KEYS = ("goal", "budget", "seed", "per_round", "initial", "lines", "tol")
SEARCH_KEYS = ("name", "formulation", "integrator", "t_end", "samples", "model",
               *SEARCH_ONLY_KEYS)  # fmt: skip
DEFAULT_PER_ROUND = 4
DEFAULT_INITIAL = 8
DEFAULT_LINES = 15
DEFAULT_TOL = {"boundary": 2e-3, "minimize": 2e-3, "maximize": 2e-3, "refine": 0.05}


@dataclass(frozen=True)
class ContinuousAxis:
    """A continuous axis: bounds and scale (``log`` or ``lin``); ``snap`` is the output
    interval a fixed-step ``h`` must divide (0.0: no snapping)."""

    name: str
    lo: float
    hi: float
    scale: str
    snap: float = 0.0

    def to_unit(self, x: float) -> float:
        """Position of ``x`` in [0, 1] along the axis (in its scale)."""
        if self.scale == "log":
            return (math.log(x) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (x - self.lo) / (self.hi - self.lo)

    def from_unit(self, u: float) -> float:
        """The value at position ``u`` in [0, 1], snapped when the axis is a fixed-step h."""
        if self.scale == "log":
            x = math.exp(math.log(self.lo) + u * (math.log(self.hi) - math.log(self.lo)))
        else:
            x = self.lo + u * (self.hi - self.lo)
        x = float(f"{x:.12g}")
        return snap_h(x, self.snap) if self.snap else x


@dataclass(frozen=True)
class SearchSpec:
    """One ``[[search]]`` block, resolved.

    Attributes
    ----------
    name : group name in the store.
    base : the block as a :class:`RunSpec` (methods, window, fixed values, list axes;
        each continuous axis appears in ``base.axes`` with its two bounds only).
    continuous : the continuous axes in file order (the first is the one a boundary
        crosses).
    lists : the list axes ``(name, values)`` in file order: one search per combination.
    goal : ``boundary``, ``minimize``, ``maximize`` or ``refine``.
    metric : ``status`` or a float metric name.
    at : the level a metric boundary crosses (None for ``status`` and the other goals).
    budget : cases at most per search (per combination of the list axes).
    seed, per_round, initial, lines, tol : the search's settings (docs/guide/search.md).
    """

    name: str
    base: RunSpec
    continuous: tuple[ContinuousAxis, ...]
    lists: tuple[tuple[str, tuple], ...]
    goal: str
    metric: str
    at: float | None
    budget: int
    seed: int = 0
    per_round: int = DEFAULT_PER_ROUND
    initial: int = DEFAULT_INITIAL
    lines: int = 1
    tol: float = 2e-3

    @property
    def combinations(self) -> list[tuple[tuple[str, Any], ...]]:
        """Every combination of the list axes' values, C order (one search each)."""
        combos: list[tuple[tuple[str, Any], ...]] = [()]
        for name, values in self.lists:
            combos = [(*c, (name, v)) for c in combos for v in values]
        return combos

    @property
    def capacity(self) -> int:
        """Store rows of the block: the budget of every search."""
        return self.budget * len(self.combinations)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Continuous then list axis names."""
        return tuple(a.name for a in self.continuous) + tuple(n for n, _ in self.lists)

    def needed(self) -> int:
        """The fewest cases the goal needs per search (its first round)."""
        return self.initial * (self.lines if self.goal == "boundary" else 1)


def snap_h(h: float, interval: float) -> float:
    """The step that divides ``interval`` nearest below ``h`` (``interval / ceil(interval /
    h)``), rounded to 12 significant digits like every range value; ``interval`` itself
    when ``h`` is larger. A fixed-step integrator steps exactly h, so h must divide the
    output interval t_end / (samples - 1) (the rule every ``[[runs]]`` block follows)."""
    k = max(1, math.ceil(interval / h - 1e-9))
    return float(f"{interval / k:.12g}")


def _continuous(ck: _Checker, key: str, value: Any) -> tuple[str, float, float] | None:
    """``{log = [a, b]}`` / ``{lin = [a, b]}`` -> (scale, a, b); None for other values."""
    if not isinstance(value, dict) or set(value) not in ({"log"}, {"lin"}):
        return None
    scale = next(iter(value))
    ends = value[scale]
    ok = (
        isinstance(ends, list)
        and len(ends) == 2
        and all(isinstance(e, int | float) and not isinstance(e, bool) for e in ends)
        and all(math.isfinite(e) for e in ends)
    )
    if not ok:
        ck.fail(f"{key}.{scale}",
                f"expected bounds [a, b] (two finite numbers), found {_show(ends)}")
    a, b = float(ends[0]), float(ends[1])
    if not a < b:
        ck.fail(f"{key}.{scale}", f"expected bounds a < b, found [{a:g}, {b:g}]")
    if scale == "log" and a <= 0:
        ck.fail(f"{key}.log", f"log bounds must be > 0, found [{a:g}, {b:g}]")
    return scale, a, b


def _goal(ck: _Checker, pre: str, raw: Any) -> tuple[str, str, float | None, float | None]:
    """``goal`` -> (goal, metric, at, tol)."""
    from mbstudy.solvers.api import FLOAT_METRICS

    key = f"{pre}.goal"
    example = 'e.g. goal = { boundary = "status" } or { minimize = "rms_phi" }'
    if not isinstance(raw, dict):
        ck.fail(key, f"expected a table ({example}), found {_show(raw)}")
    kinds = [k for k in raw if k in GOALS]
    for k in raw:
        if k not in GOALS and k not in ("at", "tol"):
            ck.fail(f"{key}.{k}", f"unknown goal {k!r}{_hint(k, GOALS)}{_valid(GOALS)}")
    if len(kinds) != 1:
        ck.fail(key, f"expected exactly one goal of {', '.join(GOALS)}, found {_show(raw)}")
    goal = kinds[0]
    metric = raw[goal]
    metrics = ("status", *FLOAT_METRICS) if goal == "boundary" else FLOAT_METRICS
    if not isinstance(metric, str) or metric not in metrics:
        ck.fail(
            f"{key}.{goal}",
            f"unknown metric {_show(metric)}{_hint(str(metric), metrics)}{_valid(metrics)}",
        )
    at = raw.get("at")
    if goal == "boundary" and metric != "status":
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            ck.fail(f"{key}.at", f"a boundary of {metric!r} needs the level it crosses,"
                    f" at = a number; found {_show(at)}")
        at = float(at)
    elif at is not None:
        ck.fail(f"{key}.at", f"'at' belongs to a metric boundary, not to {goal} = {metric!r}")
    tol = raw.get("tol")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, int | float)
                            or not 0 < tol < 1):  # fmt: skip
        ck.fail(f"{key}.tol", f"expected a number in (0, 1), found {_show(tol)}")
    return goal, metric, at, (float(tol) if tol is not None else None)


def search_block(
    ck: _Checker,
    i: int,
    blk: Any,
    model_entry: Any,
    model_params: dict[str, Any],
    study_t_end: float,
    study_samples: int,
) -> SearchSpec:
    """Validate block ``search[i]`` (raises :class:`StudyError` naming ``search[i].KEY``)."""
    from mbstudy.pipeline.study.blocks import _run_block
    from mbstudy.solvers import api as solvers
    pre = f"search[{i}]"
    if not isinstance(blk, dict):
        ck.fail(pre, f"expected a table ([[search]]), found {_show(blk)}")
    if "zip" in blk:
        ck.fail(f"{pre}.zip", "a search block takes no zip (its list axes are searched one"
                " combination at a time)")
    if "goal" not in blk:
        ck.fail(f"{pre}.goal", 'required key is missing (e.g. goal = { boundary = "status" })')
    if "budget" not in blk:
        ck.fail(f"{pre}.budget", "required key is missing (cases at most per search)")
    goal, metric, at, tol = _goal(ck, pre, blk["goal"])
    budget = _integer(ck, f"{pre}.budget", blk["budget"], 1)
    opts = {}
    settings = (("seed", 0, 0), ("per_round", DEFAULT_PER_ROUND, 1),
                ("initial", DEFAULT_INITIAL, 3), ("lines", DEFAULT_LINES, 2))
    for k, default, low in settings:
        opts[k] = _integer(ck, f"{pre}.{k}", blk[k], low) if k in blk else default
    if "tol" in blk:
        ck.fail(f"{pre}.tol", "tol is part of the goal: goal = { ..., tol = T }")

    # the block without the search keys, each continuous axis replaced by its bounds
    runs_like: dict[str, Any] = {}
    cont: list[tuple[str, str, float, float]] = []
    for key, value in blk.items():
        if key in SEARCH_ONLY_KEYS:
            continue
        got = _continuous(ck, f"{pre}.{key}", value)
        if got is None:
            runs_like[key] = value
            continue
        cont.append((key, *got))
        runs_like[key] = [got[1], got[2]]
    # a discrete parameter given as bounds
    form = blk.get("formulation")
    integ = blk.get("integrator")
    params = {}
    for kind, name in (("formulation", form), ("integrator", integ)):
        try:
            params.update({p.name: p for p in solvers.entry(kind, name).spec.params})
        except Exception:  # an unknown name is reported by _run_block below
            pass
    for name, *_ in cont:
        prm = params.get(name)
        if prm is not None and prm.kind != "float":
            ck.fail(f"{pre}.{name}", f"{name} is a discrete parameter ({prm.kind}); give it"
                    " as a list of values (one search per value), not as bounds")
        if name.startswith("model") or name == "model":
            ck.fail(f"{pre}.{name}", "model parameters may be fixed or lists in a search"
                    " block, not continuous bounds")
    if not cont:
        ck.fail(pre, "a search block needs at least one continuous axis, { log = [a, b] }"
                " or { lin = [a, b] }")
    if goal != "boundary" and len(cont) != 1:
        ck.fail(f"{pre}.goal", f"{goal} searches one continuous axis; found"
                f" {len(cont)} ({', '.join(c[0] for c in cont)}); make the others lists")
    if goal == "boundary" and len(cont) > 2:
        ck.fail(f"{pre}.goal", "a boundary is searched in one or two continuous axes;"
                f" found {len(cont)}; make the others lists")

    # snap a fixed-step h's bounds so the bounds check of the block holds
    t_end = float(blk.get("t_end", study_t_end)) if isinstance(
        blk.get("t_end", study_t_end), int | float) else study_t_end
    samples = blk.get("samples", study_samples)
    samples = samples if isinstance(samples, int) and samples >= 2 else study_samples
    interval = t_end / (samples - 1)
    fixed_step = False
    try:
        ispec = solvers.entry("integrator", integ).spec
        fixed_step = bool(ispec.fixed_step) and any(p.name == "h" for p in ispec.params)
    except Exception:  # reported by _run_block
        pass
    axes: list[ContinuousAxis] = []
    for name, scale, a, b in cont:
        snap = interval if (fixed_step and name == "h") else 0.0
        if snap:
            a, b = snap_h(a, snap), snap_h(b, snap)
            if not a < b:
                ck.fail(f"{pre}.h", f"the bounds snap to one step h = {a:g} (h divides the"
                        f" output interval {interval:g}); widen them")
            runs_like[name] = [a, b]
        axes.append(ContinuousAxis(name, a, b, scale, snap))

    sub = _Checker(ck.source, collect=False)
    try:
        base = _run_block(sub, i, runs_like, model_entry, model_params, study_t_end,
                          study_samples)  # fmt: skip
    except StudyError as err:
        key = err.key.replace(f"runs[{i}]", pre, 1)
        ck.fail(key, err.message.replace("[[runs]]", "[[search]]"))
    lines = opts["lines"] if (goal == "boundary" and len(axes) == 2) else 1
    cont_names = {a.name for a in axes}
    lists = tuple((n, v) for n, v in base.axes if n not in cont_names)
    spec = SearchSpec(
        name=base.name, base=base, continuous=tuple(axes), lists=lists, goal=goal,
        metric=metric, at=at, budget=budget, seed=opts["seed"], per_round=opts["per_round"],
        initial=opts["initial"], lines=lines, tol=tol if tol is not None else DEFAULT_TOL[goal],
    )  # fmt: skip
    if budget < spec.needed():
        ck.fail(f"{pre}.budget", f"budget = {budget} is below the {spec.needed()} cases the"
                f" goal's first round needs ({spec.initial} per line x {lines} lines);"
                " raise budget or lower initial/lines")
    return spec
