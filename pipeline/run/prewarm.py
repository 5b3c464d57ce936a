"""``mbstudy warm``: compile a study's kernels into the shared caches without running it.

The kernels are compiled in parallel, one process per kernel up to ``workers`` at a time
(numba compiles in one thread), into the same kernel directory and ``NUMBA_CACHE_DIR`` the
workers of a later launch read: that launch then only loads them (about a second each).
Kernels another process is compiling already are waited for, not compiled twice
(:func:`mbstudy.solvers.compose.compile_lock`).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed


def _compile(triple: tuple[str, str, str]) -> dict:
    from mbstudy.pipeline.run.batch import compile_kernel

    return compile_kernel(triple)


def warm_study(
    triples: list[tuple[str, str, str]],
    workers: int | None = None,
    on_kernel: Callable[[dict], None] | None = None,
) -> dict[str, dict]:
    """Compile (or find in the caches) every kernel of ``triples``; per kernel
    ``{"s": seconds, "compiled": bool}``. ``workers``: processes (default: the cores)."""
    workers = max(1, min(len(triples), workers or os.cpu_count() or 1))
    out: dict[str, dict] = {}
    ctx = multiprocessing.get_context("spawn")  # a clean numba in each process
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_compile, t) for t in triples]
        for fut in as_completed(futures):
            info = fut.result()
            out[info["kernel"]] = {"s": info["s"], "compiled": info["compiled"]}
            if on_kernel is not None:
                on_kernel(info)
    return out
