"""Finite-volume stencils of incompressible flow in a rotating cylindrical frame (MPI-free).

Arrays are ghosted pieces ``(nx + 2, nr + 2, nθ + 2)`` of the fields of a
:class:`~tachyflow.numerics.cylindrical_grid.CylindricalGrid`: ``u`` (axial velocity on
x-faces), ``q = r u_r`` (on r-faces; row ``J`` is the face above cell ``J``, row 0 the
axis or the inner wall, row ``nr`` the outer wall, both held at 0), ``w`` (azimuthal
velocity on θ-faces) and ``p``. The discretisation is the energy-conserving one of
Verzicco & Orlandi (1996): the momentum equations in conservative form, for ``q`` the
radial equation multiplied by r, for ``w`` the angular-momentum form
``(1/r²) ∂(r² u_r u_θ)/∂r``; every radial flux through the axis is multiplied by
``r = 0`` and vanishes. The one place the axis needs a value is the viscous flux of ``w``
there, ``(1/r) ∂(r u_θ)/∂r = ω_x`` on the axis, which the caller passes in (from the
circulation of the first ring of cells, :func:`axis_vorticity`).

The frame rotates at Ω about x: the Coriolis terms are here; the centrifugal force is a
gradient and lives in the (reduced) pressure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.numerics.reductions import row_sum
from tachyflow.numerics.stencils import (
    add_to_total,
    owned_rows,
    owned_total,
    row_shift,
    x_metrics,
)

I = slice(1, -1)  # interior  # noqa: E741
UP = slice(2, None)
DOWN = slice(None, -2)


@dataclass(frozen=True)
class RadialMetrics:
    """Radial geometry with ghosts, shaped ``(1, nr + 2, 1)`` to broadcast.

    ``centre[J]`` and ``width[J]``: cell ``J`` (ghosts mirrored across the axis or the
    walls); ``face[J]``: the face above cell ``J`` (``face[0]``: the axis or inner wall);
    ``gap[J]``: the distance between centres ``J`` and ``J + 1``.
    """

    centre: np.ndarray
    width: np.ndarray
    face: np.ndarray
    gap: np.ndarray

    @classmethod
    def from_grid(cls, grid: CylindricalGrid) -> RadialMetrics:
        faces, widths = grid.faces_y, grid.widths_y
        width = np.concatenate(([widths[0]], widths, [widths[-1]]))
        centre = np.concatenate(
            ([faces[0] - 0.5 * widths[0]], grid.centres_y, [faces[-1] + 0.5 * widths[-1]])
        )
        face = np.concatenate((faces, [faces[-1] + widths[-1]]))
        gap = np.append(np.diff(centre), widths[-1])

        def column(values):
            return np.asarray(values, dtype=np.float64).reshape(1, -1, 1)

        return cls(column(centre), column(width), column(face), column(gap))

    def columns(self) -> tuple[np.ndarray, ...]:
        """``centre, face, width, gap`` as contiguous 1D arrays (for the kernels)."""
        arrays = (self.centre, self.face, self.width, self.gap)
        return tuple(np.ascontiguousarray(array.ravel()) for array in arrays)


@kernel(error_model="numpy", parallel=True)
def _divergence(u, q, w, rc, width, width_x, dt, scale, out, rows):  # pragma: no cover
    nx, nr, nt = out.shape
    summing = rows.shape[0] > 0
    for i in prange(1, nx + 1):
        dx = width_x[i]
        for j in range(1, nr + 1):
            radial = rc[j] * width[j]
            azimuthal = rc[j] * dt
            for k in range(1, nt + 1):
                out[i - 1, j - 1, k - 1] = scale * (
                    (u[i, j, k] - u[i - 1, j, k]) / dx
                    + (q[i, j, k] - q[i, j - 1, k]) / radial
                    + (w[i, j, k] - w[i, j, k - 1]) / azimuthal
                )
            if summing:  # the row is in cache now
                rows[i - 1, j - 1] = row_sum(u[i, j], 1, nt + 1)


def divergence(u, q, w, m: RadialMetrics, dx, dt: float, scale: float = 1.0, out=None,
               rows=None):
    """``scale * ∇·u`` at the owned cell centres (``dx``: a uniform spacing or the
    :class:`~tachyflow.numerics.stencils.XMetrics` of the x range; ``dt``: the θ
    spacing), into ``out`` (a new array if None); returns it. With ``rows`` (shape
    ``(nx, nr)``), the same pass also writes there ``Σ_θ u`` of each owned (x, r) row (the
    bulk velocity's parts)."""
    out = _owned_array(u.shape, out)
    rc, _, width, _ = m.columns()
    _divergence(u, q, w, rc, width, x_metrics(dx, u).width, dt, scale, out,
                owned_rows(out, rows))
    return out


@kernel(error_model="numpy", parallel=True)
def _subtract_gradient(
    u, q, w, p, rc, rf, gap, gap_x, dt, factor, shift, total, weight, fresh
):  # pragma: no cover
    nx, nr, nt = u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2
    shifting = shift.shape[0] > 0
    for i in prange(1, nx + 1):
        dx = gap_x[i]
        for j in range(1, nr + 1):
            radial = factor * rf[j]
            azimuthal = rc[j] * dt
            added = shift[j - 1] if shifting else 0.0
            for k in range(1, nt + 1):
                centre = p[i, j, k]
                u[i, j, k] = (u[i, j, k] - factor * (p[i + 1, j, k] - centre) / dx) + added
                if j < nr:  # the outer wall face stays 0
                    q[i, j, k] -= radial * (p[i, j + 1, k] - centre) / gap[j]
                w[i, j, k] -= factor * (p[i, j, k + 1] - centre) / azimuthal
            add_to_total(total, weight, fresh, p, i, j)


def subtract_gradient(u, q, w, p, m: RadialMetrics, dx, dt: float, factor: float,
                      shift=None, total=None, weight: float = 0.0,
                      fresh: bool = False):
    """``u -= factor ∇p`` on the owned faces (the outer wall face of ``q`` stays 0); with
    ``shift`` (one value per owned radial row), ``u += shift[r]`` in the same pass; with
    ``total`` (the owned shape), ``total += weight * p`` at the owned cells, or
    ``total = weight * p`` where ``fresh``. ``dx``: as in :func:`divergence`."""
    rc, rf, _, gap = m.columns()
    _subtract_gradient(u, q, w, p, rc, rf, gap, x_metrics(dx, u).gap, dt, float(factor),
                       row_shift(u, shift),
                       owned_total(p, total), float(weight), bool(fresh))


@kernel(error_model="numpy")
def _convective_rate(
    u, q, w, inverse_dx, inverse_radius, inverse_width, inverse_arc
):  # pragma: no cover
    nx, ny, nz = u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2
    largest = 0.0
    for i in range(nx):
        inverse_width_x = inverse_dx[i + 1]
        for j in range(ny):
            for k in range(nz):
                axial = 0.5 * (u[i + 1, j + 1, k + 1] + u[i, j + 1, k + 1])
                radial = 0.5 * (q[i + 1, j + 1, k + 1] + q[i + 1, j, k + 1]) * inverse_radius[j]
                azimuthal = 0.5 * (w[i + 1, j + 1, k + 1] + w[i + 1, j + 1, k])
                rate = (
                    abs(axial) * inverse_width_x
                    + abs(radial) * inverse_width[j]
                    + abs(azimuthal) * inverse_arc[j]
                )
                if rate > largest or rate != rate:  # NaN wins, as in np.max
                    largest = rate
    return largest


def convective_rate(u, q, w, radii: np.ndarray, widths: np.ndarray, dx, dt: float):
    """``max(|u|/Δx + |u_r|/Δr + |u_θ|/(r Δθ))`` over the owned cells, the velocities
    centred from the faces of the ghosted arrays (halo 1; ``q = r u_r``), in one pass
    without temporaries; NaN if a value is NaN. ``radii``, ``widths``: of the cells' rows;
    ``dx`` as in :func:`divergence`."""
    ny = u.shape[1] - 2
    if not u.shape == q.shape == w.shape or radii.shape != (ny,) or widths.shape != (ny,):
        raise ValueError(
            f"expected u, q, w of one ghosted shape and radii, widths of {ny} rows, got "
            f"{u.shape}, {q.shape}, {w.shape}, {radii.shape}, {widths.shape}"
        )
    radii = np.asarray(radii, dtype=np.float64)
    return float(
        _convective_rate(u, q, w, 1.0 / x_metrics(dx, u).width, 1.0 / radii,
                         1.0 / np.asarray(widths, np.float64), 1.0 / (radii * dt))
    )


def axis_vorticity(w_first_ring_mean: np.ndarray, m: RadialMetrics) -> np.ndarray:
    """``ω_x`` on the axis from the mean azimuthal velocity of the first ring of cells:
    the circulation around it over the area it encloses, ``2 <u_θ> / r_c``."""
    return 2.0 * w_first_ring_mean / m.centre[0, 1, 0]


@kernel(error_model="numpy", parallel=True)
def _advection(
    u, q, w, rc, rf, width, gap, width_x, gap_x, dt, rotation, hu, hq, hw
):  # pragma: no cover
    nx, nr, nt = hu.shape
    for i in prange(1, nx + 1):
        # u's control volume spans centre to centre in x, q's and w's a cell.
        dx_face, dx = gap_x[i], width_x[i]
        for j in range(1, nr + 1):
            cell_r, cell_t = rc[j] * width[j], rc[j] * dt
            # Axial momentum at (x-face i, centre j, centre k).
            for k in range(1, nt + 1):
                ahead = 0.5 * (u[i, j, k] + u[i + 1, j, k])
                behind = 0.5 * (u[i - 1, j, k] + u[i, j, k])
                flux_x = (ahead * ahead - behind * behind) / dx_face
                above = 0.25 * (q[i, j, k] + q[i + 1, j, k]) * (u[i, j, k] + u[i, j + 1, k])
                below = (
                    0.25 * (q[i, j - 1, k] + q[i + 1, j - 1, k]) * (u[i, j - 1, k] + u[i, j, k])
                )
                flux_r = (above - below) / cell_r
                after = 0.25 * (w[i, j, k] + w[i + 1, j, k]) * (u[i, j, k] + u[i, j, k + 1])
                before = (
                    0.25 * (w[i, j, k - 1] + w[i + 1, j, k - 1]) * (u[i, j, k - 1] + u[i, j, k])
                )
                flux_t = (after - before) / cell_t
                hu[i - 1, j - 1, k - 1] = -(flux_x + flux_r + flux_t)
            # Radial momentum times r at (centre i, r-face j, centre k).
            rc_up, rc_here, gap_here = rc[j + 1], rc[j], gap[j]
            face_t = rf[j] * dt
            coriolis = 2.0 * rotation * rf[j]
            for k in range(1, nt + 1):
                ahead = 0.25 * (u[i, j, k] + u[i, j + 1, k]) * (q[i, j, k] + q[i + 1, j, k])
                behind = (
                    0.25 * (u[i - 1, j, k] + u[i - 1, j + 1, k]) * (q[i - 1, j, k] + q[i, j, k])
                )
                flux_x = (ahead - behind) / dx
                outer = 0.5 * (q[i, j + 1, k] + q[i, j, k])
                inner = 0.5 * (q[i, j, k] + q[i, j - 1, k])
                flux_r = (outer * outer / rc_up - inner * inner / rc_here) / gap_here
                after = 0.25 * (w[i, j, k] + w[i, j + 1, k]) * (q[i, j, k] + q[i, j, k + 1])
                before = (
                    0.25 * (w[i, j, k - 1] + w[i, j + 1, k - 1]) * (q[i, j, k - 1] + q[i, j, k])
                )
                flux_t = (after - before) / face_t
                swirl = 0.25 * (w[i, j, k] + w[i, j + 1, k] + w[i, j, k - 1] + w[i, j + 1, k - 1])
                hq[i - 1, j - 1, k - 1] = (
                    -(flux_x + flux_r + flux_t) + swirl * swirl + coriolis * swirl
                )
            # Azimuthal momentum at (centre i, centre j, θ-face k): (1/r²) ∂(r q w)/∂r.
            rf_up, rf_down = rf[j], rf[j - 1]
            ring = rc[j] * rc[j] * width[j]
            turning = 2.0 * rotation
            for k in range(1, nt + 1):
                ahead = 0.25 * (u[i, j, k] + u[i, j, k + 1]) * (w[i, j, k] + w[i + 1, j, k])
                behind = (
                    0.25 * (u[i - 1, j, k] + u[i - 1, j, k + 1]) * (w[i - 1, j, k] + w[i, j, k])
                )
                flux_x = (ahead - behind) / dx
                above = (
                    rf_up * 0.25 * (q[i, j, k] + q[i, j, k + 1]) * (w[i, j, k] + w[i, j + 1, k])
                )
                below = (
                    rf_down * 0.25 * (q[i, j - 1, k] + q[i, j - 1, k + 1])
                    * (w[i, j - 1, k] + w[i, j, k])
                )
                flux_r = (above - below) / ring
                after = 0.5 * (w[i, j, k + 1] + w[i, j, k])
                before = 0.5 * (w[i, j, k] + w[i, j, k - 1])
                flux_t = (after * after - before * before) / cell_t
                radial = 0.25 * (q[i, j, k] + q[i, j - 1, k] + q[i, j, k + 1] + q[i, j - 1, k + 1])
                hw[i - 1, j - 1, k - 1] = -(flux_x + flux_r + flux_t) - turning * radial / rc_here


def _owned_array(ghosted_shape, out, components: int = 0) -> np.ndarray:
    """``out``, checked to be a C-contiguous float64 array of the owned points of
    ``components`` fields (0: one field, no leading axis), or a new one if None."""
    shape = tuple(n - 2 for n in ghosted_shape)
    shape = (components, *shape) if components else shape
    if out is None:
        return np.empty(shape)
    if out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}, got "
                         f"{out.dtype} {out.shape}")
    return out


