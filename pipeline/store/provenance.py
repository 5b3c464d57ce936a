"""The provenance a store's root records (pipeline/store/zarr_store.py): the study, the
versions of mbstudy's numerical stack, the git revision of a source checkout, the host, and
the setup format the root carries until the template is complete."""

from __future__ import annotations

import datetime as _dt
import platform
import socket
import subprocess
from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.referenced import referenced_files_attr
from mbstudy.pipeline.study.references import model_file_record
from mbstudy.solvers.api import STATUS_MEANINGS, STATUS_NAMES

# The root's "format" while the template is being written: the marker STORE_FORMAT (with
# the spec hash beside it) is written last, so a folder is a complete store of study X
# only once every array of the template exists.
SETUP_FORMAT = "mbstudy-store-setup"


def _versions() -> dict[str, str]:
    """Versions of mbstudy and its numerical stack, from the installed distributions'
    metadata (importing xarray and dask only to read ``__version__`` costs seconds)."""
    from importlib.metadata import PackageNotFoundError, version

    from mbstudy import __version__

    out = {"mbstudy": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for dist in ("numba", "dask", "zarr", "xarray"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            out[dist] = "unknown"
    return out


def _git_revision() -> str:
    """mbstudy's own git revision when it runs from a source checkout of mbstudy, else ""
    (an installed copy inside some other repository must not record that one's)."""
    here = Path(__file__).resolve().parents[2]
    if not ((here / ".git").exists() and (here / "pipeline").is_dir()
            and (here / "solvers").is_dir() and (here / "pyproject.toml").is_file()):
        return ""
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def template_attrs(study, grid) -> dict:
    """The root attributes of a store of ``study`` while its template is written (format
    SETUP_FORMAT: the marker comes last)."""
    return {
        "format": SETUP_FORMAT,
        "study_name": study.name,
        "study_text": study.text,
        "study_source": study.source,
        "study_overrides": list(getattr(study, "overrides", ())),  # --set, as typed
        "model": study.model,
        **model_file_record(study.model),  # a mechanism file's text and sha256
        "versions": _versions(),
        "git_revision": _git_revision(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "status_codes": {str(k): v for k, v in STATUS_NAMES.items()},
        "status_meanings": {str(k): v for k, v in STATUS_MEANINGS.items()},
        "blocks": [b.name for b in grid.blocks],
        "complete": False,
        "referenced_files": referenced_files_attr(study),
    }
