"""Netlist format of element networks (seed 003 §2.9) and its parser.

A netlist follows the PRADIS fragment of seed 003 §2.9::

    $ FRAGMENT: Пример
    # BASE: 1
    # STRUCTURE:
    Пружина ' K (1 2; 20000)
    Нелинейный демпфер ' MUNL (1 2; mu = 1000)
    Масса ' M (2; 0.1)
    Воздействие ' FSIN (2 1; 1000, 0.2*pi, 0)
    # INITIAL:
    2 (x = 0, v = 0)

Grammar (one statement per line; blank lines are ignored; ``!`` starts a comment that
runs to the end of the line):

``$ FRAGMENT: TEXT``
    Optional name of the fragment (at most once).
``# BASE: NODE NODE ...``
    Fixed ("based") nodes: x = v = a = 0, their equations removed (seed 003 §2.10).
    Nodes are separated by blanks or commas; the directive may be repeated.
``# STRUCTURE:``
    Starts the element section. Each following line is one element::

        NAME ' CODE (NODE NODE ...; PARAM, PARAM, ...)

    ``NAME`` is free text (any script, blanks allowed) up to the apostrophe and must be
    unique. ``CODE`` is a Latin element code of :data:`solvers.elements.library.
    ELEMENT_TYPES`. Nodes are names of letters, digits and ``_``. Parameters are given
    positionally or as ``name = value`` (positional ones first); a value is a number or
    an arithmetic expression of numbers, ``pi``, ``sqrt(...)``, ``+ - * / **`` and
    brackets. Parameters with a default may be omitted.
``# INITIAL:``
    Starts the initial-value section: ``NODE (x = VALUE, v = VALUE)`` per line (either
    key may be omitted; missing values are 0). Free nodes only.

Checks, each a :class:`NetlistError` naming file and line: syntax, unknown directive,
unknown element code (with the closest valid code), missing or extra nodes, a node
used twice by one element, an element on BASE nodes only, duplicate element names,
parameters (unknown, duplicate, missing, not a number, out of range), a BASE node no
element uses, and *floating nodes*: a free node with no path through non-source
elements to a BASE node or to an inertia (one-node ``M``/``J``) — its equations would
be singular (the circuit analogue: a node without a path to ground).

Free nodes are numbered (DOF 0, 1, ...) in order of first appearance in ``# STRUCTURE:``.

References
----------
Seed 003 §2.8 (what PRADIS needs: connectivity, equilibrium, element equations and
derivatives, integration formulas, solution variable), §2.9 (fragment syntax), §2.10
(BASE nodes removed).
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
import re
from dataclasses import dataclass
from pathlib import Path

from mbstudy.solvers.elements.library import ELEMENT_TYPES, ElementType


class NetlistError(ValueError):
    """An error in a netlist, located by line; ``str`` is ``"FILE:LINE: message"``.

    Parameters
    ----------
    line_no : 1-based line number (0 if the error concerns the whole file).
    message : what is wrong, one line.
    filename : the file name, ``"<string>"`` for text parsed from memory.
    """

    def __init__(self, line_no: int, message: str, filename: str = "<string>") -> None:
        self.line_no = int(line_no)
        self.message = message
        self.filename = filename
        super().__init__(f"{filename}:{self.line_no}: {message}")


@dataclass(frozen=True)
class Element:
    """One element line of a netlist.

    Attributes
    ----------
    name : the element's unique name (text before the apostrophe).
    code : element code (key of ``ELEMENT_TYPES``).
    nodes : node names, in the element's node order.
    params : parameter values in the slot order of the element type, defaults filled.
    line : line number in the netlist.
    """

    name: str
    code: str
    nodes: tuple[str, ...]
    params: tuple[float, ...]
    line: int

    @property
    def type(self) -> ElementType:
        """The element's :class:`~solvers.elements.library.ElementType`."""
        return ELEMENT_TYPES[self.code]


@dataclass(frozen=True)
class InitialValue:
    """Initial potential ``x`` and its rate ``v`` of one free node (``# INITIAL:``)."""

    node: str
    x: float
    v: float
    line: int


