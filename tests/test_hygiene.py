"""Rules of the test suite itself, read from its source (AST): no test module imports from
another test module (shared helpers live in conftest.py or a *_testkit.py), and no skip is
left over from scaffolding (a name missing from the registry fails, it is not skipped)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _modules() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def test_no_test_module_imports_from_another_test_module():
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("tests.") and name.split(".")[-1].startswith("test_"):
                    bad.append(f"{path.relative_to(TESTS)} imports {name}")
    assert not bad, bad


def test_no_scaffolding_skips():
    bad = []
    for path in _modules():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        for phrase in ("registry yet", "not in the registry\")", "not implemented yet"):
            if phrase in text:
                bad.append(f"{path.relative_to(TESTS)}: {phrase!r}")
    assert not bad, bad