def advection(u, q, w, m: RadialMetrics, dx, dt: float, rotation: float, out=None):
    """Minus the advective terms, plus the Coriolis terms, of u, q and w (owned values).

    ``u·∇u`` in the conservative forms of Verzicco & Orlandi; in the radial equation the
    centripetal ``u_θ²`` term; the frame's Coriolis force ``-2Ω × u``. Returns one array
    of shape ``(3, nx, nr, nθ)``, the terms of u, q and w: ``out`` (a new array if None).
    ``dx`` as in :func:`divergence`.
    """
    out = _owned_array(u.shape, out, 3)
    x = x_metrics(dx, u)
    _advection(u, q, w, *m.columns(), x.width, x.gap, dt, float(rotation), *out)
    return out


@numba.njit(error_model="numpy", inline="always")
def _along_x(ahead, centre, behind, east, west):  # pragma: no cover
    # The x second difference in flux form; the symmetric one where the factors are equal.
    if east == west:
        return (ahead - 2 * centre + behind) * east
    return east * (ahead - centre) - west * (centre - behind)


@kernel(error_model="numpy", parallel=True)
def _viscous(
    u, q, w, rc, rf, width, gap, width_x, gap_x, dt, axis, omega, core, nu, explicit, implicit
):  # pragma: no cover
    nx, nr, nt = implicit.shape[1:]
    for i in prange(1, nx + 1):
        # The x fluxes' factors, of u (its control volume centre to centre) and of the
        # centred q and w; equal on a uniform x (then the symmetric second difference).
        u_east = 1.0 / (width_x[i + 1] * gap_x[i])
        u_west = 1.0 / (width_x[i] * gap_x[i])
        east = 1.0 / (gap_x[i] * width_x[i])
        west = 1.0 / (gap_x[i - 1] * width_x[i])
        for j in range(1, nr + 1):
            # The row's metric factors, as multipliers (the k loops then have no division).
            centre_theta = 1.0 / (rc[j] * rc[j] * dt * dt)
            face_theta = 1.0 / (rf[j] * rf[j] * dt * dt)
            flux_above, flux_below = rf[j] / gap[j], rf[j - 1] / gap[j - 1]
            cell, cell_above = 1.0 / (rc[j] * width[j]), 1.0 / (rc[j + 1] * width[j + 1])
            swirl_coupling = 1.0 / (dt * rf[j])
            radial_coupling = 1.0 / (dt * rc[j] ** 3)
            angular_above = 1.0 / (rf[j] * gap[j])
            angular_below = 1.0 / (rf[j - 1] * gap[j - 1])  # inf on the axis: not used there
            ring = 1.0 / width[j]
            rc_above, rc_here, rc_below = rc[j + 1], rc[j], rc[j - 1]
            # θ second derivative: implicit up to row `core`, explicit beyond (a weight of 0
            # or 1 on each side adds it to one of them exactly, without a branch).
            implicit_theta = 1.0 if j <= core else 0.0
            explicit_theta = 1.0 - implicit_theta
            # Axial: (1/r) ∂(r ∂u/∂r)/∂r (no flux through the axis: rf = 0 there).
            for k in range(1, nt + 1):
                centre = u[i, j, k]
                above = flux_above * (u[i, j + 1, k] - centre)
                below = flux_below * (centre - u[i, j - 1, k])
                along = _along_x(u[i + 1, j, k], centre, u[i - 1, j, k], u_east, u_west)
                across = (above - below) * cell
                theta = (u[i, j, k + 1] - 2 * centre + u[i, j, k - 1]) * centre_theta
                explicit[0, i - 1, j - 1, k - 1] += nu * (along + explicit_theta * theta)
                implicit[0, i - 1, j - 1, k - 1] = nu * (across + implicit_theta * theta)
            # Radial (times r): r ∂((1/r) ∂q/∂r)/∂r + ∂²q/∂θ² / r² - (2/r) ∂u_θ/∂θ.
            for k in range(1, nt + 1):
                centre = q[i, j, k]
                outer = (q[i, j + 1, k] - centre) * cell_above
                inner = (centre - q[i, j - 1, k]) * cell
                swirl = w[i, j, k] - w[i, j, k - 1] + w[i, j + 1, k] - w[i, j + 1, k - 1]
                along = _along_x(q[i + 1, j, k], centre, q[i - 1, j, k], east, west)
                along -= swirl * swirl_coupling
                across = flux_above * (outer - inner)
                theta = (q[i, j, k + 1] - 2 * centre + q[i, j, k - 1]) * face_theta
                explicit[1, i - 1, j - 1, k - 1] += nu * (along + explicit_theta * theta)
                implicit[1, i - 1, j - 1, k - 1] = nu * (across + implicit_theta * theta)
            # Azimuthal: ∂((1/r) ∂(r u_θ)/∂r)/∂r + ∂²u_θ/∂θ² / r² + (2/r³) ∂q/∂θ.
            on_axis = axis and j == 1
            axis_flux = omega[i - 1] if on_axis else 0.0  # ω_x on the axis
            for k in range(1, nt + 1):
                centre = w[i, j, k]
                above = (rc_above * w[i, j + 1, k] - rc_here * centre) * angular_above
                below = (rc_here * centre - rc_below * w[i, j - 1, k]) * angular_below
                if on_axis:
                    below = axis_flux
                radial = q[i, j, k + 1] + q[i, j - 1, k + 1] - q[i, j, k] - q[i, j - 1, k]
                along = _along_x(w[i + 1, j, k], centre, w[i - 1, j, k], east, west)
                along += radial * radial_coupling
                across = (above - below) * ring
                theta = (w[i, j, k + 1] - 2 * centre + w[i, j, k - 1]) * centre_theta
                explicit[2, i - 1, j - 1, k - 1] += nu * (along + explicit_theta * theta)
                implicit[2, i - 1, j - 1, k - 1] = nu * (across + implicit_theta * theta)


