"""The private APIs of dependencies that mbstudy uses are all reached through the two
guarded modules, pipeline/private_api.py and (for the solvers layer, which may not import
the pipeline) solvers/private_api.py, and each still exists with the signature it is used
with and does what mbstudy relies on, on real objects: a dependency release that changes
one fails here, by name, instead of somewhere in a launch."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from mbstudy.pipeline import private_api
from mbstudy.solvers import private_api as solvers_private_api

REPO = Path(__file__).resolve().parent.parent
PRIVATE_MODULES = ("multiprocessing.forkserver", "distributed.utils", "distributed.http",
                   "distributed.dashboard", "distributed.gc", "zarr.core", "numba.core",
                   "typer.core", "ctypes")
GUARDED = (REPO / "pipeline" / "private_api.py", REPO / "solvers" / "private_api.py")


def _resolve(module: str, dotted: str):
    obj = importlib.import_module(module)
    for part in dotted.split("."):
        if isinstance(obj, type) and part in vars(obj):
            obj = vars(obj)[part]  # a class attribute as defined (property, function)
        elif isinstance(obj, type) and any(
            part in vars(c).get("__annotations__", {}) for c in obj.__mro__
        ):
            return None  # an instance field declared on the class (a dataclass field)
        else:
            obj = getattr(obj, part)  # AttributeError names what is gone
    return obj


@pytest.mark.parametrize(
    ("module", "dotted", "params"),
    private_api.PRIVATE_API + solvers_private_api.PRIVATE_API,
    ids=lambda v: str(v),
)
def test_each_private_attribute_exists_with_its_signature(module, dotted, params):
    obj = _resolve(module, dotted)
    if params is None:
        return
    fn = obj.fget if isinstance(obj, property) else obj
    got = tuple(inspect.signature(fn).parameters)
    assert got == params, f"{module}.{dotted}: parameters {got}, mbstudy uses {params}"


def test_the_zarr_handles_write_what_is_read_back(tmp_path):
    import numpy as np
    import zarr

    arr = zarr.create_array(store=str(tmp_path / "a.zarr"), shape=(4,), dtype="f8", chunks=(2,))
    handle = private_api.zarr_async_array(arr)
    private_api.zarr_sync(handle.setitem(slice(2, 4), np.array([1.5, 2.5])))
    np.testing.assert_array_equal(arr[:], [0.0, 0.0, 1.5, 2.5])


def test_the_numba_helpers_tell_a_jitted_function_from_its_python_source():
    from mbstudy.solvers import model_entry

    sizes = model_entry.model("fourbar").module.sizes
    assert private_api.is_numba_dispatcher(sizes)
    assert not private_api.is_numba_dispatcher(sizes.py_func)
    private_api.numba_refresh_targets()  # idempotent; raises if numba's registry moved


def test_the_forkserver_helpers_see_multiprocessing_s_server():
    server = private_api.forkserver()
    assert server is not None
    assert isinstance(private_api.forkserver_preload_modules(server), list)
    pid = private_api.forkserver_pid(server)
    assert pid is None or isinstance(pid, int)
    assert private_api.distributed_forkserver_flag() in (True, False)


def test_no_other_module_uses_these_private_apis():
    """Outside the two guarded modules, no module of pipeline/ or solvers/ imports a
    private module of a dependency (or ctypes) or reads one of the private attributes
    listed there on another object (a subclass's own ``self._x`` is its own state: what it
    inherits is listed and checked above and in the library-state test)."""
    listed = private_api.PRIVATE_API + solvers_private_api.PRIVATE_API
    attrs = {d.split(".")[-1] for _, d, _ in listed}
    attrs = {a for a in attrs if a.startswith("_")} | set(solvers_private_api.LIBRARY_STATE)
    attrs |= {"set_forkserver_preload", "http_application", "http_server", "add_application"}
    bad = []
    for root in ("pipeline", "solvers"):
        for path in (REPO / root).rglob("*.py"):
            if path in GUARDED:
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                for name in names:
                    if name.startswith(PRIVATE_MODULES) or name.endswith(".forkserver"):
                        bad.append(f"{path.relative_to(REPO)}: imports {name}")
                own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                    node.value.id == "self"
                )
                if isinstance(node, ast.Attribute) and node.attr in attrs and not own:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: .{node.attr}")
    assert not bad, bad


def test_the_link_only_libraries_find_numba_s_library_state():
    """A real compiled function's code library has the private state the link-only
    libraries read and set, and the accessors return it."""
    import numba

    @numba.njit
    def twice(x):
        return 2.0 * x

    assert twice(1.5) == 3.0
    library = twice.overloads[twice.signatures[0]].library
    for name in solvers_private_api.LIBRARY_STATE:
        assert hasattr(library, name), f"numba's code library has no {name}"
    assert isinstance(solvers_private_api.library_links(library), list)
    assert isinstance(solvers_private_api.library_reload_hooks(library), set)
    module = solvers_private_api.library_final_module(library)
    assert any(not fn.is_declaration for fn in module.functions)
    linked = solvers_private_api.library_module_for_linking(library)
    assert {fn.name for fn in module.functions if not fn.is_declaration} <= {
        fn.name for fn in linked.functions}
    internals = solvers_private_api.numba_compiler_internals()
    assert isinstance(library, internals.JITCodeLibrary)
    assert solvers_private_api.nrt_option_supported()


def test_numba_s_cache_layout_is_what_the_kernel_cache_reads(tmp_path):
    """numba, in a fresh process, caches a function of a module both beside its source
    (``__pycache__``) and under ``NUMBA_CACHE_DIR``, in files that the guarded helpers
    name: the index is found, every file is attributed to its module."""
    import os
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    (src / "mbk_probe.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef common_run(x):\n"
        "    return x + 1.0\n"
    )
    for cache in (None, tmp_path / "numba"):
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        if cache is not None:
            env["NUMBA_CACHE_DIR"] = str(cache)
        subprocess.run([sys.executable, "-c", "import mbk_probe; mbk_probe.common_run(1.0)"],
                       cwd=src, env={**env, "PYTHONPATH": str(src)}, check=True,
                       timeout=300)  # fmt: skip
        old = os.environ.get("NUMBA_CACHE_DIR")
        try:
            os.environ.pop("NUMBA_CACHE_DIR", None)
            if cache is not None:
                os.environ["NUMBA_CACHE_DIR"] = str(cache)
            roots = solvers_private_api.numba_cache_roots(src)
            assert solvers_private_api.has_numba_index(src, "mbk_probe", "common_run")
            assert not solvers_private_api.has_numba_index(src, "mbk_probe", "other")
        finally:
            os.environ.pop("NUMBA_CACHE_DIR", None)
            if old is not None:
                os.environ["NUMBA_CACHE_DIR"] = old
        root = roots[0] if cache is None else roots[1]
        files = [p for p in root.rglob("*") if p.is_file()]
        assert {p.suffix for p in files} == {".nbi", ".nbc"}, files
        assert {solvers_private_api.numba_cache_module(p) for p in files} == {"mbk_probe"}
        if cache is None:
            import shutil

            shutil.rmtree(root)


def test_scipy_s_openblas_thread_setter_is_found_and_works():
    """scipy's wheels bundle OpenBLAS; its per-thread setter is found and, called through
    ctypes, returns the previous count and sets the new one."""
    import ctypes

    address = solvers_private_api.openblas_threads_local_address()
    assert address is not None, "no openblas_set_num_threads_local in scipy's OpenBLAS"
    setter = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(address)
    before = setter(1)
    assert before >= 1
    assert setter(before) == 1


def test_the_gc_diagnosis_is_counted_per_user():
    """Two users register distributed's gc callback once; it stays until the last leaves."""
    import gc

    before = len(gc.callbacks)
    private_api.gc_diagnosis(True)
    private_api.gc_diagnosis(True)
    try:
        registered = len(gc.callbacks)
        assert registered in (before, before + 1)
        private_api.gc_diagnosis(False)
        assert len(gc.callbacks) == registered
    finally:
        private_api.gc_diagnosis(False)
    assert len(gc.callbacks) == before


