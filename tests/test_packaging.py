"""mbstudy installs as one import package: ``mbstudy`` with ``mbstudy.pipeline``,
``mbstudy.solvers`` and the shipped studies inside it, nothing named ``pipeline`` or
``solvers`` at the top level of site-packages, and the commands work from any folder.

The install test builds a real (non-editable) wheel of a copy of the checkout into a fresh
virtual environment with ``--no-deps``; the environment reaches the already installed
dependencies through a ``.pth`` line (a path added that way is not a site directory, so
the editable install's own ``.pth`` hook there is not run and the fresh copy is the one
imported)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"mbstudy.pipeline": "pipeline", "mbstudy.solvers": "solvers"}
SOURCES = ("pyproject.toml", "README.md", "mbstudy", "pipeline", "solvers", "studies")


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _shipped_studies(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_packages_list_covers_every_package_folder():
    cfg = _pyproject()["tool"]["setuptools"]
    listed = set(cfg["packages"])
    expected = {"mbstudy", "mbstudy.studies"}
    for name, folder in PACKAGE_DIRS.items():
        assert cfg["package-dir"][name] == folder
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            expected.add(".".join([name, *rel]))
    assert listed == expected, (
        f"missing: {sorted(expected - listed)}, not a package: {sorted(listed - expected)}"
    )


def test_plain_pytest_and_python_m_pytest_both_collect(tmp_path):
    pytest_exe = Path(sys.executable).parent / "pytest"
    for cmd in ([str(pytest_exe)], [sys.executable, "-m", "pytest"]):
        out = subprocess.run(
            [*cmd, "--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_layering.py"],
            cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr
        assert "test_lower_layers_never_import_upper_ones" in out.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with a non-editable install of mbstudy (its python)."""
    base = tmp_path_factory.mktemp("install")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:  # a copy: the build writes build/ and *.egg-info beside the sources
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)  # fmt: skip
    python = venv / "bin" / "python"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(src)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True,
    ).strip())  # fmt: skip
    (site / "_mbstudy_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


@pytest.mark.slow
def test_a_non_editable_install_has_one_top_level_package(installed, tmp_path):
    site = Path(_run(installed, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                     cwd=tmp_path).stdout.strip())  # fmt: skip
    top = {p.name for p in site.iterdir()}
    assert "mbstudy" in top
    assert not top & {"pipeline", "solvers", "studies"}, sorted(top)
    out = _run(installed, "-c", "import mbstudy.pipeline, mbstudy.solvers; "
               "print(mbstudy.pipeline.__file__); print(mbstudy.solvers.__file__)", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.split():
        assert Path(line).is_relative_to(site), line
    assert _shipped_studies(site / "mbstudy" / "studies") == _shipped_studies(REPO / "studies")


@pytest.mark.slow
def test_the_commands_work_from_a_folder_outside_the_checkout(installed, tmp_path):
    from importlib.metadata import version

    exe = installed.parent / "mbstudy"
    out = _run(exe, "--version", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"mbstudy {version('mbstudy')}"
    out = _run(exe, "list", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "fourbar" in out.stdout and "baumgarte" in out.stdout
    out = _run(exe, "examples", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "smoke.toml" in out.stdout
    out = _run(exe, "examples", "--copy", "mine", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "mine" / "networks" / "spring_damper.net").is_file()
    out = _run(exe, "plan", "mine/spring_damper.toml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "total:" in out.stdout


@pytest.mark.slow
def test_provenance_records_mbstudy_s_version_and_revision_only_from_its_checkout(
    installed, tmp_path
):
    from importlib.metadata import version

    from mbstudy.pipeline.store import zarr_store

    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert zarr_store._git_revision() == head  # this checkout
    assert zarr_store._versions()["mbstudy"] == version("mbstudy")
    # an installed copy whose virtual environment sits inside another git repository
    base = installed.parent.parent.parent
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    out = _run(installed, "-c", "from mbstudy.pipeline.store import zarr_store as z; "
               "print(repr(z._git_revision())); print(z._versions()['mbstudy'])", cwd=base)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["''", version("mbstudy")]


# -- a reproducible install ------------------------------------------------------------------
def _requirements(extra: str | None = None) -> list:
    from packaging.requirements import Requirement

    project = _pyproject()["project"]
    deps = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [Requirement(r) for r in deps]


def _pins() -> dict[str, str]:
    """constraints.txt as {normalized name: version}."""
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, ver = line.partition("==")
            assert sep, f"constraints.txt: {line!r} is not name==version"
            pins[canonicalize_name(name)] = ver
    return pins


def test_the_constraints_pin_every_requirement_inside_its_range():
    from packaging.utils import canonicalize_name

    pins = _pins()
    assert "mbstudy" not in pins
    for req in _requirements() + _requirements("test") + _requirements("s3"):
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt pins no {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt: {req.name}=={pins[name]} is outside pyproject's {req}"
        )


def test_numba_is_bounded_above_for_the_internals_the_kernels_use():
    (numba,) = (r for r in _requirements() if r.name == "numba")
    assert any(s.operator == "<" for s in numba.specifier), str(numba)


def _imported_top_names(*roots: str) -> dict[str, str]:
    """{top-level name: first file importing it} of absolute imports under ``roots``."""
    import ast

    out: dict[str, str] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    out.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    return out


@pytest.mark.parametrize(("roots", "extras"), [
    (("mbstudy", "pipeline", "solvers", "studies"), ()),
    (("tests",), ("test", "s3")),
])  # fmt: skip
def test_every_imported_third_party_package_is_declared(roots, extras):
    """Each package the code (or the tests) imports is a declared requirement, not one
    that happens to come with another (the import name mapped to its distribution)."""
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    declared = {canonicalize_name(r.name) for r in _requirements()}
    for extra in extras:
        declared |= {canonicalize_name(r.name) for r in _requirements(extra)}
    local = {"mbstudy", "pipeline", "solvers", "studies", "tests", "benchmarks"}
    local |= {p.stem for p in (REPO / "tests").rglob("*.py")}  # the test kits, by path
    # the example plugins' packages (examples/*/PACKAGE), which the tests put on the path
    local |= {p.parent.name for p in (REPO / "examples").glob("*/*/__init__.py")}
    dists = packages_distributions()
    missing = []
    for name, where in _imported_top_names(*roots).items():
        if name in sys.stdlib_module_names or name in local:
            continue
        owners = {canonicalize_name(d) for d in dists.get(name, [name])}
        if not owners & declared:
            missing.append(f"{name} ({where}; distribution {sorted(owners)})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def _readme_install_commands() -> list[str]:
    """README's one-line commands that install the test extra."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines()
            if line.startswith("python3 -m venv") and "'.[test]'" in line]  # fmt: skip


@pytest.mark.parametrize(("script", "pinned"), [("run", True), ("run-latest", False)])
def test_ci_runs_exactly_the_readme_test_commands(script, pinned):
    """.ci/run is the README's pinned test command, .ci/run-latest its newest-versions one;
    only the pinned one reads constraints.txt."""
    lines = (REPO / ".ci" / script).read_text().strip().splitlines()
    (readme,) = (c for c in _readme_install_commands() if ("-c constraints.txt" in c) == pinned)
    assert lines[-1] == readme
    assert lines[0] == "#!/usr/bin/env bash" and os.access(REPO / ".ci" / script, os.X_OK)


@pytest.mark.parametrize("module", ["mbstudy.pipeline.cli.app", "mbstudy.solvers.registry"])
@pytest.mark.parametrize("category", [UserWarning, DeprecationWarning, FutureWarning])
def test_a_warning_raised_in_mbstudy_s_own_modules_is_an_error(module, category):
    """pyproject's filterwarnings (applied to this test as to every other) turns a warning
    located in a module of mbstudy into an exception; the module name is the real one."""
    import importlib
    import warnings

    mod = importlib.import_module(module)
    assert mod.__name__ == module
    with pytest.raises(category, match="raised here"):
        warnings.warn_explicit("raised here", category, mod.__file__, 1, module=mod.__name__)
