"""The layering of docs/explanation/architecture.md, read from the imports (AST): solvers never
imports pipeline or the distributed/storage/CLI stack; pipeline reaches solvers through
solvers/api.py only; neither package has an import cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_SOLVERS = (
    "mbstudy.pipeline", "pipeline", "dask", "distributed", "zarr", "xarray", "typer", "rich",
)  # fmt: skip
def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_solvers_never_import_pipeline_or_the_stack():
    bad = []
    for path in (REPO / "solvers").rglob("*.py"):
        for name in _imports(path):
            if name.split(".")[0] in FORBIDDEN_IN_SOLVERS or name.startswith("mbstudy.pipeline"):
                bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, bad


def test_pipeline_reaches_solvers_only_through_its_api_module():
    """Every import of solvers in pipeline/, lazy ones included, is of solvers/api.py (the
    one list of what the pipeline uses of the numerics), and each name it imports is one
    the module lists."""
    from mbstudy.solvers import api

    bad = []
    for path in (REPO / "pipeline").rglob("*.py"):
        for name in _runtime_imports(path, type_checking=True):
            if not name.startswith("mbstudy.solvers"):
                continue
            where = f"{path.relative_to(REPO)} imports {name}"
            if name == "mbstudy.solvers.api":
                continue
            if not name.startswith("mbstudy.solvers.api."):
                bad.append(where)
            elif name.rpartition(".")[2] not in api.__all__:
                bad.append(where + " (not a name of solvers/api.py)")
    assert not bad, bad


def test_the_registry_is_a_leaf_of_solvers():
    """The registry imports only the specs and the DAE-form vocabulary with its one
    compatibility decision (solvers/forms.py, which imports only the specs); a model name
    that may be a file is resolved by solvers/model_entry.py, which reads mechanism files."""
    graph = _package_graph("solvers")
    assert graph["mbstudy.solvers.registry"] <= {"mbstudy.solvers.spec", "mbstudy.solvers.forms"}
    assert graph["mbstudy.solvers.forms"] <= {"mbstudy.solvers.spec"}
    assert graph["mbstudy.solvers.spec"] == set()


def test_every_name_of_the_solvers_api_resolves():
    from mbstudy.solvers import api

    for name in api.__all__:
        assert getattr(api, name) is not None, name
    with pytest.raises(AttributeError):
        api.no_such_name  # noqa: B018


# --------------------------------------------------------------------------------------
# the layers of pipeline/

LAYERS = ("study", "plan", "store", "cluster", "run", "analysis", "cli")
SHARED = ("mbstudy.pipeline.private_api",)  # leaf modules every layer may use
MAX_LINES = 600


def _package_modules(top: str) -> dict[str, Path]:
    """Dotted name -> file of every module of ``top`` (pipeline or solvers; a package by
    its __init__)."""
    out = {}
    for path in (REPO / top).rglob("*.py"):
        parts = list(path.relative_to(REPO / top).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(["mbstudy", top, *parts])] = path
    return out


def _pipeline_modules() -> dict[str, Path]:
    return _package_modules("pipeline")


def _runtime_imports(path: Path, type_checking: bool = False) -> list[str]:
    """Absolute names imported anywhere in the file (functions included), except under
    ``if TYPE_CHECKING:`` (unless ``type_checking``); ``from P import m`` is named ``P.m``
    (m may be a module)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if type_checking:
            break
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    names = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def _package_graph(top: str) -> dict[str, set[str]]:
    """Module -> the modules of ``top`` it imports at run time (lazy imports included)."""
    modules = _package_modules(top)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imp in _runtime_imports(path):
            target = imp
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def _pipeline_graph() -> dict[str, set[str]]:
    return _package_graph("pipeline")


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in LAYERS else None


def test_lower_layers_never_import_upper_ones():
    """study < plan < store < cluster < run < analysis < cli, and analysis (which reads
    stores) never imports the run layer; every layer may use the shared leaf modules."""
    bad = []
    for name, targets in _pipeline_graph().items():
        mine = _layer(name)
        if mine is None:
            continue
        for target in targets:
            theirs = _layer(target)
            if target in SHARED:
                continue
            if target == "mbstudy.pipeline":
                bad.append(f"{name} imports the package facade mbstudy.pipeline")
            elif theirs is not None and LAYERS.index(theirs) > LAYERS.index(mine):
                bad.append(f"{name} ({mine}) imports {target} ({theirs})")
            elif mine == "analysis" and theirs == "run":
                bad.append(f"{name} (analysis) imports {target} (run)")
    assert not bad, bad


def test_shared_modules_import_no_pipeline_module():
    graph = _pipeline_graph()
    for name in SHARED:
        assert not graph[name], f"{name} imports {sorted(graph[name])}"


@pytest.mark.parametrize("top", ["pipeline", "solvers"])
def test_no_import_cycles_between_modules(top):
    """Lazy imports inside functions count: a cycle is a cycle, imported late or not (in
    solvers the registry, the mechanism-file generator and the composer once formed one:
    registry -> mechanisms -> codegen -> compose -> registry)."""
    graph = _package_graph(top)
    graph.pop("mbstudy.pipeline", None)  # the facade: lazy conveniences over the layers
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_every_layer_package_exists_and_holds_modules():
    modules = _pipeline_modules()
    for layer in LAYERS:
        inside = [m for m in modules if m.startswith(f"mbstudy.pipeline.{layer}.")]
        assert inside, f"pipeline/{layer}/ has no modules"


def test_no_module_of_pipeline_is_longer_than_600_lines():
    long = {
        str(path.relative_to(REPO)): n
        for path in (REPO / "pipeline").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long


def test_one_guarded_private_api_module_per_layer_importing_no_mbstudy_module():
    """pipeline/private_api.py and solvers/private_api.py are the only guarded modules
    (tests/test_private_api.py checks what they reach); each is a leaf: it imports no
    module of mbstudy, so every module of its layer may use it."""
    found = sorted(str(p.relative_to(REPO)) for root in ("pipeline", "solvers", "mbstudy")
                   for p in (REPO / root).rglob("*private_api*.py"))  # fmt: skip
    assert found == ["pipeline/private_api.py", "solvers/private_api.py"], found
    for rel in found:
        own = [n for n in _runtime_imports(REPO / rel)
               if n.split(".")[0] in ("mbstudy", "pipeline", "solvers")]  # fmt: skip
        assert not own, f"{rel} imports {own}"


def test_no_test_imports_a_benchmark_script():
    """Benchmarks are scripts over the package and the test kits; what a test shares with
    one lives in the package or in a tests/*_testkit.py, never the other way round."""
    bad = [f"{path.relative_to(REPO)} imports {name}"
           for path in (REPO / "tests").rglob("*.py") for name in _runtime_imports(path)
           if name.split(".")[0] == "benchmarks"]  # fmt: skip
    assert not bad, bad
