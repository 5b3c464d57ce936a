"""Link-only compile units: a kernel's internal templates are optimized once, inside its
entry point, instead of once per level of the call tree.

Why (docs/performance.md, "Cold start"): numba makes every ``@njit`` function its own
code library. Compiling a function links in the *optimized* modules of all its callees,
runs LLVM's full module optimization over the result and emits machine code for it. A
kernel's call chain (``common_run`` -> ``integ_run`` -> ``integ_erk_fixed`` ->
``form_rhs`` -> ``common_solve_index1`` -> ``common_mass_factor`` ...) is ~7 levels deep,
so the bottom of the tree is optimized and turned into machine code once per level: LLVM
was two thirds of a cold compile.

A template compiled with :func:`link_only` is typed and lowered as usual (numba's
function-level passes included), but its library is never optimized as a module, never
added to the JIT engine and never turned into machine code: it exists only to be linked
into its callers. The entry points of a kernel (``common_run``, ``common_state_size``) are
ordinary ``@njit(cache=True)`` functions; their library links the whole unoptimized tree,
runs LLVM's optimization once and emits machine code once (and numba caches that object
code, which is self-contained, as before). LLVM sees the same IR in one module instead of
in nested pieces; no fast-math is involved, so the arithmetic, and the results, are
unchanged (tests/test_compile_units.py, tests/test_engines.py).

A link-only function has no machine code of its own, so it cannot be called from Python
directly. :class:`LinkOnlyDispatcher` never registers a native entry point for Python
calls: such a call (tests, the qr reporting helpers) goes to a *twin*, an ordinary
``njit(cache=True)`` dispatcher of the same Python function, compiled on first use.

numba offers no public API for this. The numba internals it builds on come from
:mod:`mbstudy.solvers.private_api`, whose ``PRIVATE_API`` and ``LIBRARY_STATE`` list them
(checked by tests/test_private_api.py): numba's ``CPUCodeLibrary`` (the methods overridden
here and its private state), the ``NativeLowering`` pass and ``DefaultPassBuilder`` (the
pipeline), and ``Dispatcher.add_overload`` / ``_compile_for_args`` (the Python entry).
``numba.config.DISABLE_JIT`` is honoured: the decorator then returns the plain function,
as ``njit`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as ll
import numba
from mbstudy.solvers.private_api import (
    library_final_module,
    library_links,
    library_module_for_linking,
    library_reload_hooks,
    numba_compiler_internals,
)

_nb = numba_compiler_internals()


class _NoEnvCodegen:
    """The codegen as a link-only library shows it to numba's ``get_executable``: the
    function's environment pointer is not stored (the library is not in the JIT engine;
    its code runs only inlined into an entry point, as in a kernel loaded from the cache,
    whose callees' environments are not restored either)."""

    def __init__(self, cg: Any) -> None:
        self._cg = cg

    def set_env(self, env_name: str, env: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cg, name)


class LinkOnlyLibrary(_nb.JITCodeLibrary):
    """A code library that is linked into its callers and never optimized as a module
    or turned into machine code on its own. ``always_inline``: its functions carry
    LLVM's ``alwaysinline`` attribute (:func:`link_only`)."""

    always_inline = False

    @property
    def codegen(self) -> Any:
        return _NoEnvCodegen(self._codegen)

    def finalize(self) -> None:
        """Nothing is linked, optimized or emitted here: the library only records that it
        is complete (and collects the reload hooks of everything it reaches). The first
        ordinary library that links it takes the whole tree (:meth:`_get_module_for_linking`)."""
        _nb.require_global_compiler_lock()
        self._raise_if_finalized()
        for library in self._closure():
            self._reload_init.update(library_reload_hooks(library))
        self._finalized = True

    def _closure(self) -> list:
        """Every library this one reaches through link-only libraries, each once (an
        ordinary library ends a path: its module already contains its callees)."""
        out, seen, stack = [], {id(self)}, library_links(self)
        while stack:
            library = stack.pop()
            if id(library) in seen:
                continue
            seen.add(id(library))
            out.append(library)
            if isinstance(library, LinkOnlyLibrary):
                stack.extend(library_links(library))
        return out

    def _own_module_for_linking(self) -> Any:
        """This library's own functions (numba's function passes applied), exported
        functions made ``weak_odr``: always linked (LLVM links a ``linkonce_odr``
        definition only if the module it goes into already refers to it, and in a tree
        the referring piece may come later), duplicates merged."""
        own = self.__dict__.get("_mbstudy_own")
        if own is None:
            own = self._final_module.clone()
            for fn in own.functions:
                if not fn.is_declaration and fn.linkage == ll.Linkage.external:
                    fn.linkage = "weak_odr"
                    if self.always_inline:
                        fn.add_function_attribute("alwaysinline")
            self.__dict__["_mbstudy_own"] = own
        return own

    def _get_module_for_linking(self) -> Any:
        """The module an ordinary caller links: this library's functions and those of
        every library in its tree, each linked once (numba would link each level's
        already linked and optimized module into the next). The link-only pieces go in
        first, then the ordinary libraries (self-contained modules whose ``linkonce_odr``
        definitions LLVM takes only once something refers to them); at the end every
        ``weak_odr`` definition becomes ``linkonce_odr``, as numba makes any module it
        links, so that the caller keeps only what it uses."""
        self._ensure_finalized()
        if self._shared_module is None:
            mod = self._own_module_for_linking().clone()
            closure = self._closure()
            for library in closure:
                if isinstance(library, LinkOnlyLibrary):
                    mod.link_in(library._own_module_for_linking(), preserve=True)
            for library in closure:
                if not isinstance(library, LinkOnlyLibrary):
                    mod.link_in(library_module_for_linking(library), preserve=True)
            for fn in mod.functions:
                if not fn.is_declaration and fn.linkage == ll.Linkage.weak_odr:
                    fn.linkage = "linkonce_odr"
            missing = [fn.name for fn in mod.functions if fn.is_declaration
                       and fn.name in _defined(closure)]  # fmt: skip
            if missing:  # a call to address 0 at run time otherwise
                raise RuntimeError(f"link-only tree of {self.name}: unresolved {missing[0]}")
            self._shared_module = mod
        return self._shared_module

    def get_pointer_to_function(self, name: str) -> int:
        """No machine code: always 0 (numba's "not defined")."""
        self._ensure_finalized()
        return 0


