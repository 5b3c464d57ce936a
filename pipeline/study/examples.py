"""The example and seed studies that ship with mbstudy (``mbstudy examples``).

An installed copy carries them as package data in ``mbstudy/studies``; a source checkout
has them in the repository's ``studies/`` folder beside ``pipeline/``. A study may refer
to files beside it (``networks/*.net``, ``mechanisms/*.toml``), so they are copied along.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from mbstudy.pipeline.study.spec import StudyError

__all__ = ["SUBFOLDERS", "copy_studies", "list_studies", "studies_dir"]

SUBFOLDERS = ("networks", "mechanisms")  # files the studies refer to, copied with them


def studies_dir() -> Path:
    """The folder of the shipped study files (installed package or source checkout)."""
    import mbstudy

    installed = Path(mbstudy.__file__).resolve().parent / "studies"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parents[2] / "studies"


def list_studies() -> list[tuple[str, str]]:
    """``(file name, description)`` of every shipped study, sorted by name: the study's
    ``description``, else the first line of the file's leading comment."""
    out = []
    for path in sorted(studies_dir().glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        try:
            study = tomllib.loads(text).get("study", {})
        except tomllib.TOMLDecodeError:  # pragma: no cover - shipped files parse
            study = {}
        about = study.get("description", "") if isinstance(study, dict) else ""
        if not about and text.startswith("#"):
            about = text.splitlines()[0].lstrip("#")
        out.append((path.name, " ".join(str(about).split())))
    return out


def _shipped_files() -> list[Path]:
    """Every shipped file, relative to :func:`studies_dir`."""
    root = studies_dir()
    files = [p.relative_to(root) for p in sorted(root.glob("*.toml"))]
    for sub in SUBFOLDERS:
        files += [p.relative_to(root) for p in sorted((root / sub).glob("*")) if p.is_file()]
    return files


def copy_studies(target: str | Path) -> list[Path]:
    """Copy every shipped study and the files they refer to into ``target``.

    Refuses (:class:`StudyError`, nothing written) when any file to copy already exists
    there. Returns the paths written.
    """
    target = Path(target)
    files = _shipped_files()
    if target.exists() and not target.is_dir():
        raise StudyError(str(target), "(--copy)", "exists and is not a folder")
    clash = [target / f for f in files if (target / f).exists()]
    if clash:
        more = f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""
        raise StudyError(
            str(clash[0]), "(--copy)", f"exists{more}; nothing copied (choose an empty folder)"
        )
    root = studies_dir()
    written = []
    for rel in files:
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, dest)
        written.append(dest)
    return written
