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

import math
from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.tdma import eliminate_plane, substitute_row

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


_NO_ARRAY = np.empty((0, 0, 0))  # "no separate output" for the numba kernels
_NO_ROWS = np.empty((0, 0))
_NO_SHIFT = np.empty(0)


@numba.njit(error_model="numpy", inline="always")
def chained_sum(term, data, start, stop):  # pragma: no cover
    """``Σ term(data, k)`` for ``k`` in ``[start, stop)`` in four interleaved partial sums
    (independent chains of adds: one running sum waits on every add), combined in a fixed
    order. ``term`` is a compiled function of ``(data, k)``."""
    first = second = third = fourth = 0.0
    k = start
    while k + 4 <= stop:
        first += term(data, k)
        second += term(data, k + 1)
        third += term(data, k + 2)
        fourth += term(data, k + 3)
        k += 4
    while k < stop:
        first += term(data, k)
        k += 1
    return (first + second) + (third + fourth)


@numba.njit(error_model="numpy", inline="always")
def _value(row, k):  # pragma: no cover
    return row[k]


@numba.njit(error_model="numpy", inline="always")
def row_sum(row, start, stop):  # pragma: no cover
    """``Σ row[start:stop]`` in :func:`chained_sum`'s order."""
    return chained_sum(_value, row, start, stop)


@kernel(error_model="numpy", parallel=True)
def _divergence(u, v, w, width, dx, dz, scale, out, rows):  # pragma: no cover
    nx, ny, nz = out.shape
    summing = rows.shape[0] > 0
    for i in prange(1, nx + 1):
        for j in range(1, ny + 1):
            inverse_width = 1.0 / width[j - 1]
            for k in range(1, nz + 1):
                out[i - 1, j - 1, k - 1] = scale * (
                    (u[i, j, k] - u[i - 1, j, k]) / dx
                    + (v[i, j, k] - v[i, j - 1, k]) * inverse_width
                    + (w[i, j, k] - w[i, j, k - 1]) / dz
                )
            if summing:  # the row is in cache now
                rows[i - 1, j - 1] = row_sum(u[i, j], 1, nz + 1)


@numba.njit(error_model="numpy", inline="always")
def _divergence_of_plane(u, v, w, i, width, dx, dz, scale, walls, z_wraps, out, rows):
    # _divergence's values of x-plane i (its arithmetic, the same bits) as they will be once
    # the boundaries are applied, from the owned values alone: the wall faces' v as 0, a
    # periodic y's ghost v and (z_wraps) z's ghost w as their own periodic images. Not the
    # ghost plane below in x: its values are those before the exchange. (The k loop as
    # _divergence's, the first cell again after it: from k = 2 LLVM did not vectorise it.)
    _, ny, nz = out.shape
    summing = rows.shape[0] > 0
    for j in range(1, ny + 1):
        inverse_width = 1.0 / width[j - 1]
        below = j - 1 if j > 1 or walls else ny
        upper = 0.0 if walls and j == ny else 1.0  # the upper wall face's v is 0
        for k in range(1, nz + 1):
            out[i - 1, j - 1, k - 1] = scale * (
                (u[i, j, k] - u[i - 1, j, k]) / dx
                + (upper * v[i, j, k] - v[i, below, k]) * inverse_width
                + (w[i, j, k] - w[i, j, k - 1]) / dz
            )
        if z_wraps:
            out[i - 1, j - 1, 0] = scale * (
                (u[i, j, 1] - u[i - 1, j, 1]) / dx
                + (upper * v[i, j, 1] - v[i, below, 1]) * inverse_width
                + (w[i, j, 1] - w[i, j, nz]) / dz
            )
        if summing:
            rows[i - 1, j - 1] = row_sum(u[i, j], 1, nz + 1)


@kernel(error_model="numpy")
def _divergence_of_planes(
    u, v, w, width, dx, dz, scale, walls, z_wraps, planes, out, rows
):  # pragma: no cover
    for plane in planes:
        _divergence_of_plane(u, v, w, plane + 1, width, dx, dz, scale, walls, z_wraps, out, rows)


def divergence_of_planes(
    u, v, w, metrics: YMetrics, dx: float, dz: float, scale: float, walls: bool,
    z_wraps: bool, planes, out, rows=None,
) -> np.ndarray:
    """:func:`divergence` of the owned x-planes ``planes`` (indices from 0) into ``out``
    (and ``rows``), as it is once the boundaries are applied, reading only the owned
    values and the ghosts below in x (and in z unless ``z_wraps``): with ``walls`` v is 0
    on the wall faces, without y is periodic; ``z_wraps``: z's ghosts are this rank's
    own periodic images. The same bits as :func:`divergence` after the boundaries."""
    planes = np.asarray(planes, dtype=np.int64)
    if planes.size and not (0 <= planes.min() and planes.max() < out.shape[0]):
        raise ValueError(f"planes must be owned x-planes 0..{out.shape[0] - 1}, got {planes}")
    _divergence_of_planes(u, v, w, metrics.width.ravel(), float(dx), float(dz), float(scale),
                          bool(walls), bool(z_wraps), planes, out,
                          owned_rows(out, rows))
    return out