def test_the_help_renderer_subclasses_typer_s_own_classes():
    from mbstudy.pipeline.cli import helptext

    command, option, argument = private_api.typer_core_classes()
    assert issubclass(helptext.PlainCommand, command)
    assert issubclass(helptext._PlainOption, option)
    assert issubclass(helptext._PlainArgument, argument)


def test_the_dashboard_helpers_serve_and_attach_on_a_real_scheduler():
    """On a real (in-process) LocalCluster without its dashboard: an application added
    with add_http_application answers, and the connector attaches the bokeh dashboard."""
    import urllib.parse
    import urllib.request

    from distributed import LocalCluster
    from tornado import web

    class Probe(web.RequestHandler):
        def get(self) -> None:
            self.write("probe")

    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0",
                      scheduler_kwargs={"dashboard": False}) as cluster:  # fmt: skip
        scheduler = cluster.scheduler
        private_api.add_http_application(scheduler, web.Application([("/probe", Probe)]))
        base = f"http://127.0.0.1:{urllib.parse.urlparse(cluster.dashboard_link).port}"
        with urllib.request.urlopen(f"{base}/probe", timeout=30) as res:
            assert res.read() == b"probe"
        connect = private_api.dashboard_connector()

        async def attach() -> None:
            connect(scheduler)

        cluster.sync(attach)
        with urllib.request.urlopen(f"{base}/status", timeout=60) as res:
            assert res.status == 200
