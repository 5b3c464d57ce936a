"""Every metric of docs/explanation/methods.md#metrics, computed in one place from a case's
trajectory.

Definitions (docs/explanation/methods.md#metrics; K output times t_k, m constraint equations):

- ``rms_phi`` = sqrt(sum_k |phi(q_k)|^2 / (K m)), likewise ``rms_dphi`` for
  phi_q v + phi_t and ``rms_ddphi`` for phi_q a - gamma; ``max_*`` are max_k of the norms.
- ``e_r``, ``e_theta``: RMS over k and over the translational (resp. angular) coordinates
  of q - q_ref; ``e_dr``, ``e_dtheta`` the same for v (seed 004's e_r, e_phi, their rates).
- ``e_final`` = |q(t_K) - q_ref(t_K)|_2.
- ``de_max`` = max_k |E_k - E_0|; ``de_first`` / ``de_last`` the same over the first /
  last 10 % of the output times (seed 001: bounded vs growing energy error).
- ``du_max`` = max_k |E_k - E_0 - W_k| with W the work of the drives (energy balance).
- ``input_rms`` = sqrt(sum_k |u_k|^2 / (K m)), u the full stabilization input.
- ``lam_max`` = max_k |lam_k|_inf, ``lam_rms`` = sqrt(sum_k |lam_k|^2 / (K m)): the
  constraint multipliers of M a + phi_q^T lam = Q at the samples, i.e. the reaction forces
  by virtual power (a planar revolute joint's rows carry -lam; qr reports the minimum-norm
  multipliers, the convention for redundant constraints, docs/explanation/methods.md#multipliers).
  NaN where the kernel has no multipliers (element networks).

A failed case (status != ok) gets NaN for every accuracy metric; its work counters and
wall time are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mbstudy.solvers.runner import CaseResult
from mbstudy.solvers.status import C_JAC, C_NEWTON, C_PROJ, C_REJECTED, C_RHS, C_STEPS, OK

ACCURACY_METRICS = (
    "rms_phi", "rms_dphi", "rms_ddphi", "max_phi", "max_dphi", "max_ddphi",
    "e_r", "e_theta", "e_dr", "e_dtheta", "e_final",
    "de_max", "de_first", "de_last", "du_max", "input_rms", "lam_max", "lam_rms",
)  # fmt: skip
TIME_METRICS = ("wall_s", "compile_s")
COUNTER_METRICS = {
    "steps": C_STEPS,
    "rejected": C_REJECTED,
    "rhs_evals": C_RHS,
    "newton_iters": C_NEWTON,
    "proj_iters": C_PROJ,
    "jac_evals": C_JAC,
}
FLOAT_METRICS = ACCURACY_METRICS + TIME_METRICS
SERIES_NAMES = (
    "phi_norm", "dphi_norm", "ddphi_norm", "energy", "energy_balance", "input_norm", "q", "v",
    "lam",
)  # fmt: skip
VECTOR_SERIES = ("q", "v", "lam")  # (t, n) for q and v, (t, m) for the multipliers lam

METRIC_MEANINGS = {
    "rms_phi": "RMS position constraint violation (m)",
    "rms_dphi": "RMS velocity constraint violation (m/s)",
    "rms_ddphi": "RMS acceleration constraint violation (m/s^2)",
    "max_phi": "max position constraint violation (m)",
    "max_dphi": "max velocity constraint violation (m/s)",
    "max_ddphi": "max acceleration constraint violation (m/s^2)",
    "e_r": "RMS translational coordinate error vs reference (m)",
    "e_theta": "RMS angular coordinate error vs reference (rad)",
    "e_dr": "RMS translational velocity error vs reference (m/s)",
    "e_dtheta": "RMS angular velocity error vs reference (rad/s)",
    "e_final": "|q(t_end) - q_ref(t_end)| (coordinate units)",
    "de_max": "max |E - E0| (J)",
    "de_first": "max |E - E0| over the first 10 % of the run (J)",
    "de_last": "max |E - E0| over the last 10 % of the run (J)",
    "du_max": "max |E - E0 - W_drives| (J)",
    "input_rms": "RMS of the full stabilization input",
    "lam_max": "max |lam_i| over samples and constraint rows: largest reaction component "
    "(N; N m for rotational rows)",
    "lam_rms": "RMS of the constraint multipliers over samples and rows (N; N m)",
    "wall_s": "kernel wall time, compile excluded (s)",
    "compile_s": "compile or cache-load time paid for this kernel in the worker (s)",
    "steps": "accepted steps",
    "rejected": "rejected steps",
    "rhs_evals": "right-hand-side evaluations",
    "newton_iters": "Newton iterations",
    "proj_iters": "projection iterations",
    "jac_evals": "Jacobian matrices of the implicit integrators (radau5, bdf: each costs N "
    "finite-difference residuals, included in rhs_evals)",
}

# CF ``units`` (UDUNITS strings) of every metric and series. The constraint rows and the
# coordinates of a planar model mix lengths and angles: their norms are reported in the
# length unit, as in METRIC_MEANINGS ("1" marks dimensionless counts).
METRIC_UNITS = {
    "rms_phi": "m", "rms_dphi": "m s-1", "rms_ddphi": "m s-2",
    "max_phi": "m", "max_dphi": "m s-1", "max_ddphi": "m s-2",
    "e_r": "m", "e_theta": "rad", "e_dr": "m s-1", "e_dtheta": "rad s-1", "e_final": "1",
    "de_max": "J", "de_first": "J", "de_last": "J", "du_max": "J",
    "input_rms": "1", "lam_max": "N", "lam_rms": "N", "wall_s": "s", "compile_s": "s",
    "steps": "1", "rejected": "1", "rhs_evals": "1", "newton_iters": "1", "proj_iters": "1",
    "jac_evals": "1",
}  # fmt: skip
SERIES_MEANINGS = {
    "phi_norm": "position constraint violation |Phi(q)|",
    "dphi_norm": "velocity constraint violation |Phi_q v + Phi_t|",
    "ddphi_norm": "acceleration constraint violation |Phi_q a - gamma|",
    "energy": "total mechanical energy E",
    "energy_balance": "energy balance E - E0 - W_drives",
    "input_norm": "norm of the stabilization input |u|",
    "q": "generalized coordinates q",
    "v": "generalized velocities v",
    "lam": "constraint multipliers lambda (reaction forces)",
}
SERIES_UNITS = {
    "phi_norm": "m", "dphi_norm": "m s-1", "ddphi_norm": "m s-2", "energy": "J",
    "energy_balance": "J", "input_norm": "1", "q": "1", "v": "1", "lam": "N",
}  # fmt: skip


@dataclass(frozen=True)
class Reference:
    """A reference trajectory at the study's output times.

    Attributes
    ----------
    t : (K,) output times; q, v : (K, n).
    status : status code of the reference run.
    error_estimate : max |q - q_coarse| against a run at 100x looser tolerance (or 2h).
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    status: int
    error_estimate: float


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else float("nan")


