"""Run the kernel driver with the explicit Runge-Kutta stepper (solvers/integrators/
_driver.py, _erk_stepper.py) as plain Python.

The driver's and the stepper's template functions are rebound to a namespace holding one
method's tableau (its ``RK_*`` and ``STEP_*`` constants), the status codes, the shared
step-control templates and a fake formulation whose right-hand side is ``f(t, y)``: no
kernel is compiled.
"""

from __future__ import annotations

import types
from types import ModuleType

import numpy as np
from mbstudy.solvers import linalg, status
from mbstudy.solvers.integrators import _driver, _erk_stepper, _step_control
from mbstudy.solvers.spec import pack_params


def run_template(integ: ModuleType, f, y0, t_out, post_step=None, **params):
    """Integrate dy/dt = f(t, y) with the method of ``integ`` (rk4, dopri5, dop853, ...).

    ``f`` returns dy, or an int status (a failed stage). ``post_step(t, y) -> status``
    plays the formulation's correction after steps. Returns (status, k_reached, Y,
    counters).
    """
    ns = {k: v for k, v in vars(status).items() if k.isupper()}
    ns.update({k: v for k, v in vars(integ).items() if k.startswith(("RK_", "STEP_"))})
    ns["np"] = np
    ns["state_status"] = linalg.state_status.py_func

    def form_rhs(t, y, p, fp, dy, ws):
        out = f(t, y)
        if isinstance(out, int):
            return out
        dy[:] = out
        return status.OK

    ns["form_rhs"] = form_rhs
    ns["form_has_post_step"] = lambda: post_step is not None
    ns["form_post_step"] = lambda t, y, p, fp, ws, cnt: (
        status.OK if post_step is None else post_step(t, y)
    )
    for module in (_driver, _step_control, _erk_stepper):
        for name, obj in vars(module).items():
            if (name.startswith("integ_") and isinstance(obj, types.FunctionType)
                    and obj.__module__ == module.__name__):  # fmt: skip
                ns[name] = types.FunctionType(obj.__code__, ns, name)
    ip = pack_params(integ.SPEC.params, params)
    y = np.array(y0, dtype=float)
    Y = np.zeros((len(t_out), y.size))
    cnt = np.zeros(status.N_COUNTERS, dtype=np.int64)
    st, k = ns["integ_run"](y, np.asarray(t_out, dtype=float), None, None, ip, None, Y, cnt)
    return st, k, Y, cnt
