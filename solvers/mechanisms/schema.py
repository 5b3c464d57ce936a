"""Reading and validating a mechanism file (TOML; format in docs/explanation/mechanisms.md).

:func:`read` returns a :class:`Mechanism`: the file's sections checked for unknown keys
(with the closest valid name), types and shapes, and every point, body and coordinate
reference resolved. Expressions stay as the file wrote them; :mod:`.build` translates
them with :mod:`.expressions`. Every problem is a :class:`MechanismError` whose text is
one line ``FILE: KEY: what is wrong``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mbstudy.solvers.mechanisms import repeat
from mbstudy.solvers.textfiles import FileRefused, read_regular_file

GENERATOR_VERSION = "1"

PLANAR_COORDS = ("x", "y", "theta")
#: a planar body hinged to another body or the ground has one coordinate: its angle
#: relative to the parent's frame (joint coordinates, docs/explanation/mechanisms.md)
HINGED_COORDS = ("angle",)
SPATIAL_COORDS = ("x", "y", "z", "e0", "e1", "e2", "e3")
JOINTS = {
    2: ("revolute", "prismatic", "fixed"),
    3: ("spherical", "revolute", "universal", "cylindrical", "prismatic", "fixed"),
}
FORCES = ("spring_damper", "force", "torque")
#: how a spatial body's Euler parameters are normalized (docs/explanation/mechanisms.md): a
#constraint
#: row e^T e - 1 = 0, or the normalization element (a radial inertia and damping)
NORMALIZATIONS = ("constraint", "element")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: "$" would let a final newline pass
_RESERVED = {"t", "pi", "ground", "sin", "cos", "tan", "sqrt", "exp", "atan2"}


class MechanismError(ValueError):
    """A malformed or inconsistent mechanism file; ``str()`` is one line naming file and key."""

    def __init__(self, file: str, key: str, message: str) -> None:
        self.file = file
        self.key = key
        self.message = message
        super().__init__(f"{file}: {key}: {message}")


def printable(text: str) -> str:
    """``text`` with every control, format or line/paragraph-separator character (Unicode
    categories C*, Zl, Zp: ESC sequences, BEL, bidi overrides, U+2028) written as a
    ``\\xNN`` / ``\\uNNNN`` escape, so that a file's text shown on a terminal is one
    line of what the file says and cannot drive the terminal."""
    def esc(c: str) -> str:
        if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp"):
            return c.encode("unicode_escape").decode("ascii")
        return c

    return "".join(esc(c) for c in text)


def hint(name: str, valid: list[str] | tuple[str, ...]) -> str:
    """``; did you mean 'X'?`` for the closest valid name, else the valid names."""
    hits = difflib.get_close_matches(str(name), list(valid), n=1, cutoff=0.5)
    if hits:
        return f"; did you mean {hits[0]!r}?"
    return f" (valid: {', '.join(valid)})" if valid else ""


@dataclass
class Body:
    """One rigid body (``[bodies.NAME]``)."""

    name: str
    index: int
    mass: Any
    inertia: Any
    points: dict[str, list[Any]]
    guess: list[Any]
    #: planar joint-coordinate body: (own point, parent point 'BODY.POINT'), else None
    hinge: tuple[str, str] | None = None
    #: index in q of the body's first coordinate
    offset: int = 0
    coords: tuple[str, ...] = PLANAR_COORDS


@dataclass
class Element:
    """One joint, force or driver: its type, its table and its key (``joints[2]``)."""

    kind: str
    type: str
    data: dict[str, Any]
    key: str


@dataclass
class Mechanism:
    """A validated mechanism file."""

    file: str
    path: Path
    text: str
    sha256: str
    name: str
    dimension: int
    gravity: list[Any]
    parameters: dict[str, float]
    ground: dict[str, list[Any]]
    bodies: list[Body]
    joints: list[Element]
    forces: list[Element]
    drivers: list[Element]
    fix: dict[str, Any] = field(default_factory=dict)
    speed: dict[str, Any] = field(default_factory=dict)
    branch: list[str] = field(default_factory=list)
    t_end: float = 1.0
    summary: str = ""
    #: the Euler parameters' normalization in effect (spatial), and the file's own
    normalization: str = "constraint"
    own_normalization: str = "constraint"

    @property
    def coords(self) -> tuple[str, ...]:
        """The coordinates of a free body (x, y, theta or x, y, z, e0..e3)."""
        return PLANAR_COORDS if self.dimension == 2 else SPATIAL_COORDS

    @property
    def n(self) -> int:
        """Number of coordinates (free bodies 3 or 7, hinged bodies 1)."""
        return sum(len(b.coords) for b in self.bodies)

    def err(self, key: str, message: str) -> MechanismError:
        return MechanismError(self.file, key, message)

    def body(self, name: str) -> Body | None:
        for b in self.bodies:
            if b.name == name:
                return b
        return None

    def coordinate_index(self, key: str, ref: Any) -> int:
        """Index in q of ``BODY.COORD`` (``crank.theta``)."""
        if not isinstance(ref, str) or ref.count(".") != 1:
            raise self.err(
                key, f"expected 'BODY.COORDINATE' such as 'crank.{self.coords[-1]}', found {ref!r}"
            )
        bname, coord = ref.split(".")
        body = self.body(bname)
        if body is None:
            raise self.err(
                key, f"unknown body {bname!r}{hint(bname, [b.name for b in self.bodies])}"
            )
        if coord not in body.coords:
            raise self.err(
                key, f"unknown coordinate {coord!r} of body {bname!r}{hint(coord, body.coords)}"
            )
        return body.offset + body.coords.index(coord)

    def point_ref(self, key: str, ref: Any) -> tuple[Body | None, list[Any]]:
        """Resolve ``BODY.POINT`` (``ground.A``) to (body or None for ground, coordinates)."""
        if not isinstance(ref, str) or ref.count(".") != 1:
            raise self.err(key, f"expected a point 'BODY.POINT' such as 'crank.A', found {ref!r}")
        bname, pname = ref.split(".")
        if bname == "ground":
            if pname not in self.ground:
                raise self.err(
                    key, f"unknown point {pname!r} of the ground{hint(pname, list(self.ground))}"
                )
            return None, self.ground[pname]
        body = self.body(bname)
        if body is None:
            valid = ["ground", *(b.name for b in self.bodies)]
            raise self.err(key, f"unknown body {bname!r}{hint(bname, valid)}")
        if pname not in body.points:
            raise self.err(
                key, f"unknown point {pname!r} of body {bname!r}{hint(pname, list(body.points))}"
            )
        return body, body.points[pname]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key: str, message: str) -> MechanismError:
        return MechanismError(self.file, key, message)

    def table(self, key: str, value: Any, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table ({what}), found {_show(value)}")
        return value

    def keys(self, key: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
        for k in table:
            if k not in allowed:
                where = f"{key}.{k}" if key else k
                raise self.fail(where, f"unknown key{hint(k, allowed)}")

    def required(self, key: str, table: dict[str, Any], name: str, what: str) -> Any:
        if name not in table:
            raise self.fail(f"{key}.{name}", f"required key is missing ({what})")
        return table[name]

    def scalar(self, key: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(key, f"expected a number or an expression string, found {_show(value)}")
        return value

    def vector(self, key: str, value: Any, size: int) -> list[Any]:
        if not isinstance(value, list) or len(value) != size:
            raise self.fail(
                key, f"expected a list of {size} numbers or expressions, found {_show(value)}"
            )
        return [self.scalar(f"{key}[{i}]", v) for i, v in enumerate(value)]

    def name(self, key: str, value: str) -> str:
        if not _NAME.fullmatch(value) or value in _RESERVED:
            raise self.fail(
                key,
                f"{value!r} is not a valid name (letters, digits, _;"
                f" not {', '.join(sorted(_RESERVED))})",
            )
        return value

    def points(self, key: str, value: Any, dim: int) -> dict[str, list[Any]]:
        table = self.table(key, value, "point names -> body-frame coordinates")
        return {
            self.name(f"{key}.{k}", k): self.vector(f"{key}.{k}", v, dim) for k, v in table.items()
        }


def read(
    path: str | Path, display: str | None = None, normalization: str | None = None
) -> Mechanism:
    """Read and validate the mechanism file at ``path``; ``normalization`` (if not None)
    overrides the file's ``[mechanism] normalization``.

    Raises
    ------
    MechanismError
        For a missing, unreadable, malformed or inconsistent file.
    """
    path = Path(path)
    file = display or str(path)
    try:
        # a regular file of at most 4 MiB of strict UTF-8 (the store records the text,
        # and the study hash its digest): the rules of every file a study refers to
        text = read_regular_file(path)
    except FileRefused as exc:
        raise MechanismError(file, "file", f"cannot read the mechanism file: {exc}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MechanismError(file, "file", f"not valid TOML: {exc}") from None
    except RecursionError:
        raise MechanismError(file, "file", "not valid TOML: arrays or inline tables nested"
                             " too deeply") from None
    rd = _Reader(file)
    doc = repeat.expand(doc, rd.fail)
    rd.keys(
        "",
        doc,
        ("mechanism", "parameters", "ground", "bodies", "joints", "forces", "drivers", "initial",
         "sizes", "repeat"),
    )  # fmt: skip
    mech = rd.table(
        "mechanism",
        rd.required("", doc, "mechanism", "[mechanism] table"),
        "name, dimension, gravity",
    )
    rd.keys(
        "mechanism", mech, ("name", "dimension", "gravity", "t_end", "summary", "normalization")
    )
    name = mech.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise rd.fail("mechanism.name", f"expected a non-empty string, found {_show(name)}")
    name = printable(name)  # shown by check-model, plan and the store: never terminal control
    dim = rd.required("mechanism", mech, "dimension", "2 (planar) or 3 (spatial)")
    if dim not in (2, 3) or isinstance(dim, bool):
        raise rd.fail(
            "mechanism.dimension", f"expected 2 (planar) or 3 (spatial), found {_show(dim)}"
        )
    gravity = rd.vector("mechanism.gravity", mech.get("gravity", [0] * dim), dim)
    t_end = mech.get("t_end", 1.0)
    if isinstance(t_end, bool) or not isinstance(t_end, int | float) or not t_end > 0:
        raise rd.fail("mechanism.t_end", f"expected a number > 0, found {_show(t_end)}")
    summary = mech.get("summary", "")
    if not isinstance(summary, str):
        raise rd.fail("mechanism.summary", f"expected a string, found {_show(summary)}")
    summary = printable(summary)
    own_mode = _normalization(rd, "mechanism.normalization", mech.get("normalization"), dim)
    mode = _normalization(rd, "normalization", normalization, dim)

    params: dict[str, float] = {}
    for k, v in rd.table("parameters", doc.get("parameters", {}), "name = number").items():
        rd.name(f"parameters.{k}", k)
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or v != v
            or abs(v) == float("inf")
        ):
            raise rd.fail(
                f"parameters.{k}", f"expected a finite number (the default value), found {_show(v)}"
            )
        params[k] = float(v)

    ground_t = rd.table("ground", doc.get("ground", {}), "points = {...}")
    rd.keys("ground", ground_t, ("points",))
    ground = rd.points("ground.points", ground_t.get("points", {}), dim)

    coords = PLANAR_COORDS if dim == 2 else SPATIAL_COORDS
    bodies: list[Body] = []
    btable = rd.table(
        "bodies", rd.required("", doc, "bodies", "at least one [bodies.NAME]"), "[bodies.NAME]"
    )
    if not btable:
        raise rd.fail("bodies", "at least one body is required")
    for i, (bname, b) in enumerate(btable.items()):
        key = f"bodies.{bname}"
        rd.name(key, bname)
        b = rd.table(key, b, "mass, inertia, points, guess")
        rd.keys(key, b, ("mass", "inertia", "points", "guess", *(("hinge",) if dim == 2 else ())))
        mass = rd.scalar(f"{key}.mass", rd.required(key, b, "mass", "a number or expression"))
        inertia = rd.required(key, b, "inertia", "about the centre of mass")
        if dim == 2:
            inertia = rd.scalar(f"{key}.inertia", inertia)
        elif (
            isinstance(inertia, list)
            and len(inertia) == 3
            and all(isinstance(r, list) for r in inertia)
        ):
            inertia = [rd.vector(f"{key}.inertia[{r}]", row, 3) for r, row in enumerate(inertia)]
        else:
            inertia = rd.vector(f"{key}.inertia", inertia, 3)  # principal moments
        points = rd.points(f"{key}.points", b.get("points", {}), dim)
        hinge = None
        own = coords
        if "hinge" in b:
            hinge = _hinge(rd, f"{key}.hinge", b["hinge"], points)
            own = HINGED_COORDS
        guess = rd.vector(
            f"{key}.guess",
            rd.required(key, b, "guess", f"initial guess {list(own)}"),
            len(own),
        )
        offset = sum(len(x.coords) for x in bodies)
        bodies.append(Body(bname, i, mass, inertia, points, guess, hinge, offset, own))

    def elements(section: str, kind: str, types: tuple[str, ...]) -> list[Element]:
        raw_list = doc.get(section, [])
        if not isinstance(raw_list, list):
            raise rd.fail(
                section, f"expected an array of tables [[{section}]], found {_show(raw_list)}"
            )
        out = []
        for j, el in enumerate(raw_list):
            key = f"{section}[{j}]"
            el = rd.table(key, el, kind)
            if kind == "driver":
                typ = "driver"
            else:
                typ = rd.required(key, el, "type", " | ".join(types))
                if typ not in types:
                    raise rd.fail(
                        f"{key}.type", f"unknown {kind} type {_show(typ)}{hint(str(typ), types)}"
                    )
            out.append(Element(kind, typ, dict(el), key))
        return out

    joints = elements("joints", "joint", JOINTS[dim])
    forces = elements("forces", "force", FORCES)
    drivers = elements("drivers", "driver", ())

    init = rd.table("initial", doc.get("initial", {}), "fix, speed, branch")
    rd.keys("initial", init, ("fix", "speed", "branch"))
    fix = rd.table("initial.fix", init.get("fix", {}), "'BODY.COORD' = value")
    speed = rd.table("initial.speed", init.get("speed", {}), "'BODY.COORD' = value")
    branch = init.get("branch", [])
    if isinstance(branch, str):
        branch = [branch]
    if not isinstance(branch, list) or not all(isinstance(c, str) for c in branch):
        raise rd.fail(
            "initial.branch",
            f"expected a condition string or a list of them, found {_show(branch)}",
        )

    out = Mechanism(
        file=file, path=path.resolve(), text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        name=name, dimension=int(dim), gravity=gravity, parameters=params, ground=ground,
        bodies=bodies, joints=joints, forces=forces, drivers=drivers, fix=dict(fix),
        speed=dict(speed), branch=list(branch), t_end=float(t_end), summary=summary,
        normalization=mode or own_mode or "constraint",
        own_normalization=own_mode or "constraint",
    )  # fmt: skip
    _check_hinges(out)
    for k, v in {
        **{f"initial.fix.{a}": a for a in fix},
        **{f"initial.speed.{a}": a for a in speed},
    }.items():
        out.coordinate_index(k, v)
    for k, v in fix.items():
        rd.scalar(f"initial.fix.{k}", v)
    for k, v in speed.items():
        rd.scalar(f"initial.speed.{k}", v)
    return out


def _normalization(rd: _Reader, key: str, value: Any, dim: Any) -> str | None:
    """A normalization mode (None if not given): one of :data:`NORMALIZATIONS`, spatial only."""
    if value is None:
        return None
    if value not in NORMALIZATIONS:
        raise rd.fail(key, f"expected one of {', '.join(map(repr, NORMALIZATIONS))},"
                           f" found {_show(value)}{hint(str(value), NORMALIZATIONS)}")  # fmt: skip
    if dim != 3:
        raise rd.fail(key, "the normalization of Euler parameters applies to spatial"
                           " mechanisms (dimension = 3) only")  # fmt: skip
    return value


def _hinge(rd: _Reader, key: str, value: Any, points: dict[str, list[Any]]) -> tuple[str, str]:
    """``hinge = ["P", "PARENT.Q"]``: the body's point P turns about point Q of the parent."""
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(x, str) for x in value)
    ):
        raise rd.fail(
            key,
            "expected ['OWN_POINT', 'PARENT.POINT'] (this body's point turns about the"
            f" parent's point), found {_show(value)}",
        )
    if value[0] not in points:
        raise rd.fail(f"{key}[0]", f"unknown point {value[0]!r}{hint(value[0], list(points))}")
    return value[0], value[1]


def _check_hinges(mech: Mechanism) -> None:
    """Every hinge's parent point resolves and the hinges form a tree rooted at the ground."""
    for body in mech.bodies:
        if body.hinge is None:
            continue
        key = f"bodies.{body.name}.hinge[1]"
        parent, _ = mech.point_ref(key, body.hinge[1])
        if parent is body:
            raise mech.err(key, "a body cannot be hinged to itself")
        chain = [body.name]
        while parent is not None and parent.hinge is not None:
            if parent.name in chain:
                raise mech.err(
                    key, f"the hinges form a loop ({' -> '.join([*chain, parent.name])})"
                )
            chain.append(parent.name)
            parent, _ = mech.point_ref(f"bodies.{parent.name}.hinge[1]", parent.hinge[1])
