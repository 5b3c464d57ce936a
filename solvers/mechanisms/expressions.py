"""Expressions of mechanism files: a whitelisted Python syntax tree -> a sympy expression.

A value in a mechanism file is a number or a string such as ``"rho*L2**3/12"``. The
string is parsed with :func:`ast.parse` (``mode="eval"``) and the tree is walked node by
node; only these nodes are accepted, everything else is an error naming the key:

* numbers (int, float), names of the file's ``[parameters]`` and ``pi``;
* ``t`` (time) where the element allows it (drivers, forces, torques);
* state references ``BODY.COORD`` (``crank.theta``, ``crank.omega``: coordinate, or its
  rate with the ``_dot`` suffix or ``omega``) and ``BODY.POINT.x``/``y``/``z`` (a point's
  global coordinate) where the element allows them;
* ``+ - * / **``, unary ``-``/``+``;
* calls of ``sin cos tan sqrt exp atan2`` (positional arguments only).

Nothing is ever evaluated by Python: the tree is translated into sympy objects.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import sympy as sp

FUNCTIONS: dict[str, tuple[Callable, int]] = {
    "sin": (sp.sin, 1),
    "cos": (sp.cos, 1),
    "tan": (sp.tan, 1),
    "sqrt": (sp.sqrt, 1),
    "exp": (sp.exp, 1),
    "atan2": (sp.atan2, 2),
}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_COMPARE = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}

T = sp.Symbol("t", real=True)


class ExpressionError(ValueError):
    """An expression outside the whitelist (message without the key; the caller adds it)."""


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` of nested Attribute/Name nodes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Translator:
    def __init__(
        self,
        names: Mapping[str, sp.Expr],
        allow_t: bool,
        state: Callable[[str], sp.Expr | None] | None,
    ) -> None:
        self.names = names
        self.allow_t = allow_t
        self.state = state

    def __call__(self, node: ast.AST) -> sp.Expr:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ExpressionError(f"constant {node.value!r} is not a number")
            return sp.Integer(node.value) if isinstance(node.value, int) else sp.Float(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Attribute):
            ref = _dotted(node)
            if ref is None or self.state is None:
                raise ExpressionError(
                    f"{ast.unparse(node)!r}: state references are not allowed here"
                )
            val = self.state(ref)
            if val is None:
                raise ExpressionError(f"unknown state reference {ref!r}")
            return val
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](self(node.left), self(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            val = self(node.operand)
            return -val if isinstance(node.op, ast.USub) else val
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ExpressionError(
                    f"{ast.unparse(node.func)!r} is not an allowed function"
                    f" ({', '.join(FUNCTIONS)})"
                )
            fn, nargs = FUNCTIONS[node.func.id]
            if node.keywords or len(node.args) != nargs:
                raise ExpressionError(f"{node.func.id} takes {nargs} positional argument(s)")
            return fn(*(self(a) for a in node.args))
        raise ExpressionError(f"{ast.unparse(node)!r} is not allowed in an expression")

    def name(self, name: str) -> sp.Expr:
        if name in self.names:
            return self.names[name]
        if name == "pi":
            return sp.pi
        if name == "t":
            if not self.allow_t:
                raise ExpressionError("time 't' is not allowed here")
            return T
        if self.state is not None:
            val = self.state(name)
            if val is not None:
                return val
        raise ExpressionError(f"unknown name {name!r}")


def _parse(text: str) -> ast.AST:
    if len(text) > 2000:
        raise ExpressionError("expression longer than 2000 characters")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text!r}: {exc.msg}") from None


def to_sympy(
    value: object,
    names: Mapping[str, sp.Expr],
    *,
    allow_t: bool = False,
    state: Callable[[str], sp.Expr | None] | None = None,
) -> sp.Expr:
    """Translate a number or an expression string into a sympy expression.

    Parameters
    ----------
    value : int, float or str.
    names : the symbols a bare name may refer to (the file's parameters).
    allow_t : whether time ``t`` may appear.
    state : resolves a state reference (``crank.theta``, ``coupler.C.y``) to an
        expression, or returns None; ``None`` forbids state references.

    Raises
    ------
    ExpressionError
        For anything outside the whitelist.
    """
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number or an expression string, found {value!r}")
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ExpressionError(f"expected a finite number, found {value!r}")
        return sp.Float(value)
    if not isinstance(value, str):
        raise ExpressionError(f"expected a number or an expression string, found {value!r}")
    return _Translator(names, allow_t, state)(_parse(value))


def condition(
    text: object,
    names: Mapping[str, sp.Expr],
    state: Callable[[str], sp.Expr | None],
) -> tuple[sp.Expr, str]:
    """Parse a condition ``LHS OP RHS`` (OP one of > >= < <=) into ``(g, op)`` with
    ``g = LHS - RHS`` (``g > 0`` etc. must hold).

    Raises
    ------
    ExpressionError
        If it is not one comparison of two whitelisted expressions.
    """
    if not isinstance(text, str):
        raise ExpressionError(
            f"expected a condition string such as 'coupler.C.y > 0', found {text!r}"
        )
    node = _parse(text)
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE):
        raise ExpressionError(f"expected one comparison (> >= < <=), found {text!r}")
    tr = _Translator(names, False, state)
    return tr(node.left) - tr(node.comparators[0]), _COMPARE[type(node.ops[0])]
