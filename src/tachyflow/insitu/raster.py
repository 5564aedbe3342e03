"""Pictures of a 2D curvilinear grid from its blocks: each block's quads sampled at the
pixels of a view window (MPI-free).

A piece of a picture is what one block covers of a regular grid of pixel centres over the
window ``(x_min, x_max, y_min, y_max)``: each quad of nodes is split into two triangles and
every pixel centre inside one gets the value interpolated linearly from the nodes. The
piece is two arrays the size of the picture, the sums of the values a pixel got and how
many it got (a centre on an edge falls in both triangles, or both blocks: their values
agree there and are averaged), so pieces combine by adding them, in any order and over any
number of blocks (a reduction of picture-sized arrays; no block's geometry moves), and
:func:`composite` turns the sums into the picture, NaN where nothing covers a pixel (inside
the body). Every quad belongs to one block, so the picture does not depend on the block
layout beyond the round-off of those averages.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel

#: How far outside a triangle (in barycentric coordinates) a pixel centre still counts as
#: in it: centres on an edge shared by two triangles must not fall through the seam.
EDGE_TOLERANCE = 1e-12


def pixel_centres(window, shape) -> tuple[np.ndarray, np.ndarray]:
    """The x and y coordinates of the pixel centres of ``shape = (nx, ny)`` pixels over
    ``window = (x_min, x_max, y_min, y_max)``."""
    (x_min, x_max, y_min, y_max), (nx, ny) = check_window(window), check_shape(shape)
    dx, dy = (x_max - x_min) / nx, (y_max - y_min) / ny
    return x_min + (np.arange(nx) + 0.5) * dx, y_min + (np.arange(ny) + 0.5) * dy


def rasterise_block(x, y, values, window, shape) -> np.ndarray:
    """One block's piece of a picture: array ``(2, nx, ny)`` of the sums of the values
    each pixel centre got and of their count.

    Parameters
    ----------
    x, y, values : ndarray, shape (ni + 1, nj + 1)
        The block's node coordinates and the field at its nodes.
    window : (x_min, x_max, y_min, y_max)
        What the picture shows.
    shape : (int, int)
        Pixels along x and along y.
    """
    (x_min, x_max, y_min, y_max), (nx, ny) = check_window(window), check_shape(shape)
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (x, y, values)]
    if (
        arrays[0].ndim != 2
        or min(arrays[0].shape) < 2
        or any(a.shape != arrays[0].shape for a in arrays)
    ):
        raise ValueError(
            f"x, y and values must be node arrays of one shape (at least 2 x 2), got "
            f"{[np.shape(a) for a in (x, y, values)]}"
        )
    piece = np.zeros((2, nx, ny))
    _rasterise(*arrays, x_min, y_min, (x_max - x_min) / nx, (y_max - y_min) / ny, piece)
    return piece


def composite(sums: np.ndarray) -> np.ndarray:
    """The picture ``(nx, ny)`` of the summed pieces of every block: the mean value each
    pixel got, NaN where no block covers it."""
    total, count = sums
    picture = np.full(total.shape, np.nan)
    np.divide(total, count, out=picture, where=count > 0)
    return picture


@kernel
def _rasterise(x, y, values, x0, y0, dx, dy, piece):  # pragma: no cover - compiled
    ni, nj = x.shape[0] - 1, x.shape[1] - 1
    for i in range(ni):
        for j in range(nj):
            # The quad (i, j), (i+1, j), (i+1, j+1), (i, j+1) as two triangles.
            _triangle(x[i, j], y[i, j], values[i, j], x[i + 1, j], y[i + 1, j],
                      values[i + 1, j], x[i + 1, j + 1], y[i + 1, j + 1], values[i + 1, j + 1],
                      x0, y0, dx, dy, piece)
            _triangle(x[i, j], y[i, j], values[i, j], x[i + 1, j + 1], y[i + 1, j + 1],
                      values[i + 1, j + 1], x[i, j + 1], y[i, j + 1], values[i, j + 1],
                      x0, y0, dx, dy, piece)


@kernel
def _triangle(ax, ay, av, bx, by, bv, cx, cy, cv, x0, y0, dx, dy, piece):  # pragma: no cover
    determinant = (by - cy) * (ax - cx) + (cx - bx) * (ay - cy)
    if determinant == 0.0:
        return
    nx, ny = piece.shape[1], piece.shape[2]
    # Pixels whose centres x0 + (k + 1/2) dx lie within the triangle's bounding box.
    k_first = max(int(np.ceil((min(ax, bx, cx) - x0) / dx - 0.5)), 0)
    k_last = min(int(np.floor((max(ax, bx, cx) - x0) / dx - 0.5)), nx - 1)
    l_first = max(int(np.ceil((min(ay, by, cy) - y0) / dy - 0.5)), 0)
    l_last = min(int(np.floor((max(ay, by, cy) - y0) / dy - 0.5)), ny - 1)
    for k in range(k_first, k_last + 1):
        px = x0 + (k + 0.5) * dx
        for m in range(l_first, l_last + 1):
            py = y0 + (m + 0.5) * dy
            a = ((by - cy) * (px - cx) + (cx - bx) * (py - cy)) / determinant
            b = ((cy - ay) * (px - cx) + (ax - cx) * (py - cy)) / determinant
            c = 1.0 - a - b
            if a >= -EDGE_TOLERANCE and b >= -EDGE_TOLERANCE and c >= -EDGE_TOLERANCE:
                piece[0, k, m] += a * av + b * bv + c * cv
                piece[1, k, m] += 1.0


def check_window(window) -> tuple[float, float, float, float]:
    """``window`` as 4 floats, after checking it is a finite, non-empty rectangle."""
    try:
        x_min, x_max, y_min, y_max = (float(v) for v in window)
    except (TypeError, ValueError):
        raise ValueError(f"window must be 4 numbers (x_min, x_max, y_min, y_max), got "
                         f"{window!r}") from None
    if not all(np.isfinite((x_min, x_max, y_min, y_max))) or x_min >= x_max or y_min >= y_max:
        raise ValueError(f"window must be finite with x_min < x_max and y_min < y_max, got "
                         f"{window!r}")
    return x_min, x_max, y_min, y_max


def check_shape(shape) -> tuple[int, int]:
    """``shape`` as 2 ints, after checking both are integers >= 2."""
    if (
        not hasattr(shape, "__len__")
        or len(shape) != 2
        or any(not isinstance(n, int | np.integer) or isinstance(n, bool) for n in shape)
        or min(shape) < 2
    ):
        raise ValueError(f"shape must be two integers >= 2 (pixels along x, y), got {shape!r}")
    return int(shape[0]), int(shape[1])
