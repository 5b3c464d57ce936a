"""docs/explanation/architecture.md is the map of the code: every module of ``pipeline/`` and
``solvers/`` (every ``.py`` file under git) is named on the page, so a module added
without a line there fails here.

A module counts as named when the page has its path (``pipeline/run/launch.py``), its
dotted name (``pipeline.run.launch``, with or without ``mbstudy.``), or its file name
in a table row whose first cell is its folder (the layer tables: ``| `pipeline/run/` |
`launch.py`, ...``). A package's ``__init__.py`` counts as named with its folder."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "explanation" / "architecture.md"
PACKAGES = ("pipeline", "solvers")


def _modules() -> list[str]:
    """Paths (relative to the repository, POSIX) of the tracked .py files of the packages;
    a walk of the tree outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *PACKAGES], cwd=ROOT,
                             capture_output=True, check=True, timeout=60).stdout.decode()
        names = [n for n in out.split("\0") if n.endswith(".py") and (ROOT / n).is_file()]
        if names:
            return sorted(names)
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(p.relative_to(ROOT).as_posix() for pkg in PACKAGES
                  for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def _table_rows(text: str) -> dict[str, str]:
    """Folder of a table row's first cell (``pipeline/run/``) -> the rest of the row."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*`([\w/]+/)`\s*\|(.*)", line)
        if m:
            rows[m.group(1)] = rows.get(m.group(1), "") + m.group(2)
    return rows


def named(path: str, text: str, rows: dict[str, str]) -> bool:
    """True if docs/explanation/architecture.md's ``text`` names the module at ``path``."""
    folder, _, name = path.rpartition("/")
    if name == "__init__.py":
        return f"{folder}/" in text or folder.replace("/", ".") in text
    dotted = path[: -len(".py")].replace("/", ".")
    if path in text or re.search(rf"\b{re.escape(dotted)}\b", text):
        return True
    return f"`{name}`" in rows.get(f"{folder}/", "")


def test_the_rule_sees_paths_dotted_names_and_table_rows():
    text = ("`pipeline/a/x.py` and mbstudy.pipeline.a.y\n"
            "| `pipeline/b/` | `z.py`, `w.py` | job |\n")  # fmt: skip
    rows = _table_rows(text)
    for path in ("pipeline/a/x.py", "pipeline/a/y.py", "pipeline/b/z.py", "pipeline/b/w.py",
                 "pipeline/b/__init__.py"):  # fmt: skip
        assert named(path, text, rows), path
    for path in ("pipeline/a/z.py", "pipeline/c/x.py", "pipeline/a/xy.py",
                 "pipeline/c/__init__.py"):  # fmt: skip
        assert not named(path, text, rows), path


def test_every_module_of_pipeline_and_solvers_is_on_the_architecture_page():
    text = PAGE.read_text(encoding="utf-8")
    rows = _table_rows(text)
    modules = _modules()
    assert len(modules) > 50  # the check sees the packages
    missing = [m for m in modules if not named(m, text, rows)]
    assert not missing, f"docs/explanation/architecture.md does not mention: {', '.join(missing)}"
