"""The documentation stands alone: nothing in the repository cites files outside it, and
every link between the docs resolves.

Three checks over the tracked files (``git ls-files``; a walk of the tree outside a git
checkout):

- no file cites the team's working notes that are not part of the repository (the names
  are assembled below so that this file does not cite them itself), a path of the machine
  the sessions ran on, the source papers' files, or an entry of the project's tracker
  (which readers of the repository cannot see);
- every relative Markdown link of every tracked ``.md`` file points to an existing file
  inside the repository, and its ``#anchor``, if any, to a heading of the target;
- every ``docs/<name>.md#<anchor>`` citation in code, study files and docs names a heading
  that exists (the code cites ``docs/explanation/methods.md#qr``,
  ``docs/explanation/models.md#andrews``, ...).
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "build", "dist"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".net", ".txt", ".cfg", ".ini", ".yml", ".yaml", ""}

# The team's working notes (kept outside the repository): cited as NAME.md they would be
# dangling references for every reader of the repository.
NOTE_NAMES = ("DES" + "IGN", "MET" + "HODS", "PROB" + "LEMS", "ST" + "YLE")
FORBIDDEN = [
    (re.compile(r"\b(" + "|".join(NOTE_NAMES) + r")\.md\b"), "cites a note outside the repository"),
    (re.compile(r"\.\./" + "shared"), "cites a path outside the repository"),
    (re.compile("/wo" + r"rk/(shared|main|wt|briefs)\b"), "cites a path of the build machine"),
    (re.compile("see" + r"ds/00[1-4]"), "cites a source paper's file outside the repository"),
    # the project's tracker is not public: its entry numbers mean nothing to a reader
    (re.compile(r"\b" + "iss" + r"ues? ?#?\d+", re.IGNORECASE), "refers to a tracker entry"),
]
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|\!\[[^\]]*\]\(([^)\s]+)\)")
# a page of docs/ or of a folder of it (guide, reference, explanation), then #anchor
DOC_CITATION = re.compile(r"\bdocs/((?:[\w-]+/)*[\w.-]+\.md)#([\w-]+)")


def tracked_files() -> list[Path]:
    """Files under version control (or, outside a git checkout, the files of the tree)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode()
        names = [n for n in out.split("\0") if n]
        if names:
            return [ROOT / n for n in names if (ROOT / n).is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    return [
        p for p in ROOT.rglob("*")
        if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)
    ]  # fmt: skip


