"""Templates name only what their kernel module defines.

ruff checks the template modules with F821 on: a template imports what it uses, the
names composition provides from solvers/kernel_names.py. Here pyflakes checks the result
itself: the generated source of every registered (model, formulation, integrator) triple
(compose.generate_source, both solve variants) has no undefined name. Element networks
(the ``network`` model) run their own kernel and are not composed.
"""

from __future__ import annotations

import importlib
import re

import pytest
from mbstudy.solvers import compose, registry
from pyflakes import api, messages
from pyflakes.reporter import Reporter


def _triples():
    out = []
    for m, entry in sorted(registry.entries("model").items()):
        if hasattr(entry.module, "run_network_case"):
            continue
        for f in sorted(registry.entries("formulation")):
            for i in sorted(registry.entries("integrator")):
                if registry.compatibility(m, f, i) is None:
                    out.append((m, f, i))
    return out


def _explicit_star_imports(source: str) -> str:
    """``from X import *`` -> ``from X import a, b, ...`` (pyflakes cannot see through a
    star import: it would report every name as possibly undefined)."""

    def expand(match: re.Match) -> str:
        module = importlib.import_module(match.group(1))
        names = sorted(n for n in vars(module) if not n.startswith("_"))
        return f"from {match.group(1)} import {', '.join(names)}"

    return re.sub(r"^from ([\w.]+) import \*$", expand, source, flags=re.M)


class _Collect(Reporter):
    def __init__(self):
        self.found: list[str] = []

    def flake(self, message):
        if isinstance(message, messages.UndefinedName | messages.UndefinedLocal):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: {msg}")

    def unexpectedError(self, filename, msg):
        self.found.append(f"{filename}: {msg}")


def _undefined(source: str, name: str) -> list[str]:
    rep = _Collect()
    api.check(_explicit_star_imports(source), name, rep)
    return rep.found


def test_the_check_finds_an_undefined_name():
    src = compose.generate_source("pendulum", "none", "rk4")
    src += "\n\ndef integ_extra(y):\n    return model_nothing(y)\n"
    assert any("model_nothing" in m for m in _undefined(src, "x.py"))


def test_every_triple_has_a_registered_kernel_to_check():
    assert len(_triples()) > 100


@pytest.mark.parametrize("augmented", [False, True], ids=["structured", "augmented"])
def test_generated_kernels_have_no_undefined_names(augmented):
    found = []
    for m, f, i in _triples():
        src = compose.generate_source(m, f, i, augmented=augmented)
        found += _undefined(src, f"{m}-{f}-{i}.py")
    assert found == []
