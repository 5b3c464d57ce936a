"""Reading a data file a user hands to mbstudy (a study file, a mechanism file, a
netlist) under one set of rules, so that no file can block or exhaust a process:

* only a regular file is read: it is opened with ``O_NONBLOCK`` and checked with
  ``fstat`` on the open descriptor, so a FIFO, a device (``/dev/zero``) or a directory is
  refused without blocking and without a window between check and read;
* at most :data:`MAX_FILE_BYTES` bytes (checked on the size and again on what is read);
* strict UTF-8 (the stores record the text and the study hash its SHA-256).
"""

from __future__ import annotations

import os
import stat

MAX_FILE_BYTES = 4 << 20  # 4 MiB: larger than any mechanism description we ship by 1000x


class FileRefused(Exception):
    """A file that is not a readable regular text file of bounded size."""


def read_regular_file(path: str | os.PathLike, limit: int = MAX_FILE_BYTES) -> str:
    """The text of the regular file at ``path`` (:class:`FileRefused` otherwise)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise FileRefused(getattr(exc, "strerror", None) or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise FileRefused(f"{kind} (only regular files are read)")
        if st.st_size > limit:
            raise FileRefused(f"{st.st_size} bytes, more than the limit of {limit}")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise FileRefused(exc.strerror or type(exc).__name__) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileRefused(f"more than the limit of {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"not UTF-8 text (byte {exc.start})") from None
