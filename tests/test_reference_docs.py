"""The generated pages of docs/reference/ (``python -m mbstudy.pipeline.cli.docgen``) are
current, and they cover what they exist for: every command and option of the CLI (read
from the Typer app here, independently of the generator's walk), every key of the study
file's key tables, every public name of ``mbstudy``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from mbstudy.pipeline.cli import docgen

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return docgen.render_all()


def test_the_committed_pages_are_current(pages) -> None:
    stale = [name for name, text in pages.items()
             if not (REFERENCE / name).is_file()
             or (REFERENCE / name).read_text(encoding="utf-8") != text]  # fmt: skip
    assert not stale, f"run python -m mbstudy.pipeline.cli.docgen: stale {stale}"


def test_check_mode_fails_on_a_stale_page_and_writes_nothing(tmp_path, pages) -> None:
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert docgen.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "cli.md").write_text("old\n", encoding="utf-8")
    assert docgen.main(["--check", "--out", str(tmp_path)]) == 1
    assert (tmp_path / "cli.md").read_text(encoding="utf-8") == "old\n"
    assert docgen.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "cli.md").read_text(encoding="utf-8") == pages["cli.md"]


def test_every_command_and_option_is_on_the_cli_page(pages) -> None:
    from mbstudy.pipeline.cli.app import app

    text = pages["cli.md"]
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="mbstudy")
    commands = root.list_commands(ctx)
    assert len(commands) >= 10  # the check sees the app
    missing = []
    for name in commands:
        cmd = root.get_command(ctx, name)
        body = re.search(rf"^## `mbstudy {re.escape(name)}`$(.*?)(?=^## |\Z)", text,
                         flags=re.M | re.S)
        if body is None:
            missing.append(f"command {name}")
            continue
        for prm in cmd.params:
            opts = prm.opts if prm.param_type_name == "option" else [prm.name.upper()]
            missing += [f"{name} {o}" for o in opts if f"`{o}`" not in body.group(1)]
            if prm.help and " ".join(prm.help.split()) not in body.group(1):
                missing.append(f"{name} {prm.name}: help text")
    assert not missing, missing


def test_every_study_key_is_on_the_study_file_page(pages) -> None:
    from mbstudy.pipeline.study import search_block, spec
    from mbstudy.pipeline.study.ranges import RANGE_KEYS

    text = pages["study-file.md"]
    tables = [spec.SECTIONS, spec.STUDY_KEYS, spec.RUN_KEYS, spec.OUTPUT_KEYS,
              spec.CLUSTER_KEYS, spec.CLUSTER_KINDS, spec.SERIES, RANGE_KEYS,
              search_block.SEARCH_KEYS, search_block.GOALS]  # fmt: skip
    missing = [k for table in tables for k in table if f"`{k}`" not in text
               and f"`[{k}]`" not in text and f"`[[{k}]]`" not in text]  # fmt: skip
    assert not missing, missing


def test_every_public_name_of_mbstudy_is_on_the_python_api_page(pages) -> None:
    import mbstudy

    text = pages["python-api.md"]
    missing = [n for n in mbstudy.__all__ if not n.startswith("_")
               and not re.search(rf"^## {re.escape(n)}$", text, flags=re.M)]  # fmt: skip
    assert not missing, missing


def test_the_store_page_names_every_metric_and_status(pages) -> None:
    from mbstudy.solvers.metrics import ACCURACY_METRICS, COUNTER_METRICS, TIME_METRICS
    from mbstudy.solvers.status import STATUS_NAMES

    text = pages["store.md"]
    names = [*ACCURACY_METRICS, *COUNTER_METRICS, *TIME_METRICS, *STATUS_NAMES.values()]
    assert not [n for n in names if f"`{n}`" not in text]
