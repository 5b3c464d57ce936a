"""Repetition in mechanism files: ``[sizes]`` and ``[[repeat]]`` blocks
(docs/explanation/mechanisms.md).

A mechanism with a row of equal elements (the N four-bar) is written once for any N:

    [sizes]
    N = 2                          # structural integers (they fix the number of coordinates)

    [[repeat]]
    count = "N"                    # copies i = 0 .. N-1 (``index`` renames i)
    [repeat.bodies."crank{i}"]
    ...
    [[repeat.joints]]
    at = ["coupler{i}.Rt", "crank{i+1}.T"]

In every string of the file (keys and values), ``{EXPR}`` is replaced by the integer EXPR:
``+ - * // %``, integers, the ``[sizes]`` names and, inside a block, its index. The copies
of the blocks come first (block by block, copy by copy), then the file's own tables, in
the order of bodies (the coordinates), joints (the rows of Phi), forces and drivers.
:func:`expand` returns the document without ``[sizes]`` and ``[[repeat]]``; the schema then
reads it as a file without repetition. A size is part of the file, not a runtime
parameter: another N is another file content, so another generated module.

Sizes are bounded so that a hostile file is refused before anything is copied: a size is
at most :data:`MAX_SIZE`, the value of every ``{EXPR}`` and ``count`` (and every step of
it) at most :data:`MAX_SIZE` in magnitude, an expression is bounded in length and depth
like the mechanism's own expressions (:func:`.expressions.parse_tree`), and the copies
of all blocks together hold at most :data:`MAX_ITEMS` bodies, ground points and
elements (the N four-bar with N = 50, 303 coordinates, already takes a minute of
derivation) and write at most :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from mbstudy.solvers.mechanisms.expressions import parse_tree

_BRACES = re.compile(r"\{([^{}]*)\}")
_LISTS = ("joints", "forces", "drivers")
_BLOCK_KEYS = ("count", "index", "bodies", "ground", *_LISTS)
_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
        ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}  # fmt: skip

Fail = Callable[[str, str], Exception]
MAX_SIZE = 10_000  # a [sizes] value, a count, any integer {EXPR} and its steps
MAX_ITEMS = 2_000  # bodies, ground points and elements of all the copies together
MAX_TEXT = 16 << 20  # characters of the strings written by all the copies together


def integer(text: str, env: dict[str, int]) -> int:
    """The value of an integer expression over ``env`` (a whitelisted syntax tree)."""

    def ev(node: ast.AST) -> int:
        val = step(node)
        if abs(val) > MAX_SIZE:
            raise ValueError(f"{val} is larger than {MAX_SIZE} in magnitude")
        return val

    def step(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            right = ev(node.right)
            if right == 0 and isinstance(node.op, ast.FloorDiv | ast.Mod):
                raise ValueError("division by zero")
            return _OPS[type(node.op)](ev(node.left), right)
        raise ValueError(f"not an integer expression of {', '.join(sorted(env)) or 'integers'}")

    try:
        tree = parse_tree(text, flat_chains=False)  # depth-bounded: ev's recursion is too
    except ValueError as exc:
        raise ValueError(f"not an integer expression ({exc})") from None
    return ev(tree)


def _sub(value: Any, env: dict[str, int], fail: Fail, key: str) -> Any:
    """``value`` with every ``{EXPR}`` in its strings (and table keys) replaced."""
    if isinstance(value, dict):
        return {_text(k, env, fail, key): _sub(v, env, fail, f"{key}.{k}" if key else k)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, list):
        return [_sub(v, env, fail, f"{key}[{n}]") for n, v in enumerate(value)]
    if isinstance(value, str):
        return _text(value, env, fail, key)
    return value


def _text(text: str, env: dict[str, int], fail: Fail, key: str) -> str:
    def one(match: re.Match) -> str:
        try:
            return str(integer(match.group(1), env))
        except ValueError as exc:
            raise fail(key, f"{_short(match.group(0))}: {exc}") from None

    return _BRACES.sub(one, text)


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _sizes(doc: dict[str, Any], fail: Fail) -> dict[str, int]:
    sizes = doc.get("sizes", {})
    if not isinstance(sizes, dict):
        raise fail("sizes", "expected a table of integers (N = 2)")
    for k, v in sizes.items():
        if type(v) is not int or not 0 <= v <= MAX_SIZE:
            raise fail(f"sizes.{k}", f"expected an integer from 0 to {MAX_SIZE}, found {v!r}")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
            raise fail(f"sizes.{k}", "not a valid name (letters, digits, _)")
    return dict(sizes)


def _count(block: dict[str, Any], key: str, sizes: dict[str, int], fail: Fail) -> int:
    """The checked number of copies of one block."""
    for k in block:
        if k not in _BLOCK_KEYS:
            raise fail(f"{key}.{k}", f"unknown key (valid: {', '.join(_BLOCK_KEYS)})")
    if "count" not in block:
        raise fail(f"{key}.count", "required key is missing (number of copies)")
    try:
        count = integer(str(block["count"]), sizes)
    except ValueError as exc:
        raise fail(f"{key}.count", str(exc)) from None
    if count < 0:
        raise fail(f"{key}.count", f"the number of copies is {count} < 0")
    return count


def _chars(value: Any) -> int:
    """Characters of the keys and strings of ``value`` (what one copy writes), without
    recursion (TOML nesting is bounded, but the loop is cheap either way)."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += sum(len(str(k)) for k in item)
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        else:
            total += len(str(item))
    return total


