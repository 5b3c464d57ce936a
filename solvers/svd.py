"""Dense SVD for the kernels: LAPACK's divide-and-conquer SVD into preallocated buffers.

One job: J = U diag(s) V^T for a kernel template (qr's E3 window, _qr_singular.py), with a
status instead of an exception. It is numba's ``np.linalg.svd`` (LAPACK ``dgesdd`` from
scipy's LAPACK), so it allocates: it is an ordinary cached ``njit`` function with
reference counting, compiled once and shared by the kernels that import it (a template
module's ``KERNEL_IMPORTS``; its njit options from solvers/compose/nrt.py,
``refcounted_options``); the templates that call it stay free of reference counting
(solvers/compose/nrt.py, ``nrt_free_templates``). Around the call OpenBLAS is set to one
thread for the calling thread: its threads spin after each call and, on a few busy cores,
made a whole run 10-100x slower (docs/performance.md, "qr's E3 window on large models").

Algorithm: Householder bidiagonalization (Golub & Van Loan, *Matrix Computations*, 4th
ed., 2013, Sect. 5.4.8), then the bidiagonal SVD by divide and conquer (Gu & Eisenstat
(1995), SIAM J. Matrix Anal. Appl. 16:79-92). Accuracy: backward stable, so each singular
value to about eps s_max (Golub & Van Loan, Sect. 8.6.1, Cor. 8.6.2) and the singular
subspaces to eps s_max / gap. At the models' singular positions the one-sided Jacobi SVD
it replaced did no better (Phi_q's small singular values there are not a column-scaling
effect, so Jacobi's relative accuracy for graded matrices does not apply); compared with
numpy's SVD 1e-6 s from a singular position in tests/formulations/test_qr_e3.py. A
242 x 243 Jacobian (nfourbar, N = 40) takes about 9 ms on one core, the one-sided Jacobi
sweeps about 0.4 s.
"""

from __future__ import annotations

from functools import cache

import llvmlite.binding as ll
import numpy as np
from mbstudy.solvers.compose import refcounted_options
from mbstudy.solvers.private_api import c_int_function, openblas_threads_local_address
from mbstudy.solvers.status import NAN, OK
from numba import cfunc, njit, types
from numba.extending import overload

_THREADS_SYMBOL = "mbstudy_blas_set_num_threads_local"


_STAND_IN: list = []  # keeps the stand-in's compiled code alive once made


def _keep_threads_address() -> int:
    """Address of a stand-in that changes nothing, for where no OpenBLAS is found;
    compiled only then (a cfunc compiles when defined: ~0.3 s, which every process that
    loads a qr kernel would otherwise pay at import)."""
    if not _STAND_IN:

        @cfunc(types.intc(types.intc))
        def keep_threads(n):
            return n

        _STAND_IN.append(keep_threads)
    return int(_STAND_IN[0].address)


def _threads_local_address() -> int:
    """Address of OpenBLAS's per-thread thread-count setter in the OpenBLAS that scipy's
    LAPACK, hence numba's ``np.linalg``, uses (found by
    :func:`mbstudy.solvers.private_api.openblas_threads_local_address`); the stand-in's
    where there is none (a scipy built on another LAPACK)."""
    address = openblas_threads_local_address()
    return _keep_threads_address() if address is None else address


# resolved by name at link time, so the kernels that call svd_into stay cacheable
ll.add_symbol(_THREADS_SYMBOL, _threads_local_address())
_external_threads_local = types.ExternalFunction(_THREADS_SYMBOL, types.intc(types.intc))


@cache
def _python_threads_local():
    """The same setter as a ctypes function, for plain Python (the interpreted engine)."""
    return c_int_function(_threads_local_address())


def blas_threads_local(n: int) -> int:
    """Set OpenBLAS's thread count for the calling thread to ``n``; the previous count.

    In a kernel it is the external symbol above (resolved at link time); as plain Python
    (the interpreted engine runs ``svd_into.py_func``) the same C function through ctypes,
    so both engines run LAPACK with the same threads and give the same numbers."""
    return int(_python_threads_local()(int(n)))


@overload(blas_threads_local)
def _blas_threads_local_kernel(n):
    def impl(n):
        return _external_threads_local(n)

    return impl


@njit(cache=True, **refcounted_options())
def svd_into(J: np.ndarray, U: np.ndarray, s: np.ndarray, V: np.ndarray) -> int:
    """J (m, n) = U diag(s) V^T.

    U (m, m) and V (n, n): every left and right singular vector (columns; V's last
    n - rank columns span ker J); s (m,): the singular values, descending, zero beyond
    min(m, n). J is not modified. Returns OK, or NAN when J is not finite or LAPACK did not
    converge (the buffers are then unchanged).
    """
    m, n = J.shape
    for i in range(m):
        for j in range(n):
            if not np.isfinite(J[i, j]):
                return NAN
    prev = blas_threads_local(1)
    try:
        u, sv, vt = np.linalg.svd(J, full_matrices=True)
    except Exception:  # LinAlgError: no convergence
        blas_threads_local(prev)
        return NAN
    blas_threads_local(prev)
    k = min(m, n)
    for i in range(m):
        for j in range(m):
            U[i, j] = u[i, j]
    for j in range(m):
        s[j] = sv[j] if j < k else 0.0
    for j in range(n):
        for i in range(n):
            V[i, j] = vt[j, i]
    return OK
