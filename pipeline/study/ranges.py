"""Axes written as ranges in a study file, expanded to the list of values that runs.

Forms (an inline table in place of the list ``[v0, v1, ...]``):

- ``{ start = a, stop = b, num = n }``: n values evenly spaced from a to b inclusive;
- ``{ start = a, stop = b, step = s }``: a, a + s, ..., b (b must be a + k s);
- ``{ log = [a, b], num = n }``: n values evenly spaced in log from a to b inclusive
  (a, b > 0; numpy.geomspace);
- ``{ halving = h0, num = n }``: h0, h0/2, ..., h0/2^(n-1), the step sequence of a
  convergence study (exact in binary floating point).

Expansion is exact and reproducible: linear and logarithmic values are rounded to 12
significant digits (so 0.1 + 2 * 0.1 is 0.3, not 0.30000000000000004) and those are the
values that ``plan`` prints, the store records and the cases run. The expanded list is
then validated like a written list (type, sign, bounds, distinct values).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

FORMS = {
    ("num", "start", "stop"): "linear",
    ("start", "step", "stop"): "step",
    ("log", "num"): "log",
    ("halving", "num"): "halving",
}
RANGE_KEYS = {"start", "stop", "num", "step", "log", "halving"}
MAX_VALUES = 1_000_000
FORMS_TEXT = ("{ start, stop, num }, { start, stop, step }, { log = [a, b], num } or "
              "{ halving, num }")  # fmt: skip


class RangeError(ValueError):
    """A range that cannot be expanded (the message names what is wrong)."""


def is_range(value: Any) -> bool:
    """True for an inline table that uses the range keys (and only when it does)."""
    return isinstance(value, dict) and bool(value) and bool(set(value) & RANGE_KEYS)


def _round(x: float) -> float:
    return float(f"{x:.12g}")


def _num(table: dict, key: str) -> float:
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise RangeError(f"{key}: expected a finite number, found {v!r}")
    return float(v)


def _count(table: dict) -> int:
    n = table["num"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RangeError(f"num: expected a whole number >= 1, found {n!r}")
    if n > MAX_VALUES:
        raise RangeError(f"num: at most {MAX_VALUES} values, found {n}")
    return n


def expand(table: dict) -> list[float]:
    """The values of a range table (see the module docstring); RangeError if malformed."""
    keys = tuple(sorted(table))
    form = FORMS.get(keys)
    if form is None:
        unknown = sorted(set(table) - RANGE_KEYS)
        what = f"unknown key {unknown[0]!r}" if unknown else f"keys {', '.join(keys)}"
        raise RangeError(f"{what}: a range is one of {FORMS_TEXT}")
    if form == "linear":
        a, b, n = _num(table, "start"), _num(table, "stop"), _count(table)
        if n == 1:
            return [_round(a)]
        return [_round(a + (b - a) * k / (n - 1)) for k in range(n)]
    if form == "step":
        a, b, s = _num(table, "start"), _num(table, "stop"), _num(table, "step")
        if s == 0 or (b - a) / s < 0:
            raise RangeError(f"step: {s!r} does not lead from start {a!r} to stop {b!r}")
        k = round((b - a) / s)
        if abs(a + k * s - b) > 1e-9 * max(abs(s), abs(b)):
            raise RangeError(f"stop: {b!r} is not start + a whole number of steps {s!r}")
        if k + 1 > MAX_VALUES:
            raise RangeError(f"step: {k + 1} values (at most {MAX_VALUES})")
        return [_round(a + j * s) for j in range(k + 1)]
    if form == "log":
        ends = table["log"]
        if not (isinstance(ends, list) and len(ends) == 2):
            raise RangeError(f"log: expected [first, last], found {ends!r}")
        a, b = (_num({"log": e}, "log") for e in ends)
        if a <= 0 or b <= 0:
            raise RangeError(f"log: both ends must be > 0, found [{a!r}, {b!r}]")
        n = _count(table)
        return [_round(float(x)) for x in np.geomspace(a, b, n)]
    h0, n = _num(table, "halving"), _count(table)
    if h0 <= 0:
        raise RangeError(f"halving: expected a number > 0, found {h0!r}")
    last = math.ldexp(h0, 1 - n)  # 0.0 (never an OverflowError) when it underflows
    if last < sys.float_info.min:  # below the normal floats the halving is not exact
        raise RangeError(f"num: {h0!r} halved {n - 1} times is {last:g}, below the smallest"
                         f" normal float {sys.float_info.min:g}; use fewer values")
    return [math.ldexp(h0, -k) for k in range(n)]


def expand_axis(ck, key: str, table: dict) -> list:
    """``expand`` reporting a malformed range through the study checker ``ck`` (one line
    naming the file and key, like every other study error)."""
    try:
        return expand(table)
    except RangeError as exc:
        ck.fail(key, f"range: {exc}")