@cache
def text_files() -> dict[Path, str]:
    out = {}
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES:
            continue
        try:
            out[path] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"`|\*|_(?=\W)|(?<=\W)_", "", heading.strip()).lower()
    kept = [
        ch for ch in text
        if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N")
    ]  # fmt: skip
    return "".join(kept).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Anchors of every heading of a Markdown file (duplicates get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_code or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def markdown_links(text: str) -> list[str]:
    """Link targets of a Markdown text outside fenced code blocks and inline code."""
    targets = []
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            targets.append(m.group(1) or m.group(2))
    return targets


def test_the_checks_see_the_repository() -> None:
    files = text_files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    assert {"README.md", "docs/explanation/methods.md", "docs/explanation/models.md",
            "docs/explanation/architecture.md"} <= names
    assert len(names) > 50


def test_slug_matches_github_anchors() -> None:
    assert slug("The seed's inconsistencies and what we implement") == (
        "the-seeds-inconsistencies-and-what-we-implement"
    )
    assert slug("### `qr`".lstrip("# ")) == "qr"
    assert slug("4. Store") == "4-store"
    assert slug("Seed 004: DRCS vs Baumgarte vs projection") == (
        "seed-004-drcs-vs-baumgarte-vs-projection"
    )


@pytest.mark.parametrize(
    "text",
    [
        "see " + NOTE_NAMES[1] + ".md B.2",
        "(" + NOTE_NAMES[2] + ".md 2.1)",
        "in `../" + "shared/x`",
        "/wo" + "rk/shared/seeds/x",
        "the file see" + "ds/004_drcs.txt",
        "(" + "iss" + "ue 18)",
        "Iss" + "ue #17's warm launch",
        "see iss" + "ues 8 and 9",
    ],
)
def test_forbidden_patterns_catch_what_they_are_for(text: str) -> None:
    assert any(rx.search(text) for rx, _ in FORBIDDEN)


def test_citation_pattern_sees_the_docs_folders() -> None:
    d = "do" + "cs/"  # assembled: this file must not cite pages that do not exist
    text = f"{d}performance.md#x, {d}explanation/models.md#andrews and {d}guide/x-y.md#a-b"
    assert DOC_CITATION.findall(text) == [
        ("performance.md", "x"), ("explanation/models.md", "andrews"), ("guide/x-y.md", "a-b")
    ]


def test_no_file_cites_anything_outside_the_repository() -> None:
    problems = []
    for path, text in text_files().items():
        for lineno, line in enumerate(text.splitlines(), 1):
            for rx, why in FORBIDDEN:
                m = rx.search(line)
                if m:
                    rel = path.relative_to(ROOT).as_posix()
                    problems.append(f"{rel}:{lineno}: {why}: {m.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_every_markdown_link_resolves() -> None:
    problems = []
    for path, text in text_files().items():
        if path.suffix != ".md":
            continue
        rel = path.relative_to(ROOT).as_posix()
        for target in markdown_links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.is_relative_to(ROOT):
                problems.append(f"{rel}: link leaves the repository: {target}")
            elif not dest.exists():
                problems.append(f"{rel}: no such file: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{rel}: no heading #{anchor} in {file_part or rel}")
    assert not problems, "\n".join(problems)


def test_every_docs_anchor_citation_resolves() -> None:
    problems = []
    for path, text in text_files().items():
        rel = path.relative_to(ROOT).as_posix()
        for m in DOC_CITATION.finditer(text):
            name, anchor = m.groups()
            dest = ROOT / "docs" / name
            if not dest.exists():
                problems.append(f"{rel}: cites missing docs/{name}")
            elif anchor not in anchors(dest):
                problems.append(f"{rel}: cites docs/{name}#{anchor}: no such heading")
    assert not problems, "\n".join(problems)


def test_registry_texts_cite_only_the_repository() -> None:
    """What ``mbstudy list`` prints (specs' summaries, sources and parameter meanings)."""
    from mbstudy.solvers import registry

    texts = []
    for kind in ("model", "formulation", "integrator"):
        for name in registry.entries(kind):
            spec = registry.get(kind, name).spec
            texts += [spec.summary, spec.source] + [p.meaning for p in spec.params]
    bad = [t for t in texts for rx, _ in FORBIDDEN if rx.search(t)]
    assert not bad, bad
    assert any("docs/explanation/models.md#" in t for t in texts)


# --- the docs' tables against the registry ------------------------------------------------

NAMES_CELL = re.compile(r"^\s*`[\w.]+`(\s*,\s*`[\w.]+`)*\s*$")


def section(text: str, heading: str, level: int) -> str | None:
    """The text under the heading ``#*level heading`` up to the next heading of that level
    or higher (None if there is no such heading)."""
    m = re.search(rf"^{'#' * level} {re.escape(heading)}\s*$", text, flags=re.M)
    if not m:
        return None
    nxt = re.compile(rf"^#{{1,{level}}} ", flags=re.M).search(text, m.end())
    return text[m.end() : nxt.start() if nxt else len(text)]


def documented_values(text: str) -> dict[str, str]:
    """``name -> value cell`` from the Markdown tables of ``text``: a cell holding only
    backticked names is followed by the cell of their value(s)."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        i = 0
        while i < len(cells) - 1:
            if NAMES_CELL.match(cells[i]):
                names = re.findall(r"`([\w.]+)`", cells[i])
                values = [v.strip() for v in cells[i + 1].split(",")]
                for k, name in enumerate(names):
                    out[name] = values[k] if len(values) == len(names) else cells[i + 1]
                i += 2
            else:
                i += 1
    return out


def parse_value(cell: str) -> float | str:
    """The leading value of a table cell: a number (``1e-3 s``, ``−0.5``, ``π/2``, ``2π``),
    ``true``/``false``, or a backticked string."""
    token = cell.replace("−", "-").replace("`", "").split()[0]
    m = re.fullmatch(r"(-?)(\d*\.?\d*)π(?:/(\d+))?", token)
    if m:
        sign = -1.0 if m.group(1) else 1.0
        return sign * float(m.group(2) or 1.0) * 3.141592653589793 / float(m.group(3) or 1)
    try:
        return float(token)
    except ValueError:
        return token


def check_defaults(where: str, params, text: str) -> list[str]:
    documented = documented_values(text)
    problems = []
    for prm in params:
        if prm.default is None:
            continue
        if prm.name not in documented:
            problems.append(f"{where}: parameter {prm.name} is not in the table")
            continue
        got = parse_value(documented[prm.name])
        want = prm.default
        if isinstance(want, bool):
            ok = got == str(want).lower()
        elif isinstance(want, str):
            ok = got == want
        else:
            ok = isinstance(got, float) and abs(got - want) <= 1e-12 * max(1.0, abs(want))
        if not ok:
            problems.append(f"{where}: {prm.name} = {documented[prm.name]!r}, code: {want!r}")
    return problems


def test_parse_value_reads_the_table_notations() -> None:
    assert parse_value("π/2 rad") == pytest.approx(3.141592653589793 / 2)
    assert parse_value("2π rad/s") == pytest.approx(2 * 3.141592653589793)
    assert parse_value("−0.06934 m") == -0.06934
    assert parse_value("1e-3 s") == 1e-3
    assert parse_value("`half_impulse`") == "half_impulse"
    rows = "| `m2`, `m3` | 0.10, 0.40 kg | masses |\n| `a` | 1 | `b` | 2 m |"
    assert documented_values(rows) == {"m2": "0.10", "m3": "0.40 kg", "a": "1", "b": "2 m"}


def test_models_md_documents_every_model_with_the_code_defaults() -> None:
    from mbstudy.solvers import model_entry, registry

    text = (ROOT / "docs" / "explanation" / "models.md").read_text(encoding="utf-8")
    problems = []
    for name in registry.entries("model"):
        body = section(text, name, 2)
        if body is None:
            problems.append(f"docs/explanation/models.md: no section '## {name}'")
            continue
        params = model_entry.model(name).params
        problems += check_defaults(f"docs/explanation/models.md#{name}", params, body)
    assert not problems, "\n".join(problems)


def test_methods_md_documents_every_method_with_the_code_defaults() -> None:
    """Every formulation and integrator has a section in docs/explanation/methods.md (with a table
    of its parameters and their defaults) or is named in a heading of a page it links to
    (docs/explanation/methods-implicit.md for the implicit DAE integrators)."""
    from mbstudy.solvers import registry

    text = (ROOT / "docs" / "explanation" / "methods.md").read_text(encoding="utf-8")
    other = ROOT / "docs" / "explanation" / "methods-implicit.md"
    other_headings = ""
    if other.exists():
        other_headings = "\n".join(
            line for line in other.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")
        )  # fmt: skip
    problems = []
    for kind in ("formulation", "integrator"):
        for name in registry.entries(kind):
            body = section(text, name, 3)
            if body is None:
                if not re.search(rf"\b{re.escape(name)}\b", other_headings):
                    problems.append(f"{kind} {name}: no section in docs/explanation/methods.md")
                continue
            params = registry.get(kind, name).params
            problems += check_defaults(f"docs/explanation/methods.md#{name}", params, body)
    assert not problems, "\n".join(problems)


def test_methods_md_defines_every_metric() -> None:
    from mbstudy.solvers.metrics import ACCURACY_METRICS, COUNTER_METRICS, TIME_METRICS

    page = ROOT / "docs" / "explanation" / "methods.md"
    body = section(page.read_text(encoding="utf-8"), "Metrics", 2)
    assert body is not None
    documented = set(documented_values(body))
    missing = set(ACCURACY_METRICS) | set(COUNTER_METRICS) | set(TIME_METRICS)
    assert not missing - documented, sorted(missing - documented)


def test_models_md_summary_table_agrees_with_the_specs() -> None:
    """The overview table of docs/explanation/models.md: sizes (where they are numbers), the flags
    and the default interval of every model, against its spec and its ``sizes(p)``."""
    from mbstudy.solvers import model_entry, registry
    from mbstudy.solvers.spec import pack_params

    text = (ROOT / "docs" / "explanation" / "models.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| \[(\w+)\]\(#\1\) \|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    problems = []
    for name in registry.entries("model"):
        if name not in rows:
            problems.append(f"{name}: not in the overview table")
            continue
        n, m, _dof, cons, driven, const_m, t_end, _ref = rows[name]
        entry = model_entry.model(name)
        spec = entry.spec
        flags = {"conservative": (cons, spec.conservative), "driven": (driven, spec.driven),
                 "constant M": (const_m, spec.constant_mass)}  # fmt: skip
        for what, (cell, value) in flags.items():
            if cell != "—" and cell.split()[0] != ("yes" if value else "no"):
                problems.append(f"{name}: {what} = {cell!r}, spec: {value}")
        if float(t_end) != spec.t_end:
            problems.append(f"{name}: t_end = {t_end}, spec: {spec.t_end}")
        if n.isdigit():
            sizes = getattr(entry.module.sizes, "py_func", entry.module.sizes)
            got = tuple(int(x) for x in sizes(pack_params(entry.params, {})))
            if got != (int(n), int(m.split()[0])):
                problems.append(f"{name}: n, m = {n}, {m}; sizes(p) = {got}")
    assert not problems, "\n".join(problems)


IMAGE_SUFFIXES = {".png", ".svg", ".jpg", ".jpeg", ".gif"}


def test_every_image_of_the_docs_is_committed_and_every_committed_figure_is_shown() -> None:
    """Every ``![...](path)`` of README.md and docs/*.md names a file under version control
    (one that exists only on the machine that wrote it fails), and every image under
    a ``figures/`` folder of docs/ is shown by some Markdown file (no stale figures)."""
    tracked = {p.resolve() for p in tracked_files()}
    shown: set[Path] = set()
    problems = []
    for path, text in text_files().items():
        if path.suffix != ".md":
            continue
        rel = path.relative_to(ROOT).as_posix()
        for target in markdown_links(text):
            dest = (path.parent / target.partition("#")[0]).resolve()
            if dest.suffix.lower() not in IMAGE_SUFFIXES or re.match(r"[a-z]+:", target):
                continue
            shown.add(dest)
            if dest not in tracked:
                problems.append(f"{rel}: image not in the repository: {target}")
    docs = ROOT / "docs"
    for p in sorted(tracked):
        in_figures = p.is_relative_to(docs) and "figures" in p.relative_to(docs).parts
        if in_figures and p.suffix.lower() in IMAGE_SUFFIXES and p not in shown:
            problems.append(f"{p.relative_to(ROOT).as_posix()}: shown by no Markdown file")
    assert shown, "no image found: the check sees nothing"
    assert not problems, "\n".join(problems)
