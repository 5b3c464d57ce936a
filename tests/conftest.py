"""Shared fixtures. numba's cache goes outside the checkout unless the caller chose one, so
later runs on the same machine reuse compiled kernels (worker processes inherit it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "mbstudy" / "numba"))

import pytest

REPO = Path(__file__).resolve().parent.parent
STUDIES = REPO / "studies"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def mbstudy_command() -> list[str]:
    """The real entry point: the installed console script, else ``python -m pipeline.cli``."""
    exe = Path(sys.executable).parent / "mbstudy"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "mbstudy.pipeline.cli.app"]


def terminal_job(command: list[str], **kwargs):
    """Start ``command`` as a shell starts a job in a terminal: in its own process group,
    with SIGINT at its default disposition (an interactive shell resets it for a foreground
    job, whatever the process that runs the tests ignores: a runner started in the
    background inherits SIGINT ignored, and so would the launch), stdout and stderr piped
    (text). :func:`ctrl_c` then signals the group, as the terminal does when Ctrl-C is
    pressed (the launcher, its forkserver and its workers all get it)."""
    import signal
    import subprocess

    def default_sigint() -> None:  # in the child, before exec
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen(command, start_new_session=True, text=True,
                            preexec_fn=default_sigint, **kwargs)  # fmt: skip


def ctrl_c(proc, times: int = 1, gap_s: float = 0.2) -> None:
    """Ctrl-C pressed ``times`` times, ``gap_s`` apart, on the terminal job ``proc``:
    SIGINT to its whole process group (a group already gone is not an error)."""
    import signal
    import time

    for i in range(times):
        if i:
            time.sleep(gap_s)
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            return


def load_fakes():
    """The fake registry of tests/property/fakes.py, loaded once per process by file path
    (tests/property is not a package); its ``install(monkeypatch)`` swaps it in."""
    import importlib.util

    name = "mbstudy_test_fakes"
    if name not in sys.modules:
        path = Path(__file__).resolve().parent / "property" / "fakes.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def fourbar_study_head(name: str, t_end: float, samples: int, extra: str = "") -> str:
    """The ``[study]`` and ``[reference]`` tables of the small four-bar test studies
    (dopri5 + projection reference at rtol 1e-10); ``extra`` goes after ``samples``."""
    return f"""
[study]
name = "{name}"
model = "fourbar"
t_end = {t_end}
samples = {samples}
{extra}
[reference]
integrator = "dopri5"
formulation = "projection"
rtol = 1e-10
atol = 1e-12
"""


def fourbar_labelled_study(name: str, series: str) -> str:
    """A small four-bar study whose store has every kind of label: two blocks (baumgarte
    with a swept omega_n, none), 1 s and 11 samples; ``series`` is the ``[output]``
    list's body, e.g. ``'"phi_norm", "lam", "q"'`` (lam and q: labelled vector series)."""
    return fourbar_study_head(name, 1.0, 11) + f"""
[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = [0.01, 0.02]
omega_n = [5.0, 20.0, 30.0]
xi = 1.0

[[runs]]
name = "none"
formulation = "none"
integrator = "rk4"
h = [0.01, 0.02]

[output]
series = [{series}]
"""
