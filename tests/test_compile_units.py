"""Link-only compile units (solvers/compile_units.py): a chain of link-only functions under
one ``njit`` entry point is optimized by LLVM once (not once per level), has no machine
code of its own, computes exactly what the Python source computes, and stays callable
from Python through its ordinary twin."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
from mbstudy.solvers.compile_units import LinkOnlyLibrary, link_only
from numba import njit
from numba.core import codegen


@link_only(_nrt=False)
def _leaf(x, i):
    return math.sqrt(x[i] * x[i] + 1.0) / (1.0 + i)


@link_only(_nrt=False)
def _mid(x, out):
    s = 0.0
    for i in range(x.size):
        out[i] = _leaf(x, i)
        s += out[i]
    return s


@link_only()
def _top(x):
    out = np.empty(x.size)
    return _mid(x, out) + out[0], out


@njit
def _entry(x):
    s, out = _top(x)
    return s + 0.5 * out[-1]


def _reference(x):
    """The same arithmetic in the interpreter (IEEE doubles, same order)."""
    s = 0.0
    out = []
    for i in range(x.size):
        out.append(math.sqrt(x[i] * x[i] + 1.0) / (1.0 + i))
        s += out[-1]
    return (s + out[0]) + 0.5 * out[-1]


def test_a_link_only_chain_is_optimized_once_and_computes_what_python_computes(monkeypatch):
    optimized = []
    orig = codegen.CPUCodeLibrary._optimize_final_module

    def counting(self):
        optimized.append(self.name)
        return orig(self)

    monkeypatch.setattr(codegen.CPUCodeLibrary, "_optimize_final_module", counting)
    x = np.linspace(-3.0, 7.0, 37)
    got = _entry(x)
    assert got == _reference(x)  # bitwise: no fast-math, same operations in the same order
    # one module optimization (the entry point's) for the three-level tree; ordinary
    # njit functions would add one per level (numba's own helpers, e.g. np.empty's
    # implementation, are ordinary libraries and not counted)
    ours = [name for name in optimized if name.lstrip("_") in ("entry", "top", "mid", "leaf")]
    assert ours == ["_entry"], optimized
    for fn in (_leaf, _mid, _top):
        (cres,) = fn.overloads.values()
        assert isinstance(cres.library, LinkOnlyLibrary)
        assert cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name) == 0


def test_python_calls_go_to_an_ordinary_twin():
    x = np.array([0.5, -2.0, 3.0])
    out = np.empty(3)
    assert _mid(x, out) == sum(math.sqrt(v * v + 1.0) / (1.0 + i) for i, v in enumerate(x))
    assert _mid(x, out) == _mid.python_twin()(x, out)
    (cres,) = _mid.python_twin().overloads.values()
    assert not isinstance(cres.library, LinkOnlyLibrary)  # its own machine code


def test_disable_jit_gives_the_python_function():
    code = (
        "from mbstudy.solvers.compile_units import link_only\n"
        "def f(x):\n    return x + 1\n"
        "g = link_only()(f)\n"
        "assert g is f and g(1) == 2\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_kernel_templates_are_link_only_except_the_entry_points():
    from mbstudy.solvers import compose

    text = compose.generate_source("fourbar", "baumgarte", "rk4")
    heads = dict(
        (block.split("def ", 1)[1].split("(", 1)[0], block.split("\n", 1)[0])
        for block in text.split("\n\n@")[1:]
    )
    assert heads["common_run"].startswith("njit(cache=True")
    assert heads["common_state_size"].startswith("njit(cache=True")
    others = [h for name, h in heads.items() if name not in compose.ENTRY_POINTS]
    assert others and all(h.startswith("link_only(") for h in others)


def test_a_mechanism_file_assembles_its_initial_state_interpreted_to_the_compiled_bits():
    """A mechanism file's initial_state interprets phi, phi_q, phi_t and its guesses (they
    are compiled only inside kernels); the same assembly with numba-compiled ones gives
    the same bits (IEEE operations in the same order; no fast-math)."""
    from pathlib import Path

    from mbstudy.solvers import assembly, model_entry
    from mbstudy.solvers.spec import pack_params

    path = str(Path(__file__).resolve().parent.parent / "studies/mechanisms/slider_crank.toml")
    entry = model_entry.model(path)
    mod = entry.module
    p = pack_params(entry.spec.params, {})
    q, v = mod.initial_state(p)
    fns = (mod.phi, mod.phi_q, mod.phi_t, mod.initial_guess)
    phi, phi_q, phi_t, guess = (njit(getattr(f, "py_func", f)) for f in fns)
    qg, vg = np.zeros(mod.N_COORDS), np.zeros(mod.N_COORDS)
    guess(p, qg, vg)
    m = mod.N_CONSTRAINTS
    q2 = assembly.assemble(phi, phi_q, qg, mod._FIXED, p, m)
    v2 = assembly.assemble_velocity(phi_q, phi_t, q2, vg, mod._SPEED, p, m)
    assert q.tobytes() == q2.tobytes() and v.tobytes() == v2.tobytes()
    assert type(mod.mass).__name__ == "LinkOnlyDispatcher"


@link_only()
def _d_leaf(x):
    return x * 3.0 + 1.0


@link_only()
def _d_left(x):
    return _d_leaf(x) - 2.0


@link_only()
def _d_right(x):
    return _d_leaf(x) * _d_left(x)


@link_only()
def _d_root(x):
    if x > 10.0:
        return _d_leaf(x)
    return _d_right(x) + _d_left(x)


@njit
def _d_entry(x):
    return _d_root(x) + _d_leaf(x)


def test_a_diamond_of_link_only_functions_links_every_shared_callee():
    """Shared callees reached along several paths (the shape of a kernel: form_rhs under
    integ_run and form_diag) are linked once and resolved: a missing definition would be
    a call to address 0 (it was, for the radau5 kernels, until the pieces were linked
    as weak_odr)."""
    def ref(x):
        leaf = x * 3.0 + 1.0
        left = leaf - 2.0
        root = leaf if x > 10.0 else leaf * left + left
        return root + leaf

    for x in (0.5, -3.25, 12.0):
        assert _d_entry(x) == ref(x)


def _big_body(x, k):
    """Enough arithmetic that LLVM's size threshold keeps a function out of line."""
    s = 0.0
    for i in range(x.size):
        a = x[i] * k
        s += math.sin(a) * math.cos(a + 1.0) + math.exp(-a * a) * math.log1p(a * a)
        s += math.atan2(a, 1.0 + s * s) * math.sqrt(1.0 + a * a) - math.tanh(a - s)
        s += math.sin(s + a) * math.cos(s - a) + math.exp(-s * s) * math.log1p(s * s)
        s += math.atan2(s, 1.0 + a * a) * math.sqrt(1.0 + s * s) - math.tanh(s + a)
    return s


