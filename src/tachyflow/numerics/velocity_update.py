"""An RK3 substep's update of the Cartesian velocity before its projection, in one
compiled pass (:func:`advance_velocity`).

Advection, viscous terms, forcing, the RK3 increments and the Crank–Nicolson solves in y
of each x-plane in cache, added once the next plane has read the old values; then the
plane's divergence for the projection (:func:`divergence_of_planes` completes the planes
:func:`planes_left_by_advance` names, after the halo exchange). The arithmetic is that of
the separate operators of :mod:`tachyflow.numerics.stencils`, in their order: the same
bits. Its work arrays: :func:`velocity_terms` (the explicit terms, components staggered
against 4K aliasing) and :func:`velocity_planes`.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.reductions import row_sum
from tachyflow.numerics.stencils import (
    _NO_ARRAY,
    _NO_ROWS,
    _NO_SHIFT,
    YMetrics,
    _advected,
    owned_rows,
)
from tachyflow.numerics.tdma import eliminate_plane, substitute_row


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
    """:func:`~tachyflow.numerics.stencils.divergence` of the owned x-planes ``planes``
    (indices from 0) into ``out`` (and ``rows``), as it is once the boundaries are applied,
    reading only the owned values and the ghosts below in x (and in z unless ``z_wraps``):
    with ``walls`` v is 0 on the wall faces, without y is periodic; ``z_wraps``: z's ghosts
    are this rank's own periodic images. The same bits as that function after the
    boundaries."""
    planes = np.asarray(planes, dtype=np.int64)
    if planes.size and not (0 <= planes.min() and planes.max() < out.shape[0]):
        raise ValueError(f"planes must be owned x-planes 0..{out.shape[0] - 1}, got {planes}")
    _divergence_of_planes(u, v, w, metrics.width.ravel(), float(dx), float(dz), float(scale),
                          bool(walls), bool(z_wraps), planes, out,
                          owned_rows(out, rows))
    return out


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
                    advected = _advected(u, v, w, i, j, k, 1.0 / dx, 1.0 / dx, 1.0 / dz,
                                         inverse_width, inverse_gap)
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
    The values equal those of :func:`~tachyflow.numerics.stencils.advection`,
    :func:`~tachyflow.numerics.stencils.add_viscous`,
    :func:`~tachyflow.numerics.runge_kutta.rk3_increment` and the operators' ``solve``
    adding to the fields in turn, bit for bit, whatever the number of threads or runs.

    ``planes`` (:func:`velocity_planes`) is made for one run of x-planes per thread when
    not given; the ghosts are not written.

    With ``divergence`` (the owned shape, C-ordered), the same pass writes there
    :func:`~tachyflow.numerics.stencils.divergence`'s ``scale ∇·u`` of the updated
    velocity (and its ``rows``) as it will be once the boundaries are applied, the same
    bits: with ``implicit`` y has walls (v is 0 on their faces), without it is periodic;
    ``z_wraps`` says that z's ghosts are this rank's own periodic images (z whole and
    periodic), otherwise the values at the first z cells are left wrong. The planes
    :func:`planes_left_by_advance` names, whose neighbours the pass cannot see, are left
    wrong too: :func:`divergence_of_planes` of those after the halo exchange completes it.
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
