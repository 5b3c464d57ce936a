"""Small dense linear algebra for the kernels: in-place LU and Cholesky, no allocation.

``np.linalg.solve`` inside a right-hand side costs most of an RK4 step on small systems
(measured: ~10 of 12 microseconds for the 17 x 17 four-bar system), and it
raises on singular matrices, which jitted code must never do. These routines factor in
place, report singularity as a status code, and work on the leading n x n block of
preallocated buffers.

References
----------
Golub & Van Loan, *Matrix Computations*, 4th ed., 2013: Alg. 3.4.1 (LU with partial
pivoting), Alg. 4.2.1 (Cholesky).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.compile_units import link_only
from mbstudy.solvers.status import OK, SINGULAR

# A pivot below PIVOT_RTOL * max|A| marks the matrix singular to working precision.
PIVOT_RTOL = 1e-13


@link_only()
def lu_factor(A, piv, n):
    """Factor A[:n, :n] = P L U in place (partial pivoting); return OK or SINGULAR.

    Parameters
    ----------
    A : (>=n, >=n) float64, overwritten by L (unit lower, below the diagonal) and U.
    piv : (>=n,) int64, receives the row permutation.
    n : order of the system.
    """
    return lu_factor_rtol(A, piv, n, PIVOT_RTOL)


@link_only()
def lu_factor_rtol(A, piv, n, rtol):
    """:func:`lu_factor` with a pivot below ``rtol * max|A|`` counted as zero."""
    if n == 0:
        return OK  # empty system (a model without constraints)
    scale = 0.0
    for i in range(n):
        for j in range(n):
            x = abs(A[i, j])
            if x > scale:
                scale = x
    if scale == 0.0 or not np.isfinite(scale):
        return SINGULAR
    tol = rtol * scale
    for k in range(n):
        p = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            x = abs(A[i, k])
            if x > big:
                big = x
                p = i
        piv[k] = p
        if big <= tol:
            return SINGULAR
        if p != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = tmp
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            lik = A[i, k] * inv
            A[i, k] = lik
            if lik != 0.0:
                for j in range(k + 1, n):
                    A[i, j] -= lik * A[k, j]
    return OK


@link_only()
def lu_solve(A, piv, b, n):
    """Solve with the factors of :func:`lu_factor`; b[:n] is overwritten by the solution."""
    for k in range(n):
        p = piv[k]
        if p != k:
            tmp = b[k]
            b[k] = b[p]
            b[p] = tmp
    for i in range(1, n):
        s = b[i]
        for j in range(i):
            s -= A[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]


@link_only()
def chol_factor(A, n):
    """Cholesky A[:n, :n] = L L^T in place (lower triangle); return OK or SINGULAR.

    SINGULAR is returned when a diagonal element is not safely positive (the matrix is
    not positive definite to working precision, e.g. redundant constraints in G G^T).
    """
    if n == 0:
        return OK  # empty system (a model without constraints)
    scale = 0.0
    for i in range(n):
        if A[i, i] > scale:
            scale = A[i, i]
    if scale <= 0.0 or not np.isfinite(scale):
        return SINGULAR
    tol = PIVOT_RTOL * scale
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s <= tol:
            return SINGULAR
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / d
    return OK


@link_only()
def chol_solve(A, b, n):
    """Solve with the factor of :func:`chol_factor`; b[:n] is overwritten."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= A[i, k] * b[k]
        b[i] = s / A[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= A[k, i] * b[k]
        b[i] = s / A[i, i]


@link_only()
def norm2(x, n):
    """Euclidean norm of x[:n]."""
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    return np.sqrt(s)


@link_only()
def state_status(y, bound):
    """Return NAN (1) if y has a non-finite entry, DIVERGED (2) if max|y| > bound, else OK."""
    for i in range(y.size):
        x = y[i]
        if not np.isfinite(x):
            return 1
        if abs(x) > bound:
            return 2
    return OK
