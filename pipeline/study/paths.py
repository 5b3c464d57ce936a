"""Local store paths, checked before anything is created: ``~`` is expanded (a study's
``store = "~/x.zarr"`` used to create a folder named ``~``), and a path no store can live
at is refused in one line instead of an ``OSError`` or ``ValueError`` deep in a launch."""

from __future__ import annotations

import os
from pathlib import Path

NAME_MAX = 255  # bytes of one path component (Linux, macOS)
PATH_MAX = 4096  # bytes of a whole path


def local_store_folder(text: str) -> Path:
    """The folder ``text`` names, ``~`` expanded.

    Raises
    ------
    ValueError
        (one line) For a NUL character, a component longer than :data:`NAME_MAX` bytes or
        a path longer than :data:`PATH_MAX`, or the root folder.
    """
    if "\0" in text:
        raise ValueError(f"{text!r}: a store path may not contain a NUL character")
    path = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
    raw = os.fsencode(path)
    if len(raw) > PATH_MAX or any(len(part) > NAME_MAX for part in raw.split(b"/")):
        raise ValueError(f"{text[:60]}...: a store path of more than {PATH_MAX} bytes or with"
                         f" a name of more than {NAME_MAX} bytes cannot be created")
    if not text.strip() or path.resolve().name == "":
        raise ValueError(f"{text!r}: not a store folder (the root of the file system);"
                         " name a folder such as results/study.zarr")
    return path
