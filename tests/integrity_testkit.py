"""A toy study on the fake registry and random result columns: the stores of the
store-integrity tests (tests/test_integrity.py, tests/test_s3_store.py)."""

from __future__ import annotations

import numpy as np
from mbstudy.pipeline.plan.grid import expand_grid
from mbstudy.pipeline.store.zarr_store import ResultStore
from mbstudy.pipeline.study.parse import parse_study
from mbstudy.solvers.metrics import COUNTER_METRICS, FLOAT_METRICS


def toy(series: str = '"phi_norm", "q"', links: str = "2", batch_size: int = 3):
    """The toy study (fake model ``toy``, 8 cases) and its grid."""
    text = f"""
[study]
name = "integrity"
model = "toy"
t_end = 1.0
samples = 5
batch_size = {batch_size}

[[runs]]
name = "a"
formulation = "stab"
integrator = "rk"
h = 0.01
omega_n = [1.0, 2.0, 3.0, 4.0]
xi = [0.5, 1.0]
model.n_links = {links}

[output]
series = [{series}]
"""
    spec = parse_study(text)
    return spec, expand_grid(spec)


def columns(rng, n: int, samples: int, width: int) -> dict[str, np.ndarray]:
    """Random values for every metric and series column of ``n`` cases."""
    cols = {name: rng.standard_normal(n) for name in FLOAT_METRICS}
    cols.update({name: rng.integers(0, 1000, n) for name in COUNTER_METRICS})
    cols["status"] = np.zeros(n, dtype=np.int8)
    cols["error"] = np.array([""] * n).astype(str)
    cols["phi_norm"] = rng.standard_normal((n, samples))
    cols["q"] = rng.standard_normal((n, samples, width))
    return cols


def write_batches(rs: ResultStore, grid, only: int | None = None) -> None:
    """Write block ``a``'s batches with the random columns of seed 7 (all of them, or only
    batch ``only``: the same bytes again, as a rerun of that batch would write)."""
    (block,) = grid.blocks
    rng = np.random.default_rng(7)
    for b in range(block.n_batches):
        start, stop = block.batch_range(b)
        cols = columns(rng, stop - start, block.samples, 6)
        if only is None or b == only:
            rs.write_batch("a", start, stop, cols)


def finished_store(where):
    """The toy study's store at ``where`` (a path or URL) with every batch written."""
    spec, grid = toy()
    rs = ResultStore.create(where, spec, grid)
    write_batches(rs, grid)
    return spec, grid, rs
