"""Which templates compile without numba's reference counting (``_nrt=False``): the
declared ``NRT_FREE`` templates, checked not to allocate (:func:`nrt_free_templates`)."""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from types import ModuleType

from mbstudy.solvers.private_api import nrt_option_supported

# Calls that allocate a NumPy array (a function making one needs numba's reference-counting
# runtime); a scalar ``np.sqrt`` / ``np.sin`` ... does not match
_ALLOCATES = re.compile(
    r"\bnp\.(zeros|empty|ones|full|array|asarray|eye|identity|copy|dot|outer|cross|"
    r"concatenate|stack|hstack|vstack|linalg|zeros_like|empty_like|ones_like|full_like)\b"
    r"|\.copy\(|\.astype\(| @ "
)


def refcounted_options() -> dict:
    """``njit`` options of a compiled helper that allocates (solvers/svd.py) but is called
    from NRT-free templates: ``_nrt=True``, else it would take its callers' setting and not
    compile; nothing where this numba has no such option (then no template is NRT-free)."""
    return {"_nrt": True} if nrt_option_supported() else {}


@functools.lru_cache(maxsize=4096)
def _body(src: str) -> str:
    """Function source without its decorator lines and docstring (for the checks; a pure
    function of the text, kept per process: a study's kernels share most templates)."""
    tree = ast.parse(textwrap.dedent(src))
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(ast.unparse(node) for node in body)


@functools.lru_cache(maxsize=4096)
def _called_names(src: str) -> frozenset[str]:
    """Names of the plain functions called in ``src`` (kept per process, as :func:`_body`)."""
    tree = ast.parse(textwrap.dedent(src))
    return frozenset({
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    })


def nrt_free_templates(
    funcs: dict[str, str], declared: set[str], model_sources: dict[str, str]
) -> set[str]:
    """The template functions compiled without numba's reference counting (``_nrt=False``).

    Why: every call of a function that takes the workspace tuple increfs and decrefs each
    array in it (an atomic ``lock inc`` / ``lock dec`` pair per array: 13 arrays for the
    index-1 workspace). Profiled on the four-bar (perf), NRT_incref / NRT_decref took
    ~45 % of an RK4 step; compiled without them the step is ~2x faster with bit-identical
    results (docs/performance.md). Such a function must neither allocate nor return an
    array, and everything it calls is compiled in the same mode, so it may only call
    functions that do not allocate either.

    ``declared``: the names the template modules list in ``NRT_FREE`` (an author's
    promise: no allocation, no array returned). Checked here: a declared function whose
    source allocates, or that calls a template or model function that allocates or is
    not declared, is a programming error (ValueError). If a model function allocates,
    the whole kernel keeps reference counting (empty set): a model is not required to be
    allocation-free.
    """
    if not nrt_option_supported():
        return set()
    for src in model_sources.values():
        if _ALLOCATES.search(_body(src)):
            return set()
    chosen = {name for name in declared if name in funcs}
    for name in sorted(chosen):
        if _ALLOCATES.search(_body(funcs[name])):
            raise ValueError(f"template {name} is declared NRT_FREE but allocates an array")
        for callee in _called_names(funcs[name]):
            if callee in funcs and callee not in chosen:
                raise ValueError(
                    f"template {name} is declared NRT_FREE but calls {callee}, which is not"
                )
    return chosen


def _declared_nrt_free(*modules: ModuleType) -> set[str]:
    """Union of the modules' ``NRT_FREE`` name tuples (default_ names mapped to form_)."""
    out: set[str] = set()
    for module in modules:
        for name in getattr(module, "NRT_FREE", ()):
            out.add(name[len("default_") :] if name.startswith("default_") else name)
    return out