def owned_rows(out: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``rows`` checked to be one value per owned (x, y) row of the owned array ``out``, or
    the kernels' "no rows" when None."""
    if rows is None:
        return _NO_ROWS
    if rows.shape != out.shape[:2] or not rows.flags.c_contiguous:
        raise ValueError(f"rows must be C-ordered of shape {out.shape[:2]}, got {rows.shape}")
    return rows


def divergence(
    u, v, w, metrics: YMetrics, dx: float, dz: float, scale: float = 1.0, out=None, rows=None
) -> np.ndarray:
    """``scale * ∇·u`` at the owned cell centres, into ``out`` (C-ordered) or a new array.

    With ``rows`` (shape ``(nx, ny)``), the same pass also writes there ``Σ_z u`` of each
    owned (x, y) row (the bulk velocity's parts: :func:`weighted_rows_total`)."""
    if out is None:
        out = np.empty(tuple(n - 2 for n in u.shape))
    _divergence(u, v, w, metrics.width.ravel(), dx, dz, scale, out, owned_rows(out, rows))
    return out


@kernel(error_model="numpy", parallel=True)
def _subtract_gradient(
    u, v, w, p, gap, dx, dz, factor, last_v_face, shift, total, weight, fresh
):  # pragma: no cover
    nx, ny, nz = u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2
    shifting = shift.shape[0] > 0
    for i in prange(1, nx + 1):
        for j in range(1, ny + 1):
            inverse_gap = 1.0 / gap[j - 1]
            added = shift[j - 1] if shifting else 0.0
            for k in range(1, nz + 1):
                centre = p[i, j, k]
                u[i, j, k] = (u[i, j, k] - factor * (p[i + 1, j, k] - centre) / dx) + added
                if j <= last_v_face:
                    v[i, j, k] -= factor * (p[i, j + 1, k] - centre) * inverse_gap
                w[i, j, k] -= factor * (p[i, j, k + 1] - centre) / dz
            add_to_total(total, weight, fresh, p, i, j)


@numba.njit(error_model="numpy", inline="always")
def add_to_total(total, weight, fresh, p, i, j):  # pragma: no cover
    """``total[i-1, j-1] += weight * p[i, j, 1:-1]`` (``=`` where ``fresh``) where
    ``total`` is not empty: a projection's potential, whose row a gradient pass has just
    read, added to the step's pressure (compiled, for kernels)."""
    if total.shape[0] > 0:
        # Indexed from the arguments: through views made here LLVM does not vectorise.
        if fresh:
            for k in range(1, total.shape[2] + 1):
                total[i - 1, j - 1, k - 1] = weight * p[i, j, k]
        else:
            for k in range(1, total.shape[2] + 1):
                total[i - 1, j - 1, k - 1] += weight * p[i, j, k]


def owned_total(ghosted: np.ndarray, total: np.ndarray | None) -> np.ndarray:
    """``total`` checked to have the owned shape of the ghosted ``ghosted`` (a view such as
    another ghosted array's owned cells will do), or the kernels' "no total" when None."""
    if total is None:
        return _NO_ARRAY
    owned = tuple(n - 2 for n in ghosted.shape)
    if not isinstance(total, np.ndarray) or total.shape != owned or total.dtype != np.float64:
        raise ValueError(
            f"total must be a float64 array of shape {owned}, got "
            f"{getattr(total, 'dtype', type(total).__name__)} {getattr(total, 'shape', '')}"
        )
    return total


def row_shift(ghosted: np.ndarray, shift: np.ndarray | None) -> np.ndarray:
    """``shift`` checked to be one value per owned y row of the ghosted ``ghosted``, or the
    kernels' "no shift" when None."""
    if shift is None:
        return _NO_SHIFT
    if shift.shape != (ghosted.shape[1] - 2,):
        raise ValueError(f"shift must have shape {(ghosted.shape[1] - 2,)}, got {shift.shape}")
    return np.ascontiguousarray(shift, dtype=np.float64)


def subtract_gradient(
    u, v, w, p, metrics: YMetrics, dx: float, dz: float, factor: float, walls: bool,
    shift=None, total=None, weight: float = 0.0, fresh: bool = False,
) -> None:
    """``u -= factor ∇p`` in place on the owned faces; with walls the wall faces of v keep
    their value (the last owned v face is the upper wall). With ``shift`` (one value per
    owned y row), ``u += shift[y]`` in the same pass (the flow-rate force's response);
    with ``total`` (the owned shape), ``total += weight * p`` at the owned cells, or
    ``total = weight * p`` where ``fresh``."""
    ny = u.shape[1] - 2
    _subtract_gradient(u, v, w, p, metrics.gap.ravel(), dx, dz, factor,
                       ny - 1 if walls else ny, row_shift(u, shift), owned_total(p, total),
                       float(weight), bool(fresh))


@kernel(error_model="numpy", parallel=True)
def _add_viscous(
    f, width, width_up, gap, gap_down, dx, dz, nu, with_xz, with_y, at_faces, out, out_y
):  # pragma: no cover
    # out_y of shape (0, 0, 0): the y part goes into out; otherwise it is written to out_y.
    nx, ny, nz = out.shape
    y_apart = out_y.shape[0] > 0
    # Coefficients of the x-z part and, per row j, of the y part (f[j+1] - f[j]) and
    # (f[j] - f[j-1]): no division and no branch in the inner loop.
    xz = nu if with_xz else 0.0
    x_coefficient, z_coefficient = xz / dx**2, xz / dz**2
    y_up, y_down = np.empty(ny), np.empty(ny)
    for j in range(ny):
        if at_faces:
            up, down, across = width_up[j], width[j], gap[j]
        else:
            up, down, across = gap[j], gap_down[j], width[j]
        scale = nu if with_y else 0.0
        y_up[j], y_down[j] = scale / (up * across), scale / (down * across)
    for i in prange(1, nx + 1):
        for j in range(1, ny + 1):
            a, b = y_up[j - 1], y_down[j - 1]
            if y_apart:
                for k in range(1, nz + 1):
                    centre = f[i, j, k]
                    out[i - 1, j - 1, k - 1] += x_coefficient * (
                        f[i + 1, j, k] - 2.0 * centre + f[i - 1, j, k]
                    ) + z_coefficient * (f[i, j, k + 1] - 2.0 * centre + f[i, j, k - 1])
                    out_y[i - 1, j - 1, k - 1] = a * (f[i, j + 1, k] - centre) - b * (
                        centre - f[i, j - 1, k]
                    )
            else:
                for k in range(1, nz + 1):
                    centre = f[i, j, k]
                    out[i - 1, j - 1, k - 1] += (
                        x_coefficient * (f[i + 1, j, k] - 2.0 * centre + f[i - 1, j, k])
                        + z_coefficient * (f[i, j, k + 1] - 2.0 * centre + f[i, j, k - 1])
                        + a * (f[i, j + 1, k] - centre)
                        - b * (centre - f[i, j - 1, k])
                    )


def add_viscous(
    f,
    metrics: YMetrics,
    dx: float,
    dz: float,
    viscosity: float,
    out,
    x_and_z: bool = True,
    y: bool = True,
    at_faces: bool = False,
    out_y: np.ndarray | None = None,
) -> np.ndarray:
    """``out += ν ∇² f`` over the owned cells (numba, one pass); returns ``out``.

    ``x_and_z`` and ``y`` choose the directions (uniform in x and z, flux form in y);
    ``at_faces`` is True for a field on y-faces (v), False for one at y-centres (u, w, p).
    With ``out_y`` the y part is not added to ``out`` but written to ``out_y`` (the
    Crank–Nicolson terms, computed in the same pass as the explicit ones).
    """
    if out_y is None:
        out_y = _NO_ARRAY
    elif out_y.shape != out.shape:
        raise ValueError(f"out_y has shape {out_y.shape}, expected {out.shape}")
    _add_viscous(
        f,
        metrics.width.ravel(),
        metrics.width_up.ravel(),
        metrics.gap.ravel(),
        metrics.gap_down.ravel(),
        dx,
        dz,
        viscosity,
        x_and_z,
        y,
        at_faces,
        out,
        out_y,
    )
    return out


@numba.njit(error_model="numpy", inline="always")
def _advected(u, v, w, i, j, k, inverse_dx, inverse_dz, inverse_width, inverse_gap):
    # -∇·(u u) of the three components at point (i, j, k): products on the cell's upper
    # edges and faces (u at i+1/2, v at j+1/2, ...) and on the lower ones; the spacings'
    # inverses multiply (a division takes several multiplications' time).
    uv = 0.25 * (u[i, j, k] + u[i, j + 1, k]) * (v[i, j, k] + v[i + 1, j, k])
    uw = 0.25 * (u[i, j, k] + u[i, j, k + 1]) * (w[i, j, k] + w[i + 1, j, k])
    vw = 0.25 * (v[i, j, k] + v[i, j, k + 1]) * (w[i, j, k] + w[i, j + 1, k])
    uv_down = 0.25 * (u[i, j - 1, k] + u[i, j, k]) * (v[i, j - 1, k] + v[i + 1, j - 1, k])
    uv_left = 0.25 * (u[i - 1, j, k] + u[i - 1, j + 1, k]) * (v[i - 1, j, k] + v[i, j, k])
    uw_back = 0.25 * (u[i, j, k - 1] + u[i, j, k]) * (w[i, j, k - 1] + w[i + 1, j, k - 1])
    uw_left = 0.25 * (u[i - 1, j, k] + u[i - 1, j, k + 1]) * (w[i - 1, j, k] + w[i, j, k])
    vw_back = 0.25 * (v[i, j, k - 1] + v[i, j, k]) * (w[i, j, k - 1] + w[i, j + 1, k - 1])
    vw_down = 0.25 * (v[i, j - 1, k] + v[i, j - 1, k + 1]) * (w[i, j - 1, k] + w[i, j, k])
    uu_right = 0.25 * (u[i, j, k] + u[i + 1, j, k]) ** 2
    uu_left = 0.25 * (u[i - 1, j, k] + u[i, j, k]) ** 2
    vv_up = 0.25 * (v[i, j, k] + v[i, j + 1, k]) ** 2
    vv_down = 0.25 * (v[i, j - 1, k] + v[i, j, k]) ** 2
    ww_front = 0.25 * (w[i, j, k] + w[i, j, k + 1]) ** 2
    ww_back = 0.25 * (w[i, j, k - 1] + w[i, j, k]) ** 2
    return (
        -(
            (uu_right - uu_left) * inverse_dx
            + (uv - uv_down) * inverse_width
            + (uw - uw_back) * inverse_dz
        ),
        -(
            (uv - uv_left) * inverse_dx
            + (vv_up - vv_down) * inverse_gap
            + (vw - vw_back) * inverse_dz
        ),
        -(
            (uw - uw_left) * inverse_dx
            + (vw - vw_down) * inverse_width
            + (ww_front - ww_back) * inverse_dz
        ),
    )


@kernel(error_model="numpy", parallel=True)
def _advection(u, v, w, width, gap, dx, dz, out_u, out_v, out_w):  # pragma: no cover
    nx, ny, nz = out_u.shape
    for i in prange(1, nx + 1):
        for j in range(1, ny + 1):
            inverse_width = 1.0 / width[j - 1]
            inverse_gap = 1.0 / gap[j - 1]
            for k in range(1, nz + 1):
                advected = _advected(u, v, w, i, j, k, 1.0 / dx, 1.0 / dz, inverse_width,
                                     inverse_gap)
                out_u[i - 1, j - 1, k - 1] = advected[0]
                out_v[i - 1, j - 1, k - 1] = advected[1]
                out_w[i - 1, j - 1, k - 1] = advected[2]


def advection(u, v, w, metrics: YMetrics, dx: float, dz: float, out=None):
    """``-∇·(u u)`` for the three components, each at its own faces (numba, one pass),
    into ``out`` (an array of shape ``(3, nx, ny, nz)`` of the owned points) or new arrays;
    returns the three.

    The sign is that of the term on the right-hand side of the momentum equation.

    Products on the edges shared by two components use centred averages, e.g. ``uv`` at
    ``(i + 1/2, j + 1/2)`` is the y-average of u times the x-average of v.
    """
    if out is None:
        out = np.empty((3, *(n - 2 for n in u.shape)))
    _advection(u, v, w, metrics.width.ravel(), metrics.gap.ravel(), dx, dz, *out)
    return tuple(out)


@numba.njit(error_model="numpy", inline="always")
def _add_terms(f, i, j, k, advected, x_coefficient, z_coefficient, up, down, y_implicit,
               forcing, dt, gamma, rho, alpha_dt, first, terms):
    # One component at one point: _add_viscous's arithmetic on top of the advection, the
    # forcing, then _rk3_increment's, in their order; returns the increment. terms holds
    # the previous substep's value (read first) and receives this substep's.
    centre = f[i, j, k]
    x_part = x_coefficient * (f[i + 1, j, k] - 2.0 * centre + f[i - 1, j, k])
    z_part = z_coefficient * (f[i, j, k + 1] - 2.0 * centre + f[i, j, k - 1])
    y_up = up * (f[i, j + 1, k] - centre)
    y_down = down * (centre - f[i, j - 1, k])
    if y_implicit:
        term = advected + (x_part + z_part)
        y_part = y_up - y_down
    else:
        term = advected + (x_part + z_part + y_up - y_down)
        y_part = 0.0
    term += forcing
    earlier = term if first else terms[i - 1, j - 1, k - 1]
    terms[i - 1, j - 1, k - 1] = term
    return dt * (gamma * term + rho * earlier) + alpha_dt * y_part


@numba.njit(error_model="numpy", inline="always")
def _add_plane(field, i, planes, run, slot, factor, implicit):  # pragma: no cover
    # field's owned points of x-plane i += the plane planes[run, slot] (owned y and z),
    # from the last row up; with the implicit solve, each row's backward sweep just before
    # it is added (in cache then). Indexed from the arguments (see eliminate_plane).
    ny, nz = planes.shape[2], planes.shape[3]
    for j in range(ny - 1, -1, -1):
        if implicit and j < ny - 1:
            substitute_row(factor, planes, (run, slot), j)
        for k in range(nz):
            field[i, j + 1, k + 1] += planes[run, slot, j, k]


@kernel(error_model="numpy", parallel=True)
def _advance_velocity(
    u, v, w, width, width_up, gap, gap_down, dx, dz, nu, y_implicit, forcing_x,
    dt, gamma, rho, alpha_dt, first, terms_u, terms_v, terms_w, centre_lower, centre_pivot,
    centre_factor, face_lower, face_pivot, face_factor, planes_u, planes_v, planes_w, chunks,
    scale, z_wraps, divergence, rows,
):  # pragma: no cover
    # The arithmetic of _advection, _add_viscous, the forcing, _rk3_increment and
    # FactoredTridiagonal.solve(increment, field), in their order, so the result is theirs
    # bit for bit; one pass over the fields instead of one per term, component and solve.
    # Each component's arrays are separate arguments: LLVM then checks them for overlap
    # once and vectorises the k loop (with one 4D array of three components it did not).
    #
    # An x-plane's increments go to a plane of ``planes`` (in cache), are solved there in
    # y (the backward sweep row by row as the rows are added) and added to the fields once
    # the next plane's terms, which read this plane's old values, are computed. A run of
    # planes (one per thread) holds back its first and last planes, which the neighbouring
    # runs read, until every run is done. Where divergence is not empty, a plane's
    # divergence is taken once it and the plane below are added.
    nx, ny, nz = terms_u.shape
    diverging = divergence.shape[0] > 0
    x_coefficient, z_coefficient = nu / dx**2, nu / dz**2
    centre_up, centre_down = np.empty(ny), np.empty(ny)
    face_up, face_down = np.empty(ny), np.empty(ny)
    for j in range(ny):
        centre_up[j] = nu / (gap[j] * width[j])
        centre_down[j] = nu / (gap_down[j] * width[j])
        face_up[j] = nu / (width_up[j] * gap[j])
        face_down[j] = nu / (width[j] * gap[j])
    for chunk in prange(chunks):
        start, stop = 1 + chunk * nx // chunks, 1 + (chunk + 1) * nx // chunks
        for i in range(start, stop):
            # Slot 0: the run's first plane; 1 and 2 in turn: the others. (Indexed from the
            # arguments in the k loop: through views made here LLVM did not vectorise it.)
            slot = 0 if i == start else 1 + (i - start) % 2
            for j in range(1, ny + 1):
                inverse_width = 1.0 / width[j - 1]
                inverse_gap = 1.0 / gap[j - 1]
                a, b = centre_up[j - 1], centre_down[j - 1]
                a_face, b_face = face_up[j - 1], face_down[j - 1]
                for k in range(1, nz + 1):
                    advected = _advected(u, v, w, i, j, k, 1.0 / dx, 1.0 / dz, inverse_width,
                                     inverse_gap)
                    planes_u[chunk, slot, j - 1, k - 1] = _add_terms(
                        u, i, j, k, advected[0], x_coefficient, z_coefficient, a, b,
                        y_implicit, forcing_x, dt, gamma, rho, alpha_dt, first, terms_u,
                    )
                    planes_v[chunk, slot, j - 1, k - 1] = _add_terms(
                        v, i, j, k, advected[1], x_coefficient, z_coefficient, a_face,
                        b_face, y_implicit, 0.0, dt, gamma, rho, alpha_dt, first, terms_v,
                    )
                    planes_w[chunk, slot, j - 1, k - 1] = _add_terms(
                        w, i, j, k, advected[2], x_coefficient, z_coefficient, a, b,
                        y_implicit, 0.0, dt, gamma, rho, alpha_dt, first, terms_w,
                    )
            if y_implicit:  # the forward sweeps; the backward ones as the rows are added
                plane = (chunk, slot)
                eliminate_plane(centre_lower, centre_pivot, planes_u, plane, planes_u, plane)
                eliminate_plane(face_lower, face_pivot, planes_v, plane, planes_v, plane)
                eliminate_plane(centre_lower, centre_pivot, planes_w, plane, planes_w, plane)
            if i - 1 > start:  # the plane before is read no more
                held = 1 + (i - 1 - start) % 2
                _add_plane(u, i - 1, planes_u, chunk, held, centre_factor, y_implicit)
                _add_plane(v, i - 1, planes_v, chunk, held, face_factor, y_implicit)
                _add_plane(w, i - 1, planes_w, chunk, held, centre_factor, y_implicit)
                if diverging and i - 2 > start:  # the plane below is added too
                    _divergence_of_plane(u, v, w, i - 1, width, dx, dz, scale, y_implicit,
                                         z_wraps, divergence, rows)
    for chunk in prange(chunks):
        start, stop = 1 + chunk * nx // chunks, 1 + (chunk + 1) * nx // chunks
        for i in range(start, stop):
            if i == start or i == stop - 1:
                held = 0 if i == start else 1 + (i - start) % 2
                _add_plane(u, i, planes_u, chunk, held, centre_factor, y_implicit)
                _add_plane(v, i, planes_v, chunk, held, face_factor, y_implicit)
                _add_plane(w, i, planes_w, chunk, held, centre_factor, y_implicit)


def planes_left_by_advance(nx: int, runs: int) -> list[int]:
    """The x-planes (owned indices from 0) whose divergence :func:`advance_velocity` in
    ``runs`` runs of planes leaves to be taken after the halo exchange: each run's first
    two and its last."""
    left = set()
    for run in range(runs):
        start, stop = run * nx // runs, (run + 1) * nx // runs
        left.update(plane for plane in (start, start + 1, stop - 1) if start <= plane < stop)
    return sorted(left)


#: Bytes past a multiple of 4 KiB between the starts of :func:`velocity_terms`' components.
TERMS_STAGGER = 320


def velocity_terms(shape) -> np.ndarray:
    """An uninitialised ``terms`` array for :func:`advance_velocity`, of shape ``(3,
    *shape)``: three C-ordered components, each starting :data:`TERMS_STAGGER` bytes past
    a multiple of 4 KiB from the one before. The pass stores a component's value and then
    loads the next one's at the same index: a whole number of 4 KiB pages apart (as in one
    C-ordered array of power-of-two planes), the processor takes the load to wait on the
    store (4K aliasing; 5 % of the pass on 64 x 128 x 128 points)."""
    shape = tuple(int(n) for n in shape)
    size = math.prod(shape)
    stride = size + (TERMS_STAGGER - 8 * size) % 4096 // 8  # elements between starts
    block = np.empty(2 * stride + size + 8)
    first = (-block.ctypes.data % 64) // 8  # each component's start on a cache line
    rows = tuple(8 * math.prod(shape[axis + 1 :]) for axis in range(len(shape)))
    return np.lib.stride_tricks.as_strided(block[first:], (3, *shape), (8 * stride, *rows))


def velocity_planes(shape, runs: int) -> np.ndarray:
    """The work array of :func:`advance_velocity` for owned points of shape ``shape``,
    whose x-planes it takes in ``runs`` runs (threads take runs)."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs!r}")
    return np.empty((3, runs, 3, *shape[1:]))


def advance_velocity(u, v, w, metrics: YMetrics, dx: float, dz: float, viscosity: float,
                     forcing_x: float, dt: float, gamma: float, rho: float, alpha_dt: float,
                     terms, implicit=None, planes=None, divergence=None, scale: float = 1.0,
                     rows=None, z_wraps: bool = False):
    """An RK3 substep of the ghosted u, v, w before their projection, in place, in one pass
    (numba).

    ``terms`` (shape ``(3, nx, ny, nz)``) holds the previous substep's explicit terms
    (unless ``rho`` is 0: the first substep has none, and ``terms`` is not read) and
    receives this substep's, ``-∇·(u u) + ν ∇² u`` (without its y part when ``implicit``),
    plus ``forcing_x`` on u. Each owned point then gets its increment ``Δt (γ terms + ρ
    previous terms)``; with ``implicit``, a pair of
    :class:`~tachyflow.numerics.tdma.FactoredTridiagonal` (``I - α Δt ν/2 ∂²_y`` at centres,
    for u and w, and at faces, for v), plus ``α Δt ν ∂²_y u``, solved in y (Crank–Nicolson).
    The values equal those of :func:`advection`, :func:`add_viscous`,
    :func:`~tachyflow.numerics.runge_kutta.rk3_increment` and the operators' ``solve``
    adding to the fields in turn, bit for bit, whatever the number of threads or runs.

    ``planes`` (:func:`velocity_planes`) is made for one run of x-planes per thread when
    not given; the ghosts are not written.

    With ``divergence`` (the owned shape, C-ordered), the same pass writes there
    :func:`divergence`'s ``scale ∇·u`` of the updated velocity (and its ``rows``) as it
    will be once the boundaries are applied, the same bits: with ``implicit`` y has walls
    (v is 0 on their faces), without it is periodic; ``z_wraps`` says that z's ghosts are
    this rank's own periodic images (z whole and periodic), otherwise the values at the
    first z cells are left wrong. The planes :func:`planes_left_by_advance` names, whose
    neighbours the pass cannot see, are left wrong too: :func:`divergence` of those after
    the halo exchange completes it.
    """
    shape = (3, *(n - 2 for n in u.shape))
    if terms.shape != shape:
        raise ValueError(f"terms has shape {terms.shape}, expected {shape}")
    if planes is None:
        planes = velocity_planes(shape[1:], max(1, min(numba.get_num_threads(), shape[1])))
    elif planes.ndim != 5 or (planes.shape[0], *planes.shape[2:]) != (3, 3, *shape[2:]):
        raise ValueError(f"planes has shape {planes.shape}, expected (3, runs, 3, {shape[2]}, "
                         f"{shape[3]})")
    if divergence is None:
        divergence = _NO_ARRAY
    elif divergence.shape != shape[1:] or not divergence.flags.c_contiguous:
        raise ValueError(f"divergence must be C-ordered of shape {shape[1:]}, got "
                         f"{divergence.shape}")
    if implicit is None:
        bands = (_NO_SHIFT,) * 6
    else:
        bands = tuple(
            band
            for operator in implicit
            for band in (operator.lower, operator.inverse_pivot, operator.factor)
        )
        if any(len(band) != shape[2] for band in bands):
            raise ValueError(f"the implicit operators must have {shape[2]} rows (y), got "
                             f"{[len(operator.lower) for operator in implicit]}")
    _advance_velocity(
        u, v, w, metrics.width.ravel(), metrics.width_up.ravel(), metrics.gap.ravel(),
        metrics.gap_down.ravel(), float(dx), float(dz), float(viscosity), implicit is not None,
        float(forcing_x), float(dt), float(gamma), float(rho), float(alpha_dt), bool(rho == 0),
        *terms, *bands, *planes, planes.shape[1], float(scale), bool(z_wraps), divergence,
        owned_rows(divergence, rows) if divergence.size else _NO_ROWS,
    )
    return terms


@kernel(error_model="numpy", parallel=True)
def _centred_speed(u, v, w, radial, out):  # pragma: no cover
    nx, ny, nz = out.shape
    for i in prange(nx):
        for j in range(ny):
            scale = 0.5 * radial[j]
            for k in range(nz):
                a = 0.5 * (u[i + 1, j + 1, k + 1] + u[i, j + 1, k + 1])
                b = scale * (v[i + 1, j + 1, k + 1] + v[i + 1, j, k + 1])
                c = 0.5 * (w[i + 1, j + 1, k + 1] + w[i + 1, j + 1, k])
                out[i, j, k] = np.sqrt(a * a + b * b + c * c)


def centred_speed(u, v, w, out: np.ndarray, radial_scale: np.ndarray | None = None):
    """``|u|`` at the owned cell centres from the face velocities, in one pass (no
    temporaries): each component the mean of its two faces, the second one times
    ``radial_scale[j]`` when given (a cylindrical grid's ``q = r u_r``: ``1 / r``).
    ``out``: shape of the owned cells; returned."""
    ny = out.shape[1]
    radial = np.ones(ny) if radial_scale is None else np.asarray(radial_scale, dtype=np.float64)
    if radial.shape != (ny,):
        raise ValueError(f"radial_scale must have shape ({ny},), got {radial.shape}")
    _centred_speed(u, v, w, radial, out)
    return out


@kernel(error_model="numpy", parallel=True)
def _centred_component(field, di, dj, dk, divisors, out):  # pragma: no cover
    nx, ny, nz = out.shape
    for i in prange(nx):
        for j in range(ny):
            divisor = divisors[j]
            for k in range(nz):
                face = field[i + 1, j + 1, k + 1]
                out[i, j, k] = 0.5 * (face + field[i + 1 + di, j + 1 + dj, k + 1 + dk]) / divisor


def centred_component(field, axis: int, out: np.ndarray, divisors: np.ndarray | None = None):
    """A velocity component at the owned cell centres of a ghosted face array (halo 1):
    the mean of each cell's two faces normal to ``axis`` (its own and the one below),
    divided by ``divisors[j]`` when given (a cylindrical grid's ``q = r u_r``: the radii),
    in one pass. ``out``: shape of the owned cells, any float type; returned."""
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1 or 2, got {axis!r}")
    ny = out.shape[1]
    divisors = np.ones(ny) if divisors is None else np.asarray(divisors, dtype=np.float64)
    if field.shape != tuple(n + 2 for n in out.shape) or divisors.shape != (ny,):
        raise ValueError(
            f"expected a ghosted field of shape {tuple(n + 2 for n in out.shape)} and divisors "
            f"({ny},), got {field.shape} and {divisors.shape}"
        )
    shift = [0, 0, 0]
    shift[axis] = -1
    _centred_component(field, *shift, divisors, out)
    return out


def owned_window(field: np.ndarray, cells=None) -> np.ndarray:
    """The view of a ghosted array (halo 1) that holds the owned cells ``cells`` (three
    slices of owned-cell indices, with start and stop) and their ghosts: what the centring
    kernels read to make those cells only. ``field`` itself when ``cells`` is None."""
    if cells is None:
        return field
    return field[tuple(slice(part.start, part.stop + 2) for part in cells)]


@kernel(error_model="numpy")
def _convective_rate(u, v, w, inverse_dx, inverse_widths, inverse_dz):  # pragma: no cover
    nx, ny, nz = u.shape
    largest = 0.0
    for i in range(nx):
        for j in range(ny):
            inverse_dy = inverse_widths[j]
            for k in range(nz):
                rate = (
                    abs(u[i, j, k]) * inverse_dx
                    + abs(v[i, j, k]) * inverse_dy
                    + abs(w[i, j, k]) * inverse_dz
                )
                if rate > largest or rate != rate:  # NaN wins, as in np.max
                    largest = rate
    return largest


def convective_rate(u, v, w, dx: float, widths: np.ndarray, dz: float) -> float:
    """``max(|u|/Δx + |v|/Δy_j + |w|/Δz)`` over arrays of the owned cells (possibly a halo
    array's interior views), in one pass without temporaries; NaN if a value is NaN."""
    if not u.shape == v.shape == w.shape or u.ndim != 3 or widths.shape != (u.shape[1],):
        raise ValueError(
            f"expected u, v, w of one shape (nx, ny, nz) and widths (ny,), got {u.shape}, "
            f"{v.shape}, {w.shape}, {widths.shape}"
        )
    inverse_widths = 1.0 / np.asarray(widths, dtype=np.float64)
    return float(_convective_rate(u, v, w, 1.0 / dx, inverse_widths, 1.0 / dz))


@numba.njit(error_model="numpy", inline="always")
def _self_difference(row, k):  # pragma: no cover
    return row[k] - row[k]  # 0 for a finite value, NaN for NaN and infinities


@kernel(error_model="numpy")
def _all_finite(values):  # pragma: no cover
    nx, ny, nz = values.shape
    for i in range(nx):
        for j in range(ny):
            # Summed, not tested one by one: no branch per value.
            if chained_sum(_self_difference, values[i, j], 0, nz) != 0.0:
                return False
    return True


def all_finite(values: np.ndarray) -> bool:
    """``np.isfinite(values).all()`` for a 3D float64 array or view, in one pass without
    the boolean temporary."""
    if values.ndim != 3:
        raise ValueError(f"expected a 3D array, got shape {values.shape}")
    return bool(_all_finite(values))


@kernel(error_model="numpy")
def _y_weighted_sum(values, weights):  # pragma: no cover
    total = 0.0
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            total += weights[j] * row_sum(values[i, j], 0, values.shape[2])
    return total


def y_weighted_sum(values: np.ndarray, weights: np.ndarray) -> float:
    """``Σ values[i, j, k] weights[j]`` (values of shape ``(nx, ny, nz)``, possibly a
    strided view such as a halo array's interior), in one pass without temporaries."""
    if values.ndim != 3 or weights.shape != (values.shape[1],):
        raise ValueError(
            f"expected values (nx, ny, nz) and weights (ny,), got {values.shape}, {weights.shape}"
        )
    return float(_y_weighted_sum(values, np.ascontiguousarray(weights, dtype=np.float64)))


@numba.njit(error_model="numpy", inline="always")
def _centred_energy(row, k):  # pragma: no cover
    # cell_field's centring, (a + b) * 0.5 (v then divided by the row's radius: 1 on a
    # Cartesian grid, exact), and its squares' sum, in that order.
    u, v, w, radius, i, j = row
    a = (u[i, j, k] + u[i - 1, j, k]) * 0.5
    b = (v[i, j, k] + v[i, j - 1, k]) * 0.5 / radius
    c = (w[i, j, k] + w[i, j, k - 1]) * 0.5
    return a * a + b * b + c * c


@kernel(error_model="numpy")
def _centred_energy_sum(u, v, w, weights, radii):  # pragma: no cover
    total = 0.0
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            row = (u, v, w, radii[j - 1], i, j)
            total += weights[j - 1] * chained_sum(_centred_energy, row, 1, u.shape[2] - 1)
    return total


def centred_energy_sum(u, v, w, weights: np.ndarray, radii: np.ndarray | None = None) -> float:
    """``Σ (u_c² + v_c² + w_c²) weights[j]`` over the owned cells, the velocities centred
    from the faces of ghosted arrays (halo 1; with ``radii``, the second one divided by
    the row's radius: a cylindrical grid's ``q = r u_r``), in one pass: the same bits as
    :func:`y_weighted_sum` of the squares of the centred fields."""
    ny = u.shape[1] - 2
    radii = np.ones(ny) if radii is None else np.asarray(radii, dtype=np.float64)
    if not u.shape == v.shape == w.shape or weights.shape != (ny,) or radii.shape != (ny,):
        raise ValueError(
            f"expected ghosted u, v, w of one shape and weights, radii ({ny},), got "
            f"{u.shape}, {v.shape}, {w.shape}, {weights.shape}, {radii.shape}"
        )
    weights = np.ascontiguousarray(weights, np.float64)
    return float(_centred_energy_sum(u, v, w, weights, np.ascontiguousarray(radii)))


@numba.njit(error_model="numpy", inline="always")
def _product(rows, k):  # pragma: no cover
    return rows[0][k] * rows[1][k]


@kernel(error_model="numpy")
def _y_weighted_dot(a, b, weights):  # pragma: no cover
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            total += weights[j] * chained_sum(_product, (a[i, j], b[i, j]), 0, a.shape[2])
    return total


def y_weighted_dot(a: np.ndarray, b: np.ndarray, weights: np.ndarray) -> float:
    """``Σ a[i, j, k] b[i, j, k] weights[j]`` in one pass without the product's array:
    the same bits as :func:`y_weighted_sum` of ``a * b``."""
    if a.shape != b.shape or a.ndim != 3 or weights.shape != (a.shape[1],):
        raise ValueError(
            f"expected a, b of one shape (nx, ny, nz) and weights (ny,), got {a.shape}, "
            f"{b.shape}, {weights.shape}"
        )
    return float(_y_weighted_dot(a, b, np.ascontiguousarray(weights, np.float64)))


@kernel(error_model="numpy")
def _weighted_rows_total(rows, weights):  # pragma: no cover
    total = 0.0
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            total += weights[j] * rows[i, j]
    return total


def weighted_rows_total(rows: np.ndarray, weights: np.ndarray) -> float:
    """``Σ rows[i, j] weights[j]`` of row sums from :func:`divergence`: the same bits as
    :func:`y_weighted_sum` of the values they sum."""
    if rows.ndim != 2 or weights.shape != (rows.shape[1],):
        raise ValueError(
            f"expected rows (nx, ny) and weights (ny,), got {rows.shape}, {weights.shape}"
        )
    return float(_weighted_rows_total(rows, np.ascontiguousarray(weights, dtype=np.float64)))
