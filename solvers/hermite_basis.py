"""Hermite interpolation bases of seed 001 and the element tables of its DVI (NumPy).

The reference construction of docs/explanation/methods.md#hermite with ``numpy.polynomial``, on the
unit interval tau = (t - t_i) / h in [0, 1]:

- :func:`hermite_unknown_derivative` — s points, values and derivatives at every node
  (seed 001 eqs. (11)-(15); degree 2s - 1). For s = 2 this is the two-point cubic of
  eq. (16), :func:`two_point_cubic`.
- :func:`hermite_known_derivative` — s points, degree s, the derivative known at one
  node tau_* (eqs. (5)-(8)): the Newton interpolant plus A * omega(tau). For s = 3 with
  nodes 0, 1/2, 1 and tau_* = 0 this is the three-point cubic of eq. (9),
  :func:`three_point_cubic`.
- the remainder kernels of eqs. (10), (17) and their general forms.
- :func:`element_basis` / :func:`basis_tables` — the DOF ordering and the values at
  Gauss–Legendre points that the ``hermite`` integrator uses; :func:`packed_tables`
  returns them for every ``order`` and ``n_gauss``, correctly rounded, from the generated
  ``solvers/hermite_tables_data.py`` (``solvers/hermite_tables_gen.py``), as the arrays the
  integrator's module holds as constants (its kernel indexes them, it computes no node or
  basis value).

Derivative DOFs are scaled: the basis function returned for a derivative is beta / h,
so that the DOF is Z = h dq/dt (a length). The seed's beta_k carry the factor h
(eq. (16): beta_1 = h tau (tau - 1)^2); multiply by h to get them.

References
----------
Seed 001 (Zhang, Wang & Ding), eqs. (5)-(17); docs/explanation/methods.md#hermite; Stoer & Bulirsch,
*Introduction to Numerical Analysis*, 3rd ed., 2002, Sect. 2.1.5 (Hermite interpolation
and its remainder).
"""

from __future__ import annotations

from math import factorial

import numpy as np
from numpy.polynomial import Polynomial
from numpy.polynomial.legendre import leggauss

__all__ = [
    "basis_tables",
    "element_basis",
    "equidistant_nodes",
    "gauss_legendre",
    "gauss_offset",
    "hermite_known_derivative",
    "hermite_unknown_derivative",
    "kinetic_matrix",
    "lagrange_basis",
    "packed_tables",
    "remainder_known",
    "remainder_unknown",
    "three_point_cubic",
    "two_point_cubic",
]

TAU = Polynomial([0.0, 1.0])


