"""Hostile ``[cluster]`` strings: every string of the section reaches a SLURM or
PBS job script, so a line break or control character in any of them could put a shell
command on a line of its own. Each injection attempt, through every field, for both batch
systems, is refused by ``mbstudy plan --cluster KIND`` with one line naming the key and exit
status 2; accepted values put exactly one directive line per item in the script."""

from __future__ import annotations

import itertools

import pytest
from mbstudy.pipeline.cli.app import app
from typer.testing import CliRunner

from tests.conftest import STUDIES

FIELDS = ("queue", "account", "job_extra", "memory", "walltime", "worker_lifetime")
GOOD = {"queue": "short", "account": "proj-42", "job_extra": "--exclusive",
        "memory": "4GB", "walltime": "01:00:00", "worker_lifetime": "55m"}
PAYLOADS = {
    "newline": "{v}\ntouch pwned",
    "trailing-newline": "{v}\n",
    "carriage-return": "{v}\rtouch pwned",
    "nul": "{v}\x00touch pwned",
    "escape": "{v}\x1b[2J",
    "unicode-line-separator": "{v}\u2028touch pwned",
    "next-line": "{v}\x85touch pwned",
    "tab-and-directive": "{v}\t#SBATCH --uid=0",
}
NAME_ONLY = {  # shell syntax is harmless in a directive comment, but not a queue/account name
    "command-substitution": "$(touch pwned)",
    "semicolon": "{v}; touch pwned",
}
CASES = [(k, f, p, t) for k, f, (p, t) in itertools.product(
    ("slurm", "pbs"), FIELDS, PAYLOADS.items())]
CASES += [(k, f, p, t) for k, f, (p, t) in itertools.product(
    ("slurm", "pbs"), ("queue", "account"), NAME_ONLY.items())]
CASES += [(k, "job_extra", p, t) for k, (p, t) in itertools.product(
    ("slurm", "pbs"), {"not-an-option": "touch pwned", "empty": "",
                       "comment": "# --exclusive"}.items())]


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (every control character escaped)."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0x80 <= ord(ch) < 0xA0 or ch == "\u2028":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def cluster_study(tmp_path, kind: str, field: str, value: str):
    lines = [f'kind = "{kind}"']
    for f, good in GOOD.items():
        v = value if f == field else good
        lines.append(f"{f} = [{toml_string(v)}]" if f == "job_extra" else f"{f} = {toml_string(v)}")
    path = tmp_path / "study.toml"
    path.write_text((STUDIES / "smoke.toml").read_text() + "\n[cluster]\n" + "\n".join(lines))
    return path


@pytest.mark.parametrize(("kind", "field", "payload", "template"), CASES,
                         ids=[f"{k}-{f}-{p}" for k, f, p, _ in CASES])
def test_an_injection_attempt_is_refused_naming_the_key(tmp_path, kind, field, payload,
                                                        template):
    value = template.format(v=GOOD[field])
    study = cluster_study(tmp_path, kind, field, value)
    res = CliRunner().invoke(app, ["plan", str(study), "--cluster", kind])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert f"cluster.{field}" in lines[0], lines[0]
    assert "job script" not in res.output  # nothing rendered


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_accepted_values_give_one_directive_line_each(tmp_path, kind):
    study = cluster_study(tmp_path, kind, "queue", "gpu.long@server1")
    res = CliRunner().invoke(app, ["plan", str(study), "--cluster", kind])
    assert res.exit_code == 0, res.output
    prefix = "#SBATCH" if kind == "slurm" else "#PBS"
    directives = [ln for ln in res.output.splitlines() if ln.startswith(prefix)]
    assert any("gpu.long@server1" in ln for ln in directives)
    assert any(ln.strip() == f"{prefix} --exclusive" for ln in directives)
    assert "pwned" not in res.output
