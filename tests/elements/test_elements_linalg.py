"""The element networks' Newton solve uses the project's one dense LU:
solvers/elements/_linalg.py wraps solvers/linalg.py's lu_factor_rtol / lu_solve with
its own singularity threshold. Checked against numpy's LAPACK solve."""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.elements._linalg import SINGULAR_RTOL, lu_solve_inplace


def test_solves_like_lapack():
    rng = np.random.default_rng(15)
    for n in (1, 2, 5, 12, 30):
        A = rng.standard_normal((n, n))
        A[rng.random((n, n)) < 0.3] = 0.0  # sparse, as a network Jacobian
        A += n * np.eye(n)
        b = rng.standard_normal(n)
        x = b.copy()
        assert lu_solve_inplace(A.copy(), x)
        np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-12, atol=1e-12)


def test_pivoting_is_needed_and_done():
    A = np.array([[0.0, 1.0], [1.0, 0.0]])
    x = np.array([2.0, 3.0])
    assert lu_solve_inplace(A.copy(), x)
    np.testing.assert_array_equal(x, [3.0, 2.0])


def test_singular_zero_and_non_finite_matrices_fail():
    assert not lu_solve_inplace(np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones(2))
    assert not lu_solve_inplace(np.zeros((3, 3)), np.ones(3))
    assert not lu_solve_inplace(np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones(2))
    # a pivot just below the threshold counts as zero, just above it does not
    eps = SINGULAR_RTOL
    assert not lu_solve_inplace(np.array([[1.0, 0.0], [0.0, 0.5 * eps]]), np.ones(2))
    assert lu_solve_inplace(np.array([[1.0, 0.0], [0.0, 2.0 * eps]]), np.ones(2))
