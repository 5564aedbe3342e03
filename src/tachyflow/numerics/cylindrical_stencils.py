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

from tachyflow.numerics.cylindrical_grid import CylindricalGrid

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


def divergence(u, q, w, m: RadialMetrics, dx: float, dt: float, scale: float = 1.0):
    """``scale * ∇·u`` at the owned cell centres (``dt``: the θ spacing)."""
    rc, width = m.centre[:, I], m.width[:, I]
    return scale * (
        (u[I, I, I] - u[DOWN, I, I]) / dx
        + (q[I, I, I] - q[I, DOWN, I]) / (rc * width)
        + (w[I, I, I] - w[I, I, DOWN]) / (rc * dt)
    )


def subtract_gradient(u, q, w, p, m: RadialMetrics, dx: float, dt: float, factor: float):
    """``u -= factor ∇p`` on the owned faces (the outer wall face of ``q`` stays 0)."""
    centre = p[I, I, I]
    u[I, I, I] -= factor * (p[UP, I, I] - centre) / dx
    q[I, 1:-2, I] -= factor * m.face[:, 1:-2] * (p[I, 2:-1, I] - p[I, 1:-2, I]) / m.gap[:, 1:-2]
    w[I, I, I] -= factor * (p[I, I, UP] - centre) / (m.centre[:, I] * dt)


def axis_vorticity(w_first_ring_mean: np.ndarray, m: RadialMetrics) -> np.ndarray:
    """``ω_x`` on the axis from the mean azimuthal velocity of the first ring of cells:
    the circulation around it over the area it encloses, ``2 <u_θ> / r_c``."""
    return 2.0 * w_first_ring_mean / m.centre[0, 1, 0]


@numba.njit(cache=True)
def _advection(u, q, w, rc, rf, width, gap, dx, dt, rotation, hu, hq, hw):  # pragma: no cover
    nx, nr, nt = hu.shape
    for i in range(1, nx + 1):
        for j in range(1, nr + 1):
            for k in range(1, nt + 1):
                # Axial momentum at (x-face i, centre j, centre k).
                ahead = 0.5 * (u[i, j, k] + u[i + 1, j, k])
                behind = 0.5 * (u[i - 1, j, k] + u[i, j, k])
                flux_x = (ahead * ahead - behind * behind) / dx
                above = 0.25 * (q[i, j, k] + q[i + 1, j, k]) * (u[i, j, k] + u[i, j + 1, k])
                below = (
                    0.25 * (q[i, j - 1, k] + q[i + 1, j - 1, k]) * (u[i, j - 1, k] + u[i, j, k])
                )
                flux_r = (above - below) / (rc[j] * width[j])
                after = 0.25 * (w[i, j, k] + w[i + 1, j, k]) * (u[i, j, k] + u[i, j, k + 1])
                before = (
                    0.25 * (w[i, j, k - 1] + w[i + 1, j, k - 1]) * (u[i, j, k - 1] + u[i, j, k])
                )
                flux_t = (after - before) / (rc[j] * dt)
                hu[i - 1, j - 1, k - 1] = -(flux_x + flux_r + flux_t)
                # Radial momentum times r at (centre i, r-face j, centre k).
                ahead = 0.25 * (u[i, j, k] + u[i, j + 1, k]) * (q[i, j, k] + q[i + 1, j, k])
                behind = (
                    0.25 * (u[i - 1, j, k] + u[i - 1, j + 1, k]) * (q[i - 1, j, k] + q[i, j, k])
                )
                flux_x = (ahead - behind) / dx
                outer = 0.5 * (q[i, j + 1, k] + q[i, j, k])
                inner = 0.5 * (q[i, j, k] + q[i, j - 1, k])
                flux_r = (outer * outer / rc[j + 1] - inner * inner / rc[j]) / gap[j]
                after = 0.25 * (w[i, j, k] + w[i, j + 1, k]) * (q[i, j, k] + q[i, j, k + 1])
                before = (
                    0.25 * (w[i, j, k - 1] + w[i, j + 1, k - 1]) * (q[i, j, k - 1] + q[i, j, k])
                )
                flux_t = (after - before) / (rf[j] * dt)
                swirl = 0.25 * (w[i, j, k] + w[i, j + 1, k] + w[i, j, k - 1] + w[i, j + 1, k - 1])
                hq[i - 1, j - 1, k - 1] = (
                    -(flux_x + flux_r + flux_t) + swirl * swirl + 2.0 * rotation * rf[j] * swirl
                )
                # Azimuthal momentum at (centre i, centre j, θ-face k): (1/r²) ∂(r q w)/∂r.
                ahead = 0.25 * (u[i, j, k] + u[i, j, k + 1]) * (w[i, j, k] + w[i + 1, j, k])
                behind = (
                    0.25 * (u[i - 1, j, k] + u[i - 1, j, k + 1]) * (w[i - 1, j, k] + w[i, j, k])
                )
                flux_x = (ahead - behind) / dx
                above = (
                    rf[j] * 0.25 * (q[i, j, k] + q[i, j, k + 1]) * (w[i, j, k] + w[i, j + 1, k])
                )
                below = (
                    rf[j - 1] * 0.25 * (q[i, j - 1, k] + q[i, j - 1, k + 1])
                    * (w[i, j - 1, k] + w[i, j, k])
                )  # fmt: skip
                flux_r = (above - below) / (rc[j] * rc[j] * width[j])
                after = 0.5 * (w[i, j, k + 1] + w[i, j, k])
                before = 0.5 * (w[i, j, k] + w[i, j, k - 1])
                flux_t = (after * after - before * before) / (rc[j] * dt)
                radial = 0.25 * (q[i, j, k] + q[i, j - 1, k] + q[i, j, k + 1] + q[i, j - 1, k + 1])
                hw[i - 1, j - 1, k - 1] = (
                    -(flux_x + flux_r + flux_t) - 2.0 * rotation * radial / rc[j]
                )


