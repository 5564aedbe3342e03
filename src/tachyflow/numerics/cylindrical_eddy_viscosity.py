"""Subgrid-scale eddy viscosities and the divergence of their stress on the staggered
cylindrical grid (x, r, θ) of the rotating-frame solver (MPI-free, numba).

The arrays are those of :mod:`~tachyflow.numerics.cylindrical_stencils`: ghosted ``u``
(axial, x-faces), ``q = r u_r`` (r-faces; row 0 the axis or the hub) and ``w`` (azimuthal,
θ-faces), in a frame turning at Ω about x. The models are those of
:mod:`~tachyflow.numerics.eddy_viscosity` (the same point formulas), applied to the
velocity gradient in the local orthonormal basis (x, r, θ) at each cell centre,

.. math::

    g = \\begin{pmatrix} ∂_x u & ∂_r u & ∂_θ u / r \\\\
        ∂_x u_r & ∂_r u_r & ∂_θ u_r / r - u_θ / r \\\\
        ∂_x u_θ & ∂_r u_θ & ∂_θ u_θ / r + u_r / r \\end{pmatrix},

of the *inertial* velocity (``u_θ + Ω r``: the frame's rotation is added back, so a model
sees the same flow in any frame; the strain itself does not change). Its trace is the
discrete divergence, zero after each projection. Radial derivatives at the centres are
centred over the rows below and above, one-sided in the first ring about the axis (the
row across the axis is the other side of the pipe, not a neighbour). The filter widths
are the cell's: ``Δx``, ``Δr``, ``r Δθ``; ``Δ = (Δx Δr r Δθ)^(1/3)``.

:func:`add_stress_divergence` adds the divergence of ``τ = 2 ν_t S`` in cylindrical
coordinates,

* axial: ``∂_x τ_xx + (1/r) ∂_r (r τ_xr) + (1/r) ∂_θ τ_xθ``,
* radial (times r, as ``q``'s equation is): ``(1/r) ∂_r (r τ_rr) − τ_θθ / r +
  (1/r) ∂_θ τ_rθ + ∂_x τ_rx``,
* azimuthal: ``(1/r²) ∂_r (r² τ_rθ) + (1/r) ∂_θ τ_θθ + ∂_x τ_θx``,

the normal stresses at the centres and the shear stresses on the edges with ν_t averaged
from the four centres around, in conservative form: every radial flux through the axis is
multiplied by ``r = 0`` and vanishes, as in the solver's own stencils.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from tachyflow.numerics import eddy_viscosity as cartesian
from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.cylindrical_stencils import RadialMetrics
from tachyflow.numerics.stencils import x_metrics

# The rows of CylindricalRows.table.
CENTRE, WIDTH, UP, DOWN, BEYOND, BELOW, HERE, ABOVE = range(8)


class CylindricalRows:
    """Per-row factors of the kernels, from a grid's :class:`RadialMetrics`: the inverse
    face radii (0 on the axis), the weights that centre ``q / r`` (in the first ring about
    the axis extrapolated from its two outer faces: u_r on the axis depends on θ) and those
    of the radial derivative at the centres (one-sided in the first ring).

    Parameters
    ----------
    metrics : RadialMetrics
        The grid's radial geometry with ghosts.
    through_axis : bool
        Whether row 0 is the axis (a pipe) rather than the hub of an annulus.
    """

    def __init__(self, metrics: RadialMetrics, through_axis: bool):
        self.centre, self.face, self.width, self.gap = metrics.columns()
        rows = len(self.centre)
        face = self.face
        self.inverse_face = np.divide(1.0, face, out=np.zeros(rows), where=face != 0)
        self.up = 0.5 * self.inverse_face
        self.down = np.zeros(rows)
        self.down[1:] = 0.5 * self.inverse_face[:-1]
        self.beyond = np.zeros(rows)
        # The derivative ∂/∂r at centre J from the centred values of rows J-1, J, J+1.
        self.below, self.here, self.above = np.zeros(rows), np.zeros(rows), np.zeros(rows)
        span = self.centre[2:] - self.centre[:-2]
        self.below[1:-1], self.above[1:-1] = -1.0 / span, 1.0 / span
        if through_axis:  # the first ring: one-sided
            shift = (self.centre[1] - face[1]) / (face[2] - face[1])
            self.up[1] = (1.0 - shift) * self.inverse_face[1]
            self.down[1], self.beyond[1] = 0.0, shift * self.inverse_face[2]
            self.below[1], self.here[1], self.above[1] = 0.0, -1.0 / self.gap[1], 1.0 / self.gap[1]
        self.table = np.stack([self.centre, self.width, self.up, self.down, self.beyond,
                               self.below, self.here, self.above])


@numba.njit(error_model="numpy", inline="always")
def _radial_velocity(q, i, j, k, weights):  # pragma: no cover
    # u_r at the centre of cell (i, j, k) from q = r u_r on its two r-faces (in the first
    # ring about the axis: extrapolated from the two faces above).
    return (weights[UP, j] * q[i, j, k] + weights[DOWN, j] * q[i, j - 1, k]
            + weights[BEYOND, j] * q[i, j + 1, k])


@numba.njit(error_model="numpy", inline="always")
def _gradient(u, q, w, i, j, k, dx, along, dt, rows, rotation, g):  # pragma: no cover
    # g[a, b] = ∂u_a/∂x_b of the inertial velocity at the centre of cell (i, j, k), in the
    # local basis (x, r, θ). rows: CylindricalRows.table; dx: the cell's x width, along:
    # half the distance from centre i-1 to i+1.
    weights, centre, width = rows, rows[CENTRE], rows[WIDTH]
    below, here, above = rows[BELOW], rows[HERE], rows[ABOVE]
    r = centre[j]
    arc = r * dt
    ur = _radial_velocity(q, i, j, k, weights)
    uc = 0.5 * (u[i, j, k] + u[i - 1, j, k])
    wc = 0.5 * (w[i, j, k] + w[i, j, k - 1])
    g[0, 0] = (u[i, j, k] - u[i - 1, j, k]) / dx
    g[0, 1] = 0.5 * (below[j] * (u[i, j - 1, k] + u[i - 1, j - 1, k]) + here[j] * 2.0 * uc
                     + above[j] * (u[i, j + 1, k] + u[i - 1, j + 1, k]))
    g[0, 2] = 0.25 * (u[i, j, k + 1] + u[i - 1, j, k + 1]
                      - u[i, j, k - 1] - u[i - 1, j, k - 1]) / arc
    g[1, 0] = 0.5 * (_radial_velocity(q, i + 1, j, k, weights)
                     - _radial_velocity(q, i - 1, j, k, weights)) / along
    g[1, 1] = (q[i, j, k] - q[i, j - 1, k]) / (r * width[j]) - ur / r
    g[1, 2] = (0.5 * (_radial_velocity(q, i, j, k + 1, weights)
                      - _radial_velocity(q, i, j, k - 1, weights))) / arc - wc / r - rotation
    g[2, 0] = 0.25 * (w[i + 1, j, k] + w[i + 1, j, k - 1]
                      - w[i - 1, j, k] - w[i - 1, j, k - 1]) / along
    g[2, 1] = 0.5 * (below[j] * (w[i, j - 1, k] + w[i, j - 1, k - 1]) + here[j] * 2.0 * wc
                     + above[j] * (w[i, j + 1, k] + w[i, j + 1, k - 1])) + rotation
    g[2, 2] = (w[i, j, k] - w[i, j, k - 1]) / arc + ur / r


@kernel(error_model="numpy", parallel=True)
def _eddy_viscosity(u, q, w, width_x, gap_x, dt, rows, rotation, model, constant, damping,
                    out):  # pragma: no cover
    nx, nr, nt = out.shape
    centre, width = rows[CENTRE], rows[WIDTH]
    for i in prange(1, nx + 1):
        g, work, widths = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
        dx, along = width_x[i], 0.5 * (gap_x[i - 1] + gap_x[i])
        for j in range(1, nr + 1):
            widths[0], widths[1], widths[2] = dx, width[j], centre[j] * dt
            delta = (widths[0] * widths[1] * widths[2]) ** (1.0 / 3.0)
            for k in range(1, nt + 1):
                _gradient(u, q, w, i, j, k, dx, along, dt, rows, rotation, g)
                out[i - 1, j - 1, k - 1] = cartesian.model_value(
                    model, g, widths, delta, constant, damping[j - 1], work)


@kernel(error_model="numpy", parallel=True)
def _vreman_parts(u, q, w, width_x, gap_x, dt, rows, rotation, parts):  # pragma: no cover
    nx, nr, nt = parts.shape[1] - 2, parts.shape[2] - 2, parts.shape[3] - 2
    centre, width = rows[CENTRE], rows[WIDTH]
    for i in prange(1, nx + 1):
        g, work, widths = np.empty((3, 3)), np.empty((3, 3)), np.empty(3)
        dx, along = width_x[i], 0.5 * (gap_x[i - 1] + gap_x[i])
        velocity = np.empty(3)
        for j in range(1, nr + 1):
            widths[0], widths[1], widths[2] = dx, width[j], centre[j] * dt
            for k in range(1, nt + 1):
                _gradient(u, q, w, i, j, k, dx, along, dt, rows, rotation, g)
                # The inertial velocity in the local basis (x, r, θ).
                velocity[0] = 0.5 * (u[i, j, k] + u[i - 1, j, k])
                velocity[1] = _radial_velocity(q, i, j, k, rows)
                velocity[2] = 0.5 * (w[i, j, k] + w[i, j, k - 1]) + rotation * centre[j]
                cartesian.store_parts(g, velocity, widths, work, parts, i, j, k)


@numba.njit(error_model="numpy", inline="always")
def _edge(nu, i, j, k, a, b, c, d, e, f):  # pragma: no cover
    # ν on the edge between centres (i, j, k), + (a, b, c), + (d, e, f) and + both.
    return 0.25 * (nu[i, j, k] + nu[i + a, j + b, k + c] + nu[i + d, j + e, k + f]
                   + nu[i + a + d, j + b + e, k + c + f])


@numba.njit(error_model="numpy", inline="always")
def _xr(u, q, nu, i, j, k, gap_x, gap, inverse_face):  # pragma: no cover
    # τ_xr on the edge (i + 1/2, j + 1/2, k).
    return _edge(nu, i, j, k, 1, 0, 0, 0, 1, 0) * (
        (u[i, j + 1, k] - u[i, j, k]) / gap[j]
        + (q[i + 1, j, k] - q[i, j, k]) * inverse_face[j] / gap_x[i])


@numba.njit(error_model="numpy", inline="always")
def _xt(u, w, nu, i, j, k, gap_x, arc):  # pragma: no cover
    # τ_xθ on the edge (i + 1/2, j, k + 1/2); arc = r Δθ of row j.
    return _edge(nu, i, j, k, 1, 0, 0, 0, 0, 1) * (
        (u[i, j, k + 1] - u[i, j, k]) / arc + (w[i + 1, j, k] - w[i, j, k]) / gap_x[i])


@numba.njit(error_model="numpy", inline="always")
def _rt(q, w, nu, i, j, k, dt, centre, gap, inverse_face):  # pragma: no cover
    # τ_rθ on the edge (i, j + 1/2, k + 1/2): r ∂(u_θ/r)/∂r + (1/r) ∂u_r/∂θ there, the
    # first exact for u_θ = a + b r: near the axis each part is of order 1/r and only their
    # sum is regular, so an O(Δr²/r²) error in one would not vanish as the grid is refined.
    return _edge(nu, i, j, k, 0, 1, 0, 0, 0, 1) * inverse_face[j] * (
        (centre[j] * w[i, j + 1, k] - centre[j + 1] * w[i, j, k]) / gap[j]
        + (q[i, j, k + 1] - q[i, j, k]) * inverse_face[j] / dt)


@numba.njit(error_model="numpy", inline="always")
def _normal(u, q, w, nu, i, j, k, width_x, dt, centre, width, weights):  # pragma: no cover
    # τ_xx, τ_rr, τ_θθ at the centre of cell (i, j, k).
    r = centre[j]
    ur = _radial_velocity(q, i, j, k, weights) / r
    twice = 2.0 * nu[i, j, k]
    return (twice * (u[i, j, k] - u[i - 1, j, k]) / width_x[i],
            twice * ((q[i, j, k] - q[i, j - 1, k]) / (r * width[j]) - ur),
            twice * ((w[i, j, k] - w[i, j, k - 1]) / (r * dt) + ur))


@kernel(error_model="numpy", parallel=True)
def _add_stress_divergence(u, q, w, nu, wx, gx, dt, rows, inverse_face, face, gap,
                           out_u, out_q, out_w):  # pragma: no cover
    # wx, gx: the x widths and centre-to-centre distances (XMetrics' width and gap).
    nx, nr, nt = out_u.shape
    centre, width, weights = rows[CENTRE], rows[WIDTH], rows
    for i in prange(1, nx + 1):
        dx, dx_face = wx[i], gx[i]  # q's and w's control volume in x, and u's
        for j in range(1, nr + 1):
            r, r_above = centre[j], centre[j + 1]
            arc = r * dt
            cell = 1.0 / (r * width[j])
            for k in range(1, nt + 1):
                xx, rr, tt = _normal(u, q, w, nu, i, j, k, wx, dt, centre, width, weights)
                xx_next = _normal(u, q, w, nu, i + 1, j, k, wx, dt, centre, width, weights)[0]
                xr_up = _xr(u, q, nu, i, j, k, gx, gap, inverse_face)
                xr_down = _xr(u, q, nu, i, j - 1, k, gx, gap, inverse_face)
                xt_up = _xt(u, w, nu, i, j, k, gx, arc)
                xt_down = _xt(u, w, nu, i, j, k - 1, gx, arc)
                out_u[i - 1, j - 1, k - 1] += (
                    (xx_next - xx) / dx_face + (face[j] * xr_up - face[j - 1] * xr_down) * cell
                    + (xt_up - xt_down) / arc)
                rt_up = _rt(q, w, nu, i, j, k, dt, centre, gap, inverse_face)
                rt_down = _rt(q, w, nu, i, j - 1, k, dt, centre, gap, inverse_face)
                tt_next = _normal(u, q, w, nu, i, j, k + 1, wx, dt, centre, width, weights)[2]
                xt_back = _xt(u, w, nu, i - 1, j, k, gx, arc)
                out_w[i - 1, j - 1, k - 1] += (
                    (face[j] ** 2 * rt_up - face[j - 1] ** 2 * rt_down) * cell / r
                    + (tt_next - tt) / arc + (xt_up - xt_back) / dx)
                if j == nr:  # the outer wall face: q stays 0
                    continue
                above = _normal(u, q, w, nu, i, j + 1, k, wx, dt, centre, width, weights)
                rt_back = _rt(q, w, nu, i, j, k - 1, dt, centre, gap, inverse_face)
                xr_back = _xr(u, q, nu, i - 1, j, k, gx, gap, inverse_face)
                rf = face[j]
                radial = ((r_above * above[1] - r * rr) / (rf * gap[j])
                          - 0.5 * (tt + above[2]) / rf + (rt_up - rt_back) / (rf * dt)
                          + (xr_up - xr_back) / dx)
                out_q[i - 1, j - 1, k - 1] += rf * radial


def _check_shapes(u, out):
    shape = tuple(n - 2 for n in u.shape)
    if out.shape[-3:] != shape:
        raise ValueError(f"out has shape {out.shape}, expected the owned cells' {shape}")


def eddy_viscosity(u, q, w, rows: CylindricalRows, dx, dt: float, rotation: float,
                   model: str, out: np.ndarray, constant: float | None = None,
                   damping: np.ndarray | None = None) -> np.ndarray:
    """ν_t of ``model`` at the owned cell centres into ``out`` (shape of the owned cells);
    ``dx`` a uniform spacing or the :class:`~tachyflow.numerics.stencils.XMetrics` of the
    x range, ``dt`` the θ spacing, ``rotation`` the frame's Ω; ``constant`` defaults to the
    model's
    (:data:`~tachyflow.numerics.eddy_viscosity.CONSTANTS`), ``damping`` (one factor per
    radial row, Smagorinsky's van Driest damping) to none."""
    if model not in cartesian.MODELS:
        raise ValueError(f"model must be one of {cartesian.MODELS}, got {model!r}")
    _check_shapes(u, out)
    nr = out.shape[1]
    damping = np.ones(nr) if damping is None else np.asarray(damping, dtype=np.float64)
    if damping.shape != (nr,):
        raise ValueError(f"damping has shape {damping.shape}, expected ({nr},)")
    x = x_metrics(dx, u)
    _eddy_viscosity(
        u, q, w, x.width, x.gap, float(dt), rows.table, float(rotation),
        cartesian.MODELS.index(model),
        cartesian.CONSTANTS[model] if constant is None else float(constant), damping, out,
    )
    return out


def vreman_parts(u, q, w, rows: CylindricalRows, dx, dt: float, rotation: float,
                 parts: np.ndarray) -> None:
    """Into the owned cells of ``parts`` (:data:`~tachyflow.numerics.eddy_viscosity.PARTS`
    ghosted arrays) the gradient's parts the dynamic coefficient filters, as
    :func:`tachyflow.numerics.eddy_viscosity.vreman_parts` on the Cartesian grid."""
    x = x_metrics(dx, u)
    _vreman_parts(u, q, w, x.width, x.gap, float(dt), rows.table, float(rotation), parts)


def global_sums(parts: np.ndarray, rows: CylindricalRows, dx, dt: float, filtered,
                fluid=None) -> np.ndarray:
    """:func:`tachyflow.numerics.eddy_viscosity.row_global_sums` on the cylindrical grid:
    the cells' widths ``Δx, Δr, r Δθ`` and volumes ``r Δr`` (times ``Δx Δθ``)."""
    centre, width = rows.centre[1:-1], rows.width[1:-1]
    widths, factors = cartesian.row_widths_and_x_factors(dx, parts[0], width, centre * dt)
    return cartesian.row_global_sums(parts, widths, centre * width, filtered, fluid, factors)


def add_stress_divergence(u, q, w, nu, rows: CylindricalRows, dx, dt: float,
                          out: np.ndarray) -> None:
    """``out[a] += (∇·(2 ν_t S))_a`` at each component's owned faces (``out``: shape
    ``(3, nx, nr, nθ)``, the radial one times r as ``q``'s terms are; the outer wall face of
    ``q`` untouched); ``nu`` is ν_t at the cell centres, ghosted like the velocity, zero on
    the walls (mirrored with the opposite sign)."""
    if nu.shape != u.shape:
        raise ValueError(f"nu has shape {nu.shape}, expected the velocity's {u.shape}")
    _check_shapes(u, out[0])
    x = x_metrics(dx, u)
    _add_stress_divergence(u, q, w, nu, x.width, x.gap, float(dt), rows.table,
                           rows.inverse_face, rows.face, rows.gap, out[0], out[1], out[2])
