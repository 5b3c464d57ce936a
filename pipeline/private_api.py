"""Every use of a dependency's private API, in one place.

mbstudy's start-up and store writes rely on a few internals of its dependencies that no
public API offers. Each is reached only through a function of this module, and
:data:`PRIVATE_API` lists every one with the signature it is used with, so that
``tests/test_private_api.py`` fails by name when a release of the dependency changes one
(pyproject.toml bounds only numba from above).

- multiprocessing's forkserver singleton (``multiprocessing.forkserver._forkserver``, its
  ``_stop``, ``_preload_modules`` and ``_forkserver_pid``): the LocalCluster's workers fork
  from a server that has imported their stack (:mod:`mbstudy.pipeline.cluster.local`).
- ``multiprocessing.spawn.get_preparation_data`` (undocumented): what a child process
  re-runs as its main module; the LocalCluster's workers run
  :mod:`mbstudy.pipeline.cluster.workermain` instead of the user's script
  (:func:`set_child_main`).
- ``distributed.utils._forkserver_preload_set``: stops distributed from replacing that
  server's preload list the first time it sees the ``forkserver`` start method.
- distributed's dashboard internals: the scheduler's ``http_application`` (a
  ``RoutingApplication``: ``add_application``) and ``http_server``, and
  ``distributed.dashboard.scheduler.connect``: the launch serves a "launch in progress"
  page at the dashboard's address and attaches the bokeh dashboard later
  (:mod:`mbstudy.pipeline.cluster.local`); its ``DirectoryHandler`` (the
  ``/sitemap.json`` crawler) is wrapped so a crawl error is no console traceback
  (:func:`make_sitemap_safe`).
- ``distributed.gc``'s ``enable_gc_diagnosis`` / ``disable_gc_diagnosis`` (a counted
  registration of distributed's gc callback): the launcher registers it before the
  scheduler starts in another thread, so the two never race
  (:class:`mbstudy.pipeline.cluster.local.ClusterStart`).
- typer's ``typer.core`` classes ``TyperCommand``, ``TyperOption``, ``TyperArgument``
  (with the ``display_type`` and ``collect_usage_pieces`` they override): the CLI's
  help renderer subclasses them (:mod:`mbstudy.pipeline.cli.helptext`).
- zarr's ``Array._async_array`` and ``zarr.core.sync.sync``: the chunk writes of one batch
  go to zarr's event loop in one round trip (:meth:`ResultStore.write_batch`).
- numba's ``numba.core.dispatcher.Dispatcher`` (to find jitted functions and their
  ``py_func``: :mod:`mbstudy.pipeline.plan.purepy`) and
  ``numba.core.registry.cpu_target`` (to initialise numba once in the forkserver:
  :mod:`mbstudy.pipeline.cluster.workerboot`).

This module imports no other module of mbstudy (every layer may use it) and imports each
dependency only inside the function that needs it. The solvers layer, which may not import
the pipeline, has its own guarded module (solvers/private_api.py); there is no third.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PRIVATE_API",
    "add_http_application",
    "dashboard_connector",
    "distributed_forkserver_flag",
    "forkserver",
    "forkserver_ensure_running",
    "forkserver_pid",
    "forkserver_preload_modules",
    "forkserver_set_preload",
    "forkserver_stop",
    "gc_diagnosis",
    "is_numba_dispatcher",
    "make_sitemap_safe",
    "numba_refresh_targets",
    "set_child_main",
    "set_distributed_forkserver_flag",
    "typer_core_classes",
    "zarr_async_array",
    "zarr_sync",
]

# (module, dotted attribute, parameter names of the callable or None for a plain value);
# a dispatcher's ``py_func`` is set per instance: the test checks it on a real one
PRIVATE_API: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("multiprocessing.forkserver", "_forkserver", None),
    ("multiprocessing.forkserver", "_forkserver._stop", ()),
    ("multiprocessing.forkserver", "_forkserver._preload_modules", None),
    ("multiprocessing.forkserver", "_forkserver._forkserver_pid", None),
    ("multiprocessing.forkserver", "_forkserver.ensure_running", ()),
    ("multiprocessing.forkserver", "_forkserver.set_forkserver_preload", ("modules_names",)),
    ("multiprocessing.spawn", "get_preparation_data", ("name",)),
    ("distributed.utils", "_forkserver_preload_set", None),
    ("distributed.http.routing", "RoutingApplication.add_application", ("self", "application")),
    ("distributed.http.routing", "DirectoryHandler.get", ("self",)),
    ("distributed.http.routing", "RoutingApplication", None),
    ("distributed.dashboard.scheduler", "connect",
     ("application", "http_server", "scheduler", "prefix")),
    ("distributed.gc", "enable_gc_diagnosis", ()),
    ("distributed.gc", "disable_gc_diagnosis", ("force",)),
    ("typer.core", "TyperCommand", None),
    ("typer.core", "TyperOption", None),
    ("typer.core", "TyperArgument", None),
    ("typer.core", "TyperOption.display_type", ("self", "ctx")),
    ("typer.core", "TyperArgument.display_type", ("self", "ctx")),
    ("typer.core", "TyperCommand.collect_usage_pieces", ("self", "ctx")),
    ("zarr", "Array._async_array", None),
    ("zarr.core.array", "AsyncArray.setitem", ("self", "selection", "value", "prototype")),
    ("zarr.core.sync", "sync", None),
    ("numba.core.dispatcher", "Dispatcher", None),
    ("numba.core.registry", "cpu_target.typing_context.refresh", ()),
    ("numba.core.registry", "cpu_target.target_context.refresh", ()),
)


# -- multiprocessing ----------------------------------------------------------------------
def forkserver() -> Any | None:
    """multiprocessing's forkserver singleton, or None where it lacks what mbstudy uses."""
    from multiprocessing import forkserver as fs

    server = getattr(fs, "_forkserver", None)
    needed = ("_stop", "_preload_modules", "ensure_running", "set_forkserver_preload")
    return server if all(hasattr(server, a) for a in needed) else None


