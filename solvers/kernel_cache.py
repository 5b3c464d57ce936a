"""What the kernel caches hold, and which of their entries no current source can use.

Two directories hold a composed kernel (see :mod:`mbstudy.solvers.compose`): the kernel
directory (the generated module ``mbk_<model>_<formulation>_<integrator>[_lu]_<hash>.py``
and its ``.lock``) and numba's cache (an index and a machine-code file per function, under
``$NUMBA_CACHE_DIR`` or the kernel directory's ``__pycache__``: numba's file layout is
read only through :mod:`mbstudy.solvers.private_api`). A kernel *entry* is all the files
of one generated module.

An entry is **stale** when its triple is registered but the key composed from today's
sources differs (a template, the model or numba changed): no process can ever ask for it
again. An entry whose model is not registered in this process (a model made from a
mechanism file that is not loaded) is **unknown** and kept. Numba files whose kernel
module is gone and temporary files left by an interrupted write are **orphans**.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from mbstudy.solvers import compose, registry
from mbstudy.solvers.compose import UnsafeCacheDir
from mbstudy.solvers.private_api import has_numba_index, numba_cache_module, numba_cache_roots

__all__ = ["Entry", "UnsafeCacheDir", "current_key", "inventory", "is_cached", "kernel_dir",
           "numba_dir", "numba_totals", "prune", "secure_dirs"]  # fmt: skip


@dataclass
class Entry:
    """One generated kernel module and its numba cache files."""

    key: str
    triple: tuple[str, str, str] | None  # None: model/formulation/integrator not registered
    augmented: bool
    files: list[Path] = field(default_factory=list)
    state: str = "current"  # current, stale, unknown, orphan

    @property
    def bytes(self) -> int:
        return sum(_size(f) for f in self.files)

    @property
    def age_s(self) -> float:
        """Seconds since the newest of its files was written."""
        mt = [_mtime(f) for f in self.files]
        return time.time() - max(mt) if mt else 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def kernel_dir() -> Path:
    """The kernel directory (:func:`mbstudy.solvers.compose.kernel_dir`)."""
    return compose.kernel_dir()


def secure_dirs() -> None:
    """Check (or make private) the kernel directory and ``$NUMBA_CACHE_DIR`` where they
    exist (:func:`mbstudy.solvers.compose.secure_dir`); raises :class:`UnsafeCacheDir`."""
    for d in (compose.kernel_dir(), numba_dir()):
        if d is not None and d.is_dir():
            compose.secure_dir(d)


def numba_dir() -> Path | None:
    """``$NUMBA_CACHE_DIR``, or None (numba then writes next to each source file)."""
    nb = os.environ.get("NUMBA_CACHE_DIR")
    return Path(nb) if nb else None


def _parse(key: str) -> tuple[tuple[str, str, str] | None, bool]:
    """The registered triple a kernel key names (None if none does), and the LU variant."""
    body = key[len("mbk_") :].rsplit("_", 1)[0]  # drop the hash
    augmented = body.endswith("_lu")
    if augmented:
        body = body[: -len("_lu")]
    for m in registry.entries("model"):
        for f in registry.entries("formulation"):
            for i in registry.entries("integrator"):
                if body == f"{m}_{f}_{i}":
                    return (m, f, i), augmented
    return None, augmented


def current_key(triple: tuple[str, str, str], augmented: bool,
                entry: registry.Entry | None = None) -> str | None:
    """The key today's sources give ``triple`` (None if it no longer composes); ``entry``:
    the model's registry entry when the caller resolved it already (a launch)."""
    model = triple[0] if entry is None else entry
    try:
        text = compose.generate_source(model, *triple[1:], augmented=augmented)
        return compose.kernel_key(model, *triple[1:], text, augmented)
    except Exception:  # a pair that no longer composes: nothing can use it
        return None


def is_cached(model: str, formulation: str, integrator: str, augmented: bool = False,
              key: str | None = None) -> bool:
    """Whether the compiled kernel of this triple is in the caches, as this process sees
    them: today's generated module exists in the kernel directory and numba has an index
    of ``common_run`` for it (``<key>.common_run-<line>.py311.nbi``; the entry point's
    machine code includes everything it calls). Reads file names only: composing the
    key runs no numba. A cache written by another numba for the same key cannot exist
    (the key covers numba's version). ``key``: the triple's :func:`current_key`, when the
    caller has it already."""
    key = key or current_key((model, formulation, integrator), augmented)
    kdir = compose.kernel_dir()
    if key is None or not (kdir / f"{key}.py").is_file():
        return False
    return has_numba_index(kdir, key, "common_run")


INTERPRETED_DIR = "interpreted"  # in the kernel directory: <key>.txt per kernel


