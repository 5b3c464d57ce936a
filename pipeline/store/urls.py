"""Store locations: local (or network-mounted) paths only, for now.

A store given as a URL (``s3://bucket/x.zarr``, ``gs://...``, ``http://...``) is refused
with one line (exit status 2) instead of being taken as a local folder: ``Path("s3://b/x")``
is the relative path ``s3:/b/x``, which used to create a folder named ``s3:`` silently.
``file://PATH`` is the local path PATH. The first component of a path that looks like a URL
scheme (``s3:``, also after ``Path`` collapsed its ``//``) is refused the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mbstudy.pipeline.store.errors import StoreError

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/")


def local_store_path(raw: str | os.PathLike) -> Path:
    """The local path of a store location; :class:`StoreError` for a URL."""
    text = os.fspath(raw)
    if text.startswith("file://"):
        return Path(text.removeprefix("file://"))
    m = _SCHEME.match(text)
    if m:
        raise StoreError(
            f"{text}: object-store URLs ({m.group(1)}://) are not supported; give a local or"
            " network-mounted path"
        )
    return Path(text)
