"""README.md runs verbatim: every ``mbstudy ...`` command of its unlabelled code
blocks and every ``python`` block is executed, in README order, in a fresh folder holding
a copy of the repository's ``studies/`` (what a fresh clone has), with the installed
``mbstudy`` of this environment. A block preceded by ``<!-- readme-test: skip (why) -->``
is not run (the reason is part of the README); the install lines are what made this
environment. Docs that cannot drift: a README edit that breaks a command fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import mbstudy_command

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b")


def readme_blocks(text: str) -> list[tuple[str, str, bool]]:
    """(language, body, skipped) of every fenced block, in order."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang = m.group(1)
        prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        out.append((lang, "\n".join(lines[i + 1 : j]), bool(SKIP.search(prev))))
        i = j + 1
    return out


def readme_commands(text: str) -> list[tuple[str, object]]:
    """('cli', argv) for each mbstudy command line, ('python', source) for python blocks."""
    steps: list[tuple[str, object]] = []
    for lang, body, skipped in readme_blocks(text):
        if skipped:
            continue
        if lang == "python":
            steps.append(("python", body))
            continue
        if lang:
            continue  # toml, output examples
        joined = re.sub(r"\\\n\s*", " ", body)
        for line in joined.splitlines():
            if line.startswith("mbstudy "):  # other lines: shell of other tools, outputs
                steps.append(("cli", shlex.split(line, comments=True)))
    return steps


def test_the_readme_names_commands_the_test_runs():
    steps = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    cli = [" ".join(a) for kind, a in steps if kind == "cli"]
    assert any(c.startswith("mbstudy launch studies/smoke.toml") for c in cli)
    assert any(c.startswith("mbstudy report") for c in cli)
    assert any(c.startswith("mbstudy run --model fourbar") for c in cli)
    assert not any("reproduce" in c for c in cli)  # marked: launches every seed study


def test_every_readme_command_runs_verbatim(tmp_path):
    steps = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(ROOT / "studies", work / "studies")
    env = dict(os.environ, MPLBACKEND="Agg", COLUMNS="120")
    exe = mbstudy_command()
    for kind, step in steps:
        if kind == "cli":
            argv = [*exe, *step[1:]]
            res = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                                 timeout=900, check=False)  # fmt: skip
            what = " ".join(step)
        else:
            res = subprocess.run([sys.executable, "-c", step], cwd=work, env=env,
                                 capture_output=True, text=True, timeout=900,
                                 check=False)  # fmt: skip
            what = step.splitlines()[0] + " ..."
        assert res.returncode == 0, f"{what}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    assert (work / "report" / "index.html").is_file()