def _defined(libraries: list) -> set[str]:
    """Names of the functions the link-only libraries among ``libraries`` define."""
    return {fn.name for lib in libraries if isinstance(lib, LinkOnlyLibrary)
            for fn in library_final_module(lib).functions if not fn.is_declaration}  # fmt: skip


@_nb.register_pass(mutates_CFG=True, analysis_only=False)
class LinkOnlyLowering(_nb.NativeLowering):
    """numba's lowering pass, into a :class:`LinkOnlyLibrary`."""

    _name = "mbstudy_link_only_lowering"

    def run_pass(self, state: Any) -> bool:
        if state.library is None:
            state.library = LinkOnlyLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
            state.library.always_inline = getattr(state.func_id.func, ALWAYS_INLINE_FLAG, False)
        return super().run_pass(state)


class LinkOnlyCompiler(_nb.CompilerBase):
    """numba's nopython pipeline with :class:`LinkOnlyLowering` in place of its lowering."""

    def define_pipelines(self) -> list:
        pm = _nb.DefaultPassBuilder.define_nopython_pipeline(self.state)
        lowering = _nb.NativeLowering
        pm.passes = [(LinkOnlyLowering if p is lowering else p, d) for p, d in pm.passes]
        pm.finalize()
        return [pm]


class LinkOnlyDispatcher(_nb.CPUDispatcher):
    """A dispatcher whose compiled overloads serve jitted callers only; a call from Python
    runs an ordinary cached ``njit`` twin of the same function."""

    def add_overload(self, cres: Any) -> None:
        # no native entry point for Python calls (the C dispatch table stays empty, so
        # every Python call reaches _compile_for_args); typing and linking use overloads
        self.overloads[tuple(cres.signature.args)] = cres

    def _compile_for_args(self, *args: Any, **kws: Any) -> Any:
        return self.python_twin()

    def python_twin(self) -> Any:
        """The ordinary dispatcher of the same function (compiled with its own machine
        code and cached on disk; its callees stay link-only)."""
        with _TWIN_LOCK:
            twin = self.__dict__.get("_mbstudy_twin")
            if twin is None:
                drop = ("no_cpython_wrapper", "no_cfunc_wrapper", "nopython")
                opts = {k: v for k, v in self.targetoptions.items() if k not in drop}
                twin = numba.njit(cache=True, **opts)(self.py_func)
                self.__dict__["_mbstudy_twin"] = twin
        return twin


_TWIN_LOCK = threading.Lock()


ALWAYS_INLINE_FLAG = "_mbstudy_always_inline"  # set on the Python function by link_only


def link_only(always_inline: bool = False, **options: Any) -> Callable[[Callable], Any]:
    """Decorator: compile the function as a link-only unit (see the module docstring).

    ``options`` are numba ``njit`` options (e.g. ``_nrt=False``); the function is compiled
    in nopython mode without a CPython or C wrapper and is not cached on its own (its code
    is cached inside the entry points that use it).

    ``always_inline``: LLVM inlines the function into every caller, whatever its size.
    numba passes a tuple argument as its flattened fields, so a call that LLVM leaves out
    of line costs one argument per array field of the workspace tuples (~100 for a
    formulation's): the explicit Runge-Kutta stepper's per-step ``integ_stp_attempt``,
    left out of line by LLVM's size threshold, made an rk4 step of the four-bar 7 % slower
    than the loop it replaced (docs/explanation/driver-plan.md).
    """

    def wrap(fn: Callable) -> Any:
        if numba.config.DISABLE_JIT:
            return fn
        if always_inline:
            setattr(fn, ALWAYS_INLINE_FLAG, True)
        opts = dict(options, nopython=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
        return LinkOnlyDispatcher(fn, targetoptions=opts, pipeline_class=LinkOnlyCompiler)

    return wrap