def advection(u, q, w, m: RadialMetrics, dx: float, dt: float, rotation: float):
    """Minus the advective terms, plus the Coriolis terms, of u, q and w (owned values).

    ``u·∇u`` in the conservative forms of Verzicco & Orlandi; in the radial equation the
    centripetal ``u_θ²`` term; the frame's Coriolis force ``-2Ω × u``.
    """
    shape = tuple(n - 2 for n in u.shape)
    hu, hq, hw = np.empty(shape), np.empty(shape), np.empty(shape)
    _advection(u, q, w, *m.columns(), dx, dt, float(rotation), hu, hq, hw)
    return hu, hq, hw


@numba.njit(cache=True)
def _viscous(u, q, w, rc, rf, width, gap, dx, dt, axis, omega, core, out):  # pragma: no cover
    nx, nr, nt = out.shape[1:]
    for i in range(1, nx + 1):
        for j in range(1, nr + 1):
            inverse_rc2 = 1.0 / (rc[j] * rc[j] * dt * dt)
            # Rows up to `core` have their θ second derivative implicit, the others explicit.
            theta = 3 if j <= core else 0
            for k in range(1, nt + 1):
                # Axial: (1/r) ∂(r ∂u/∂r)/∂r (no flux through the axis: rf = 0 there).
                centre = u[i, j, k]
                above = rf[j] * (u[i, j + 1, k] - centre) / gap[j]
                below = rf[j - 1] * (centre - u[i, j - 1, k]) / gap[j - 1]
                out[0, i - 1, j - 1, k - 1] = (
                    u[i + 1, j, k] - 2 * centre + u[i - 1, j, k]
                ) / dx**2
                out[3, i - 1, j - 1, k - 1] = (above - below) / (rc[j] * width[j])
                out[theta, i - 1, j - 1, k - 1] += (
                    u[i, j, k + 1] - 2 * centre + u[i, j, k - 1]
                ) * inverse_rc2
                # Radial (times r): r ∂((1/r) ∂q/∂r)/∂r + ∂²q/∂θ² / r² - (2/r) ∂u_θ/∂θ.
                centre = q[i, j, k]
                outer = (q[i, j + 1, k] - centre) / (rc[j + 1] * width[j + 1])
                inner = (centre - q[i, j - 1, k]) / (rc[j] * width[j])
                swirl_slope = (
                    0.5 * (w[i, j, k] - w[i, j, k - 1] + w[i, j + 1, k] - w[i, j + 1, k - 1]) / dt
                )
                out[1, i - 1, j - 1, k - 1] = (
                    q[i + 1, j, k] - 2 * centre + q[i - 1, j, k]
                ) / dx**2 - 2.0 * swirl_slope / rf[j]
                out[4, i - 1, j - 1, k - 1] = rf[j] * (outer - inner) / gap[j]
                out[theta + 1, i - 1, j - 1, k - 1] += (
                    q[i, j, k + 1] - 2 * centre + q[i, j, k - 1]
                ) / (rf[j] * rf[j] * dt * dt)
                # Azimuthal: ∂((1/r) ∂(r u_θ)/∂r)/∂r + ∂²u_θ/∂θ² / r² + (2/r³) ∂q/∂θ.
                centre = w[i, j, k]
                above = (rc[j + 1] * w[i, j + 1, k] - rc[j] * centre) / (rf[j] * gap[j])
                if axis and j == 1:
                    below = omega[i - 1]  # ω_x on the axis
                else:
                    below = (rc[j] * centre - rc[j - 1] * w[i, j - 1, k]) / (
                        rf[j - 1] * gap[j - 1]
                    )
                radial_ahead = 0.5 * (q[i, j, k + 1] + q[i, j - 1, k + 1])
                radial_here = 0.5 * (q[i, j, k] + q[i, j - 1, k])
                out[2, i - 1, j - 1, k - 1] = (
                    w[i + 1, j, k] - 2 * centre + w[i - 1, j, k]
                ) / dx**2 + 2.0 * (radial_ahead - radial_here) / (dt * rc[j] ** 3)
                out[5, i - 1, j - 1, k - 1] = (above - below) / width[j]
                out[theta + 2, i - 1, j - 1, k - 1] += (
                    w[i, j, k + 1] - 2 * centre + w[i, j, k - 1]
                ) * inverse_rc2


def viscous(u, q, w, m: RadialMetrics, dx: float, dt: float, axis_omega, core: int = -1):
    """The viscous operators (without ν) of u, q and w at their owned points, split into
    what is advanced explicitly (the axial second derivative and the θ couplings of u_r
    and u_θ) and what implicitly (the radial and azimuthal second derivatives). With
    ``core >= 0`` the azimuthal second derivative is implicit only on the first ``core``
    rows in r (the core region about the axis) and explicit beyond (-1: everywhere).

    ``axis_omega``: ``ω_x`` on the axis per owned x index (shape ``(nx,)``), or None for
    an annulus (the hub's ghost values give its flux).

    Returns
    -------
    explicit, implicit : tuple of 3 arrays each
    """
    out = np.empty((6, *(n - 2 for n in u.shape)))
    axis = axis_omega is not None
    omega = np.ascontiguousarray(axis_omega, dtype=np.float64) if axis else np.zeros(1)
    rows = out.shape[2]
    _viscous(u, q, w, *m.columns(), dx, dt, axis, omega, rows if core < 0 else core, out)
    return tuple(out[:3]), tuple(out[3:])


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