def forkserver_stop(server: Any) -> None:
    """Stop the forkserver process (the next ``ensure_running`` starts a fresh one)."""
    server._stop()


def forkserver_set_preload(server: Any, modules: list[str]) -> None:
    """The modules the forkserver imports when it next starts."""
    server.set_forkserver_preload(modules)


def forkserver_ensure_running(server: Any) -> None:
    """Start the forkserver process if it is not running (its preload runs in it)."""
    server.ensure_running()


def forkserver_preload_modules(server: Any) -> list[str]:
    """The modules the forkserver imports when it starts (a copy)."""
    return list(server._preload_modules)


def forkserver_pid(server: Any) -> int | None:
    """The forkserver's process id (None when it is not running)."""
    return getattr(server, "_forkserver_pid", None)


_CHILD_MAIN: list[str] = []  # the modules asked for, innermost last


def set_child_main(module: str | None) -> None:
    """From now on, child processes that multiprocessing starts (forkserver, spawn) run
    ``module`` as their main module instead of the parent's ``__main__`` (a script, or
    ``<stdin>``); ``None`` undoes the latest such call. Calls nest (one per live
    LocalCluster)."""
    from multiprocessing import spawn

    if module is not None:
        _CHILD_MAIN.append(module)
    elif _CHILD_MAIN:
        _CHILD_MAIN.pop()
    original = getattr(spawn.get_preparation_data, "mbstudy_original", None)
    if _CHILD_MAIN and original is None:
        original = spawn.get_preparation_data

        def get_preparation_data(name):
            data = original(name)
            if _CHILD_MAIN:
                data.pop("init_main_from_path", None)
                data["init_main_from_name"] = _CHILD_MAIN[-1]
            return data

        get_preparation_data.mbstudy_original = original
        spawn.get_preparation_data = get_preparation_data
    elif not _CHILD_MAIN and original is not None:
        spawn.get_preparation_data = original


