"""Step-size control shared by the integrators: landing on output times and the
step-size factor of an embedded error estimate (Hairer, Nørsett & Wanner I, Sect. II.4).
Composed into a kernel by the modules that list this one in ``SHARED_TEMPLATES`` (the
kernel driver, solvers/integrators/_driver.py; radau5).

References
----------
Hairer, Nørsett & Wanner, *Solving ODEs I*, 2nd ed., 1993, Sect. II.4 (automatic step
size control).
"""

# Templates compiled without numba's reference counting (solvers/compose/nrt.py)
NRT_FREE = ("integ_ctl_step_to_output", "integ_ctl_step_factor")


def integ_ctl_step_to_output(t, h, t_next, h_min):
    """Shorten the step ``h`` from ``t`` so that it lands on the output time ``t_next``
    exactly (within 1e-14 relative); returns (h, last, too_small) with ``last`` when the
    step ends on ``t_next`` and ``too_small`` when h < h_min (the case ends, step_floor).
    Used by the kernel driver and radau5."""
    last = False
    if t + h >= t_next - 1e-14 * abs(t_next):
        h = t_next - t
        last = True
    return h, last, h < h_min


def integ_ctl_step_factor(en, order, rejected_last):
    """Step-size factor after a step with scaled error norm ``en`` (Hairer, Nørsett &
    Wanner I, Sect. II.4): 0.9 en^(-1/order), within [0.2, 10] after an accepted step
    (en <= 1; at most 1 right after a rejection; 10 for en = 0), at least 0.2 after a
    rejected one. Used by the kernel driver."""
    if en > 1.0:
        return max(0.2, 0.9 * en ** (-1.0 / order))
    fac = 10.0 if en == 0.0 else min(10.0, max(0.2, 0.9 * en ** (-1.0 / order)))
    if rejected_last:
        fac = min(fac, 1.0)
    return fac