def add_viscous(
    u, q, w, m: RadialMetrics, dx, dt: float, axis_omega, core: int, nu: float,
    explicit: np.ndarray, implicit: np.ndarray | None = None,
) -> np.ndarray:
    """The viscous terms of u, q and w at their owned points, in one pass: ``ν`` times what
    is advanced explicitly (the axial second derivative and the θ couplings of u_r and
    u_θ) is added to ``explicit``; ``ν`` times what is advanced implicitly (the radial and
    azimuthal second derivatives) is returned. With ``core >= 0`` the azimuthal second
    derivative is implicit only on the first ``core`` rows in r (the core region about
    the axis) and explicit beyond (-1: everywhere).

    ``axis_omega``: ``ω_x`` on the axis per owned x index (shape ``(nx,)``), or None for
    an annulus (the hub's ghost values give its flux). ``explicit``: shape
    ``(3, nx, nr, nθ)`` (the owned points), updated in place.

    Returns
    -------
    implicit : array of shape ``(3, nx, nr, nθ)``
        ``implicit`` if given (overwritten), else a new array.
    """
    implicit = _owned_array(u.shape, implicit, 3)
    if explicit.shape != implicit.shape:
        raise ValueError(f"explicit has shape {explicit.shape}, expected {implicit.shape}")
    axis = axis_omega is not None
    omega = np.ascontiguousarray(axis_omega, dtype=np.float64) if axis else np.zeros(1)
    rows = implicit.shape[2]
    x = x_metrics(dx, u)
    _viscous(
        u, q, w, *m.columns(), x.width, x.gap, dt, axis, omega, rows if core < 0 else core,
        float(nu), explicit, implicit,
    )
    return implicit