def _items(block: dict[str, Any]) -> int:
    """Bodies, ground points and elements of one copy of ``block`` (at least 1)."""
    def size(value: Any) -> int:
        return len(value) if isinstance(value, dict | list) else 1

    ground = block.get("ground", {})
    points = ground.get("points", {}) if isinstance(ground, dict) else {}
    return max(1, size(block.get("bodies", {})) + size(points)
               + sum(size(block.get(s, [])) for s in _LISTS))  # fmt: skip


def expand(doc: dict[str, Any], fail: Fail) -> dict[str, Any]:
    """The document with the ``[[repeat]]`` blocks copied out and ``{EXPR}`` replaced.

    ``fail(key, message)`` builds the error to raise (the schema's one-line error).
    """
    if "sizes" not in doc and "repeat" not in doc:
        return doc
    sizes = _sizes(doc, fail)
    blocks = doc.get("repeat", [])
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise fail("repeat", "expected blocks [[repeat]] (count, bodies, joints, ...)")
    bodies: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {s: [] for s in _LISTS}
    points: dict[str, Any] = {}

    def add_bodies(new: Any, key: str) -> None:
        if not isinstance(new, dict):
            raise fail(key, "expected tables [bodies.NAME]")
        for name, table in new.items():
            if name in bodies:
                raise fail(f"{key}.{name}", "a body of this name exists already")
            bodies[name] = table

    def add_points(ground: Any, key: str) -> None:
        pts = ground.get("points", {}) if isinstance(ground, dict) else None
        if not isinstance(pts, dict):
            raise fail(key, "expected a table with points = {...}")
        for name, s in pts.items():
            if name in points:
                raise fail(f"{key}.points.{name}", "a ground point of this name exists already")
            points[name] = s

    counts = [_count(block, f"repeat[{b}]", sizes, fail) for b, block in enumerate(blocks)]
    items = sum(c * _items(block) for c, block in zip(counts, blocks, strict=True))
    if items > MAX_ITEMS:
        raise fail("repeat", f"the copies would hold {items:,} bodies, ground points and"
                   f" elements, more than the limit of {MAX_ITEMS:,}; use smaller [sizes]")
    text = sum(c * _chars(block) for c, block in zip(counts, blocks, strict=True))
    if text > MAX_TEXT:
        raise fail("repeat", f"the copies would write {text:,} characters, more than the"
                   f" limit of {MAX_TEXT:,}; use smaller [sizes] or shorter blocks")
    for b, (block, count) in enumerate(zip(blocks, counts, strict=True)):
        key = f"repeat[{b}]"
        index = block.get("index", "i")
        if not isinstance(index, str) or not index.isidentifier() or index in sizes:
            raise fail(f"{key}.index", "expected a name that is not a [sizes] name")
        for i in range(count):
            env = {**sizes, index: i}
            copy = _sub({k: v for k, v in block.items() if k not in ("count", "index")},
                        env, fail, key)  # fmt: skip
            add_bodies(copy.get("bodies", {}), f"{key}.bodies")
            add_points(copy.get("ground", {}), f"{key}.ground")
            for section in _LISTS:
                items = copy.get(section, [])
                if not isinstance(items, list):
                    raise fail(f"{key}.{section}", f"expected [[repeat.{section}]] tables")
                lists[section] += items
    rest = _sub({k: v for k, v in doc.items() if k not in ("sizes", "repeat")}, sizes, fail, "")
    add_bodies(rest.get("bodies", {}), "bodies")
    ground = rest.get("ground", {})
    add_points(ground, "ground")
    for section in _LISTS:
        own = rest.get(section, [])
        lists[section] += own if isinstance(own, list) else [own]
    out = dict(rest)
    if bodies:
        out["bodies"] = bodies
    if points or "ground" in rest:
        out["ground"] = {**(ground if isinstance(ground, dict) else {}), "points": points}
    for section in _LISTS:
        if lists[section]:
            out[section] = lists[section]
    return out
