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
    return [sys.executable, "-m", "pipeline.cli"]
