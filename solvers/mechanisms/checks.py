"""The checks of ``mbstudy check-model``: any model (built-in, plugin, mechanism file).

At the assembled initial state (``initial_state`` of the default parameters, or the given
``p``) and at random states near it:

* assembly: |Phi| and |Phi_q v + Phi_t| at the initial state within 1e-12 (scaled);
* degrees of freedom n - rank(Phi_q) and the rank of Phi_q (SVD, relative tolerance
  1e-10); redundant constraints (rank < m) point to the formulation ``qr``;
* finite differences (central, step 1e-6 scaled) of Phi_q, Phi_t and gamma:
  gamma = -d/ds [Phi_q(q + s v, t + s) v + Phi_t(q + s v, t + s)] at s = 0;
* M symmetric and positive definite, or (``SINGULAR_MASS``: Euler parameters with the
  normalization constraint) positive semi-definite with the augmented matrix
  [M Phi_q^T; Phi_q 0] regular (with the normalization element M is positive definite);
* the conservative part of Q equals -grad U by finite differences (``potential`` and
  ``forces_conservative`` of a mechanism file; for other models marked conservative,
  Q(q, 0, t) against -grad energy(q, 0, t)).

Each check gives a :class:`Check` with its measured figure; nothing here raises for a
failing model.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import numpy as np

FD_TOL = 1e-6
ASSEMBLY_TOL = 1e-12


@dataclass(frozen=True)
class Check:
    """One check: name, passed, and one line of detail (the figure measured)."""

    name: str
    ok: bool
    detail: str


def _call(fn, shape, *args) -> np.ndarray:
    out = np.zeros(shape)
    fn(*args, out)
    return out


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    return float(np.max(np.abs(a - b))) / scale if a.size else 0.0


def _grad(f, x: np.ndarray, h: float) -> np.ndarray:
    g = np.zeros(x.size)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def run_checks(mod: ModuleType, p: np.ndarray, *, samples: int = 5, seed: int = 0) -> list[Check]:
    """Run every check on model module ``mod`` with parameter vector ``p``."""
    out: list[Check] = []
    n, m = (int(x) for x in mod.sizes(p))
    try:
        q0, v0 = mod.initial_state(p)
    except Exception as exc:  # AssemblyError and friends: report, do not raise
        return [Check("assembly", False, f"{type(exc).__name__}: {exc}")]
    t0 = 0.0
    ph = _call(mod.phi, m, q0, t0, p)
    G = _call(mod.phi_q, (m, n), q0, t0, p)
    pt = _call(mod.phi_t, m, q0, t0, p)
    sq = max(1.0, float(np.max(np.abs(q0))))
    sv = max(1.0, float(np.max(np.abs(v0))))
    r_pos = float(np.linalg.norm(ph)) / sq
    r_vel = float(np.linalg.norm(G @ v0 + pt)) / sv
    out.append(
        Check(
            "assembly",
            r_pos <= ASSEMBLY_TOL and r_vel <= ASSEMBLY_TOL,
            f"|phi| = {r_pos:.2e}, |phi_q v + phi_t| = {r_vel:.2e}"
            f" (relative; limit {ASSEMBLY_TOL:g})",
        )
    )
    sv_ = np.linalg.svd(G, compute_uv=False) if m else np.zeros(0)
    rank = int(np.sum(sv_ > 1e-10 * (sv_[0] if sv_.size else 1.0)))
    dof = n - rank
    detail = (
        f"{n} coordinates, {m} constraint equations, rank(phi_q) = {rank},"
        f" {dof} degree(s) of freedom"
    )
    gauge = int(getattr(mod, "GAUGE_DOF", 0))
    if gauge:
        detail += (f", {gauge} of them the norms |e| of the bodies' Euler parameters (held by"
                   " the normalization element)")  # fmt: skip
    if rank < m:
        detail += f"; {m - rank} redundant equation(s): use formulation 'qr'"
    out.append(Check("degrees of freedom", True, detail))  # information (drivers: 0 is fine)

    rng = np.random.default_rng(seed)
    e_g = e_t = e_gam = 0.0
    for _ in range(samples):
        q = q0 + rng.normal(scale=0.1, size=n) * sq
        v = rng.normal(size=n) * sv
        t = float(rng.uniform(0.0, 1.0))
        h = 1e-6 * max(1.0, float(np.max(np.abs(q))))
        Gq = _call(mod.phi_q, (m, n), q, t, p)
        fd = np.zeros((m, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = h
            fd[:, k] = (_call(mod.phi, m, q + e, t, p) - _call(mod.phi, m, q - e, t, p)) / (2 * h)
        e_g = max(e_g, _rel(Gq, fd))
        ht = 1e-6
        fdt = (_call(mod.phi, m, q, t + ht, p) - _call(mod.phi, m, q, t - ht, p)) / (2 * ht)
        e_t = max(e_t, _rel(_call(mod.phi_t, m, q, t, p), fdt))

        def vel(s: float, q=q, v=v, t=t) -> np.ndarray:
            qs = q + s * v
            return _call(mod.phi_q, (m, n), qs, t + s, p) @ v + _call(mod.phi_t, m, qs, t + s, p)

        hs = 1e-6 / max(1.0, float(np.max(np.abs(v))))
        fdg = -(vel(hs) - vel(-hs)) / (2 * hs)
        e_gam = max(e_gam, _rel(_call(mod.gamma, m, q, v, t, p), fdg))
    for name, err in (("phi_q", e_g), ("phi_t", e_t), ("gamma", e_gam)):
        out.append(
            Check(f"{name} vs finite differences", err <= FD_TOL,
                  f"max relative error {err:.1e} at {samples} random states (limit {FD_TOL:g})")
        )  # fmt: skip

    M = _call(mod.mass, (n, n), q0, p)
    asym = _rel(M, M.T)
    ev = np.linalg.eigvalsh(0.5 * (M + M.T))
    scale = max(float(np.max(np.abs(ev))), 1e-300)
    if getattr(mod, "SINGULAR_MASS", False):
        K = np.block([[M, G.T], [G, np.zeros((m, m))]])
        cond = float(np.linalg.cond(K))
        ok = asym <= 1e-12 and ev[0] >= -1e-10 * scale and cond < 1e12
        detail = (f"symmetric to {asym:.1e}, positive semi-definite (smallest eigenvalue "
                  f"{ev[0]:.2e}), augmented matrix condition {cond:.1e}")  # fmt: skip
    else:
        ok = asym <= 1e-12 and ev[0] > 1e-12 * scale
        detail = f"symmetric to {asym:.1e}, eigenvalues in [{ev[0]:.3g}, {ev[-1]:.3g}]"
    out.append(Check("mass matrix", ok, detail))

    pot = getattr(mod, "potential", None)
    if pot is not None and hasattr(mod, "forces_conservative"):

        def u(x: np.ndarray) -> float:
            return float(pot(x, t0, p))

        qc = _call(mod.forces_conservative, n, q0, t0, p)
    elif mod.SPEC.conservative:
        zero = np.zeros(n)

        def u(x: np.ndarray) -> float:
            return float(mod.energy(x, zero, t0, p))

        qc = _call(mod.forces, n, q0, zero, t0, p)
    else:
        u = None
    if u is not None:
        h = 1e-6 * sq
        err = _rel(qc, -_grad(u, q0, h))
        out.append(Check("conservative forces = -grad U", err <= FD_TOL,
                         f"max relative error {err:.1e} (limit {FD_TOL:g})"))  # fmt: skip
    return out


def assembly_at(mod: ModuleType, p: np.ndarray) -> str | None:
    """None if the model assembles at ``p`` to 1e-12 (with its branch conditions), else why."""
    try:
        q0, _ = mod.initial_state(p)
    except Exception as exc:
        return str(exc)
    m = int(mod.sizes(p)[1])
    ph = _call(mod.phi, m, q0, 0.0, p)
    res = float(np.linalg.norm(ph)) / max(1.0, float(np.max(np.abs(q0))))
    if not res <= ASSEMBLY_TOL:
        return f"assembled only to |phi| = {res:.2e}"
    return None
