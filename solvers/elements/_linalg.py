"""In-place dense LU solve for the Newton step of the element networks (never raises).

``np.linalg.solve`` inside numba raises on a singular matrix, and jitted code must
return a status instead, so the Newton step uses the project's one dense LU with partial
pivoting (:func:`mbstudy.solvers.linalg.lu_factor_rtol` and ``lu_solve``), with a
tighter singularity threshold. Networks are small (tens of DOFs); a sparse solver is not
worth its dependency here.

References
----------
Golub & Van Loan, *Matrix Computations*, 4th ed., Alg. 3.4.1 (Gaussian elimination
with partial pivoting).
"""

from __future__ import annotations

import numpy as np
from mbstudy.solvers.linalg import lu_factor_rtol, lu_solve
from mbstudy.solvers.status import OK
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
        True on success, False if a pivot is zero to working precision or the matrix is
        zero or not finite.
    """
    n = b.shape[0]
    piv = np.empty(n, dtype=np.int64)
    if lu_factor_rtol(A, piv, n, SINGULAR_RTOL) != OK:
        return False
    lu_solve(A, piv, b, n)
    return True
