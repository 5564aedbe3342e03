"""Second-order finite-volume operators of the staggered grid, on ghosted local arrays.

Every array carries one ghost layer on each side of each axis (filled by the caller: halo
exchange and boundary conditions), and every operator returns values for the owned cells
only. Placement (local index ``i, j, k`` of the owning cell):

- ``p`` at the cell centre ``(i, j, k)``,
- ``u`` at the x-face ``(i + 1/2, j, k)``, ``v`` at the y-face ``(i, j + 1/2, k)``,
  ``w`` at the z-face ``(i, j, k + 1/2)``.

Advection is in divergence form with centred averages (energy conserving on a uniform
grid, as in CaNS); y metrics allow a stretched grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.grid import StaggeredGrid

INTERIOR = slice(1, -1)
CENTRE = (INTERIOR, INTERIOR, INTERIOR)


def shifted(array: np.ndarray, di: int = 0, dj: int = 0, dk: int = 0) -> np.ndarray:
    """View of the owned cells of a ghosted array moved by ``(di, dj, dk)`` in {-1, 0, 1}."""
    index = []
    for offset, extent in zip((di, dj, dk), array.shape, strict=True):
        index.append(slice(1 + offset, extent - 1 + offset))
    return array[tuple(index)]


@dataclass(frozen=True)
class YMetrics:
    """y spacings broadcast against ghosted-array interiors (shape ``(1, ny, 1)``).

    ``width`` is the cell width at ``j``; ``width_up`` at ``j + 1``; ``gap`` the distance
    between centres ``j`` and ``j + 1`` (the width of the v control volume); ``gap_down``
    between ``j - 1`` and ``j``. Ghost cells mirror the first cells at walls.
    """

    width: np.ndarray
    width_up: np.ndarray
    gap: np.ndarray
    gap_down: np.ndarray

    @classmethod
    def from_grid(cls, grid: StaggeredGrid) -> YMetrics:
        widths = grid.widths_y
        ghosted = np.concatenate(
            (
                [widths[-1] if grid.periodic_y else widths[0]],
                widths,
                [widths[0] if grid.periodic_y else widths[-1]],
            )
        )
        gaps = 0.5 * (ghosted[:-1] + ghosted[1:])  # gaps[g]: centre g-1 to centre g (ghosted)

        def column(values):
            return np.asarray(values, dtype=np.float64).reshape(1, -1, 1)

        return cls(column(widths), column(ghosted[2:]), column(gaps[1:]), column(gaps[:-1]))


def divergence(u, v, w, metrics: YMetrics, dx: float, dz: float) -> np.ndarray:
    """Divergence at cell centres."""
    return (
        (shifted(u) - shifted(u, di=-1)) / dx
        + (shifted(v) - shifted(v, dj=-1)) / metrics.width
        + (shifted(w) - shifted(w, dk=-1)) / dz
    )


def pressure_gradient(p, metrics: YMetrics, dx: float, dz: float):
    """Gradient of a cell-centred field at the u, v and w faces."""
    return (
        (shifted(p, di=1) - shifted(p)) / dx,
        (shifted(p, dj=1) - shifted(p)) / metrics.gap,
        (shifted(p, dk=1) - shifted(p)) / dz,
    )


def laplacian_xz(f, dx: float, dz: float) -> np.ndarray:
    """x and z second differences (uniform spacing)."""
    centre = shifted(f)
    return (shifted(f, di=1) - 2 * centre + shifted(f, di=-1)) / dx**2 + (
        shifted(f, dk=1) - 2 * centre + shifted(f, dk=-1)
    ) / dz**2


def laplacian_y(f, metrics: YMetrics, at_faces: bool) -> np.ndarray:
    """y second difference of a field at cell centres (``at_faces=False``: u, w, p) or at
    y-faces (``True``: v), in flux form."""
    centre = shifted(f)
    if at_faces:
        upper = (shifted(f, dj=1) - centre) / metrics.width_up
        lower = (centre - shifted(f, dj=-1)) / metrics.width
        return (upper - lower) / metrics.gap
    upper = (shifted(f, dj=1) - centre) / metrics.gap
    lower = (centre - shifted(f, dj=-1)) / metrics.gap_down
    return (upper - lower) / metrics.width


def advection(u, v, w, metrics: YMetrics, dx: float, dz: float):
    """``∇·(u u)`` for the three components, each at its own faces."""
    half = 0.5
    # Products on the edges shared by two components.
    uv = half * (shifted(u) + shifted(u, dj=1)) * half * (shifted(v) + shifted(v, di=1))
    uw = half * (shifted(u) + shifted(u, dk=1)) * half * (shifted(w) + shifted(w, di=1))
    vw = half * (shifted(v) + shifted(v, dk=1)) * half * (shifted(w) + shifted(w, dj=1))
    # The same products one cell lower, from the ghost layer.
    uv_down = (
        half
        * (shifted(u, dj=-1) + shifted(u))
        * half
        * (shifted(v, dj=-1) + shifted(v, di=1, dj=-1))
    )
    uv_left = (
        half
        * (shifted(u, di=-1) + shifted(u, di=-1, dj=1))
        * half
        * (shifted(v, di=-1) + shifted(v))
    )
    uw_back = (
        half
        * (shifted(u, dk=-1) + shifted(u))
        * half
        * (shifted(w, dk=-1) + shifted(w, di=1, dk=-1))
    )
    uw_left = (
        half
        * (shifted(u, di=-1) + shifted(u, di=-1, dk=1))
        * half
        * (shifted(w, di=-1) + shifted(w))
    )
    vw_back = (
        half
        * (shifted(v, dk=-1) + shifted(v))
        * half
        * (shifted(w, dk=-1) + shifted(w, dj=1, dk=-1))
    )
    vw_down = (
        half
        * (shifted(v, dj=-1) + shifted(v, dj=-1, dk=1))
        * half
        * (shifted(w, dj=-1) + shifted(w))
    )
    uu_right = (half * (shifted(u) + shifted(u, di=1))) ** 2
    uu_left = (half * (shifted(u, di=-1) + shifted(u))) ** 2
    vv_up = (half * (shifted(v) + shifted(v, dj=1))) ** 2
    vv_down = (half * (shifted(v, dj=-1) + shifted(v))) ** 2
    ww_front = (half * (shifted(w) + shifted(w, dk=1))) ** 2
    ww_back = (half * (shifted(w, dk=-1) + shifted(w))) ** 2
    advect_u = (uu_right - uu_left) / dx + (uv - uv_down) / metrics.width + (uw - uw_back) / dz
    advect_v = (uv - uv_left) / dx + (vv_up - vv_down) / metrics.gap + (vw - vw_back) / dz
    advect_w = (uw - uw_left) / dx + (vw - vw_down) / metrics.width + (ww_front - ww_back) / dz
    return advect_u, advect_v, advect_w