@dataclass(frozen=True)
class Netlist:
    """A parsed, checked netlist.

    Attributes
    ----------
    fragment : name from ``$ FRAGMENT:`` ("" if absent).
    filename : where it was read from (``"<string>"`` for text).
    base : BASE node names, in order of declaration.
    elements : the elements, in file order.
    initial : initial values from ``# INITIAL:``.
    """

    fragment: str
    filename: str
    base: tuple[str, ...]
    elements: tuple[Element, ...]
    initial: tuple[InitialValue, ...] = ()

    @property
    def free_nodes(self) -> tuple[str, ...]:
        """Free node names in DOF order (first appearance in ``# STRUCTURE:``)."""
        seen: dict[str, None] = {}
        base = set(self.base)
        for el in self.elements:
            for nd in el.nodes:
                if nd not in base:
                    seen.setdefault(nd, None)
        return tuple(seen)

    def element(self, name: str) -> Element:
        """Return the element called ``name`` (KeyError if there is none)."""
        for el in self.elements:
            if el.name == name:
                return el
        raise KeyError(name)

    def to_text(self) -> str:
        """Return netlist text that :func:`parse_netlist` reads back to an equal Netlist."""
        out = []
        if self.fragment:
            out.append(f"$ FRAGMENT: {self.fragment}")
        if self.base:
            out.append("# BASE: " + " ".join(self.base))
        out.append("# STRUCTURE:")
        for el in self.elements:
            names = [p.name for p in el.type.params]
            pars = ", ".join(f"{n} = {v!r}" for n, v in zip(names, el.params, strict=True))
            out.append(f"{el.name} ' {el.code} ({' '.join(el.nodes)}; {pars})")
        if self.initial:
            out.append("# INITIAL:")
            for iv in self.initial:
                out.append(f"{iv.node} (x = {iv.x!r}, v = {iv.v!r})")
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# parsing

_NODE = re.compile(r"[A-Za-z0-9_]+\Z")
_ELEMENT = re.compile(r"(?P<name>[^']*)'\s*(?P<code>[^\s(]*)\s*(?P<body>.*)\Z")
_DIRECTIVE = re.compile(r"[#$]\s*(?P<key>[A-Za-z_]+)\s*:\s*(?P<rest>.*)\Z")
_ASSIGN = re.compile(r"\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(?P<val>.*)\Z", re.S)

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_NAMES = {"pi": math.pi}
_PLAIN_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?\Z")
_FUNCS = {"sqrt": math.sqrt}


