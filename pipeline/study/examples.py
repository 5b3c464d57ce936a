"""The example and seed studies that ship with mbstudy (``mbstudy examples``).

An installed copy carries them as package data in ``mbstudy/studies``; a source checkout
has them in the repository's ``studies/`` folder beside ``pipeline/``.
"""

from __future__ import annotations

from pathlib import Path


def studies_dir() -> Path:
    """The folder of the shipped study files (installed package or source checkout)."""
    import mbstudy

    installed = Path(mbstudy.__file__).resolve().parent / "studies"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "studies"
