"""Declarations of the names a generated kernel module provides to its templates.

A template (solvers/formulations/*.py, solvers/integrators/*.py) is source text that
solvers/compose/ copies into a generated module, where a few names come from the
composition rather than from the template's own module: the model's functions under
``model_*``, the formulation's hooks ``form_*`` (called by the shared templates and the
integrators), the integrator's ``integ_run``, the kernel flags ``KERNEL_*`` and an
explicit Runge-Kutta method's tableau ``RK_*``. Templates import those names from here so
that a linter (ruff F821, pyflakes) checks every other name; compose copies only the
template functions' source, so these placeholders never reach a kernel (and compose does
not copy the constants declared here). Calling a placeholder raises.
"""

from __future__ import annotations

import numpy as np


def _placeholder(name: str):
    def f(*args):
        raise RuntimeError(f"{name} exists only in a generated kernel module (solvers/compose/)")

    f.__name__ = name
    return f


# the model's jitted functions (compose.MODEL_FUNCTIONS and OPTIONAL_MODEL_FUNCTIONS)
model_sizes = _placeholder("model_sizes")
model_mass = _placeholder("model_mass")
model_forces = _placeholder("model_forces")
model_phi = _placeholder("model_phi")
model_phi_q = _placeholder("model_phi_q")
model_phi_t = _placeholder("model_phi_t")
model_gamma = _placeholder("model_gamma")
model_energy = _placeholder("model_energy")
model_power = _placeholder("model_power")
model_constraint_terms = _placeholder("model_constraint_terms")

# the formulation's hooks (docs/explanation/solver-contract.md)
form_alloc = _placeholder("form_alloc")
form_init = _placeholder("form_init")
form_rhs = _placeholder("form_rhs")
form_post_step = _placeholder("form_post_step")
form_has_post_step = _placeholder("form_has_post_step")
form_output_state = _placeholder("form_output_state")
form_flush_counters = _placeholder("form_flush_counters")
form_diag = _placeholder("form_diag")
form_n_extra = _placeholder("form_n_extra")
# the DAE formulations' hooks (index3, ggl; used by radau5 and the _dae helpers)
form_dae_residual = _placeholder("form_dae_residual")
form_dae_index = _placeholder("form_dae_index")
form_dae_jac_yp = _placeholder("form_dae_jac_yp")
form_dae_yp0 = _placeholder("form_dae_yp0")

# the integrator's entry point
integ_run = _placeholder("integ_run")

# kernel flags set by compose.generate_source
KERNEL_STRUCTURED_SOLVE = True
KERNEL_CONSTANT_MASS = False

# an explicit Runge-Kutta method's tableau (solvers/integrators/_erk_stepper.py)
RK_STAGES = 0
RK_AB = np.zeros((1, 0))
RK_C = np.zeros(0)
RK_E = np.zeros(0)
RK_E3 = np.zeros(0)
RK_ERR = 0
RK_FSAL = 0

# a stepper run by the kernel driver (solvers/integrators/_driver.py)
STEP_ADAPTIVE = 0
STEP_ORDER = 1
integ_stp_alloc = _placeholder("integ_stp_alloc")
integ_stp_begin = _placeholder("integ_stp_begin")
integ_stp_initial_step = _placeholder("integ_stp_initial_step")
integ_stp_attempt = _placeholder("integ_stp_attempt")
integ_stp_error = _placeholder("integ_stp_error")
integ_stp_finish = _placeholder("integ_stp_finish")
integ_stp_new_state = _placeholder("integ_stp_new_state")
integ_stp_advance = _placeholder("integ_stp_advance")
integ_drv_rhs = _placeholder("integ_drv_rhs")