def gauss_legendre(r: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the r-point Gauss–Legendre nodes c (ascending) and weights b on [0, 1].

    sum(b) = 1; exact for polynomials of degree 2r - 1 (docs/explanation/methods.md#hermite).
    """
    x, w = leggauss(int(r))
    return 0.5 * (x + 1.0), 0.5 * w


def equidistant_nodes(s: int) -> np.ndarray:
    """Return the s equidistant nodes 0, 1/(s-1), ..., 1 (docs/explanation/methods.md#hermite),
    each k/(s-1) correctly rounded (``linspace`` gives 0.6000000000000001 for 3/5)."""
    s = int(s)
    return np.arange(s) / (s - 1.0)


def lagrange_basis(nodes: np.ndarray) -> list[Polynomial]:
    """Return the Lagrange polynomials l_k(tau) = prod_{j != k} (tau - tau_j)/(tau_k - tau_j)."""
    nodes = np.asarray(nodes, dtype=float)
    out = []
    for k, tk in enumerate(nodes):
        lk = Polynomial([1.0])
        for j, tj in enumerate(nodes):
            if j != k:
                lk = lk * (TAU - tj) / (tk - tj)
        out.append(lk)
    return out


def hermite_unknown_derivative(nodes: np.ndarray) -> tuple[list[Polynomial], list[Polynomial]]:
    """Hermite basis with values and derivatives at every node (seed eqs. (11)-(15)).

    alpha_k = [1 - 2 l_k'(tau_k)(tau - tau_k)] l_k^2,  beta_k / h = (tau - tau_k) l_k^2,
    so q_d = sum_k alpha_k q_k + (beta_k / h) Z_k with Z_k = h q'(t_k). Degree 2s - 1.

    Returns
    -------
    (alphas, betas) : lists of s polynomials each (betas without the factor h).
    """
    nodes = np.asarray(nodes, dtype=float)
    ls = lagrange_basis(nodes)
    alphas, betas = [], []
    for tk, lk in zip(nodes, ls, strict=True):
        dlk = lk.deriv()(tk)
        alphas.append((1.0 - 2.0 * dlk * (TAU - tk)) * lk**2)
        betas.append((TAU - tk) * lk**2)
    return alphas, betas


def hermite_known_derivative(
    nodes: np.ndarray, tau_star: float = 0.0
) -> tuple[list[Polynomial], Polynomial]:
    """s-point, degree-s basis with the derivative known at ``tau_star`` (seed eqs. (5)-(8)).

    The s-point Newton (= Lagrange) interpolant plus A omega(tau), omega = prod (tau - tau_k),
    with A fixed by q_d'(tau_*) = h q'(t_*) (docs/explanation/methods.md#hermite (i)):

        alpha_k = l_k - l_k'(tau_*) / omega'(tau_*) * omega,   beta / h = omega / omega'(tau_*).

    Raises
    ------
    ValueError
        If omega'(tau_*) = 0 (tau_* is not a simple point for the construction).
    """
    nodes = np.asarray(nodes, dtype=float)
    omega = Polynomial([1.0])
    for tk in nodes:
        omega = omega * (TAU - tk)
    dom = omega.deriv()(tau_star)
    if dom == 0.0:
        raise ValueError(f"omega'(tau_*) = 0 at tau_* = {tau_star}: derivative cannot be imposed")
    alphas = [lk - lk.deriv()(tau_star) / dom * omega for lk in lagrange_basis(nodes)]
    return alphas, omega / dom


def two_point_cubic() -> tuple[list[Polynomial], list[Polynomial]]:
    """Seed eq. (16) verbatim (betas divided by h): the two-point cubic Hermite basis."""
    a1 = (1 + 2 * TAU) * (TAU - 1) ** 2
    a2 = (3 - 2 * TAU) * TAU**2
    b1 = TAU * (TAU - 1) ** 2
    b2 = (TAU - 1) * TAU**2
    return [a1, a2], [b1, b2]


def three_point_cubic() -> tuple[list[Polynomial], Polynomial]:
    """Seed eq. (9) (docs/explanation/methods.md#hermite): nodes 0, 1/2, 1, derivative known at
    0."""
    a1 = (TAU - 1) * (2 * TAU - 1) * (3 * TAU + 1)
    a2 = 8 * TAU**2 * (1 - TAU)
    a3 = TAU**2 * (2 * TAU - 1)
    b = TAU * (TAU - 1) * (2 * TAU - 1)
    return [a1, a2, a3], b


def remainder_unknown(nodes: np.ndarray) -> tuple[Polynomial, float]:
    """Remainder of the unknown-derivative basis: R = q^(2s)(xi) h^(2s) / (2s)! * kernel.

    Returns (kernel, 1/(2s)!) with kernel = prod_k (tau - tau_k)^2 (eq. (17) for s = 2).
    """
    nodes = np.asarray(nodes, dtype=float)
    ker = Polynomial([1.0])
    for tk in nodes:
        ker = ker * (TAU - tk) ** 2
    return ker, 1.0 / factorial(2 * nodes.size)


def remainder_known(nodes: np.ndarray, tau_star: float = 0.0) -> tuple[Polynomial, float]:
    """Remainder of the known-derivative basis: R = q^(s+1)(xi) h^(s+1) / (s+1)! * kernel.

    Returns (kernel, 1/(s+1)!) with kernel = (tau - tau_*) prod_k (tau - tau_k)
    (eq. (10) for s = 3: tau^2 (tau - 1/2)(tau - 1)).
    """
    nodes = np.asarray(nodes, dtype=float)
    ker = TAU - tau_star
    for tk in nodes:
        ker = ker * (TAU - tk)
    return ker, 1.0 / factorial(nodes.size + 1)


def element_basis(order: int) -> tuple[list[Polynomial], np.ndarray, np.ndarray]:
    """The interval basis of the ``hermite`` integrator, in its DOF order.

    order 2: two-point cubic with unknown derivatives, DOFs (q_i, q_{i+1}, Z_i, Z_{i+1})
    (docs/explanation/methods.md#hermite scheme A-ii, "H2"). order s >= 3: s equidistant points,
    degree s, derivative known at tau = 0, DOFs (q_{i,1} = q_i, q_{i,2}, ..., q_{i,s} = q_{i+1},
    Z_i) (scheme A-i, "H3" for s = 3). Z = h dq/dt.

    Returns
    -------
    basis : list of polynomials, one per DOF.
    kind : (n_dof,) int, 0 for a value DOF, 1 for a derivative DOF.
    tau : (n_dof,) node of each DOF.
    """
    order = int(order)
    if order == 2:
        nodes = np.array([0.0, 1.0])
        al, be = hermite_unknown_derivative(nodes)
        return al + be, np.array([0, 0, 1, 1]), np.array([0.0, 1.0, 0.0, 1.0])
    if order < 2:
        raise ValueError(f"order must be >= 2, not {order}")
    nodes = equidistant_nodes(order)
    al, be = hermite_known_derivative(nodes, 0.0)
    kind = np.zeros(order + 1, dtype=int)
    kind[-1] = 1
    return [*al, be], kind, np.append(nodes, 0.0)


def basis_tables(order: int, n_gauss: int) -> dict[str, np.ndarray]:
    """Values the kernel needs: Gauss nodes/weights and the basis and its tau-derivative there.

    Returns a dict with ``c``, ``b`` (r,), ``N``, ``dN`` (n_dof, r), ``N1``, ``dN1``
    (n_dof,) at tau = 1, ``kind`` and ``tau`` (n_dof,), and ``E`` (n_dof, n_dof), the
    Newton predictor that extrapolates an interval's DOFs into the next one's:
    E[a2, a] = N_a(1 + tau_a2) for a value DOF a2, N_a'(1 + tau_a2) for a derivative DOF
    (Z = dq_d/dtau).
    """
    basis, kind, tau = element_basis(order)
    c, b = gauss_legendre(n_gauss)
    E = np.array(
        [[(f if k2 == 0 else f.deriv())(1.0 + t2) for f in basis]
         for k2, t2 in zip(kind, tau, strict=True)]
    )  # fmt: skip
    return {
        "c": c,
        "b": b,
        "N": np.array([f(c) for f in basis]),
        "dN": np.array([f.deriv()(c) for f in basis]),
        "N1": np.array([f(1.0) for f in basis]),
        "dN1": np.array([f.deriv()(1.0) for f in basis]),
        "kind": kind,
        "tau": tau,
        "E": E,
    }


def gauss_offset(r: int) -> int:
    """Start of the r-point rule in the packed Gauss tables: r (r - 1) / 2."""
    return r * (r - 1) // 2


def packed_tables(order_max: int, gauss_max: int) -> dict[str, np.ndarray]:
    """The tables of every order 2..order_max and n_gauss 1..gauss_max, packed, each entry
    the double nearest to its exact value.

    Read from the generated data module ``solvers/hermite_tables_data.py``
    (``python -m mbstudy.solvers.hermite_tables_gen`` writes it in high precision, ``--check``
    fails if it is stale); :func:`basis_tables` is the same in NumPy arithmetic, off by up to
    ~1e3 ulps at order 6. The ``hermite`` integrator keeps these as module constants (numba
    freezes them into the kernel, and their values are part of the kernel's text, hence of
    its cache key). With o = order - 2, r = n_gauss and the offset ``gauss_offset(r)`` =
    r (r - 1) / 2:

    - ``c``, ``b`` (gauss_max (gauss_max + 1) / 2,): the r-point nodes and weights on
      [0, 1] at [off, off + r);
    - ``N``, ``dN`` (order_max - 1, order_max + 1, same): N_a(c_j), N_a'(c_j) at
      [o, a, off + j];
    - ``N1``, ``dN1``, ``tau`` (order_max - 1, order_max + 1), ``kind`` (int64, same) and
      ``E`` (order_max - 1, order_max + 1, order_max + 1): the order's values at [o, a]
      and [o, a2, a].

    Rows a >= n_dof of an order (4 for order 2, s + 1 for order s) are zero.

    Raises
    ------
    ValueError
        If order_max or gauss_max exceeds the generated tables' (6 and 12).
    """
    from mbstudy.solvers import hermite_tables_data as data

    if not (2 <= order_max <= data.ORDER_MAX and 1 <= gauss_max <= data.GAUSS_MAX):
        raise ValueError(f"tables are generated for order <= {data.ORDER_MAX} and n_gauss <= "
                         f"{data.GAUSS_MAX}, not {order_max} and {gauss_max}")
    no, nd, width = order_max - 1, order_max + 1, gauss_offset(gauss_max + 1)
    out = {key: np.array(getattr(data, key.upper()), dtype=float)
           for key in ("c", "b", "N", "dN", "N1", "dN1", "tau", "E")}  # fmt: skip
    out["kind"] = np.array(data.KIND, dtype=np.int64)
    for key in ("c", "b"):
        out[key] = out[key][:width].copy()
    for key in ("N", "dN"):
        out[key] = out[key][:no, :nd, :width].copy()
    for key in ("N1", "dN1", "tau", "kind"):
        out[key] = out[key][:no, :nd].copy()
    out["E"] = out["E"][:no, :nd, :nd].copy()
    return out


def kinetic_matrix(order: int, n_gauss: int | None = None) -> np.ndarray:
    """h K = int_0^1 N_a' N_b' dtau (exact, or by ``n_gauss``-point quadrature).

    With h = 1 this is the table of docs/explanation/methods.md#hermite (whose derivative DOFs are w
    = Z / h).
    """
    basis, _, _ = element_basis(order)
    if n_gauss is None:
        return np.array(
            [[(fa.deriv() * fb.deriv()).integ()(1.0) for fb in basis] for fa in basis]
        )
    c, b = gauss_legendre(n_gauss)
    d = np.array([f.deriv()(c) for f in basis])
    return (d * b) @ d.T