def radial_bands(grid: CylindricalGrid, slip_outer: bool = False):
    """Bands of the radial viscous operators of the increments of u, q and w (homogeneous
    wall values), for their implicit (Crank–Nicolson) solves along r. With ``slip_outer``
    the outer wall is stress-free: no gradient of u nor of u_θ / r across it.

    Returns three ``(lower, diagonal, upper)`` triples of length ``nr``; ``q``'s last row
    (the outer wall face) is left for the caller to make an identity.
    """
    m = RadialMetrics.from_grid(grid)
    rc, rf, width, gap = (a.ravel() for a in (m.centre, m.face, m.width, m.gap))
    axis = grid.through_axis
    # u: lower/upper fluxes r_f / gap; ghosts across walls are -increment (value fixed).
    lower = rf[:-2] / (gap[:-2] * rc[1:-1] * width[1:-1])
    upper = rf[1:-1] / (gap[1:-1] * rc[1:-1] * width[1:-1])
    diagonal = -(lower + upper)
    diagonal[-1] += upper[-1] if slip_outer else -upper[-1]
    if not axis:
        diagonal[0] -= lower[0]
    lower[0] = upper[-1] = 0.0
    u_bands = (lower, diagonal, upper)
    # q on faces 1..nr: r_f (S[J+1] - S[J]) / gap, S[J] = (q[J] - q[J-1]) / (r_c w).
    inner = 1.0 / (rc[1:-1] * width[1:-1])  # S's factor at centres 1..nr
    outer = np.append(inner[1:], 0.0)  # at centres 2..nr+1 (beyond the wall: unused)
    scale = rf[1:-1] / gap[1:-1]
    q_bands = (scale * inner, -scale * (inner + outer), scale * outer)
    q_bands[0][0] = 0.0  # q = 0 on the axis or inner wall
    # w: (G[J] - G[J-1]) / width, G[J] = (r_c w[J+1] - r_c w[J]) / (r_f gap).
    with np.errstate(divide="ignore"):
        below = 1.0 / (rf[:-2] * gap[:-2] * width[1:-1])
    above = 1.0 / (rf[1:-1] * gap[1:-1] * width[1:-1])
    lower = rc[:-2] * below
    upper = rc[2:] * above
    diagonal = -rc[1:-1] * (above + below)
    # The ghost beyond the outer wall: -increment, or with slip (r_ghost / r_last) increment.
    diagonal[-1] += upper[-1] * rc[-1] / rc[-2] if slip_outer else -upper[-1]
    if axis:  # G on the axis ≈ 2 w[1] / r_c (the ring's circulation, taken locally)
        diagonal[0] = -rc[1] * above[0] - 2.0 / (rc[1] * width[1])
    else:
        diagonal[0] -= lower[0]
    lower[0] = upper[-1] = 0.0
    return u_bands, q_bands, (lower, diagonal, upper)
