"""Helpers of the end-to-end tests (tests/test_pipeline_e2e.py, test_cluster.py,
test_faults.py and tests/slurm/): a small resumable study and store comparisons."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mbstudy.pipeline.store.zarr_store import ResultStore

from tests.conftest import fourbar_study_head

# the only arrays that differ between identical runs: the timings, and which engine ran a
# case (a kernel interpreted in one run may be cached in the next; same numbers)
TIMING = {"wall_s", "compile_s", "engine"}

RESUME_STUDY = fourbar_study_head("resume-test", 4.0, 41, extra="batch_size = 1\n") + """
[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.0001
omega_n = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0]
xi = 1.0

[output]
series = ["phi_norm"]
"""


def store_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of every block and reference, except timing metrics."""
    import zarr

    root = zarr.open_group(str(path), mode="r")
    out = {}

    def walk(group, prefix):
        for name, arr in group.arrays():
            if name not in TIMING:
                out[f"{prefix}{name}"] = np.asarray(arr[:])
        for name, sub in group.groups():
            walk(sub, f"{prefix}{name}/")

    walk(root, "")
    return out


def assert_same_arrays(a: Path, b: Path) -> None:
    A, B = store_arrays(a), store_arrays(b)
    assert sorted(A) == sorted(B)
    for name in A:
        if A[name].dtype.kind == "f":
            np.testing.assert_array_equal(A[name], B[name], err_msg=name)
        else:
            assert (A[name] == B[name]).all(), name


def done_cases(path: Path) -> int:
    """Cases done in block ``baumgarte`` of the store at ``path`` (0 while it is missing)."""
    try:
        return int(ResultStore(path).read("baumgarte", "done").sum())
    except Exception:
        return 0
