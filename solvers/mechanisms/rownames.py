"""Names of a mechanism file's constraint rows, built like its coordinate names
(``crank.x``): the joint's bodies and the row's meaning.

- a joint: ``<body i>-<body j>.<row>`` from its two points (``crank-ground.x``), or
  ``<name>.<row>`` when the joint has a ``name``; the row names follow the row order of
  ``planar.py`` / ``spatial.py`` (a planar revolute ``x, y``; a spatial revolute
  ``x, y, z`` for the coincident points, then ``axis1, axis2`` for the parallel axes);
- a driver: ``<coordinate>.driver`` (``crank.theta.driver``), ``<a>-<b>.theta.driver``
  for a relative one, ``<name>.driver`` when named;
- the Euler-parameter normalization row of a spatial body: ``<body>.e_norm``.

A second joint between the same two bodies gets ``#2`` after its bodies
(``crank-ground#2.x``), so that every name is unique within the model.
"""

from __future__ import annotations

from typing import Any

#: row names by (dimension, joint type), in the row order of planar.py and spatial.py
JOINT_ROWS: dict[tuple[int, str], tuple[str, ...]] = {
    (2, "revolute"): ("x", "y"),
    (2, "prismatic"): ("normal", "theta"),
    (2, "fixed"): ("x", "y", "theta"),
    (3, "spherical"): ("x", "y", "z"),
    (3, "revolute"): ("x", "y", "z", "axis1", "axis2"),
    (3, "universal"): ("x", "y", "z", "cross"),
    (3, "cylindrical"): ("axis1", "axis2", "line1", "line2"),
    (3, "prismatic"): ("axis1", "axis2", "line1", "line2", "twist"),
    (3, "fixed"): ("x", "y", "z", "xy", "yz", "zx"),
}


def _body(ref: Any) -> str:
    """The body of a point reference ``BODY.POINT`` (validated by the caller)."""
    return str(ref).split(".", 1)[0]


class RowNamer:
    """Hands out the unique row names of one mechanism, element by element."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.bases: dict[str, int] = {}

    def _unique(self, base: str) -> str:
        n = self.bases.get(base, 0) + 1
        self.bases[base] = n
        return base if n == 1 else f"{base}#{n}"

    def joint(self, data: dict[str, Any], jtype: str, nrows: int) -> list[str]:
        """Names of a joint's ``nrows`` rows (``crank-ground.x``, ``crank-ground.y``)."""
        base = data.get("name") or "-".join(_body(r) for r in data["at"])
        base = self._unique(str(base))
        rows = JOINT_ROWS.get((self.dimension, jtype), ())
        if len(rows) != nrows:
            rows = tuple(f"r{k}" for k in range(nrows))
        return [f"{base}.{r}" for r in rows]

    def driver(self, data: dict[str, Any]) -> str:
        """Name of a driver's row (``crank.theta.driver``)."""
        if data.get("name"):
            base = str(data["name"])
        elif "coordinate" in data:
            base = str(data["coordinate"])
        else:
            base = "-".join(str(b) for b in data["relative"]) + ".theta"
        return f"{self._unique(base)}.driver"

    def normalization(self, body: str) -> str:
        """Name of a spatial body's Euler-parameter normalization row (``rod.e_norm``)."""
        return f"{self._unique(body)}.e_norm"
