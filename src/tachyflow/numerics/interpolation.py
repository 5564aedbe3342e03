"""Trilinear interpolation of staggered-grid fields at arbitrary points (MPI-free).

Each quantity lives at its own positions on the MAC grid of
:class:`~tachyflow.numerics.grid.StaggeredGrid` (those of
``IncompressibleSolver.coordinates``): with ``i, j, k`` the cell,

======== ==================== ==================== ==================
quantity x                    y                    z
======== ==================== ==================== ==================
``u``    ``faces_x[i + 1]``   ``centres_y[j]``     ``(k + 1/2) dz``
``v``    ``centres_x[i]``     ``faces_y[j + 1]``   ``(k + 1/2) dz``
``w``    ``centres_x[i]``     ``centres_y[j]``     ``(k + 1) dz``
``p``    ``centres_x[i]``     ``centres_y[j]``     ``(k + 1/2) dz``
======== ==================== ==================== ==================

so every component sits on the *upper* face of its cell. A point's stencil for one
quantity is the 8 positions around it: along each axis the lower neighbour is found by
``searchsorted`` on that quantity's positions (uniform in x and z, stretched or uniform
in y), and the weights are the products of the linear weights of the three axes, so a
field linear in x, y and z is reproduced to rounding. Points wrap periodically in x and
z, and in y when it is periodic; with walls in y a point must lie between the first and
last cell centres (the v stencil may then use the lower wall face, ``j = -1``: the
solver's ghost row holds ``v = 0`` there).

Every stencil index lies within one cell of the cell that contains the point, along every
axis and for every staggering (the centred positions bracket the point from the cell or
its lower neighbour, the upper-face positions from the lower neighbour's face and the
cell's own), so the rank owning that cell holds the whole stencil in a ghost layer of
width 1. :class:`InterpolationStencils` keeps both numberings: the unwrapped lower corners
(for reading from that rank's ghosted array) and the wrapped global indices (for finding
the owner of each value).

The kernels that read stencil values out of ghosted arrays, interpolate and form the FW-H
source terms of a permeable surface are compiled with numba; all callers use the same
kernels in the same order, so every path gives bitwise-identical results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.grid import StaggeredGrid

QUANTITIES = ("u", "v", "w", "p")
CORNERS = 8
# Corner c = 4 a + 2 b + d of a stencil is the lower corner moved by (a, b, d).
CORNER_OFFSETS = np.array(
    [(a, b, d) for a in (0, 1) for b in (0, 1) for d in (0, 1)], dtype=np.int64
)
# Offset of each quantity's positions from the cell's lower corner in x and z, in cells.
_X_OFFSETS = (1.0, 0.5, 0.5, 0.5)
_Z_OFFSETS = (0.5, 0.5, 1.0, 0.5)


@dataclass(frozen=True)
class InterpolationStencils:
    """Where and how strongly each point reads each quantity (arrays over ``n`` points).

    Attributes
    ----------
    cells : numpy.ndarray, shape (n, 3), int64
        Global index of the cell containing each (wrapped) point.
    lower : numpy.ndarray, shape (n, 4, 3), int64
        Lower corner of the stencil of each quantity (u, v, w, p), not wrapped: it may be
        ``-1`` or the axis length across a periodic boundary, and lies within one cell of
        ``cells`` along every axis.
    indices : numpy.ndarray, shape (n, 4, 8, 3), int64
        Global ``(i, j, k)`` of each corner, wrapped into the grid along periodic axes
        (``j = -1`` remains for the lower wall face of v).
    weights : numpy.ndarray, shape (n, 4, 8)
        Trilinear weights, summing to 1 per point and quantity.
    """

    cells: np.ndarray
    lower: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    @property
    def points(self) -> int:
        """Number of points."""
        return self.cells.shape[0]


def _wrap(coordinate: np.ndarray, length: float) -> np.ndarray:
    """Periodic image in ``[0, length)`` (``np.mod`` may round up to ``length`` itself)."""
    wrapped = np.mod(coordinate, length)
    wrapped[wrapped >= length] = 0.0
    return wrapped


def _bracket(positions: np.ndarray, first: int, coordinate: np.ndarray):
    """Lower index (numbered from ``first``) and fraction of the interval of ``positions``
    holding each coordinate; the last interval also takes its upper end."""
    interval = np.searchsorted(positions, coordinate, side="right") - 1
    interval = np.clip(interval, 0, positions.size - 2)
    below, above = positions[interval], positions[interval + 1]
    return interval + first, (coordinate - below) / (above - below)


def check_points(points) -> np.ndarray:
    """``points`` as a C-ordered float64 ``(n, 3)`` array; ValueError if not finite
    coordinates of that shape."""
    array = np.ascontiguousarray(points, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"points must have shape (n, 3), got {array.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(array), axis=1))
    if bad.size:
        raise ValueError(f"point {bad[0]} is not finite: {array[bad[0]].tolist()}")
    return array


def interpolation_stencils(grid: StaggeredGrid, points) -> InterpolationStencils:
    """Trilinear stencils of u, v, w and p at ``points`` (see the module notes).

    Parameters
    ----------
    grid : StaggeredGrid
        Geometry; x and z periodic, y periodic or walls.
    points : array_like, shape (n, 3)
        Coordinates, anywhere along periodic axes.

    Returns
    -------
    InterpolationStencils

    Raises
    ------
    ValueError
        Points not ``(n, 3)`` finite numbers; with walls, fewer than 2 cells in y or a
        point outside the band between the first and last cell centres (the first such
        point is named).
    """
    points = check_points(points)
    nx, ny, nz = grid.shape
    length_x, length_y, length_z = grid.lengths
    dz = grid.spacing_z
    x = _wrap(points[:, 0], length_x)
    z = _wrap(points[:, 2], length_z)
    centres_y, faces_y = grid.centres_y, grid.faces_y
    if grid.periodic_y:
        y = _wrap(points[:, 1], length_y)
        # Centres one period below and above bracket the points near y = 0 and y = Ly.
        centre_positions = np.concatenate(
            ([centres_y[-1] - length_y], centres_y, [centres_y[0] + length_y])
        )
        centre_first = -1
    else:
        if ny < 2:
            raise ValueError(
                f"interpolation between walls needs at least 2 cells in y, the grid has {ny}"
            )
        y = points[:, 1]
        outside = np.flatnonzero((y < centres_y[0]) | (y > centres_y[-1]))
        if outside.size:
            raise ValueError(
                f"point {outside[0]} at {points[outside[0]].tolist()} lies outside "
                f"{centres_y[0]:.6g} <= y <= {centres_y[-1]:.6g}, the band between the first "
                f"and last cell centres in which values can be interpolated between the "
                f"walls ({outside.size} point(s) do)"
            )
        centre_positions, centre_first = centres_y, 0
    # The cell holding a point comes from the same kind of search over exactly computed
    # face positions as the stencils below, so the two always agree.
    faces_x, faces_z = grid.faces_x, np.arange(nz + 1) * dz
    # x positions of the ghosted u (faces) and of the centred quantities (a stretched x's
    # own, the ghosts beyond its ends mirrored).
    ghosted_x = {1.0: grid.ghosted_faces_x(), 0.5: grid.ghosted_centres_x()}
    cells = np.stack(
        [
            np.clip(np.searchsorted(faces_x, x, side="right") - 1, 0, nx - 1),
            np.clip(np.searchsorted(faces_y, y, side="right") - 1, 0, ny - 1),
            np.clip(np.searchsorted(faces_z, z, side="right") - 1, 0, nz - 1),
        ],
        axis=1,
    )

    n = points.shape[0]
    lower = np.empty((n, len(QUANTITIES), 3), dtype=np.int64)
    fractions = np.empty((n, len(QUANTITIES), 3))
    for quantity in range(len(QUANTITIES)):
        positions_x = ghosted_x[_X_OFFSETS[quantity]]
        positions_z = (np.arange(-1, nz + 1) + _Z_OFFSETS[quantity]) * dz
        lower[:, quantity, 0], fractions[:, quantity, 0] = _bracket(positions_x, -1, x)
        lower[:, quantity, 2], fractions[:, quantity, 2] = _bracket(positions_z, -1, z)
        if QUANTITIES[quantity] == "v":  # v[j] sits on faces_y[j + 1]
            lower[:, quantity, 1], fractions[:, quantity, 1] = _bracket(faces_y, -1, y)
        else:
            lower[:, quantity, 1], fractions[:, quantity, 1] = _bracket(
                centre_positions, centre_first, y
            )
    indices = lower[:, :, None, :] + CORNER_OFFSETS[None, None, :, :]
    indices[..., 0] %= nx
    indices[..., 2] %= nz
    if grid.periodic_y:
        indices[..., 1] %= ny
    linear = np.stack([1.0 - fractions, fractions], axis=-1)  # (n, 4, 3, 2)
    weights = np.empty((n, len(QUANTITIES), CORNERS))
    for corner, (a, b, d) in enumerate(CORNER_OFFSETS):
        weights[:, :, corner] = linear[:, :, 0, a] * linear[:, :, 1, b] * linear[:, :, 2, d]
    return InterpolationStencils(cells, lower, indices, weights)


def ghosted_flat_indices(indices: np.ndarray, start, ghosted_shape, width: int) -> np.ndarray:
    """Flat positions in a rank's ghosted C-ordered array of global ``(i, j, k)`` indices.

    ``start`` is the global index of the rank's first owned cell; ghost cells are reached
    by indices just outside the owned range (down to ``start - width``).
    """
    local = indices - np.asarray(start, dtype=np.int64) + int(width)
    _, size_y, size_z = ghosted_shape
    return (local[..., 0] * size_y + local[..., 1]) * size_z + local[..., 2]


@kernel
def take_values(u, v, w, p, quantity, flat, out):  # pragma: no cover
    """``out[m] = field[quantity[m]].flat[flat[m]]`` over the flat views of the four
    fields (u, v, w, p): packing stencil values in any order."""
    for m in range(out.size):
        q = quantity[m]
        if q == 0:
            out[m] = u[flat[m]]
        elif q == 1:
            out[m] = v[flat[m]]
        elif q == 2:
            out[m] = w[flat[m]]
        else:
            out[m] = p[flat[m]]


@kernel
def _source_row(u, v, w, pressure, normal, rho0, p0, out):  # pragma: no cover
    """FW-H source terms of one point of a stationary permeable surface (see below)."""
    normal_velocity = u * normal[0] + v * normal[1] + w * normal[2]
    gauge = pressure - p0
    momentum = rho0 * normal_velocity
    out[0] = normal_velocity
    out[1] = gauge * normal[0] + momentum * u
    out[2] = gauge * normal[1] + momentum * v
    out[3] = gauge * normal[2] + momentum * w


@kernel
def _interpolated_sources(values, weights, normals, rho0, p0, out):  # pragma: no cover
    sampled = np.empty(4)
    for point in range(values.shape[0]):
        for quantity in range(4):
            total = 0.0
            for corner in range(8):
                total += weights[point, quantity, corner] * values[point, quantity, corner]
            sampled[quantity] = total
        _source_row(
            sampled[0], sampled[1], sampled[2], sampled[3], normals[point], rho0, p0, out[point]
        )


@kernel
def _gathered_sources(u, v, w, p, flat, weights, normals, rho0, p0, out):  # pragma: no cover
    """:func:`_interpolated_sources` reading each stencil value straight from the fields:
    the same products and sums in the same order, without a copy of the values."""
    sampled = np.empty(4)
    for point in range(flat.shape[0]):
        for quantity in range(4):
            field = u if quantity == 0 else v if quantity == 1 else w if quantity == 2 else p
            total = 0.0
            for corner in range(8):
                total += weights[point, quantity, corner] * field[flat[point, quantity, corner]]
            sampled[quantity] = total
        _source_row(
            sampled[0], sampled[1], sampled[2], sampled[3], normals[point], rho0, p0, out[point]
        )


@kernel
def _sources(velocity, pressure, normals, rho0, p0, out):  # pragma: no cover
    for point in range(velocity.shape[0]):
        _source_row(
            velocity[point, 0],
            velocity[point, 1],
            velocity[point, 2],
            pressure[point],
            normals[point],
            rho0,
            p0,
            out[point],
        )


@kernel
def _interpolate(values, weights, out):  # pragma: no cover
    for point in range(values.shape[0]):
        for quantity in range(values.shape[1]):
            total = 0.0
            for corner in range(8):
                total += weights[point, quantity, corner] * values[point, quantity, corner]
            out[point, quantity] = total


def interpolate(values, weights) -> np.ndarray:
    """``Σ_c weights[..., c] values[..., c]`` per point and quantity, corners in order.

    Parameters
    ----------
    values, weights : array_like, shape (n, 4, 8)
        Stencil values (from :attr:`InterpolationStencils.indices`) and weights.

    Returns
    -------
    numpy.ndarray, shape (n, 4)
        u, v, w and p at the points.
    """
    values, weights = _stencil_arrays(values, weights)
    out = np.empty(values.shape[:2])
    _interpolate(values, weights, out)
    return out


def _stencil_arrays(values, weights):
    values = np.ascontiguousarray(values, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if values.ndim != 3 or values.shape[1:] != (len(QUANTITIES), CORNERS):
        raise ValueError(f"stencil values must have shape (n, 4, 8), got {values.shape}")
    if weights.shape != values.shape:
        raise ValueError(f"weights have shape {weights.shape}, values {values.shape}")
    return values, weights


def _checked_normals(normals, n: int) -> np.ndarray:
    normals = np.ascontiguousarray(normals, dtype=np.float64)
    if normals.shape != (n, 3):
        raise ValueError(f"normals must have shape ({n}, 3), got {normals.shape}")
    return normals


def stencil_source_terms(values, weights, normals, rho0: float, p0: float) -> np.ndarray:
    """Interpolate stencil values and form the source terms (see
    :func:`permeable_source_terms`) in one pass.

    Parameters
    ----------
    values, weights : array_like, shape (n, 4, 8)
        Stencil values of u, v, w, p and their weights.
    normals : array_like, shape (n, 3)
        Unit normals of the points' panels.
    rho0, p0 : float
        Density and pressure of the medium at rest.

    Returns
    -------
    numpy.ndarray, shape (n, 4)
        ``[U_n, L_x, L_y, L_z]`` per point; equal bit for bit to
        ``permeable_source_terms`` of the interpolated values.
    """
    values, weights = _stencil_arrays(values, weights)
    normals = _checked_normals(normals, values.shape[0])
    out = np.empty((values.shape[0], 4))
    _interpolated_sources(values, weights, normals, float(rho0), float(p0), out)
    return out


def gathered_source_terms(fields, flat, weights, normals, rho0: float, p0: float, out) -> None:
    """:func:`stencil_source_terms` of values read from ghosted arrays, in one pass.

    Parameters
    ----------
    fields : sequence of 4 numpy.ndarray
        Flat (1-D) views of the ghosted u, v, w and p arrays.
    flat : numpy.ndarray, shape (n, 4, 8), int64
        Flat positions of each stencil value in its field (:func:`ghosted_flat_indices`).
    weights : numpy.ndarray, shape (n, 4, 8)
        Trilinear weights.
    normals : numpy.ndarray, shape (n, 3)
        Unit normals.
    rho0, p0 : float
        Density and pressure of the medium at rest.
    out : numpy.ndarray, shape (n, 4)
        Receives ``[U_n, L_x, L_y, L_z]``, bit for bit what :func:`stencil_source_terms`
        gives for the same values.
    """
    _gathered_sources(*fields, flat, weights, normals, float(rho0), float(p0), out)


def permeable_source_terms(velocity, pressure, normals, rho0: float, p0: float) -> np.ndarray:
    """FW-H source terms of a stationary permeable surface in an incompressible flow.

    With the surface at rest (``v_s = 0``) and the density that of the medium
    (``ρ = ρ0``), the terms of :class:`~tachyflow.acoustics.fwh.FWHSolver`,
    ``U = (1 - ρ/ρ0) v_s + ρ u / ρ0`` and ``L = (p - p0) n + ρ u (u_n - v_n)``, become
    ``U_n = u · n`` and ``L = (p - p0) n + ρ0 u U_n``.

    Parameters
    ----------
    velocity : array_like, shape (n, 3)
        Flow velocity at the points.
    pressure : array_like, shape (n,)
        Pressure at the points.
    normals : array_like, shape (n, 3)
        Unit normals.
    rho0, p0 : float
        Density and pressure of the medium at rest.

    Returns
    -------
    numpy.ndarray, shape (n, 4)
        ``[U_n, L_x, L_y, L_z]`` per point.

    Raises
    ------
    ValueError
        Arrays of inconsistent shapes.
    """
    velocity = np.ascontiguousarray(velocity, dtype=np.float64)
    if velocity.ndim != 2 or velocity.shape[1] != 3:
        raise ValueError(f"velocity must have shape (n, 3), got {velocity.shape}")
    n = velocity.shape[0]
    pressure = np.ascontiguousarray(pressure, dtype=np.float64)
    if pressure.shape != (n,):
        raise ValueError(f"pressure must have shape ({n},), got {pressure.shape}")
    normals = _checked_normals(normals, n)
    out = np.empty((n, 4))
    _sources(velocity, pressure, normals, float(rho0), float(p0), out)
    return out


@dataclass(frozen=True)
class FlowValues:
    """The flow itself at the points, ``[u, v, w, p]`` (trilinear), for what the integrating
    rank computes from it (e.g. the traction on an immersed body's surface)."""

    def from_values(self, values, weights, normals) -> np.ndarray:
        """``(n, 4)`` from stencil values ``(n, 4, 8)`` that arrived in messages."""
        return np.einsum("nck,nck->nc", values, weights)

    def from_fields(self, fields, flat, weights, normals, out) -> None:
        """Into ``out`` from flat ghosted fields at positions ``flat``."""
        for component, field in enumerate(fields):
            out[:, component] = np.einsum(
                "nk,nk->n", field[flat[:, component]], weights[:, component]
            )
