"""In-place dense LU solve for the Newton step (never raises; reports singularity).

``np.linalg.solve`` inside numba raises on a singular matrix, and jitted code must
return a status instead (solvers/status.py), so the Newton step uses this small Doolittle
LU with partial pivoting. Networks are small (tens of DOFs); a sparse solver is not
worth its dependency here.

References
----------
Golub & Van Loan, *Matrix Computations*, 4th ed., Alg. 3.4.1 (Gaussian elimination
with partial pivoting).
"""

from __future__ import annotations

from numba import njit

SINGULAR_RTOL = 1e-14
"""A pivot below ``SINGULAR_RTOL * max|A|`` counts as zero (singular to working precision)."""


@njit(cache=True)
def lu_solve_inplace(A, b):
    """Solve ``A y = b`` in place: ``A`` is overwritten by its LU factors, ``b`` by ``y``.

    Parameters
    ----------
    A : (n, n) float64, destroyed.
    b : (n,) float64, replaced by the solution.

    Returns
    -------
    bool
        True on success, False if a pivot is zero to working precision or not finite.
    """
    n = b.shape[0]
    scale = 0.0
    for i in range(n):
        for j in range(n):
            aij = abs(A[i, j])
            if aij > scale:
                scale = aij
    if not (scale > 0.0) or scale == float("inf"):
        return False
    tiny = SINGULAR_RTOL * scale
    for k in range(n):
        piv = k
        big = abs(A[k, k])
        for i in range(k + 1, n):
            if abs(A[i, k]) > big:
                big = abs(A[i, k])
                piv = i
        if not (big > tiny):
            return False
        if piv != k:
            for j in range(n):
                tmp = A[k, j]
                A[k, j] = A[piv, j]
                A[piv, j] = tmp
            tmp = b[k]
            b[k] = b[piv]
            b[piv] = tmp
        inv = 1.0 / A[k, k]
        for i in range(k + 1, n):
            lik = A[i, k] * inv
            if lik != 0.0:
                A[i, k] = lik
                for j in range(k + 1, n):
                    A[i, j] -= lik * A[k, j]
                b[i] -= lik * b[k]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= A[i, j] * b[j]
        b[i] = s / A[i, i]
    return True
