"""The layering of docs/architecture.md, read from the imports (AST): solvers never imports pipeline
or the distributed/storage/CLI stack; pipeline never reaches into solver internals."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_SOLVERS = (
    "mbstudy.pipeline", "pipeline", "dask", "distributed", "zarr", "xarray", "typer", "rich",
)  # fmt: skip
SOLVER_INTERNALS = tuple(
    f"mbstudy.solvers.{name}"
    for name in ("models", "formulations", "integrators", "compose", "linalg", "elements")
)


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


def test_pipeline_reaches_solvers_only_through_public_entry_points():
    bad = []
    for path in (REPO / "pipeline").rglob("*.py"):
        for name in _imports(path):
            if name.startswith(SOLVER_INTERNALS):
                bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, bad
