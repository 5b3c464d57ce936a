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

Nothing is ever evaluated by Python: the tree is translated into sympy objects, and the
translation is bounded so that a hostile file is refused in milliseconds, never computed:

* the text is at most :data:`MAX_LENGTH` characters and the tree at most :data:`MAX_DEPTH`
  levels deep (a chain ``a + b - c + ...`` or ``a * b / c * ...`` counts as one level, so
  long sums are fine and are translated without recursion);
* a power of two numbers is refused before it is computed when
  ``|exponent| * log10|base|`` exceeds ``log10`` :data:`MAX_MAGNITUDE` (``9**9**9``,
  ``2**(10**10)``), and a numeric exponent is at most :data:`MAX_EXPONENT`;
* every number of the result, and the value of every call of constant arguments
  (``exp(1000)``), must be a finite real number of magnitude at most
  :data:`MAX_MAGNITUDE`: ``1e400``, ``1e400 - 1e400``, ``m1/0`` (sympy's ``zoo``),
  ``sqrt(-1)`` (``I``) and ``atan2(0, 0)`` are errors naming the key.
"""

from __future__ import annotations

import ast
import math
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
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_INVERSE: dict[type | None, Callable] = {ast.Sub: lambda a: -a, ast.Div: lambda a: 1 / a}
_COMPARE = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<="}

T = sp.Symbol("t", real=True)

MAX_LENGTH = 2000  # characters of one expression
MAX_DEPTH = 50  # nesting levels of its syntax tree (a chain of + - or * / is one level)
MAX_EXPONENT = 1000  # |p| of a numeric exponent x**p
MAX_MAGNITUDE = 1e300  # of any number in the result (float64 ends at 1.8e308)
_CHAINS = ((ast.Add, ast.Sub), (ast.Mult, ast.Div))
_BAD_ATOMS = (sp.zoo, sp.oo, -sp.oo, sp.nan, sp.I)


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
            val = sp.Integer(node.value) if isinstance(node.value, int) else sp.Float(node.value)
            return _checked(val)
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
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return _power(self(node.left), self(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
            # one flat sp.Add / sp.Mul of the whole chain: linear in its length
            args = [_INVERSE.get(op, _same)(self(operand)) for op, operand in _chain(node)]
            return _checked(sp.Add(*args) if isinstance(node.op, ast.Add | ast.Sub)
                            else sp.Mul(*args))  # fmt: skip
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
            val = fn(*(self(a) for a in node.args))
            return _checked(val)  # a constant call such as exp(1000) must fit a float
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


def _same(val: sp.Expr) -> sp.Expr:
    return val


def _chain(node: ast.AST) -> list[tuple[type | None, ast.AST]]:
    """``a + b - c`` as ``[(None, a), (Add, b), (Sub, c)]``: the left spine of one
    precedence level, collected without recursion."""
    group = next(g for g in _CHAINS if isinstance(node.op, g))
    out: list[tuple[type | None, ast.AST]] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, group):
        out.append((type(node.op), node.right))
        node = node.left
    out.append((None, node))
    return out[::-1]


def _children(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Pow) and any(
        isinstance(node.op, g) for g in _CHAINS
    ):
        return [n for _, n in _chain(node)]
    return list(ast.iter_child_nodes(node))


def _check_depth(tree: ast.AST, text: str, flat_chains: bool = True) -> None:
    """Refuse a tree nested deeper than :data:`MAX_DEPTH` (an explicit stack, no recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels: {_short(text)}")
        kids = _children(node) if flat_chains else ast.iter_child_nodes(node)
        stack += [(child, depth + 1) for child in kids]


def _short(text: str, limit: int = 60) -> str:
    """``text`` for a one-line message (at most ``limit`` characters, repr-escaped)."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _finite(val: sp.Expr, what: str) -> None:
    """Refuse a number that is not a finite real of magnitude <= :data:`MAX_MAGNITUDE`."""
    try:
        num = complex(val)
    except OverflowError:
        raise ExpressionError(
            f"{_short(what)} is larger than {MAX_MAGNITUDE:g} in magnitude") from None
    except (TypeError, ValueError, ArithmeticError):
        raise ExpressionError(f"{_short(what)} is not a finite real number") from None
    if num.imag != 0 or not math.isfinite(num.real):
        raise ExpressionError(f"{_short(what)} is not a finite real number ({val})")
    if abs(num.real) > MAX_MAGNITUDE:
        raise ExpressionError(
            f"{_short(what)} = {num.real:.3g} is larger than {MAX_MAGNITUDE:g} in magnitude"
        )


def _checked(val: sp.Expr) -> sp.Expr:
    """``val`` if every number in it is finite, real and bounded (:func:`_finite`)."""
    if val.has(*_BAD_ATOMS):
        bad = next(a for a in _BAD_ATOMS if val.has(a))
        what = {sp.I: "an imaginary number", sp.nan: "undefined (nan)"}.get(
            bad, "infinite (a division by zero or an overflow)"
        )
        raise ExpressionError(f"the value is {what}: {_short(str(val))}")
    for num in val.atoms(sp.Number):
        _finite(num, str(num))
    if not val.free_symbols and not val.is_Number:  # (-8)**(1/3): a complex constant
        try:
            num = sp.N(val, 17)
        except (ArithmeticError, ValueError, OverflowError):
            raise ExpressionError(f"{_short(str(val))} is not a finite real number") from None
        _finite(num, str(val))
    return val


def _power(base: sp.Expr, exp: sp.Expr) -> sp.Expr:
    """``base**exp``, refused before it is computed if the result could not be a float."""
    if exp.is_Number:
        if abs(float(exp)) > MAX_EXPONENT:
            raise ExpressionError(f"exponent {exp} is larger than {MAX_EXPONENT} in magnitude")
        if base.is_Number and float(base) != 0 and abs(float(exp)) * abs(
            math.log10(abs(float(base)))
        ) > math.log10(MAX_MAGNITUDE):
            raise ExpressionError(f"{base}**{exp} is out of the range of a float")
    return _checked(base**exp)


def parse_tree(text: str, flat_chains: bool = True) -> ast.AST:
    """The syntax tree (``mode="eval"`` body) of ``text``, bounded in length and depth.

    ``flat_chains``: a chain ``a + b + c`` counts as one level (the translators that walk
    it with :func:`_chain`); otherwise every node is a level.

    Raises
    ------
    ExpressionError
        Longer than :data:`MAX_LENGTH`, deeper than :data:`MAX_DEPTH`, or not Python syntax.
    """
    return _parse(text, flat_chains)


def _parse(text: str, flat_chains: bool = True) -> ast.AST:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {_short(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels: {_short(text)}") from None
    _check_depth(tree, text, flat_chains)
    return tree


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
    tree = _parse(value)
    try:
        return _Translator(names, allow_t, state)(tree)
    except (ArithmeticError, RecursionError, MemoryError) as exc:  # sympy's own evaluation
        raise ExpressionError(f"{_short(value)} cannot be evaluated ({type(exc).__name__})"
                              ) from None


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