_big_plain = link_only(_nrt=False)(_big_body)
_big_inlined = link_only(_nrt=False, always_inline=True)(
    type(_big_body)(_big_body.__code__, _big_body.__globals__, "_big_inlined")
)


@njit
def _calls_plain(x):
    return _big_plain(x, 1.0) + _big_plain(x, 2.0) + _big_plain(x, 3.0)


@njit
def _calls_inlined(x):
    return _big_inlined(x, 1.0) + _big_inlined(x, 2.0) + _big_inlined(x, 3.0)


def test_always_inline_marks_the_linked_function_and_the_kernel_asks_for_it():
    """``link_only(always_inline=True)`` gives the function LLVM's ``alwaysinline`` in the
    module its callers link (the same function without the flag has none, so the test
    can fail), with the same bits computed; the explicit Runge-Kutta stepper's per-step
    templates are declared so in every driver kernel (their ALWAYS_INLINE)."""
    from mbstudy.solvers import compose

    x = np.linspace(-1.0, 2.0, 11)
    assert _calls_plain(x) == _calls_inlined(x)

    def attributes(dispatcher) -> list[str]:
        (cres,) = dispatcher.overloads.values()
        own = cres.library._own_module_for_linking()
        return [str(a) for fn in own.functions if not fn.is_declaration
                for a in fn.attributes]  # fmt: skip

    assert any("alwaysinline" in a for a in attributes(_big_inlined))
    assert not any("alwaysinline" in a for a in attributes(_big_plain))
    text = compose.generate_source("fourbar", "baumgarte", "rk4")
    assert "@link_only(_nrt=False, always_inline=True)\ndef integ_stp_attempt(" in text
