"""From a validated mechanism file to the symbolic model functions.

:func:`derive` builds the coordinates, the element contributions (:mod:`.planar`,
:mod:`.spatial` and the dimension-free forces here) and differentiates (docs/explanation/methods.md
conventions, docs/explanation/solver-contract.md):

    Phi_q = dPhi/dq,  Phi_t = dPhi/dt,
    gamma = -(Phi_q v)_q v - 2 Phi_qt v - Phi_tt
          = -(d/dq (Phi_q v + Phi_t)) v - d/dt (Phi_q v + Phi_t),
    T = 1/2 v^T M(q) v,  Q = -dU/dq + Q_nc + dT/dq - (d(M v)/dq) v,
    energy = T + U,  power = Q_nc^T v.

U collects gravity and the springs, Q_nc the dampers, point forces and torques (whose
work the state's W integrates, so E - E0 - W = 0). The velocity term of Q is Lagrange's
equation on the whole coordinate space (zero for the planar constant mass matrix; the
gyroscopic terms of Euler-parameter bodies, as in the ``top`` model).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy as sp
from mbstudy.solvers.mechanisms import planar, spatial
from mbstudy.solvers.mechanisms.expressions import ExpressionError, T, condition, to_sympy
from mbstudy.solvers.mechanisms.rownames import RowNamer
from mbstudy.solvers.mechanisms.schema import Element, Mechanism, hint


@dataclass
class Derived:
    """The symbolic model of one mechanism file."""

    mech: Mechanism
    q: list[sp.Symbol]
    v: list[sp.Symbol]
    p: list[sp.Symbol]
    phi: list[sp.Expr]
    phi_q: sp.Matrix
    phi_t: list[sp.Expr]
    gamma: list[sp.Expr]
    M: sp.Matrix
    Q: list[sp.Expr]
    Q_conservative: list[sp.Expr]
    energy: sp.Expr
    power: sp.Expr
    potential: sp.Expr
    guess: list[sp.Expr]
    fix: dict[int, sp.Expr]
    speed: dict[int, sp.Expr]
    branch: list[tuple[sp.Expr, str, str]]
    angle_mask: list[bool]
    row_labels: list[str] = field(default_factory=list)
    #: rows that hold at the initial state but are not constraints of the motion (the
    #: Euler parameters' normalization in element mode): the assembly adds them
    init_rows: list[sp.Expr] = field(default_factory=list)
    conservative: bool = True
    constant_mass: bool = True
    rheonomic: bool = False

    @property
    def n(self) -> int:
        return len(self.q)

    @property
    def m(self) -> int:
        return len(self.phi)


#: the normalization element's default decay rate of Ldot, M_u/m_u, times t_end
ELEMENT_RATE = 20.0
#: name -> (meaning, sign condition) of the element's parameters (m_u = 0: M singular)
ELEMENT_PARAMS = {
    "m_u": ("normalization element: radial inertia of |e| (kg m^2)", "positive"),
    "M_u": ("normalization element: flow coefficient, i4 = M_u d|e|/dt (kg m^2/s)",
            "nonnegative"),
}  # fmt: skip


def element_parameters(mech: Mechanism) -> Mechanism:
    """``mech`` with the normalization element's parameters m_u and M_u (the file's own
    ``[parameters]`` entries of these names, if any, are their defaults).

    Default m_u = (4/3) tr(J') averaged over the bodies at the default parameters: the
    rotational mass block 4 L^T J' L has the eigenvalues 4 J_i on |e| = 1, so the radial
    eigenvalue m_u sits among them. Default M_u = ELEMENT_RATE m_u / t_end: a perturbed
    Ldot decays as exp(-M_u t/m_u), by e^-20 over the interval, while h M_u/m_u stays
    below the explicit methods' stability limit for any step with more than ~10 steps
    over the interval (not stiff).
    """
    params = dict(mech.parameters)
    if "m_u" not in params:
        names = {k: sp.Float(v) for k, v in params.items()}
        traces = []
        for body in mech.bodies:
            key = f"bodies.{body.name}.inertia"
            rows = body.inertia if isinstance(body.inertia[0], list) else None
            diag = [rows[k][k] for k in range(3)] if rows else body.inertia
            try:
                traces.append(sum(float(to_sympy(x, names)) for x in diag))
            except (ExpressionError, TypeError) as exc:
                raise mech.err(key, str(exc)) from None
        params["m_u"] = 4.0 / 3.0 * sum(traces) / len(traces)
    if "M_u" not in params:
        params["M_u"] = ELEMENT_RATE * params["m_u"] / mech.t_end
    return replace(mech, parameters=params)


class _Builder:
    def __init__(self, mech: Mechanism) -> None:
        self.mech = mech
        n = mech.n
        self.q = list(sp.symbols(f"q_0:{n}", real=True))
        self.v = list(sp.symbols(f"v_0:{n}", real=True))
        self.p = [sp.Symbol(f"p_{k}", real=True) for k in range(len(mech.parameters))]
        self.names = dict(zip(mech.parameters, self.p, strict=True))
        self.defaults = {self.p[k]: val for k, val in enumerate(mech.parameters.values())}
        if mech.dimension == 2:
            hinges: planar.Hinges = {}
            for body in mech.bodies:
                if body.hinge is not None:
                    key = f"bodies.{body.name}.hinge"
                    parent, s_parent = mech.point_ref(f"{key}[1]", body.hinge[1])
                    hinges[body.index] = (
                        None if parent is None else parent.index,
                        self.vec(f"{key}[1]", s_parent),
                        self.vec(f"{key}[0]", body.points[body.hinge[0]]),
                    )
            offsets = [body.offset for body in mech.bodies]
            self.kin: planar.Planar | spatial.Spatial = planar.Planar(self.q, offsets, hinges)
        else:
            element = None
            if mech.normalization == "element":
                element = (self.names["m_u"], self.names["M_u"])
            self.kin = spatial.Spatial(self.q, element)
        self.phi: list[sp.Expr] = []
        self.labels: list[str] = []
        self.namer = RowNamer(mech.dimension)
        self.U = sp.Integer(0)
        self.Qnc = [sp.Integer(0)] * n
        self.nonconservative = False

    # -- expressions -------------------------------------------------------------------
    def state(self, ref: str) -> sp.Expr | None:
        """``BODY.COORD``, ``BODY.COORD_dot`` (planar ``BODY.omega``), ``BODY.POINT.x``."""
        parts = ref.split(".")
        if len(parts) == 2:
            body = self.mech.body(parts[0])
            if body is None:
                return None
            base = body.offset
            coords = body.coords
            c = parts[1]
            if c in coords:
                return self.q[base + coords.index(c)]
            if c.endswith("_dot") and c[:-4] in coords:
                return self.v[base + coords.index(c[:-4])]
            if isinstance(self.kin, planar.Planar) and c == "omega":
                return self.kin.angular_velocity(body.index, self.v)
            if isinstance(self.kin, planar.Planar) and c == "theta":
                return self.kin.angle(body.index)
            return None
        if len(parts) == 3 and parts[2] in "xyz"[: self.mech.dimension]:
            try:
                body, s = self.mech.point_ref("", f"{parts[0]}.{parts[1]}")
            except Exception:
                return None
            pos = self.point(None if body is None else body.index, s, "")
            return pos["xyz".index(parts[2])]
        return None

    def expr(self, key: str, value, *, allow_t: bool = False, state: bool = False) -> sp.Expr:
        try:
            return to_sympy(value, self.names, allow_t=allow_t, state=self.state if state else None)
        except ExpressionError as exc:
            raise self.mech.err(key, str(exc)) from None

    def vec(self, key: str, values, **kw) -> list[sp.Expr]:
        return [self.expr(f"{key}[{k}]", val, **kw) for k, val in enumerate(values)]

    def point(self, index: int | None, s: list, key: str) -> sp.Matrix:
        return self.kin.point(index, self.vec(key, s))

    # -- elements ----------------------------------------------------------------------
    def two_points(self, el: Element):
        at = el.data.get("at")
        if not isinstance(at, list) or len(at) != 2:
            raise self.mech.err(
                f"{el.key}.at", f"expected two points ['BODY.P', 'BODY.P'], found {at!r}"
            )
        (bi, si), (bj, sj) = (self.mech.point_ref(f"{el.key}.at[{k}]", r) for k, r in enumerate(at))
        if bi is bj:
            raise self.mech.err(f"{el.key}.at", "both points are on the same body")
        i = None if bi is None else bi.index
        j = None if bj is None else bj.index
        si = self.vec(f"{el.key}.at[0]", si)
        sj = self.vec(f"{el.key}.at[1]", sj)
        return i, si, j, sj

    def allowed(self, el: Element, keys: tuple[str, ...]) -> None:
        for k in el.data:
            if k not in keys:
                raise self.mech.err(
                    f"{el.key}.{k}", f"unknown key for a {el.type} {el.kind}{hint(k, keys)}"
                )

    def axes(self, el: Element) -> tuple[list, list]:
        d = self.mech.dimension
        if "axes" in el.data:
            ax = el.data["axes"]
            if not (isinstance(ax, list) and len(ax) == 2):
                raise self.mech.err(
                    f"{el.key}.axes",
                    "expected two axes [[...], [...]] (body frames of the two points)",
                )
            return tuple(
                self.vec(f"{el.key}.axes[{k}]", self._v(f"{el.key}.axes[{k}]", a, d))
                for k, a in enumerate(ax)
            )
        if "axis" not in el.data:
            raise self.mech.err(
                f"{el.key}.axis", f"required key is missing (the joint axis, {d} components)"
            )
        a = self.vec(f"{el.key}.axis", self._v(f"{el.key}.axis", el.data["axis"], d))
        return a, a

    def _v(self, key: str, value, size: int) -> list:
        if not isinstance(value, list) or len(value) != size:
            raise self.mech.err(
                key, f"expected a list of {size} numbers or expressions, found {value!r}"
            )
        return value

    def joint(self, el: Element) -> None:
        d = self.mech.dimension
        t = el.type
        if d == 2:
            self.allowed(el, ("type", "at", "axis", "angle", "name"))
            i, si, j, sj = self.two_points(el)
            angle = self.expr(f"{el.key}.angle", el.data.get("angle", 0))
            if t == "revolute":
                rows = planar.revolute(self.kin, i, si, j, sj)
            elif t == "prismatic":
                axis = self.axes(el)[1]
                rows = planar.prismatic(self.kin, i, si, j, sj, axis, angle)
            else:
                rows = planar.fixed(self.kin, i, si, j, sj, angle)
        else:
            self.allowed(el, ("type", "at", "axis", "axes", "name"))
            i, si, j, sj = self.two_points(el)
            if t == "spherical":
                rows = spatial.spherical(self.kin, i, si, j, sj)
            elif t == "fixed":
                rows = spatial.fixed(self.kin, i, si, j, sj)
            else:
                ai, aj = self.axes(el)
                if t == "universal":
                    rows = spatial.universal(self.kin, i, si, j, sj, ai, aj)
                else:
                    fn = {"revolute": spatial.revolute, "cylindrical": spatial.cylindrical,
                          "prismatic": spatial.prismatic}[t]  # fmt: skip
                    rows = fn(self.kin, i, si, j, sj, ai, aj, self.defaults)
        self.add_rows(rows, el)

    def add_rows(self, rows: list[sp.Expr], el: Element) -> None:
        if el.kind == "driver":
            names = [self.namer.driver(el.data)]
        else:
            names = self.namer.joint(el.data, el.type, len(rows))
        self.phi += rows
        self.labels += names

    def driver(self, el: Element) -> None:
        self.allowed(el, ("coordinate", "relative", "value", "name"))
        if "value" not in el.data:
            raise self.mech.err(f"{el.key}.value", "required key is missing (a function of t)")
        f = self.expr(f"{el.key}.value", el.data["value"], allow_t=True)
        if "coordinate" in el.data:
            k = self.mech.coordinate_index(f"{el.key}.coordinate", el.data["coordinate"])
            row = self.q[k] - f
        elif "relative" in el.data and self.mech.dimension == 2:
            rel = el.data["relative"]
            if not isinstance(rel, list) or len(rel) != 2:
                raise self.mech.err(
                    f"{el.key}.relative", "expected two body names ['a', 'b'] (theta_a - theta_b)"
                )
            idx = []
            for k, b in enumerate(rel):
                if b == "ground":
                    idx.append(None)
                    continue
                body = self.mech.body(b) if isinstance(b, str) else None
                if body is None:
                    raise self.mech.err(
                        f"{el.key}.relative[{k}]",
                        f"unknown body {b!r}{hint(str(b), [x.name for x in self.mech.bodies])}",
                    )
                idx.append(body.index)
            row = self.kin.angle(idx[0]) - self.kin.angle(idx[1]) - f
        else:
            raise self.mech.err(el.key, "a driver needs 'coordinate' (or, planar, 'relative')")
        self.add_rows([row], el)

    def force(self, el: Element) -> None:
        n = len(self.q)
        if el.type == "spring_damper":
            self.allowed(el, ("type", "at", "stiffness", "damping", "length", "name"))
            i, si, j, sj = self.two_points(el)
            k = self.expr(f"{el.key}.stiffness", el.data.get("stiffness", 0))
            c = self.expr(f"{el.key}.damping", el.data.get("damping", 0))
            L0 = self.expr(f"{el.key}.length", el.data.get("length", 0))
            dvec = self.kin.point(i, si) - self.kin.point(j, sj)
            L = sp.sqrt((dvec.T * dvec)[0])
            self.U += k / 2 * (L - L0) ** 2
            if c != 0:
                dL = [sp.diff(L, qk) for qk in self.q]
                Ldot = sum(a * b for a, b in zip(dL, self.v, strict=True))
                for r in range(n):
                    self.Qnc[r] += -c * Ldot * dL[r]
                self.nonconservative = True
        elif el.type == "force":
            self.allowed(el, ("type", "at", "value", "name"))
            at = el.data.get("at")
            body, s = self.mech.point_ref(f"{el.key}.at", at)
            if body is None:
                raise self.mech.err(
                    f"{el.key}.at", "a force acts on a body point, not on the ground"
                )
            P = self.kin.point(body.index, self.vec(f"{el.key}.at", s))
            F = self.vec(
                f"{el.key}.value",
                self._v(f"{el.key}.value", el.data.get("value"), self.mech.dimension),
                allow_t=True,
                state=True,
            )
            for r, qk in enumerate(self.q):
                self.Qnc[r] += sum(sp.diff(P[a], qk) * F[a] for a in range(len(F)))
            self.nonconservative = True
        else:  # torque
            self.allowed(el, ("type", "body", "bodies", "value", "frame", "name"))
            frame = el.data.get("frame", "global")
            if frame not in ("global", "body") or (frame == "body" and self.mech.dimension == 2):
                raise self.mech.err(
                    f"{el.key}.frame",
                    f"expected 'global' or (spatial only) 'body', found {frame!r}",
                )
            if "bodies" in el.data:
                names = el.data["bodies"]
                if not isinstance(names, list) or len(names) != 2:
                    raise self.mech.err(
                        f"{el.key}.bodies",
                        "expected two body names (+torque on the first, - on the second)",
                    )
            else:
                names = [el.data.get("body")]
            value = el.data.get("value")
            if self.mech.dimension == 2:
                tau = self.expr(f"{el.key}.value", value, allow_t=True, state=True)
            else:
                tau = self.vec(
                    f"{el.key}.value",
                    self._v(f"{el.key}.value", value, 3),
                    allow_t=True,
                    state=True,
                )
            first = None
            for k, b in enumerate(names):
                if b == "ground" and k == 1:
                    continue
                body = self.mech.body(b) if isinstance(b, str) else None
                if body is None:
                    key = f"{el.key}.bodies[{k}]" if "bodies" in el.data else f"{el.key}.body"
                    raise self.mech.err(
                        key, f"unknown body {b!r}{hint(str(b), [x.name for x in self.mech.bodies])}"
                    )
                sign = 1 if k == 0 else -1
                if self.mech.dimension == 2:
                    gen = self.kin.torque(body.index, sign * tau)
                elif frame == "body" and k == 0:
                    # n' in the frame of the first body: 2 L^T n' on it
                    first = body.index
                    gen = self.kin.torque_body(body.index, tau)
                elif frame == "body":
                    # the reaction -A_first n' (global) on the second body
                    n_global = self.kin.rot(first) * sp.Matrix(tau)
                    gen = self.kin.torque(body.index, [-x for x in n_global])
                else:
                    gen = self.kin.torque(body.index, [sign * x for x in tau])
                for r, g in gen.items():
                    self.Qnc[r] += g
            self.nonconservative = True


def derive(mech: Mechanism) -> Derived:
    """Build and differentiate the model of ``mech``.

    Raises
    ------
    MechanismError
        For an expression or reference that does not resolve (naming the key).
    """
    element = mech.dimension == 3 and mech.normalization == "element"
    if element:
        mech = element_parameters(mech)
    b = _Builder(mech)
    n = len(b.q)
    M = sp.zeros(n, n)
    gvec = b.vec("mechanism.gravity", mech.gravity)
    for body in mech.bodies:
        key = f"bodies.{body.name}"
        m = b.expr(f"{key}.mass", body.mass)
        if mech.dimension == 2:
            J = b.expr(f"{key}.inertia", body.inertia)
        elif isinstance(body.inertia[0], list):
            J = sp.Matrix([b.vec(f"{key}.inertia[{r}]", row) for r, row in enumerate(body.inertia)])
        else:
            J = sp.diag(*b.vec(f"{key}.inertia", body.inertia))
        b.kin.add_mass(M, body.index, m, J)
        r = b.kin.point(body.index, [0] * mech.dimension)
        b.U += -m * sum(gvec[a] * r[a] for a in range(mech.dimension))
        for pname, s in body.points.items():
            b.vec(f"{key}.points.{pname}", s)  # every point expression must parse
    for pname, s in mech.ground.items():
        b.vec(f"ground.points.{pname}", s)
    for el in mech.joints:
        b.joint(el)
    for el in mech.drivers:
        b.driver(el)
    for el in mech.forces:
        b.force(el)
    init_rows: list[sp.Expr] = []
    for body in mech.bodies:
        rows = b.kin.normalization(body.index)
        if element:  # the element: a flow instead of a constraint row
            init_rows += rows
            for r, g in b.kin.radial_damping(body.index, b.v).items():
                b.Qnc[r] += g
            b.nonconservative = True
            continue
        for r in rows:
            b.phi.append(r)
            b.labels.append(b.namer.normalization(body.name))
    if not b.phi:
        raise mech.err("joints", "the mechanism has no constraints (no joints or drivers)")

    q, v = b.q, b.v
    Phi = sp.Matrix(b.phi)
    G = Phi.jacobian(q)
    Pt = Phi.diff(T)
    vel = G * sp.Matrix(v) + Pt
    gam = -(vel.jacobian(q) * sp.Matrix(v) + vel.diff(T))
    Tkin = (sp.Matrix(v).T * M * sp.Matrix(v))[0] / 2
    constant_mass = all(not M[r, c].has(*q) for r in range(n) for c in range(n))
    Qcons = [-sp.diff(b.U, qk) for qk in q]
    Q = [Qcons[r] + b.Qnc[r] for r in range(n)]
    if not constant_mass:
        Mv = M * sp.Matrix(v)
        Qv = sp.Matrix([sp.diff(Tkin, qk) for qk in q]) - Mv.jacobian(q) * sp.Matrix(v)
        Q = [Q[r] + Qv[r] for r in range(n)]
    power = sum(b.Qnc[r] * v[r] for r in range(n))

    guess: list[sp.Expr] = []
    for body in mech.bodies:
        guess += b.vec(f"bodies.{body.name}.guess", body.guess)
    fix = {
        mech.coordinate_index(f"initial.fix.{k}", k): b.expr(f"initial.fix.{k}", val)
        for k, val in mech.fix.items()
    }
    speed = {
        mech.coordinate_index(f"initial.speed.{k}", k): b.expr(f"initial.speed.{k}", val)
        for k, val in mech.speed.items()
    }
    branch = []
    for k, text in enumerate(mech.branch):
        key = "initial.branch" if len(mech.branch) == 1 else f"initial.branch[{k}]"
        try:
            g, op = condition(text, b.names, b.state)
        except ExpressionError as exc:
            raise mech.err(key, str(exc)) from None
        if g.has(*v):
            raise mech.err(key, "a branch condition may depend on positions only")
        branch.append((g, op, text))
    angular = ("theta", "angle", "e0", "e1", "e2", "e3")
    mask = [c in angular for body in mech.bodies for c in body.coords]
    return Derived(
        mech=mech, q=q, v=v, p=b.p, phi=list(Phi), phi_q=G, phi_t=list(Pt), gamma=list(gam),
        M=M, Q=Q, Q_conservative=Qcons, energy=Tkin + b.U, power=power, potential=b.U,
        guess=guess, fix=fix, speed=speed, branch=branch, angle_mask=mask, row_labels=b.labels,
        init_rows=init_rows,
        conservative=not b.nonconservative and not any(x != 0 for x in Pt),
        constant_mass=constant_mass, rheonomic=any(x != 0 for x in Pt),
    )  # fmt: skip
