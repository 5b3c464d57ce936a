"""The Zarr store of a study (DESIGN.md "Zarr store"): template first, then chunk writes.

Layout (Zarr format 3)::

    STORE/                   root attrs: study text, spec hash, versions, provenance
      reference/rI/          q, v (samples x n) of reference I; attrs: status, done, ...
      BLOCK/                 one group per [[runs]] block, dimension `case` chunked by batch
        t                    output times (dimension t)
        case_id, ref_index   per case
        AXIS ...             one coordinate array per swept axis
        METRIC ...           float64 metrics, int64 counters
        status (int8), done (bool), error (str)
        SERIES ...           (case, t) or (case, t, coord)

Every batch task writes whole chunks that no other task writes (the chunk length along
``case`` is the batch size), and ``done`` after everything else, so an interrupted batch
is recomputed on resume. Two launches cannot write one store at once: a lock file
(``STORE.lock``, beside the store so that ``--overwrite`` cannot delete it) is taken for
the duration of a launch.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import platform
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mbstudy.pipeline import private_api
from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS, VECTOR_SERIES, Reference
from mbstudy.solvers.status import STATUS_MEANINGS, STATUS_NAMES

STORE_FORMAT = "mbstudy-store-1"
LOCK_SUFFIX = ".lock"  # the lock is a sibling file STORE.lock (zarr mode "w" clears the store)


class StoreError(Exception):
    """A store that cannot be used as asked (another study's, locked, missing)."""


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


def model_sizes(model: str, model_params: dict) -> tuple[int, int]:
    """(n coordinates, m constraint equations) of the model with these parameters (as plain
    Python: the launcher does not initialise numba for the store template)."""
    from mbstudy.pipeline.plan.purepy import model_sizes as sizes

    return sizes(model, model_params)


def series_width(model: str, model_params: dict) -> int:
    """Number of coordinates n of the model with these parameters (width of q/v series)."""
    return model_sizes(model, model_params)[0]


@dataclass
class ResultStore:
    """A study's Zarr store on a local path."""

    path: Path

    # ------------------------------------------------------------------ opening
    @staticmethod
    def exists(path: str | Path) -> bool:
        """True if ``path`` holds an mbstudy store."""
        return (Path(path) / "zarr.json").exists()

    @classmethod
    def open(cls, path: str | Path) -> ResultStore:
        """Open an existing store (raises StoreError if it is not an mbstudy store)."""
        store = cls(Path(path))
        if not cls.exists(path):
            raise StoreError(f"{path}: no mbstudy store here")
        attrs = store.root_attrs()
        if attrs.get("format") != STORE_FORMAT:
            raise StoreError(f"{path}: not an mbstudy store (format {attrs.get('format')!r})")
        return store

    def _root(self, mode: str = "r"):
        import zarr

        return zarr.open_group(str(self.path), mode=mode)

    def root_attrs(self) -> dict:
        """The root attributes (study text, hash, provenance, completion)."""
        return dict(self._root().attrs)

    def spec_hash(self) -> str:
        return str(self.root_attrs().get("spec_hash", ""))

    # ------------------------------------------------------------------ creating
    @classmethod
    def create(cls, path: str | Path, study, grid) -> ResultStore:
        """Write the template of a fresh store: every array, filled with its fill value."""
        import zarr

        store = cls(Path(path))
        root = zarr.open_group(str(store.path), mode="w", zarr_format=3)
        root.attrs.update(
            {
                "format": STORE_FORMAT,
                "study_name": study.name,
                "study_text": study.text,
                "study_source": study.source,
                "spec_hash": study.spec_hash,
                "model": study.model,
                "versions": _versions(),
                "git_revision": _git_revision(),
                "platform": platform.platform(),
                "host": socket.gethostname(),
                "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "status_codes": {str(k): v for k, v in STATUS_NAMES.items()},
                "status_meanings": {str(k): v for k, v in STATUS_MEANINGS.items()},
                "blocks": [b.name for b in grid.blocks],
                "complete": False,
            }
        )
        ref = root.create_group("reference")
        for i, key in enumerate(grid.references):
            g = ref.create_group(f"r{i}")
            mp = dict(key.model_params)
            n = series_width(study.model, mp)
            g.attrs.update(
                {"model_params": mp, "t_end": key.t_end, "samples": key.samples, "done": False}
            )
            for name in ("q", "v"):
                g.create_array(
                    name,
                    shape=(key.samples, n),
                    chunks=(key.samples, n),
                    dtype="f8",
                    fill_value=np.nan,
                    dimension_names=("t", "coord"),
                )
            tarr = g.create_array(
                "t", shape=(key.samples,), dtype="f8", fill_value=np.nan, dimension_names=("t",)
            )
            tarr[:] = key.t_end * np.arange(key.samples) / (key.samples - 1)
        for block in grid.blocks:
            store._create_block(root, study, grid, block)
        store._describe_blocks(root, study, grid)
        return store

    def _describe_blocks(self, root, study, grid) -> None:
        """CF attributes and labels of every block, then the store's consolidated
        metadata (see store/cf.py)."""
        from mbstudy.pipeline.store.cf import consolidate, describe_block

        for block in grid.blocks:
            describe_block(root[block.name], block, study.model)
        consolidate(self.path)  # xarray reads the root's consolidated metadata

    def reconsolidate(self) -> None:
        """Refresh the root's consolidated metadata (the references' attributes change
        during a launch); called when a launch ends."""
        from mbstudy.pipeline.store.cf import consolidate

        consolidate(self.path)

    def _create_block(self, root, study, grid, block) -> None:
        B = block.batch_size
        N = block.n_cases
        K = block.samples
        g = root.create_group(block.name)
        dims = [list(d.names) for d in block.dims]
        g.attrs.update(
            {
                "formulation": block.formulation,
                "integrator": block.integrator,
                "t_end": block.t_end,
                "samples": K,
                "batch_size": B,
                "n_batches": block.n_batches,
                "axes": list(block.axis_names),
                "dims": dims,
                "series": list(study.output.series),
            }
        )

        def arr(name, dtype, fill, extra_shape=(), extra_dims=(), chunk=B):
            return g.create_array(
                name,
                shape=(N, *extra_shape),
                chunks=(chunk, *extra_shape),
                dtype=dtype,
                fill_value=fill,
                dimension_names=("case", *extra_dims),
            )

        tarr = g.create_array(
            "t", shape=(K,), dtype="f8", fill_value=np.nan, dimension_names=("t",)
        )
        tarr[:] = block.t_end * np.arange(K) / (K - 1)
        # Coordinates are written here, once, and never by a batch task: they get chunks of
        # a whole number of batches (coord_chunk), so a 10^6-case block writes a handful of
        # chunk files instead of one per batch and array. Batch-written arrays keep B.
        C = coord_chunk(B, N)
        arr("case_id", "u8", 0, chunk=C)[:] = block.case_ids()
        arr("ref_index", "i4", -1, chunk=C)[:] = block.ref_index()
        for name in block.axis_names:
            values = np.asarray(block.axis_values(name))
            if values.dtype.kind in "US":
                a = arr(name, str, "", chunk=C)
            else:
                a = arr(name, values.dtype, values.dtype.type(0), chunk=C)
            a[:] = values
        for name in FLOAT_METRICS:
            arr(name, "f8", np.nan)
        for name in COUNTER_METRICS:
            arr(name, "i8", 0)
        arr("status", "i1", -1)
        arr("done", "bool", False)
        arr("error", str, "")
        sizes = None
        for name in study.output.series:
            if name in VECTOR_SERIES:
                if sizes is None:
                    sizes = model_sizes(study.model, dict(grid.references[0].model_params))
                if name == "lam":  # one column per constraint equation
                    arr(name, "f8", np.nan, (K, sizes[1]), ("t", "constraint"))
                else:
                    arr(name, "f8", np.nan, (K, sizes[0]), ("t", "coord"))
            else:
                arr(name, "f8", np.nan, (K,), ("t",))

    # ------------------------------------------------------------------ writing
    def write_batch(self, block: str, start: int, stop: int, columns: dict[str, np.ndarray]):
        """Write one batch's rows [start, stop) of every array in ``columns``; ``done`` last.

        The arrays' chunks are written concurrently (one round trip to zarr's event loop
        instead of one per array) through array handles cached per process; ``done`` is
        written only after every other write has finished, so an interrupted batch is
        recomputed on resume.
        """
        done = columns.get("done", np.ones(stop - start, dtype=bool))
        names = [n for n in columns if n != "done"]
        arrays = _async_arrays(str(self.path / block), (*names, "done"))
        sel = slice(start, stop)

        async def write() -> None:
            await asyncio.gather(*(arrays[n].setitem(sel, columns[n]) for n in names))
            await arrays["done"].setitem(sel, done)

        private_api.zarr_sync(write())

    def write_reference(self, index: int, ref: Reference) -> None:
        """Store reference ``index`` (q, v, status, error estimate), then mark it done."""
        import zarr

        g = zarr.open_group(str(self.path / "reference" / f"r{index}"), mode="r+")
        g["q"][:] = ref.q
        g["v"][:] = ref.v
        g.attrs.update({"status": int(ref.status), "error_estimate": float(ref.error_estimate)})
        g.attrs["done"] = True

    def read_reference(self, index: int) -> Reference | None:
        """The stored reference ``index``, or None if it was not written yet."""
        import zarr

        g = zarr.open_group(str(self.path / "reference" / f"r{index}"), mode="r")
        attrs = dict(g.attrs)
        if not attrs.get("done"):
            return None
        return Reference(
            t=np.asarray(g["t"][:]),
            q=np.asarray(g["q"][:]),
            v=np.asarray(g["v"][:]),
            status=int(attrs["status"]),
            error_estimate=float(attrs.get("error_estimate", np.nan)),
        )

    def mark_complete(self, complete: bool = True, summary: dict | None = None) -> None:
        """Set the root's completion flag (and the last launch's summary)."""
        root = self._root("r+")
        root.attrs["complete"] = bool(complete)
        if summary is not None:
            root.attrs["last_launch"] = json.loads(json.dumps(summary, default=str))
        self.reconsolidate()

    # ------------------------------------------------------------------ reading
    def blocks(self) -> list[str]:
        return list(self.root_attrs().get("blocks", []))

    def batch_sizes(self) -> dict[str, int]:
        """The batch plan the store was made with: cases per batch (= chunk length along
        ``case``) of every block; a resumed launch keeps it."""
        return {b: int(self.block_attrs(b)["batch_size"]) for b in self.blocks()}

    def block_attrs(self, block: str) -> dict:
        import zarr

        return dict(zarr.open_group(str(self.path / block), mode="r").attrs)

    def read(self, block: str, name: str) -> np.ndarray:
        """One whole array of a block."""
        import zarr

        return np.asarray(zarr.open_group(str(self.path / block), mode="r")[name][:])

    def array_names(self, block: str) -> list[str]:
        import zarr

        g = zarr.open_group(str(self.path / block), mode="r")
        return sorted(name for name, _ in g.arrays())

    def reopen_failed_batches(self, block: str) -> int:
        """Mark not done every batch holding a case with status ``error`` (an exception, a
        lost task: not a solver outcome, which is deterministic data); return how many.

        Only ``done`` is written, batch by batch (whole chunks), so a launch that dies
        right after leaves those batches pending, as an interrupted one would.
        """
        import zarr
        from mbstudy.solvers.status import ERROR

        attrs = self.block_attrs(block)
        B = int(attrs["batch_size"])
        status = self.read(block, "status")
        done = zarr.open_group(str(self.path / block), mode="r+")["done"]
        n = 0
        for b in np.unique(np.flatnonzero(status == ERROR) // B):
            start, stop = int(b) * B, min((int(b) + 1) * B, status.size)
            done[start:stop] = np.zeros(stop - start, dtype=bool)
            n += 1
        return n

    def done_batches(self, block: str) -> np.ndarray:
        """Boolean per batch: every case of the batch is done."""
        attrs = self.block_attrs(block)
        done = self.read(block, "done")
        B = int(attrs["batch_size"])
        nb = int(attrs["n_batches"])
        padded = np.ones(nb * B, dtype=bool)  # the last batch may be short
        padded[: done.size] = done
        return padded.reshape(nb, B).all(axis=1)


COORD_CHUNK = 1 << 20  # target cases per chunk of the write-once coordinate arrays


def coord_chunk(batch_size: int, n_cases: int) -> int:
    """Chunk length of the coordinate arrays (``case_id``, ``ref_index``, grid axes): the
    largest whole number of batches not above ``COORD_CHUNK`` cases (at least one batch),
    capped at the block's length. Whole batches keep every chunk boundary a batch boundary.
    """
    k = max(1, COORD_CHUNK // max(1, batch_size))
    return max(1, min(k * batch_size, n_cases))


_HANDLES: dict[str, tuple[tuple[int, int, int], dict[str, object]]] = {}


def _async_arrays(group_path: str, names: tuple[str, ...]) -> dict[str, object]:
    """zarr AsyncArray handles of ``names`` in the group at ``group_path``, opened once per
    process, so a batch task reads no metadata. The cache is keyed on the identity of the
    group's ``zarr.json`` (inode, mtime, size): a store replaced by ``--overwrite`` is reopened."""
    import zarr

    st = os.stat(os.path.join(group_path, "zarr.json"))
    stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _HANDLES.get(group_path)
    if cached is None or cached[0] != stamp:
        cached = (stamp, {})
        _HANDLES[group_path] = cached
    handles = cached[1]
    missing = [n for n in names if n not in handles]
    if missing:
        g = zarr.open_group(group_path, mode="r+")
        for n in missing:
            handles[n] = private_api.zarr_async_array(g[n])
    return {n: handles[n] for n in names}


class StoreLock:
    """An exclusive lock file beside the store, held for the duration of a launch.

    A lock whose holder is a dead process on this host is stale and taken over; a live
    holder makes :meth:`acquire` raise :class:`StoreError` naming it.
    """

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        self.file = path.with_name(path.name + LOCK_SUFFIX)
        self.held = False

    def acquire(self) -> StoreLock:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        for _ in range(2):
            try:
                fd = os.open(self.file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    other = json.loads(self.file.read_text() or "{}")
                except (OSError, json.JSONDecodeError):
                    other = {}
                if other.get("host") == me["host"] and not _pid_alive(int(other.get("pid", -1))):
                    self.file.unlink(missing_ok=True)  # stale: its launcher died
                    continue
                raise StoreError(
                    f"{self.file.parent}: locked by another launch (pid {other.get('pid')} on"
                    f" {other.get('host')}); wait for it to finish or remove {self.file}"
                ) from None
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return self
        raise StoreError(f"{self.file}: could not take the lock")

    def release(self) -> None:
        if self.held:
            self.file.unlink(missing_ok=True)
            self.held = False

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
