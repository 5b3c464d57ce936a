"""Checking helpers of the study parser: the error collector and the value checkers.

:class:`_Checker` raises the first :class:`StudyError` or, in collect mode
(:func:`mbstudy.pipeline.study.parse.check_study`), records every error and returns the
sentinel :data:`_BAD` for a value that failed. The value checkers (``_number``,
``_integer``, ``_param_value``, ``_axis``, ``_entry``, ``_check_h``...) each validate one
value against what the registry's parameter spec expects and fail with a one-line message
naming the key path, what was expected and what was found (:func:`_show`), with the
closest valid name for typos (:func:`_hint`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

from mbstudy.pipeline.study.spec import StudyError
from mbstudy.solvers import api as solvers
from mbstudy.solvers.api import IntegratorSpec, Param, UnknownName, closest

H_RTOL = 1e-9  # h must divide the output interval to this relative tolerance


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
    text = _one_line(text)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _one_line(text: str) -> str:
    """``text`` with every control character and every character ``str.splitlines`` breaks
    at (U+001C-U+001E, U+0085, U+2028, U+2029 besides the C0 ones) escaped as ``\\uXXXX``:
    an error message is one line whatever the study file holds."""
    return "".join(
        f"\\u{ord(c):04x}" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029"
        else c
        for c in text
    )


def _hint(name: str, valid: list[str] | tuple[str, ...]) -> str:
    best = closest(name, valid)
    return f"; did you mean {best!r}?" if best else ""


def _valid(valid: list[str] | tuple[str, ...]) -> str:
    return f" (valid: {', '.join(valid)})" if valid else " (none are valid here)"


def _unknown_keys(ck: _Checker, section: str, table: dict, valid: tuple[str, ...]) -> None:
    """Report every key of the ``[section]`` table that is not in ``valid``, naming the
    closest valid key (:func:`_hint`) and all of them (:func:`_valid`)."""
    for key in table:
        if key not in valid:
            ck.report(
                f"{section}.{key}",
                f"unknown key {key!r}{_hint(key, valid)}{_valid(valid)}",
            )


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


def _entry(ck: _Checker, key: str, kind: str, name: Any, note: str = "") -> solvers.Entry:
    if not isinstance(name, str):
        valid = sorted(solvers.entries(kind))
        ck.fail(key, f"expected a {kind} name (a string){_valid(valid)}, found {_show(name)}")
    try:
        return solvers.entry(kind, name)
    except UnknownName as exc:
        hint = f"; did you mean {exc.suggestion!r}?" if exc.suggestion else ""
        ck.fail(key, f"unknown {kind} {name!r}{note}{hint}{_valid(exc.valid)}")


MAX_STEPS = 10**9  # fixed steps of one case (RK4 on the four-bar: ~1e7 steps a second)


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
        if not math.isfinite(ratio):  # t_end ~ 1e308 or h ~ 1e-320: no whole number of steps
            sub = f"{key}[{j}]" if indexed else key
            ck.report(sub, f"interval t_end/(samples-1) = {interval:.10g} over h = {h:g} is"
                      " not a finite number of steps")
            continue
        k = round(ratio)
        if k * (samples - 1) > MAX_STEPS:  # a case that would step for days, or forever
            sub = f"{key}[{j}]" if indexed else key
            ck.report(sub, f"h = {h:g} takes {k * (samples - 1):.3g} steps over t_end ="
                      f" {t_end:g}, more than {MAX_STEPS:.0e}; use a larger h")
            continue
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

