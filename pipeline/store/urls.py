"""Where a store lives: a local (or network-mounted) path, or an object-store URL.

``store_location(text)`` turns what a user wrote (``--store``, ``[output] store``, the
argument of ``status`` / ``verify`` / ``aggregate`` / ``plot``) into a
:class:`pathlib.Path` or a :class:`~mbstudy.pipeline.store.location.FsspecLocation`:

* ``PATH`` and ``file://PATH``: the local path ``PATH``;
* ``PROTOCOL://...`` for an fsspec protocol whose implementation is installed
  (``s3://bucket/x.zarr`` with ``s3fs``; ``gs://``, ``az://``, ``http(s)://`` ...):
  an object-store location. Storage options come from the environment
  (:func:`storage_options`).

Refused with one line (:class:`StoreError`, exit status 2), never mapped to a local folder
(``Path("s3://b/x")`` is the relative path ``s3:/b/x``, which used to create a folder
named ``s3:``):

* ``memory://`` (each process has its own memory file system: the workers would write
  into theirs and the launcher would see nothing);
* a protocol fsspec does not know, or whose package is not installed (named);
* ``s3:/bucket`` and other one-slash forms (what ``Path`` makes of a URL): ambiguous.

Whether a location can be *written* (launch) is the location's business
(``FsspecLocation.lock``): a read-only protocol (``http``) or one without a conditional-put
lease lock is refused by ``launch`` only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mbstudy.pipeline.store.errors import StoreError

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/")
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.+)")
LOCAL_PROTOCOLS = ("file", "local")
# protocols that can never hold a store shared by the launcher and its worker processes
NOT_SHARED = {"memory": "an in-process memory file system is not shared with the workers",
              "cached": "a local cache of another location is not shared with the workers",
              "simplecache": "a local cache of another location is not shared"}  # fmt: skip


def store_location(raw):
    """A :class:`Path` for a local store, an ``FsspecLocation`` for an object-store URL;
    :class:`StoreError` (one line) for what cannot hold a store."""
    from mbstudy.pipeline.store.location import FsspecLocation

    if isinstance(raw, FsspecLocation):
        return raw
    text = os.fspath(raw)
    m = _URL.fullmatch(text)
    if m is None:
        s = _SCHEME.match(text)
        if s:
            raise StoreError(f"{text}: not a store path or URL; did you mean"
                             f" {s.group(1)}://{text[len(s.group(0)):]}?")
        return local_path(text)
    protocol, rest = m.group(1).lower(), m.group(2)
    if protocol in LOCAL_PROTOCOLS:
        return local_path(rest)
    if protocol in NOT_SHARED:
        raise StoreError(f"{text}: {protocol}:// stores are not supported"
                         f" ({NOT_SHARED[protocol]})")
    _check_protocol(text, protocol)
    return FsspecLocation(f"{protocol}://{rest.rstrip('/')}", storage_options(protocol))


class StorePath(type(Path())):
    """A local store folder as :func:`store_location` resolved it: what a launch resolves
    once and passes on (:func:`resolved` does not check it again)."""


def resolved(raw):
    """``raw`` itself when :func:`store_location` already resolved it (a
    :class:`StorePath` or an ``FsspecLocation``), else ``store_location(raw)``."""
    from mbstudy.pipeline.store.location import FsspecLocation

    return raw if isinstance(raw, StorePath | FsspecLocation) else store_location(raw)


def local_path(text: str) -> Path:
    """The local store folder ``text`` names, ``~`` expanded
    (:func:`mbstudy.pipeline.study.paths.local_store_folder`); :class:`StoreError` (one
    line) for a path no store can live at."""
    from mbstudy.pipeline.study.paths import local_store_folder

    try:
        return StorePath(local_store_folder(text))
    except ValueError as exc:
        raise StoreError(str(exc)) from None


def local_store_path(raw) -> Path:
    """The local path of a store location; :class:`StoreError` for an object-store URL
    (for the few places that need a file system: a study's relative ``store`` path)."""
    loc = store_location(raw)
    if not isinstance(loc, Path):
        raise StoreError(f"{raw}: an object-store URL is not supported here")
    return loc


def _check_protocol(text: str, protocol: str) -> None:
    from fsspec.registry import get_filesystem_class, known_implementations

    if protocol not in known_implementations:
        raise StoreError(f"{text}: {protocol}:// stores are not supported (no fsspec"
                         " implementation of that protocol)")
    try:
        get_filesystem_class(protocol)
    except ImportError:
        hint = known_implementations[protocol].get("err", "")
        extra = " (pip install 'mbstudy[s3]')" if protocol in ("s3", "s3a") else ""
        raise StoreError(f"{text}: {protocol}:// stores are not supported here: the package"
                         f" for them is not installed{extra}. {hint}".strip()) from None


def storage_options(protocol: str) -> dict:
    """fsspec storage options of ``protocol`` from the environment, read the same way by
    the launcher and by every worker:

    * ``s3``: credentials, region and profile are read by botocore itself
      (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
      ``AWS_DEFAULT_REGION``, ``AWS_PROFILE``); an S3-compatible server is named by
      ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``; listings are never cached (another
      process writes the store);
    * any protocol: ``MBSTUDY_STORAGE_OPTIONS``, a JSON object merged last.
    """
    opts: dict = {}
    if protocol in ("s3", "s3a"):
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:
            opts["endpoint_url"] = endpoint
        opts["use_listings_cache"] = False
    raw = os.environ.get("MBSTUDY_STORAGE_OPTIONS")
    if raw:
        try:
            extra = json.loads(raw)
        except ValueError as exc:
            raise StoreError(f"MBSTUDY_STORAGE_OPTIONS: not JSON ({exc})") from None
        if not isinstance(extra, dict):
            raise StoreError("MBSTUDY_STORAGE_OPTIONS: expected a JSON object")
        opts.update(extra)
    return opts
