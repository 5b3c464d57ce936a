"""The names a composed kernel is built from: the template prefixes, the model functions
it imports, its entry points, and the check that a name written into a kernel's text is an
identifier (:data:`IDENTIFIER`; nothing else in the text comes from a user)."""

from __future__ import annotations

import re

TEMPLATE_PREFIXES = ("common_", "form_", "integ_", "default_form_", "default_model_")


MODEL_FUNCTIONS = ("sizes", "mass", "forces", "phi", "phi_q", "phi_t", "gamma", "energy", "power")


# optional model functions: where a model lacks one, the template default_model_X serves
OPTIONAL_MODEL_FUNCTIONS = ("constraint_terms",)


# the templates a kernel's users call (solvers/runner.py); the others are link-only units
ENTRY_POINTS = ("common_run", "common_state_size")


#: what a name written into a kernel's text (and file name) must be: an ASCII identifier
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _identifier(value: object, what: str, pattern: re.Pattern = IDENTIFIER) -> str:
    """``value`` if it is a string that ``pattern`` matches entirely, else ValueError: the
    only names a generated kernel's text carries (registry names, module names)."""
    if not isinstance(value, str) or pattern.fullmatch(value) is None or len(value) > 200:
        raise ValueError(f"{what} {value!r} cannot name a generated kernel (not an identifier)")
    return value
