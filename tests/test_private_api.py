"""The private APIs of dependencies that mbstudy uses are all in pipeline/private_api.py,
and each still exists with the signature it is used with: a dependency release that
changes one fails here, by name, instead of somewhere in a launch."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from mbstudy.pipeline import private_api
from mbstudy.solvers import compile_units

REPO = Path(__file__).resolve().parent.parent
PRIVATE_MODULES = ("multiprocessing.forkserver", "distributed.utils", "zarr.core", "numba.core")


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
    private_api.PRIVATE_API + compile_units.PRIVATE_API,
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
    from mbstudy.solvers import registry

    sizes = registry.model("fourbar").module.sizes
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
    """Outside private_api.py, no module of pipeline/ or solvers/ imports a private module
    of a dependency or reads one of the private attributes. solvers/compose.py and
    solvers/compile_units.py are the exceptions: they build the numba kernels (numba's
    options and ``_nrt``; the link-only code libraries, whose private APIs
    compile_units.PRIVATE_API lists) and the solvers layer may not import the pipeline."""
    attrs = {d.split(".")[-1] for _, d, _ in private_api.PRIVATE_API}
    attrs = {a for a in attrs if a.startswith("_") or a in ("set_forkserver_preload",)}
    bad = []
    for root in ("pipeline", "solvers"):
        for path in (REPO / root).rglob("*.py"):
            if path.name == "private_api.py" or path in (
                REPO / "solvers" / "compose.py",
                REPO / "solvers" / "compile_units.py",
            ):
                continue
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                for name in names:
                    if name.startswith(PRIVATE_MODULES) and name != "multiprocessing.forkserver":
                        bad.append(f"{path.relative_to(REPO)}: imports {name}")
                    if name == "multiprocessing.forkserver" or name.endswith(".forkserver"):
                        bad.append(f"{path.relative_to(REPO)}: imports {name}")
                own = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                    node.value.id == "self"
                )
                if isinstance(node, ast.Attribute) and node.attr in attrs and not own:
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno}: .{node.attr}")
    assert not bad, bad
