"""Finite-volume metrics of a structured block from its node coordinates (ghost nodes
included), and the distance of cell centres to the wall."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.compiled import kernel


@dataclass(frozen=True)
class BlockMetrics:
    """Faces, areas and centres of a block of ``ni x nj`` cells with ``ghosts`` layers.

    Attributes
    ----------
    x, y : ndarray, shape (ni + 2g + 1, nj + 2g + 1)
        Nodes, ghost nodes included.
    sxi, syi : ndarray, shape (ni + 2g + 1, nj + 2g)
        Normal of the i-face at node line ``I`` (between cells ``I-1`` and ``I``), towards
        increasing i, scaled by the face length.
    sxj, syj : ndarray, shape (ni + 2g, nj + 2g + 1)
        Normal of the j-face at node line ``J``, towards increasing j, scaled by length.
    area : ndarray, shape (ni + 2g, nj + 2g)
        Cell areas.
    xc, yc : ndarray, shape (ni + 2g, nj + 2g)
        Cell centroids.
    """

    x: np.ndarray
    y: np.ndarray
    sxi: np.ndarray
    syi: np.ndarray
    sxj: np.ndarray
    syj: np.ndarray
    area: np.ndarray
    xc: np.ndarray
    yc: np.ndarray
    ghosts: int

    @property
    def owned(self) -> tuple[slice, slice]:
        """Index of the owned cells in a padded cell array."""
        g = self.ghosts
        return slice(g, self.area.shape[0] - g), slice(g, self.area.shape[1] - g)

    @classmethod
    def from_nodes(cls, x, y, ghosts: int = 2) -> BlockMetrics:
        """Metrics of the nodes ``x, y`` (with ``ghosts`` layers of ghost nodes); ValueError
        when an owned cell has a non-positive area (a left-handed or folded grid)."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if x.shape != y.shape or x.ndim != 2:
            raise ValueError(f"x and y must be 2D arrays of one shape, got {x.shape}, {y.shape}")
        if min(x.shape) < 2 * ghosts + 2:
            raise ValueError(f"nodes {x.shape} leave no owned cell with {ghosts} ghost layers")
        sxi = y[:, 1:] - y[:, :-1]
        syi = -(x[:, 1:] - x[:, :-1])
        sxj = -(y[1:, :] - y[:-1, :])
        syj = x[1:, :] - x[:-1, :]
        # Two triangles per cell: area and centroid.
        x00, y00, x10, y10 = x[:-1, :-1], y[:-1, :-1], x[1:, :-1], y[1:, :-1]
        x11, y11, x01, y01 = x[1:, 1:], y[1:, 1:], x[:-1, 1:], y[:-1, 1:]
        a1 = 0.5 * ((x10 - x00) * (y11 - y00) - (x11 - x00) * (y10 - y00))
        a2 = 0.5 * ((x11 - x00) * (y01 - y00) - (x01 - x00) * (y11 - y00))
        area = a1 + a2
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = (a1 * (x00 + x10 + x11) + a2 * (x00 + x11 + x01)) / (3.0 * area)
            yc = (a1 * (y00 + y10 + y11) + a2 * (y00 + y11 + y01)) / (3.0 * area)
        metrics = cls(x, y, sxi, syi, sxj, syj, area, xc, yc, ghosts)
        owned = area[metrics.owned]
        if not (owned > 0).all():
            i, j = np.unravel_index(np.argmin(owned), owned.shape)
            raise ValueError(
                f"cell ({i}, {j}) has area {owned[i, j]:.3g}: the grid must be right-handed "
                "(j to the left of i) and unfolded"
            )
        return metrics


@kernel
def _segment_distance(px, py, segments, out):  # pragma: no cover - compiled
    for k in range(px.shape[0]):
        best = np.inf
        for s in range(segments.shape[0]):
            ax, ay, bx, by = segments[s, 0], segments[s, 1], segments[s, 2], segments[s, 3]
            dx, dy = bx - ax, by - ay
            length2 = dx * dx + dy * dy
            t = 0.0
            if length2 > 0.0:
                t = min(max(((px[k] - ax) * dx + (py[k] - ay) * dy) / length2, 0.0), 1.0)
            ex, ey = px[k] - ax - t * dx, py[k] - ay - t * dy
            best = min(best, ex * ex + ey * ey)
        out[k] = np.sqrt(best)


def wall_distance(xc, yc, segments) -> np.ndarray:
    """Distance from each point ``(xc, yc)`` to the nearest of the wall ``segments``
    (rows ``x0, y0, x1, y1``: the wall faces, gathered over all blocks); ``inf`` where there
    is no wall."""
    xc, yc = np.asarray(xc, float), np.asarray(yc, float)
    segments = np.ascontiguousarray(segments, dtype=float).reshape(-1, 4)
    out = np.empty(xc.size)
    _segment_distance(xc.ravel(), yc.ravel(), segments, out)
    return out.reshape(xc.shape)
