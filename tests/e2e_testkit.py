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


# six four-bar cases of one batch each: the store-integrity end-to-end tests, local
# (tests/test_integrity_e2e.py) and on S3 (tests/test_s3.py), share these kernels
SIX_CASES = """
[[runs]]
name = "baumgarte"
formulation = "baumgarte"
integrator = "rk4"
h = 0.001
omega_n = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
xi = 1.0

[output]
series = ["phi_norm", "q"]
"""


def six_case_study(name: str) -> str:
    """The study text of :data:`SIX_CASES` named ``name`` (1 s, 11 samples)."""
    return fourbar_study_head(name, 1.0, 11, extra="batch_size = 1\n") + SIX_CASES


def store_arrays(where: Path | str, skip=TIMING) -> dict[str, np.ndarray]:
    """Every array of every block and reference of the store at ``where`` (a path or an
    object-store URL), except those named in ``skip`` (default: timings and engine)."""
    text = str(where)
    if "://" in text:
        from mbstudy.pipeline.store.urls import store_location

        root = store_location(text).open_group("r", use_consolidated=False)
    else:
        import zarr

        root = zarr.open_group(text, mode="r")
    out = {}

    def walk(group, prefix):
        for name, arr in group.arrays():
            if name not in skip:
                out[f"{prefix}{name}"] = np.asarray(arr[:])
        for name, sub in group.groups():
            walk(sub, f"{prefix}{name}/")

    walk(root, "")
    return out


def arrays_but_timings(where: Path | str) -> dict[str, np.ndarray]:
    """:func:`store_arrays` skipping only the timing metrics (the engine flag is compared:
    the store-integrity tests launch both runs the same way)."""
    from mbstudy.solvers.metrics import TIME_METRICS

    return store_arrays(where, skip=TIME_METRICS)


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
