"""Simple block grids for tests and the built-in flat-plate case, and ghost nodes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def extrapolate_ghost_nodes(x, y, ghosts: int = 2, sides=("i_low", "i_high", "j_low", "j_high")):
    """Nodes ``(ni + 1, nj + 1)`` padded with ``ghosts`` layers, extrapolated linearly on
    ``sides`` (each ghost cell repeats the first cell's width); other sides stay zero for
    the caller (the exchange) to fill."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    g = ghosts
    out = []
    for a in (x, y):
        padded = np.zeros((a.shape[0] + 2 * g, a.shape[1] + 2 * g))
        padded[g:-g, g:-g] = a
        for k in range(1, g + 1):
            if "i_low" in sides:
                padded[g - k, g:-g] = a[0] - k * (a[1] - a[0])
            if "i_high" in sides:
                padded[-g - 1 + k, g:-g] = a[-1] + k * (a[-1] - a[-2])
        for k in range(1, g + 1):
            if "j_low" in sides:
                padded[:, g - k] = padded[:, g] - k * (padded[:, g + 1] - padded[:, g])
            if "j_high" in sides:
                padded[:, -g - 1 + k] = padded[:, -g - 1] + k * (
                    padded[:, -g - 1] - padded[:, -g - 2]
                )
        out.append(padded)
    return out[0], out[1]


def geometric_spacing(first: float, length: float, cells: int) -> np.ndarray:
    """``cells + 1`` coordinates from 0 to ``length`` whose first interval is ``first`` and
    intervals grow by a constant ratio (solved by bisection)."""
    if not 0 < first * cells <= length:
        raise ValueError(
            f"first spacing {first!r} times {cells} cells must be in (0, length = {length!r}]"
        )
    low, high = 1.0, 2.0
    while first * (high**cells - 1) / (high - 1) < length:
        high *= 2
    for _ in range(200):
        ratio = 0.5 * (low + high)
        total = first * cells if ratio == 1 else first * (ratio**cells - 1) / (ratio - 1)
        low, high = (ratio, high) if total < length else (low, ratio)
    steps = first * ratio ** np.arange(cells)
    coordinates = np.concatenate([[0.0], np.cumsum(steps)])
    return coordinates * (length / coordinates[-1])


def flat_plate_grid(
    cells_upstream: int = 16,
    cells_plate: int = 48,
    cells_normal: int = 32,
    upstream: float = 0.5,
    length: float = 1.0,
    height: float = 0.5,
    wall_spacing: float = 1e-3,
    leading_edge_spacing: float = 2e-3,
):
    """Nodes of an H-grid over a flat plate from ``x = 0`` to ``length``, with a symmetry
    plane ``upstream`` before it; clustered at the leading edge and the wall.

    Returns a :class:`BodyGrid` of ``(cells_upstream + cells_plate) x cells_normal`` cells
    whose wall is ``j = 0`` for ``i >= cells_upstream``.
    """
    plate = geometric_spacing(leading_edge_spacing, length, cells_plate)
    before = -geometric_spacing(leading_edge_spacing, upstream, cells_upstream)[::-1]
    xs = np.concatenate([before[:-1], plate])
    ys = geometric_spacing(wall_spacing, height, cells_normal)
    x, y = np.meshgrid(xs, ys, indexing="ij")
    wall = (cells_upstream, cells_upstream + cells_plate)
    return BodyGrid(x, y, wake_cells=0, wall=wall, name="flat-plate H-grid")


@dataclass(frozen=True)
class BodyGrid:
    """Nodes ``x, y`` of shape ``(ni + 1, nj + 1)`` of a grid round or along a body, the
    cells on each side of a wake cut (0: none) and the ``[start, stop)`` range of ``i``
    whose ``j = 0`` faces are the wall (elsewhere on ``j = 0``: the wake cut, or a
    symmetry plane)."""

    x: np.ndarray
    y: np.ndarray
    wake_cells: int
    wall: tuple[int, int]
    name: str = ""

    @property
    def cells(self) -> tuple[int, int]:
        return self.x.shape[0] - 1, self.x.shape[1] - 1
