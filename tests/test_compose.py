"""Kernel composition: which templates run without numba's reference counting, and why it
is safe (solvers/compose/nrt.py ``nrt_free_templates``).

The checks that can be made without compiling are made on source text; the safety of the
compiled result is checked by numba's own allocation statistics in a fresh process: every
array the kernels allocate is freed exactly once (an unbalanced decref would free an array
twice or never), and the results equal the reference-counted build bit for bit
(tests/test_optimized_kernels.py compares against the ``augmented=True`` reference,
which keeps reference counting).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from mbstudy.solvers import compose

NO_ALLOC = "def form_a(x, ws):\n    x[0] = np.sqrt(ws[0][0])\n    return form_b(x)\n"
LEAF = "def form_b(x):\n    s = 0.0\n    for i in range(x.size):\n        s += x[i]\n    return s\n"
ALLOC = "def form_c(x):\n    tmp = np.zeros(x.size)\n    return tmp[0]\n"
MODEL_OK = {"phi": "@njit\ndef phi(q, t, p, out):\n    out[0] = np.cos(q[0])\n"}


def test_declared_allocation_free_templates_are_chosen():
    funcs = {"form_a": NO_ALLOC, "form_b": LEAF, "form_c": ALLOC}
    assert compose.nrt_free_templates(funcs, {"form_a", "form_b"}, MODEL_OK) == {
        "form_a",
        "form_b",
    }
    # undeclared templates keep reference counting (opt-in), declared unknown names ignored
    assert compose.nrt_free_templates(funcs, {"form_b", "form_zz"}, MODEL_OK) == {"form_b"}


def test_a_declared_template_that_allocates_is_an_error():
    with pytest.raises(ValueError, match="form_c is declared NRT_FREE but allocates"):
        compose.nrt_free_templates({"form_c": ALLOC}, {"form_c"}, MODEL_OK)


def test_a_declared_template_calling_an_undeclared_one_is_an_error():
    funcs = {"form_a": NO_ALLOC, "form_b": LEAF}
    with pytest.raises(ValueError, match="form_a is declared NRT_FREE but calls form_b"):
        compose.nrt_free_templates(funcs, {"form_a"}, MODEL_OK)


def test_an_allocating_model_keeps_reference_counting_everywhere():
    model = {"phi": "@njit\ndef phi(q, t, p, out):\n    out[:] = np.array([1.0, 2.0])\n"}
    assert compose.nrt_free_templates({"form_b": LEAF}, {"form_b"}, model) == set()


def test_the_docstring_does_not_count_as_allocation():
    src = 'def form_b(x):\n    """Not np.zeros(3): a docstring."""\n    return x[0]\n'
    assert compose.nrt_free_templates({"form_b": src}, {"form_b"}, MODEL_OK) == {"form_b"}


def test_every_registered_triple_composes_with_its_hot_path_nrt_free():
    """Generation validates the NRT_FREE declarations of every template module against
    every model (no compile): a declaration error would raise here, not in a study."""
    from mbstudy.solvers import model_entry, registry

    models = [
        name
        for name in registry.entries("model")
        if not hasattr(model_entry.model(name).module, "warm_kernel")
    ]
    for model in models:
        for form in registry.entries("formulation"):
            for integ in registry.entries("integrator"):
                src = compose.generate_source(model, form, integ)
                head = src.split("def form_rhs(", 1)[0].rsplit("\n", 2)[-2]
                assert head == "@link_only(_nrt=False)", (model, form, integ)
                ref = compose.generate_source(model, form, integ, augmented=True)
                assert "_nrt=False" not in ref


def test_kernels_free_every_array_exactly_once():
    """Fresh process with NUMBA_NRT_STATS: allocations == frees after runs of kernels whose
    right-hand sides are NRT-free (index-1 Schur path, projection with post-step, qr with
    its factorizations, dopri5), including a diverging case."""
    script = textwrap.dedent(
        """
        import json, os
        from numba.core.runtime import rtsys
        from mbstudy.solvers.runner import run_case
        cases = [
            (("fourbar", "baumgarte", "rk4"), {}),
            (("fourbar", "projection", "rk4"), {}),
            (("fourbar", "baumgarte", "rk4"),
             {"formulation_params": {"omega_n": 1e4, "xi": 1.0}, "integrator_params": {"h": 0.01}}),
            (("parallelogram", "qr", "dopri5"), {}),
        ]
        for triple, kw in cases:  # compile, and fill the per-process caches
            run_case(*triple, t_end=0.05, samples=6, **kw)
        s0 = rtsys.get_allocation_stats()
        out = [int(run_case(*triple, t_end=0.05, samples=6, **kw).status)
               for triple, kw in cases]
        s = rtsys.get_allocation_stats()
        print(json.dumps({"status": out, "alloc": s.alloc - s0.alloc,
                          "free": s.free - s0.free, "mi_alloc": s.mi_alloc - s0.mi_alloc,
                          "mi_free": s.mi_free - s0.mi_free}))
        """
    )
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["status"][:2] == [0, 0]
    assert stats["status"][2] != 0  # omega_n h = 100 diverges: a status, and still no leak
    assert stats["alloc"] > 100  # the kernels did allocate (workspaces, outputs)
    assert stats["alloc"] == stats["free"], stats
    assert stats["mi_alloc"] == stats["mi_free"], stats