# -- distributed --------------------------------------------------------------------------
def distributed_forkserver_flag() -> bool | None:
    """distributed's "forkserver preload already set" flag (None if it has none)."""
    import distributed.utils as dutils

    return getattr(dutils, "_forkserver_preload_set", None)


def set_distributed_forkserver_flag(value: bool) -> None:
    """Set distributed's "forkserver preload already set" flag."""
    import distributed.utils as dutils

    dutils._forkserver_preload_set = value


def add_http_application(scheduler: Any, application: Any) -> None:
    """Serve ``application`` (a tornado ``web.Application``) from the scheduler's HTTP
    server, asked before the applications added later (a 404 from it passes a request on)."""
    scheduler.http_application.add_application(application)


def make_sitemap_safe(scheduler: Any) -> None:
    """Make distributed's ``/sitemap.json`` answer instead of logging a traceback on the
    launcher's console: once the dashboard is attached at prefix ``/`` its crawler
    (``distributed.http.routing.DirectoryHandler``) meets a static-file rule without a
    ``path`` (KeyError). The crawl's answer is kept when it works, else an empty list."""
    from distributed.http.routing import DirectoryHandler

    class Sitemap(DirectoryHandler):
        def get(self) -> None:
            try:
                super().get()
            except Exception:  # distributed's crawler; an empty sitemap is still a sitemap
                self.clear()
                self.write({"paths": []})

    application = scheduler.http_application
    routers = [application.default_router, application.wildcard_router]
    while routers:
        for rule in getattr(routers.pop(), "rules", []):
            if rule.target is DirectoryHandler:
                rule.target = Sitemap
            elif hasattr(rule.target, "rules"):
                routers.append(rule.target)


def dashboard_connector() -> Any:
    """A function attaching distributed's bokeh dashboard, at ``/``, to a scheduler's HTTP
    server (call it on the scheduler's event loop); importing it imports bokeh."""
    import distributed.dashboard.scheduler as dashboard

    def connect(scheduler: Any) -> None:
        dashboard.connect(scheduler.http_application, scheduler.http_server, scheduler,
                          prefix="/")  # fmt: skip

    return connect


def gc_diagnosis(enable: bool) -> None:
    """Add (True) or remove (False) one user of distributed's gc diagnosis callback (the
    callback is registered while at least one user remains)."""
    from distributed import gc

    if enable:
        gc.enable_gc_diagnosis()
    else:
        gc.disable_gc_diagnosis()


# -- typer ----------------------------------------------------------------------------------
def typer_core_classes() -> tuple[type, type, type]:
    """typer's ``TyperCommand``, ``TyperOption`` and ``TyperArgument`` (to subclass)."""
    from typer.core import TyperArgument, TyperCommand, TyperOption

    return TyperCommand, TyperOption, TyperArgument


# -- zarr -----------------------------------------------------------------------------------
def zarr_async_array(array: Any) -> Any:
    """The ``AsyncArray`` behind a ``zarr.Array`` (``await handle.setitem(sel, value)``)."""
    return array._async_array


def zarr_sync(coroutine: Any) -> Any:
    """Run ``coroutine`` on zarr's own event loop and return its result."""
    from zarr.core.sync import sync

    return sync(coroutine)


# -- numba ----------------------------------------------------------------------------------
def is_numba_dispatcher(obj: Any) -> bool:
    """Whether ``obj`` is a numba-jitted function (its Python source is ``obj.py_func``);
    importing numba's dispatcher does not initialise numba."""
    from numba.core.dispatcher import Dispatcher

    return isinstance(obj, Dispatcher)


def numba_refresh_targets() -> None:
    """numba's one-time initialisation of its CPU typing and target contexts (what the
    first compile or cache load would do), done ahead in the forkserver."""
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()