def _eval_node(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ValueError("boolean")
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return float(_BINOPS[type(node.op)](_eval_node(node.left), _eval_node(node.right)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return float(_UNOPS[type(node.op)](_eval_node(node.operand)))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and len(node.args) == 1
        and not node.keywords
    ):
        return float(_FUNCS[node.func.id](_eval_node(node.args[0])))
    raise ValueError("not an arithmetic expression")


def evaluate_number(text: str) -> float:
    """Evaluate a parameter value: a number or a small arithmetic expression.

    Allowed: numbers, ``pi``, ``sqrt(.)``, ``+ - * / **``, unary signs, brackets.

    Raises
    ------
    ValueError
        If ``text`` is anything else, or does not evaluate to a finite float.
    """
    text = text.strip()
    if not text:
        raise ValueError("empty")
    if len(text) > 200:
        raise ValueError("too long")
    if _PLAIN_NUMBER.match(text):  # the common case, without a syntax tree
        val = float(text)
        if not math.isfinite(val):
            raise ValueError("not finite")
        return val
    try:
        tree = ast.parse(text, mode="eval")
        val = _eval_node(tree)
    except (SyntaxError, ZeroDivisionError, OverflowError, TypeError) as exc:
        raise ValueError(str(exc)) from exc
    if not math.isfinite(val):
        raise ValueError("not finite")
    return val


class _Parser:
    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.fragment = ""
        self.fragment_line = 0
        self.base: list[str] = []
        self.base_lines: dict[str, int] = {}
        self.elements: list[Element] = []
        self.initial: list[InitialValue] = []
        # name -> line of every element / node -> line of every initial value: each check
        # of a new line is one dictionary look-up, so parsing is linear in the text
        self.element_lines: dict[str, int] = {}
        self.initial_lines: dict[str, int] = {}
        self.section = ""

    def error(self, line: int, message: str) -> NetlistError:
        return NetlistError(line, message, self.filename)

    def run(self) -> Netlist:
        lines = self.text.splitlines()
        saw_structure = False
        for no, raw in enumerate(lines, start=1):
            line = raw.split("!", 1)[0].strip()
            if not line:
                continue
            if line[0] in "#$":
                saw_structure |= self.directive(no, line)
            elif self.section == "structure":
                self.element(no, line)
            elif self.section == "initial":
                self.initial_value(no, line)
            else:
                raise self.error(no, "element line before '# STRUCTURE:'")
        end = max(len(lines), 1)
        if not saw_structure:
            raise self.error(end, "no '# STRUCTURE:' section")
        if not self.elements:
            raise self.error(end, "no elements in '# STRUCTURE:'")
        netlist = Netlist(
            self.fragment, self.filename, tuple(self.base), tuple(self.elements), ()
        )
        self.check_topology(netlist)
        self.check_initial(netlist)
        return Netlist(
            netlist.fragment, netlist.filename, netlist.base, netlist.elements,
            tuple(self.initial),
        )

    # directives --------------------------------------------------------------------
    def directive(self, no: int, line: str) -> bool:
        m = _DIRECTIVE.match(line)
        if m is None:
            raise self.error(no, f"cannot read directive {line!r}: expected '# KEY:' or '$ KEY:'")
        key = m["key"].upper()
        rest = m["rest"].strip()
        if line[0] == "$":
            if key != "FRAGMENT":
                raise self.error(no, f"unknown directive '$ {m['key']}:' (valid: $ FRAGMENT:)")
            if self.fragment_line:
                raise self.error(no, f"second '$ FRAGMENT:' (first on line {self.fragment_line})")
            self.fragment = rest
            self.fragment_line = no
            return False
        if key == "BASE":
            if self.elements:
                raise self.error(no, "'# BASE:' must come before the elements")
            toks = [t for t in re.split(r"[\s,]+", rest) if t]
            if not toks:
                raise self.error(no, "'# BASE:' names no node")
            for tok in toks:
                if not _NODE.match(tok):
                    raise self.error(no, f"bad node name {tok!r} (letters, digits, _)")
                if tok in self.base_lines:
                    raise self.error(
                        no, f"BASE node {tok!r} listed twice (first on line {self.base_lines[tok]})"
                    )
                self.base.append(tok)
                self.base_lines[tok] = no
            return False
        if key in ("STRUCTURE", "INITIAL"):
            if rest:
                raise self.error(no, f"unexpected text after '# {key}:': {rest!r}")
            if key == "STRUCTURE" and self.section == "structure":
                raise self.error(no, "second '# STRUCTURE:'")
            if key == "INITIAL" and not self.elements:
                raise self.error(no, "'# INITIAL:' must follow the elements")
            self.section = key.lower()
            return key == "STRUCTURE"
        raise self.error(
            no, f"unknown directive '# {m['key']}:' (valid: # BASE:, # STRUCTURE:, # INITIAL:)"
        )

    # elements ----------------------------------------------------------------------
    def element(self, no: int, line: str) -> None:
        m = _ELEMENT.match(line)
        if m is None:
            raise self.error(no, "cannot read element line: expected NAME ' CODE (NODES; PARAMS)")
        name = " ".join(m["name"].split())
        code = m["code"]
        body = m["body"].strip()
        if not name:
            raise self.error(no, "element has no name before the apostrophe")
        if not code:
            raise self.error(no, f"element {name!r} has no code after the apostrophe")
        if code not in ELEMENT_TYPES:
            hint = difflib.get_close_matches(code.upper(), list(ELEMENT_TYPES), n=1, cutoff=0.5)
            did = f"; did you mean {hint[0]!r}?" if hint else ""
            raise self.error(
                no, f"unknown element {code!r}{did} (valid: {', '.join(ELEMENT_TYPES)})"
            )
        et = ELEMENT_TYPES[code]
        if not (body.startswith("(") and body.endswith(")")):
            raise self.error(no, f"element {name!r}: expected '(NODES; PARAMS)' after {code}")
        inner = body[1:-1]
        node_txt, _sep, par_txt = inner.partition(";")
        nodes = tuple(t for t in re.split(r"[\s,]+", node_txt.strip()) if t)
        for nd in nodes:
            if not _NODE.match(nd):
                raise self.error(no, f"element {name!r}: bad node name {nd!r} (letters, digits, _)")
        want = " ".join(f"n{i + 1}" for i in range(et.n_nodes))
        if len(nodes) < et.n_nodes:
            raise self.error(
                no,
                f"missing node: element {name!r} ({code}) needs {et.n_nodes} node(s) ({want}),"
                f" got {len(nodes)}",
            )
        if len(nodes) > et.n_nodes:
            raise self.error(
                no,
                f"too many nodes: element {name!r} ({code}) takes {et.n_nodes} node(s) ({want}),"
                f" got {len(nodes)}",
            )
        if len(set(nodes)) != len(nodes):
            twice = next(nd for nd in nodes if nodes.count(nd) > 1)
            raise self.error(no, f"element {name!r} connects node {twice!r} to itself")
        if all(nd in self.base_lines for nd in nodes):
            raise self.error(no, f"element {name!r} connects only BASE nodes; it has no effect")
        if name in self.element_lines:
            raise self.error(
                no, f"duplicate element name {name!r} (first on line {self.element_lines[name]})"
            )
        params = self.params(no, name, et, par_txt)
        self.elements.append(Element(name, code, nodes, params, no))
        self.element_lines[name] = no

    def params(self, no: int, name: str, et: ElementType, text: str) -> tuple[float, ...]:
        names = [p.name for p in et.params]
        given: dict[str, float] = {}
        items = [s for s in text.split(",")] if text.strip() else []
        named_seen = False
        for pos, item in enumerate(items):
            if not item.strip():
                raise self.error(no, f"element {name!r}: empty parameter {pos + 1}")
            m = _ASSIGN.match(item)
            if m:
                key, val_txt = m["key"], m["val"]
                if key not in names:
                    raise self.error(
                        no,
                        f"element {name!r}: {et.code} has no parameter {key!r}"
                        f" (parameters: {', '.join(names) or 'none'})",
                    )
                named_seen = True
            else:
                if named_seen:
                    raise self.error(
                        no, f"element {name!r}: positional parameter after a named one"
                    )
                if pos >= len(names):
                    raise self.error(
                        no,
                        f"element {name!r}: {et.code} takes {len(names)} parameter(s)"
                        f" ({', '.join(names)}), got {len(items)}",
                    )
                key, val_txt = names[pos], item
            if key in given:
                raise self.error(no, f"element {name!r}: parameter {key!r} given twice")
            try:
                given[key] = evaluate_number(val_txt)
            except ValueError:
                raise self.error(
                    no, f"element {name!r}: parameter {key!r} is not a number: {val_txt.strip()!r}"
                ) from None
        out = []
        for prm in et.params:
            val = given.get(prm.name, prm.default)
            if val is None:
                raise self.error(
                    no, f"element {name!r}: missing parameter {prm.name!r} ({prm.meaning})"
                )
            why = prm.check(float(val))
            if why is not None:
                raise self.error(no, f"element {name!r}: parameter {prm.name!r} must be {why}")
            out.append(float(val))
        return tuple(out)

    # initial values ----------------------------------------------------------------
    def initial_value(self, no: int, line: str) -> None:
        m = re.match(r"(?P<node>[^\s(]+)\s*\((?P<body>.*)\)\Z", line)
        if m is None:
            raise self.error(no, "cannot read initial value: expected NODE (x = VALUE, v = VALUE)")
        node = m["node"]
        vals = {"x": 0.0, "v": 0.0}
        seen: set[str] = set()
        for item in (s for s in m["body"].split(",") if s.strip()):
            am = _ASSIGN.match(item)
            if am is None or am["key"] not in vals:
                raise self.error(
                    no, f"initial value of node {node!r}: expected x = VALUE or v = VALUE"
                )
            if am["key"] in seen:
                raise self.error(no, f"initial value of node {node!r}: {am['key']!r} given twice")
            seen.add(am["key"])
            try:
                vals[am["key"]] = evaluate_number(am["val"])
            except ValueError:
                raise self.error(
                    no, f"initial value of node {node!r}: not a number: {am['val'].strip()!r}"
                ) from None
        if node in self.initial_lines:
            raise self.error(no, f"initial value of node {node!r} given twice"
                             f" (line {self.initial_lines[node]})")
        self.initial.append(InitialValue(node, vals["x"], vals["v"], no))
        self.initial_lines[node] = no

    # whole-netlist checks ----------------------------------------------------------
    def check_topology(self, netlist: Netlist) -> None:
        used = {nd for el in netlist.elements for nd in el.nodes}
        for nd in netlist.base:
            if nd not in used:
                raise self.error(
                    self.base_lines[nd], f"BASE node {nd!r} is not used by any element"
                )
        # union-find over free nodes plus one "ground" vertex: BASE nodes and the inertial
        # frame of one-node inertias (M, J). Sources couple nothing (zero Jacobian).
        ground = "\0ground"
        parent: dict[str, str] = {ground: ground}

        def find(a: str) -> str:
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        def union(a: str, b: str) -> None:
            parent[find(a)] = find(b)

        base = set(netlist.base)
        first_line: dict[str, int] = {}
        for el in netlist.elements:
            for nd in el.nodes:
                first_line.setdefault(nd, el.line)
                find(nd)
            if el.type.source:
                continue
            verts = [ground if nd in base else nd for nd in el.nodes]
            if el.type.n_nodes == 1:
                verts.append(ground)
            for other in verts[1:]:
                union(verts[0], other)
        g = find(ground)
        for nd in netlist.free_nodes:
            if find(nd) != g:
                raise self.error(
                    first_line[nd],
                    f"floating node {nd!r}: no path through non-source elements to a BASE node"
                    " or to an inertia (M, J); its equation would be singular",
                )

    def check_initial(self, netlist: Netlist) -> None:
        free = set(netlist.free_nodes)
        for iv in self.initial:
            if iv.node in self.base_lines:
                raise self.error(
                    iv.line, f"initial value for BASE node {iv.node!r} (x = v = 0 there)"
                )
            if iv.node not in free:
                raise self.error(iv.line, f"initial value for unknown node {iv.node!r}")


def parse_netlist(text: str, filename: str = "<string>") -> Netlist:
    """Parse and check netlist text.

    Parameters
    ----------
    text : the netlist (format in the module docstring).
    filename : used in error messages.

    Returns
    -------
    Netlist

    Raises
    ------
    NetlistError
        On the first error, with its line number.
    """
    return _Parser(text, filename).run()


def load_netlist(path: str | Path) -> Netlist:
    """Read and parse a netlist file; errors carry the file's path. The file is read under
    the rules of every file a study refers to (:mod:`mbstudy.solvers.textfiles`: a regular
    file of at most 4 MiB of strict UTF-8, never blocking on a FIFO or a device).

    Raises
    ------
    NetlistError
        On the first error in the file.
    OSError
        If the file cannot be read or is refused by those rules.
    """
    from mbstudy.solvers.textfiles import FileRefused, read_regular_file

    path = Path(path)
    try:
        text = read_regular_file(path)
    except FileRefused as exc:
        raise OSError(f"{path}: cannot read the netlist: {exc}") from None
    return parse_netlist(text, str(path))
