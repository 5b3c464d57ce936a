"""Helpers shared by the element-network tests (``tests/elements``).

Nothing here reimplements the integrator: these are finite differences, printed-number
comparisons and small network builders.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
from mbstudy.solvers.elements import Network, build_network, load_netlist, parse_netlist

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "studies" / "networks"


def example(name: str) -> Network:
    """Return the network of ``studies/networks/NAME.net``."""
    return build_network(load_netlist(NETWORKS / f"{name}.net"))


def network(text: str) -> Network:
    """Return the network of netlist text."""
    return build_network(parse_netlist(text))


def half_ulp(printed: str) -> float:
    """Half a unit of the last printed digit of a decimal literal ('0.034' -> 5e-4)."""
    exp = Decimal(printed).as_tuple().exponent
    assert isinstance(exp, int)
    return 0.5 * 10.0**exp


def close_to_printed(value: float, printed: str, rel: float) -> bool:
    """True if ``value`` rounds to the printed number within ``rel`` (relative) slack.

    The seed prints rounded numbers: the allowed distance is half a unit of the last
    printed digit plus ``rel * |printed|`` (the discrepancy
    docs/reference/elements.md#seed-inconsistencies 5.4 attribute to the seed's inputs).
    """
    ref = float(printed)
    return abs(value - ref) <= half_ulp(printed) + rel * abs(ref)


def fd_jacobian(fun, z: np.ndarray, h: float) -> np.ndarray:
    """Central-difference Jacobian of ``fun`` (R^n -> R^m) at ``z`` with step ``h``."""
    z = np.asarray(z, dtype=float)
    cols = []
    for j in range(z.size):
        e = np.zeros_like(z)
        e[j] = h
        cols.append((np.asarray(fun(z + e)) - np.asarray(fun(z - e))) / (2.0 * h))
    return np.stack(cols, axis=-1)


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of log(ys) against log(xs)."""
    return float(np.polyfit(np.log(np.asarray(xs)), np.log(np.asarray(ys)), 1)[0])