def compute_metrics(
    result: CaseResult,
    reference: Reference | None,
    angle_mask: np.ndarray,
) -> dict[str, float]:
    """Return every metric (docs/explanation/methods.md#metrics) of one case, by the store's array
    names."""
    out: dict[str, float] = {name: float("nan") for name in ACCURACY_METRICS}
    out["wall_s"] = float(result.wall_s)
    out["compile_s"] = float(result.compile_s)
    for name, slot in COUNTER_METRICS.items():
        out[name] = float(result.counters[slot])
    if result.status != OK:
        return out
    D = result.D
    m = max(result.m, 1)
    for j, lvl in enumerate(("phi", "dphi", "ddphi")):
        out[f"rms_{lvl}"] = float(np.sqrt(np.mean(D[:, j] ** 2) / m))
        out[f"max_{lvl}"] = float(np.max(D[:, j]))
    E = D[:, 3]
    dE = np.abs(E - E[0])
    K = E.size
    w = max(1, round(0.1 * (K - 1)))
    out["de_max"] = float(np.max(dE))
    out["de_first"] = float(np.max(dE[: w + 1]))
    out["de_last"] = float(np.max(dE[K - 1 - w :]))
    out["du_max"] = float(np.max(np.abs(E - E[0] - result.work)))
    out["input_rms"] = float(np.sqrt(np.mean(D[:, 4] ** 2) / m))
    lam = result.lam
    if lam is not None and lam.size:
        out["lam_max"] = float(np.max(np.abs(lam)))
        out["lam_rms"] = float(np.sqrt(np.mean(lam**2)))
    if reference is not None and reference.status == OK and reference.q.shape == result.q.shape:
        ang = np.asarray(angle_mask, dtype=bool)
        dq = result.q - reference.q
        dv = result.v - reference.v
        out["e_r"] = _rms(dq[:, ~ang])
        out["e_theta"] = _rms(dq[:, ang])
        out["e_dr"] = _rms(dv[:, ~ang])
        out["e_dtheta"] = _rms(dv[:, ang])
        out["e_final"] = float(np.linalg.norm(dq[-1]))
    return out