def _interpreted_file(triple: tuple[str, str, str], key: str | None = None,
                      entry: registry.Entry | None = None) -> Path | None:
    key = key or current_key(triple, False, entry)
    return None if key is None else compose.kernel_dir() / INTERPRETED_DIR / f"{key}.txt"


def _read_seconds(path: Path | None) -> float:
    try:
        value = float(path.read_text(encoding="ascii")) if path is not None else 0.0
    except (OSError, ValueError, UnicodeDecodeError):
        return 0.0
    return value if math.isfinite(value) and value > 0.0 else 0.0


def interpreted_seconds(triple: tuple[str, str, str], key: str | None = None) -> float:
    """Estimated CPU seconds this kernel (today's key, or ``key``) has already run
    interpreted in earlier launches: the rent paid so far in tiered execution's rent-or-buy
    rule (pipeline/plan/engines.py). 0.0 when nothing is recorded or the record is
    unreadable."""
    return _read_seconds(_interpreted_file(triple, key))


def add_interpreted_seconds(triple: tuple[str, str, str], seconds: float,
                            entry: registry.Entry | None = None) -> None:
    """Add ``seconds`` to the kernel's interpreted total (an atomic replace of one small
    file; two launches adding at the same moment can lose one addition, which only delays
    the compile by one launch). Failures to write are ignored: the record is advisory.
    ``entry``: the model's registry entry when the caller resolved it already."""
    path = _interpreted_file(triple, None, entry)
    if path is None or not math.isfinite(seconds) or seconds <= 0.0:
        return
    try:
        compose.secure_dir(path.parent)
        total = _read_seconds(path) + float(seconds)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{total:.6g}\n", encoding="ascii")
        os.replace(tmp, path)
    except (OSError, UnsafeCacheDir):
        return


def _numba_files() -> list[Path]:
    """Numba cache files of generated kernels (names start with ``mbk_``)."""
    out: list[Path] = []
    for root in numba_cache_roots(compose.kernel_dir()):
        if root.is_dir():
            out += [p for p in root.rglob("mbk_*") if p.is_file()]
    return out


def inventory() -> list[Entry]:
    """Every kernel entry of the kernel directory and numba's cache, classified."""
    kdir = compose.kernel_dir()
    entries: dict[str, Entry] = {}
    if kdir.is_dir():
        for path in kdir.iterdir():
            if not path.name.startswith("mbk_") or not path.is_file():
                continue
            key = path.name.split(".", 1)[0]
            if path.suffix not in (".py", ".lock"):  # a temporary file of a write
                orphan = Entry(path.name, None, False, state="orphan")
                entries.setdefault(f"tmp:{path.name}", orphan).files.append(path)
                continue
            if key not in entries:
                triple, aug = _parse(key)
                entries[key] = Entry(key, triple, aug)
            entries[key].files.append(path)
    rented = kdir / INTERPRETED_DIR
    for path in _numba_files() + (sorted(rented.iterdir()) if rented.is_dir() else []):
        if not path.name.startswith("mbk_") or not path.is_file():
            continue
        key = numba_cache_module(path)  # also the key of a rent record, <key>.txt
        if key not in entries:
            triple, aug = _parse(key)
            entries[key] = Entry(key, triple, aug)
        entries[key].files.append(path)
    known: dict[tuple, str | None] = {}
    for e in entries.values():
        if e.state == "orphan":
            continue
        if not any(f.parent == kdir and f.suffix == ".py" for f in e.files):
            e.state = "orphan"  # numba files of a module that is gone
        elif e.triple is None:
            e.state = "unknown"
        else:
            k = (e.triple, e.augmented)
            if k not in known:
                known[k] = current_key(e.triple, e.augmented)
            e.state = "current" if known[k] == e.key else "stale"
    return sorted(entries.values(), key=lambda e: e.key)


def numba_totals() -> dict:
    """Size, number of files and age range of everything in ``$NUMBA_CACHE_DIR``."""
    nb = numba_dir()
    files = [p for p in nb.rglob("*") if p.is_file()] if nb and nb.is_dir() else []
    mt = [_mtime(p) for p in files]
    now = time.time()
    return {"dir": str(nb) if nb else None, "files": len(files),
            "bytes": sum(_size(p) for p in files),
            "oldest_s": now - min(mt) if mt else 0.0,
            "newest_s": now - max(mt) if mt else 0.0}  # fmt: skip


def prune(entries: list[Entry]) -> tuple[int, int]:
    """Delete the files of the stale and orphan entries; (files, bytes) removed."""
    n = b = 0
    for e in entries:
        if e.state not in ("stale", "orphan"):
            continue
        for f in e.files:
            size = _size(f)
            try:
                f.unlink()
            except FileNotFoundError:
                continue
            n += 1
            b += size
    return n, b
