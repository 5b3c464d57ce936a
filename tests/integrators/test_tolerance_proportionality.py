"""Tolerance proportionality of the implicit DAE integrators on Andrews' squeezer.

Reference: the IVP Test Set's q(0.03) (PSIDE at rtol = atol = 1e-14, ``dae_testkit``), an
independent computation. Error: the largest relative position error at t = 0.03 s,
rtol = atol = tol. Measured (this machine, docs/explanation/methods-implicit.md), error / tol at
tol = 1e-6 / 1e-8 / 1e-10:

- index3 + radau5: 8.0 / 22 / 37 (before the index-3 tolerance rule: 96 / 500 / 5700)
- index3 + bdf: 0.8 / 3.2 / 26 (before: 290 / 420 / 1400)
- ggl + radau5: 0.03 / 0.4 / 3.3
- ggl + bdf: 17 / 3.4 / 25

The bound, 100 tol, is the brief's acceptance level for a method that claims tolerance
proportionality; the measured margins are 2.2x or more. The error must also fall as tol
falls, by at least 5x per two decades (measured: 7.7x or more; ggl + radau5, whose
error / tol still grows 10x per two decades from far below the bound, is the closest), so
a controller that saturates (1x) cannot pass.
"""

from __future__ import annotations

import dae_testkit as kit
import numpy as np
import pytest
from mbstudy.solvers.runner import run_case
from mbstudy.solvers.status import OK

TOLS = (1e-6, 1e-8, 1e-10)


def andrews_error(form: str, integrator: str, tol: float) -> tuple[int, float]:
    """(status, max relative q error at t = 0.03 against the IVP Test Set)."""
    r = run_case("andrews", form, integrator, t_end=0.03, samples=2,
                 integrator_params={"rtol": tol, "atol": tol})  # fmt: skip
    if r.status != OK:
        return r.status, float("nan")
    return r.status, float(np.max(np.abs(r.q[-1] - kit.ANDREWS_Q_003) / np.abs(kit.ANDREWS_Q_003)))


@pytest.mark.parametrize(("form", "integrator"), [("index3", "radau5"), ("index3", "bdf"),
                                                  ("ggl", "radau5"), ("ggl", "bdf")])  # fmt: skip
def test_error_is_proportional_to_the_tolerance(form, integrator) -> None:
    errs = []
    for tol in TOLS:
        st, err = andrews_error(form, integrator, tol)
        print(form, integrator, tol, st, err, err / tol)
        assert st == OK
        assert err < 100.0 * tol
        errs.append(err)
    assert errs[1] < 0.2 * errs[0] and errs[2] < 0.2 * errs[1]


def test_ggl_bdf_runs_at_rtol_1e_12() -> None:
    # It used to end newton_failed after 2 steps: the Newton increments of lam and mu
    # stall at round-off near 0.015 weight units (independent of h), above the 1 %
    # floor, so every step failed until h fell below h_min. Measured now: status ok,
    # 2.6e-10, nearly ggl + radau5's at 1e-12 (2.7e-10): both at the reference's
    # agreement floor for this model. Bound 1e-8, the 1e-10 bound of the sweep above.
    st, err = andrews_error("ggl", "bdf", 1e-12)
    print("ggl bdf 1e-12", st, err)
    assert st == OK
    assert err < 1e-8