ENERGY_METRICS = ("de_max", "de_first", "de_last", "du_max")
ANGLE_METRICS = ("e_theta", "e_dtheta")
TRANSLATION_METRICS = ("e_r", "e_dr")
MULTIPLIER_METRICS = ("lam_max", "lam_rms")


def absent_metrics(spec, angle_mask: np.ndarray | None = None,
                   multipliers: bool = True) -> dict[str, str]:  # fmt: skip
    """The metrics of :func:`compute_metrics` that a model cannot have, each with the
    reason: declared (the store's block attribute ``absent_metrics``), so that their NaN
    is never mistaken for a failed check or ranked.

    ``spec``: the model's :class:`~mbstudy.solvers.spec.ModelSpec` (``energy`` False:
    no energy function, so no energy or energy-balance error); ``angle_mask``: the
    model's angle coordinates (none: no angle error; all: no translation error);
    ``multipliers``: whether the kernel stores constraint multipliers."""
    out: dict[str, str] = {}
    if not getattr(spec, "energy", True):
        out.update(dict.fromkeys(ENERGY_METRICS, "the model defines no energy function"))
    if angle_mask is not None:
        ang = np.asarray(angle_mask, dtype=bool)
        if ang.size and not ang.any():
            out.update(dict.fromkeys(ANGLE_METRICS, "the model has no angle coordinates"))
        if ang.size and ang.all():
            out.update(dict.fromkeys(TRANSLATION_METRICS,
                                     "the model has no translational coordinates"))
    if not multipliers:
        out.update(dict.fromkeys(MULTIPLIER_METRICS, "the kernel has no multipliers"))
    return out


def sample_series(result: CaseResult, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Sampled series at the output times: (K,) arrays, (K, n) for ``q`` and ``v``, (K, m)
    for the multipliers ``lam``."""
    D = result.D
    table = {
        "phi_norm": lambda: D[:, 0],
        "dphi_norm": lambda: D[:, 1],
        "ddphi_norm": lambda: D[:, 2],
        "energy": lambda: D[:, 3],
        "energy_balance": lambda: D[:, 3] - D[0, 3] - result.work,
        "input_norm": lambda: D[:, 4],
        "q": lambda: result.q,
        "v": lambda: result.v,
        "lam": lambda: result.lam if result.lam is not None else np.full((D.shape[0], result.m),
                                                                            np.nan),
    }
    return {name: np.asarray(table[name](), dtype=float) for name in names}
