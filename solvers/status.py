"""Status codes and work-counter slots shared by every kernel.

Jitted code never raises: it returns one of these integer codes. The
store keeps the code per case as int8; ``PENDING`` is the fill value of cases not run yet.
"""

from __future__ import annotations

PENDING = -1
OK = 0
NAN = 1
DIVERGED = 2
SINGULAR = 3
NEWTON_FAILED = 4
STEP_FLOOR = 5
STEP_BUDGET = 6
ERROR = 7

STATUS_NAMES: dict[int, str] = {
    PENDING: "pending",
    OK: "ok",
    NAN: "nan",
    DIVERGED: "diverged",
    SINGULAR: "singular",
    NEWTON_FAILED: "newton_failed",
    STEP_FLOOR: "step_floor",
    STEP_BUDGET: "step_budget",
    ERROR: "error",
}

STATUS_MEANINGS: dict[int, str] = {
    PENDING: "not run yet (fill value of the store)",
    OK: "integrated to t_end",
    NAN: "a NaN or infinity appeared in the state",
    DIVERGED: "the state grew past the divergence bound (1e12)",
    SINGULAR: "a linear system was singular to working precision",
    NEWTON_FAILED: "Newton iterations did not converge within their limit",
    STEP_FLOOR: "the adaptive step fell below its floor",
    STEP_BUDGET: "the step budget (max_steps) was exhausted",
    ERROR: "an unexpected Python exception (text kept in the store)",
}

# Slots of the int64 work-counter array every kernel fills (counted the same way for
# every method: one right-hand-side evaluation = one call of the formulation's rhs).
C_STEPS = 0
C_REJECTED = 1
C_RHS = 2
C_NEWTON = 3
C_PROJ = 4
C_JAC = 5
N_COUNTERS = 8

COUNTER_NAMES: dict[int, str] = {
    C_STEPS: "steps",
    C_REJECTED: "rejected",
    C_RHS: "rhs_evals",
    C_NEWTON: "newton_iters",
    C_PROJ: "proj_iters",
    C_JAC: "jac_evals",
}

# A state component beyond this magnitude ends the case with DIVERGED.
DIVERGENCE_BOUND = 1e12


def status_name(code: int) -> str:
    """Return the name of a status code (``'unknown(9)'`` for codes not in the table)."""
    return STATUS_NAMES.get(int(code), f"unknown({int(code)})")


def describe_failures(counts: dict) -> str:
    """Plain-language failure summary: ``"2 diverged (the state grew past ...); 1
    singular (...)"`` from counts keyed by status code or name (``ok`` ignored); "none"."""
    by_name = {v: k for k, v in STATUS_NAMES.items()}
    parts = []
    for key, n in counts.items():
        code = by_name.get(key, key) if isinstance(key, str) else int(key)
        if code == OK or not n:
            continue
        name = STATUS_NAMES.get(code, str(key))
        meaning = STATUS_MEANINGS.get(code)
        parts.append(f"{n} {name}" + (f" ({meaning})" if meaning else ""))
    return "; ".join(parts) or "none"
