"""Named slots of the index-1 kernel workspace (the tuple ``common_alloc(n, m)`` returns).

Kernel templates read the workspace by these names, never by a bare position:
``ws[WS_U]`` is the stabilization input u, ``ws[WS_PHI_Q]`` the constraint Jacobian.
The generated kernel module star-imports this module (solvers/compose/harvest.py), so the names
are module globals there, which numba freezes as compile-time constants: a named read
costs exactly what ``ws[9]`` did.

The index-1 system these arrays belong to (M a + phi_q^T lam = Q, phi_q a = gamma + u) is
described in docs/explanation/solver-contract.md. A formulation that nests this workspace inside its
own tuple names its own slots in its module (e.g. ``QRW_INDEX1`` in formulations/qr.py).
"""

WS_M = 0  # (n, n) mass matrix M(q)
WS_Q = 1  # (n,) generalized forces Q(q, v, t)
WS_PHI_Q = 2  # (m, n) constraint Jacobian phi_q(q, t)
WS_GAMMA = 3  # (m,) acceleration right-hand side gamma(q, v, t)
WS_K = 4  # (n+m, n+m) LU factors of the augmented matrix, or the structured-solve factors
WS_R = 5  # (n+m,) right-hand side / solution of the augmented system
WS_PIV = 6  # (n+m+1,) int64 pivots; the last entry caches the mass structure (MASS_*)
WS_PHI = 7  # (m,) position-level constraint phi(q, t)
WS_DPHI = 8  # (m,) velocity-level residual phi_q v + phi_t
WS_U = 9  # (m,) stabilization input u added to gamma
WS_A = 10  # (n,) accelerations a (the solution)
WS_LAM = 11  # (m,) constraint multipliers lam (the solution)
WS_TMP = 12  # (n,) scratch vector
WS_SLOTS = 13  # number of arrays in the workspace
