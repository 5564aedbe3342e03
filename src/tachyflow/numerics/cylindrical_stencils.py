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


def _x_average(a):
    """Average of ``a`` over its own and the next x index (to the next x-face/centre)."""
    return 0.5 * (a[1:] + a[:-1])


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


def advection(u, q, w, m: RadialMetrics, dx: float, dt: float, rotation: float):
    """Minus the advective terms, plus the Coriolis terms, of u, q and w (owned values).

    ``u·∇u`` in the conservative forms of Verzicco & Orlandi; in the radial equation the
    centripetal ``u_θ²`` term; the frame's Coriolis force ``-2Ω × u``.
    """
    rc, rf, width, gap = m.centre, m.face, m.width, m.gap

    # Axial momentum at (x-face i, centre J, centre k).
    centres = _x_average(u)  # at cell centres between x-faces
    flux_x = (centres[1:, I, I] ** 2 - centres[:-1, I, I] ** 2) / dx
    radial = _x_average(q)[1:, :-1, I] * 0.5 * (u[I, 1:, I] + u[I, :-1, I])  # at r-faces
    flux_r = (radial[:, 1:] - radial[:, :-1]) / (rc[:, I] * width[:, I])
    azimuthal = 0.5 * (w[I, I, :-1] + w[UP, I, :-1]) * 0.5 * (u[I, I, 1:] + u[I, I, :-1])
    flux_t = (azimuthal[:, :, 1:] - azimuthal[:, :, :-1]) / (rc[:, I] * dt)
    hu = -(flux_x + flux_r + flux_t)

    # Radial momentum times r, at (centre i, r-face J, centre k).
    axial = 0.5 * (u[:-1, I, I] + u[:-1, UP, I]) * _x_average(q)[:, I, I]  # at x-faces
    flux_x = (axial[1:] - axial[:-1]) / dx
    at_centres = 0.5 * (q[I, 1:, I] + q[I, :-1, I]) ** 2 / rc[:, 1:]
    flux_r = (at_centres[:, 1:] - at_centres[:, :-1]) / gap[:, I]
    azimuthal = (
        0.5 * (w[I, I, :-1] + w[I, UP, :-1]) * 0.5 * (q[I, I, 1:] + q[I, I, :-1]) / rf[:, I]
    )
    flux_t = (azimuthal[:, :, 1:] - azimuthal[:, :, :-1]) / dt
    w_here = 0.25 * (w[I, I, I] + w[I, UP, I] + w[I, I, DOWN] + w[I, UP, DOWN])
    hq = -(flux_x + flux_r + flux_t) + w_here**2 + 2.0 * rotation * rf[:, I] * w_here

    # Azimuthal momentum at (centre i, centre J, θ-face k): (1/r²) ∂(r q w)/∂r form.
    axial = 0.5 * (u[:-1, I, I] + u[:-1, I, UP]) * _x_average(w)[:, I, I]
    flux_x = (axial[1:] - axial[:-1]) / dx
    radial = rf[:, :-1] * 0.5 * (q[I, :-1, I] + q[I, :-1, UP]) * 0.5 * (w[I, :-1, I] + w[I, 1:, I])
    flux_r = (radial[:, 1:] - radial[:, :-1]) / (rc[:, I] ** 2 * width[:, I])
    at_centres = (0.5 * (w[I, I, 1:] + w[I, I, :-1])) ** 2
    flux_t = (at_centres[:, :, 1:] - at_centres[:, :, :-1]) / (rc[:, I] * dt)
    q_here = 0.25 * (q[I, I, I] + q[I, DOWN, I] + q[I, I, UP] + q[I, DOWN, UP])
    hw = -(flux_x + flux_r + flux_t) - 2.0 * rotation * q_here / rc[:, I]
    return hu, hq, hw


def _second_difference_x(a, dx):
    return (a[UP, I, I] - 2.0 * a[I, I, I] + a[DOWN, I, I]) / dx**2


def _second_difference_t(a, dt):
    return (a[I, I, UP] - 2.0 * a[I, I, I] + a[I, I, DOWN]) / dt**2


def viscous(u, q, w, m: RadialMetrics, dx: float, dt: float, axis_omega):
    """The viscous operators (without ν) of u, q and w at their owned points, split into
    what is advanced explicitly (the axial second derivative and the θ couplings of u_r
    and u_θ) and what implicitly (the radial and azimuthal second derivatives).

    ``axis_omega``: ``ω_x`` on the axis, broadcastable to ``(nx, 1, nθ)``, or None for an
    annulus (the hub's ghost values give its flux).

    Returns
    -------
    explicit, implicit : tuple of 3 arrays each
    """
    rc, rf, width, gap = m.centre, m.face, m.width, m.gap
    # Axial: (1/r) ∂(r ∂u/∂r)/∂r, with no flux through the axis (r = 0).
    flux = rf[:, :-1] * (u[I, 1:, I] - u[I, :-1, I]) / gap[:, :-1]
    implicit_u = (flux[:, 1:] - flux[:, :-1]) / (rc[:, I] * width[:, I]) + _second_difference_t(
        u, dt
    ) / rc[:, I] ** 2
    # Radial (times r): r ∂((1/r) ∂q/∂r)/∂r + ∂²q/∂θ² / r² - (2/r) ∂u_θ/∂θ, on r-faces.
    slope = (q[I, 1:, I] - q[I, :-1, I]) / (rc[:, 1:] * width[:, 1:])  # at centres 1..
    w_slope = 0.5 * ((w[I, I, I] - w[I, I, DOWN]) + (w[I, UP, I] - w[I, UP, DOWN])) / dt
    implicit_q = (
        rf[:, I] * (slope[:, 1:] - slope[:, :-1]) / gap[:, I]
        + _second_difference_t(q, dt) / rf[:, I] ** 2
    )
    # Azimuthal: ∂((1/r) ∂(r u_θ)/∂r)/∂r + ∂²u_θ/∂θ² / r² + (2/r³) ∂q/∂θ.
    angular = rc * w[I]
    with np.errstate(divide="ignore", invalid="ignore"):  # the axis face, replaced below
        flux = (angular[:, 1:, I] - angular[:, :-1, I]) / (rf[:, :-1] * gap[:, :-1])
    if axis_omega is not None:
        flux[:, 0:1, :] = axis_omega
    q_centre = 0.5 * (q[I, I, :] + q[I, DOWN, :])
    implicit_w = (flux[:, 1:] - flux[:, :-1]) / width[:, I] + _second_difference_t(w, dt) / rc[
        :, I
    ] ** 2
    explicit = (
        _second_difference_x(u, dx),
        _second_difference_x(q, dx) - 2.0 * w_slope / rf[:, I],
        _second_difference_x(w, dx)
        + 2.0 * (q_centre[:, :, 2:] - q_centre[:, :, 1:-1]) / (dt * rc[:, I] ** 3),
    )
    return explicit, (implicit_u, implicit_q, implicit_w)


def radial_bands(grid: CylindricalGrid):
    """Bands of the radial viscous operators of the increments of u, q and w (homogeneous
    wall values), for their implicit (Crank–Nicolson) solves along r.

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
    diagonal[-1] -= upper[-1]
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
    diagonal[-1] -= upper[-1]  # ghost beyond the outer wall: -increment
    if axis:  # G on the axis ≈ 2 w[1] / r_c (the ring's circulation, taken locally)
        diagonal[0] = -rc[1] * above[0] - 2.0 / (rc[1] * width[1])
    else:
        diagonal[0] -= lower[0]
    lower[0] = upper[-1] = 0.0
    return u_bands, q_bands, (lower, diagonal, upper)
