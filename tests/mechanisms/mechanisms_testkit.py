"""Helpers of the mechanism-file tests: model functions as plain Python (no compile) and
their values at a state."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
from mbstudy.pipeline.plan.purepy import pure_model
from mbstudy.solvers import model_entry
from mbstudy.solvers.spec import pack_params

MECHANISMS = Path(__file__).resolve().parents[2] / "studies" / "mechanisms"


def model(name: str, **values) -> tuple[SimpleNamespace, np.ndarray]:
    """(plain-Python view of the model's module, its parameter vector)."""
    entry = model_entry.model(name)
    return pure_model(entry.module), pack_params(entry.params, values)


def evaluate(mod, p: np.ndarray, q: np.ndarray, v: np.ndarray, t: float) -> dict:
    """Every model function at (q, v, t)."""
    n, m = (int(x) for x in mod.sizes(p))
    out = {}
    for name, shape, args in (
        ("phi", (m,), (q, t)),
        ("phi_q", (m, n), (q, t)),
        ("phi_t", (m,), (q, t)),
        ("gamma", (m,), (q, v, t)),
        ("forces", (n,), (q, v, t)),
    ):
        arr = np.full(shape, np.nan)
        getattr(mod, name)(*args, p, arr)
        out[name] = arr
    M = np.full((n, n), np.nan)
    mod.mass(q, p, M)
    out["mass"] = M
    out["energy"] = np.array([mod.energy(q, v, t, p)])
    out["power"] = np.array([mod.power(q, v, t, p)])
    return out


def index1(mod, p: np.ndarray, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
    """Accelerations a of M a + phi_q^T lam = Q, phi_q a = gamma (NumPy solve)."""
    e = evaluate(mod, p, q, v, t)
    n, m = e["phi_q"].shape[1], e["phi_q"].shape[0]
    K = np.block([[e["mass"], e["phi_q"].T], [e["phi_q"], np.zeros((m, m))]])
    return np.linalg.solve(K, np.concatenate([e["forces"], e["gamma"]]))[:n]
