"""Proposers of the ``[[search]]`` blocks: the next round of cases from the stored ones.

Every function here is a pure function of the search's settings
(:class:`mbstudy.pipeline.study.search_block.SearchSpec`) and the cases already stored
(their axis values and outcomes): nothing random, nothing remembered between rounds. A
search killed at any moment and launched again therefore proposes exactly the cases an
uninterrupted search would have, and ends with the same answer (the recorded ``seed`` is
kept for proposers that would draw random numbers; these do not).

Goals, each per combination of the list axes, in the unit coordinate ``u`` in [0, 1] of
a continuous axis (its log or linear scale):

- ``boundary``, one axis: ``initial`` evenly spaced points, then bracketing: the first
  change of side (ok / failed, or below / above ``at``) going up the axis is cut into
  ``per_round + 1`` equal parts per round (a batch bisection: the bracket shrinks by
  ``per_round + 1`` per round), until it is narrower than ``tol`` or no new value exists
  between its ends (a fixed-step ``h`` snapped to the divisors of the output interval);
- ``boundary``, two axes: the curve as ``lines`` such lines along the first axis at
  evenly spaced values of the second, all advanced in the same rounds;
- ``minimize`` / ``maximize``: ``initial`` evenly spaced points, then a batch zoom (the
  bracketing form of golden-section search; Brent's method in
  ``scipy.optimize.minimize_scalar`` is sequential, one point per evaluation) kept on
  the ``per_round // 2`` best local optima at once (a multi-start zoom, so a metric
  rough at the first round's scale does not lock the search into the basin of its
  single best first point): both sides of each are bisected per round, until every kept
  optimum's bracket (its neighbours) is narrower than ``tol``;
- ``refine``: the curve of log10 |metric| against ``u`` sampled where python-adaptive's
  default loss of an interval (its length in the plane of ``u`` and the metric scaled to
  [0, 1]) is largest, ``per_round`` midpoints per round, until every loss is below
  ``tol``.

:func:`search_references` lists the reference trajectories the search cases need (one
per distinct model parameters, t_end and samples among the searches' combinations: a
continuous axis is never a model parameter), keyed as the grid's
:class:`~mbstudy.pipeline.plan.grid.ReferenceKey`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from mbstudy.pipeline.study.search_block import ContinuousAxis, SearchSpec

__all__ = [
    "Observation",
    "answer",
    "case_params",
    "line_values",
    "propose",
    "search_references",
    "side_of",
]


@dataclass(frozen=True)
class Observation:
    """One stored case of a search: its continuous axes' values and its outcome
    (``value``: the metric, or 1.0 / 0.0 for status ok / not ok)."""

    coords: dict[str, float]
    value: float


def side_of(search: SearchSpec, status: int, value: float) -> bool:
    """The ``ok`` side of a boundary: status ok, or the metric below ``at`` (a case that
    failed, or a NaN metric, is on the other side)."""
    from mbstudy.solvers.api import OK

    if search.metric == "status":
        return int(status) == OK
    return int(status) == OK and math.isfinite(value) and value < float(search.at)


def line_values(search: SearchSpec) -> list[float]:
    """The values of the second continuous axis at which a 2-D boundary is bracketed."""
    if len(search.continuous) < 2:
        return []
    axis = search.continuous[1]
    out: list[float] = []
    for k in range(search.lines):
        v = axis.from_unit(k / (search.lines - 1))
        if v not in out:
            out.append(v)
    return out


def _new_values(axis: ContinuousAxis, us: Sequence[float], seen: set[float]) -> list[float]:
    """Axis values at positions ``us``, without those already run (after snapping)."""
    out: list[float] = []
    for u in us:
        v = axis.from_unit(min(1.0, max(0.0, u)))
        if v not in seen and v not in out:
            out.append(v)
    return out


def _bracket(axis: ContinuousAxis, pts: list[tuple[float, bool]]) -> tuple[float, float] | None:
    """The first change of side going up the axis: (value before, value after)."""
    pts = sorted(pts)
    for (x0, s0), (x1, s1) in pairwise(pts):
        if s0 != s1:
            return x0, x1
    return None


def _line(search: SearchSpec, axis: ContinuousAxis, pts: list[tuple[float, bool]]) -> list[float]:
    """Next values along one line of a boundary search."""
    seen = {x for x, _ in pts}
    if not pts:
        return _new_values(axis, np.linspace(0.0, 1.0, search.initial), seen)
    br = _bracket(axis, pts)
    if br is None:
        return []  # no crossing inside the bounds: nothing to bracket
    ua, ub = axis.to_unit(br[0]), axis.to_unit(br[1])
    if ub - ua <= search.tol:
        return []
    k = search.per_round
    return _new_values(axis, [ua + (ub - ua) * j / (k + 1) for j in range(1, k + 1)], seen)


def _zoom(search: SearchSpec, axis: ContinuousAxis, pts: list[tuple[float, float]],
          sign: float) -> list[float]:  # fmt: skip
    """Next values of a minimize (sign 1) / maximize (sign -1) search: both sides of
    each of the ``per_round // 2`` best local optima still wider than ``tol`` bisected."""
    seen = {x for x, _ in pts}
    if not pts:
        return _new_values(axis, np.linspace(0.0, 1.0, search.initial), seen)
    pts = sorted(pts)
    us: list[float] = []
    for i in _local_bests(pts, sign)[: max(1, search.per_round // 2)]:
        ua = axis.to_unit(pts[max(0, i - 1)][0])
        uc = axis.to_unit(pts[i][0])
        ub = axis.to_unit(pts[min(len(pts) - 1, i + 1)][0])
        if ub - ua <= search.tol:
            continue
        us.extend(u for u in ((ua + uc) / 2, (uc + ub) / 2) if ua < u < ub and u != uc)
    return _new_values(axis, us, seen)


def _local_bests(pts: list[tuple[float, float]], sign: float) -> list[int]:
    """Indices of the local optima of sorted ``pts`` (a finite value no worse than its
    neighbours; a non-finite neighbour counts as worse), best first (first of ties)."""
    vals = [sign * v if math.isfinite(v) else math.inf for _, v in pts]
    n = len(vals)
    idx = [i for i in range(n) if math.isfinite(vals[i]) and (i == 0 or vals[i] <= vals[i - 1])
           and (i == n - 1 or vals[i] <= vals[i + 1])]  # fmt: skip
    return sorted(idx, key=lambda i: (vals[i], i))


def _best_index(pts: list[tuple[float, float]], sign: float) -> int:
    """Index of the best finite value (first of ties); a non-finite value never wins."""
    vals = [sign * v if math.isfinite(v) else math.inf for _, v in pts]
    return int(np.argmin(vals))


def _refine(search: SearchSpec, axis: ContinuousAxis,
            pts: list[tuple[float, float]]) -> list[float]:  # fmt: skip
    """Next values of a refine search: midpoints of the intervals of largest loss."""
    seen = {x for x, _ in pts}
    if not pts:
        return _new_values(axis, np.linspace(0.0, 1.0, search.initial), seen)
    pts = sorted(pts)
    u = np.array([axis.to_unit(x) for x, _ in pts])
    y = np.array([math.log10(abs(v)) if math.isfinite(v) and v != 0 else np.nan for _, v in pts])
    finite = np.isfinite(y)
    span = float(np.ptp(y[finite])) if finite.sum() > 1 else 1.0
    y = np.where(finite, y, np.nanmax(y) if finite.any() else 0.0)
    y = (y - y.min()) / (span or 1.0)
    loss = np.hypot(np.diff(u), np.diff(y))
    order = [int(j) for j in np.argsort(-loss, kind="stable") if loss[j] > search.tol]
    # largest loss first, skipping an interval whose midpoint is already run (a snapped h:
    # no value between its ends), so such an interval does not stop the others
    out: list[float] = []
    for j in order:
        out.extend(_new_values(axis, [(u[j] + u[j + 1]) / 2], seen | set(out)))
        if len(out) >= search.per_round:
            break
    return out


def propose(search: SearchSpec, obs: Sequence[Observation],
            budget_left: int) -> list[dict[str, float]]:  # fmt: skip
    """The next round of one search (one combination of the list axes): the continuous
    axes' values of each new case, at most ``budget_left``; [] when the search is done."""
    axis = search.continuous[0]
    out: list[dict[str, float]] = []
    if search.goal == "boundary":
        other = search.continuous[1] if len(search.continuous) > 1 else None
        lines = line_values(search) if other is not None else [None]
        per_line = search.budget // len(lines)
        for lv in lines:
            mine = [o for o in obs if other is None or o.coords[other.name] == lv]
            pts = [(o.coords[axis.name], o.value > 0.5) for o in mine]
            left = per_line - len(pts)
            for x in _line(search, axis, pts)[: max(0, left)]:
                out.append({axis.name: x} if other is None else {axis.name: x, other.name: lv})
    else:
        pts = [(o.coords[axis.name], o.value) for o in obs]
        if search.goal == "refine":
            xs = _refine(search, axis, pts)
        else:
            xs = _zoom(search, axis, pts, 1.0 if search.goal == "minimize" else -1.0)
        out = [{axis.name: x} for x in xs]
    return out[: max(0, budget_left)]


def answer(search: SearchSpec, obs: Sequence[Observation], combo: dict[str, Any]) -> list[dict]:
    """The current answer of one search: for a boundary one point per line that crosses
    (every continuous axis by name, the list axes, ``lo`` the last value on the ok side
    and ``hi`` the first on the other side of the crossed axis; the axis's value is the
    bracket's midpoint in its scale); for minimize / maximize / refine the best case
    (its axis value, the metric, ``lo``/``hi`` its neighbours)."""
    axis = search.continuous[0]
    rows: list[dict] = []
    if search.goal == "boundary":
        other = search.continuous[1] if len(search.continuous) > 1 else None
        for lv in (line_values(search) if other is not None else [None]):
            pts = [(o.coords[axis.name], o.value > 0.5) for o in obs
                   if other is None or o.coords[other.name] == lv]  # fmt: skip
            br = _bracket(axis, pts)
            if br is None:
                continue
            side = dict(sorted(pts))
            lo, hi = (br[0], br[1]) if side[br[0]] else (br[1], br[0])
            row = {axis.name: _mid(axis, br[0], br[1])}
            if other is not None:
                row[other.name] = lv
            row.update(combo)
            row.update({"lo": lo, "hi": hi})
            rows.append(row)
        return rows
    pts = sorted((o.coords[axis.name], o.value) for o in obs)
    if not pts:
        return rows
    sign = -1.0 if search.goal == "maximize" else 1.0
    best = _best_index(pts, sign)
    if not math.isfinite(pts[best][1]):
        return rows
    row = {axis.name: pts[best][0], **combo, search.metric: pts[best][1],
           "lo": pts[max(0, best - 1)][0], "hi": pts[min(len(pts) - 1, best + 1)][0]}  # fmt: skip
    rows.append(row)
    return rows


def _mid(axis: ContinuousAxis, a: float, b: float) -> float:
    """Midpoint of two axis values in the axis's scale (not snapped: an estimate)."""
    if axis.scale == "log":
        return float(math.sqrt(a * b))
    return (a + b) / 2


def case_params(search: SearchSpec, model: str, model_params: Sequence[tuple[str, Any]],
                coords: dict[str, Any]):  # fmt: skip
    """The :class:`~mbstudy.pipeline.plan.grid.CaseParams` of one proposed case: the
    block's fixed values with ``coords`` (continuous and list axes) set, each parameter
    routed to the formulation, the integrator (both when both take it) or the model."""
    from mbstudy.pipeline.plan.grid import CaseParams

    base = search.base
    fixed = dict(base.fixed)
    fixed.update(coords)
    groups: dict[str, dict[str, Any]] = {"model": dict(model_params), "formulation": {},
                                         "integrator": {}}  # fmt: skip
    for name, value in fixed.items():
        if name.startswith("model."):
            groups["model"][name.removeprefix("model.")] = value
            continue
        if name in base.formulation_keys:
            groups["formulation"][name] = value
        if name in base.integrator_keys:
            groups["integrator"][name] = value
    order_f = {k: i for i, k in enumerate(base.formulation_keys)}
    order_i = {k: i for i, k in enumerate(base.integrator_keys)}
    return CaseParams(
        model=model,
        formulation=base.formulation,
        integrator=base.integrator,
        t_end=base.t_end,
        samples=base.samples,
        model_params=tuple(groups["model"].items()),
        formulation_params=tuple(sorted(groups["formulation"].items(),
                                        key=lambda kv: order_f[kv[0]])),
        integrator_params=tuple(sorted(groups["integrator"].items(),
                                       key=lambda kv: order_i[kv[0]])),
        coords=tuple((n, coords[n]) for n in search.axis_names),
        block=search.name,
    )


def search_references(study) -> tuple[tuple, dict[str, list[int]]]:
    """The references of ``study``'s search blocks: ``(keys, per_block)`` where ``keys``
    are the distinct :class:`~mbstudy.pipeline.plan.grid.ReferenceKey` of their cases in
    the grid's canonical order (t_end, samples, then model parameter values:
    :func:`~mbstudy.pipeline.plan.grid.expand_grid`), and ``per_block[name][c]`` is the
    index into ``keys`` of combination ``c`` of block ``name`` (every case of one
    combination shares the model parameters and the window)."""
    from mbstudy.pipeline.plan.grid import ReferenceKey

    keys: dict[Any, int] = {}
    rows: dict[str, list] = {}
    for search in study.searches:
        table = []
        for combo in search.combinations:
            coords = {a.name: a.lo for a in search.continuous} | dict(combo)
            cp = case_params(search, study.model, study.model_params, coords)
            key = ReferenceKey(tuple(cp.model_params), cp.t_end, cp.samples)
            keys.setdefault(key, len(keys))
            table.append(key)
        rows[search.name] = table
    order = sorted(keys, key=lambda k: (k.t_end, k.samples, tuple(v for _, v in k.model_params)))
    index = {k: j for j, k in enumerate(order)}
    return tuple(order), {name: [index[k] for k in table] for name, table in rows.items()}
