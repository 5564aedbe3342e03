"""Second-order finite-volume operators of the staggered grid, on ghosted local arrays.

Every array carries one ghost layer on each side of each axis (filled by the caller: halo
exchange and boundary conditions), and every operator returns values for the owned cells
only. Placement (local index ``i, j, k`` of the owning cell):

- ``p`` at the cell centre ``(i, j, k)``,
- ``u`` at the x-face ``(i + 1/2, j, k)``, ``v`` at the y-face ``(i, j + 1/2, k)``,
  ``w`` at the z-face ``(i, j, k + 1/2)``.

Advection is in divergence form with centred averages (energy conserving on a uniform
grid, as in CaNS); x and y metrics allow stretched grids (flux form, the averages
unweighted as in CaNS: second order on smoothly stretched cells). The operators: divergence, the
gradient's subtraction, viscous terms, advection, and the velocities centred at the cell
centres. The RK3 substep that fuses them into one pass is
:mod:`tachyflow.numerics.velocity_update`; sums and checks over the owned cells are
:mod:`tachyflow.numerics.reductions`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.reductions import row_sum

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


@dataclass(frozen=True)
class XMetrics:
    """x spacings of a rank's ghosted x range, one per ghosted index ``i``: ``width[i]``
    the cell width, ``gap[i]`` the distance from centre ``i`` to centre ``i + 1`` (the
    width of the control volume of u on face ``i + 1/2``). Beyond an open end the end
    cell is mirrored."""

    width: np.ndarray
    gap: np.ndarray

    @classmethod
    def uniform(cls, spacing: float, ghosted: int) -> XMetrics:
        """``ghosted`` points of one spacing (exactly: the kernels' results then equal
        those of scalar-spacing kernels bit for bit)."""
        values = np.full(ghosted, float(spacing))
        return cls(values, values)

    @classmethod
    def from_grid(cls, grid, start: int, stop: int) -> XMetrics:
        """Of the owned cells ``start .. stop - 1`` of a grid (with ``faces_x``) and their
        ghosts."""
        if grid.uniform_x:
            return cls.uniform(grid.spacing_x, stop - start + 2)
        widths = grid.ghosted_widths_x(start, stop)
        gaps = np.append(0.5 * (widths[:-1] + widths[1:]), widths[-1])
        return cls(widths, gaps)


def x_metrics(x, array: np.ndarray) -> XMetrics:
    """``x`` (an :class:`XMetrics` or a uniform spacing) for the ghosted ``array``."""
    if isinstance(x, XMetrics):
        if x.width.shape != (array.shape[0],) or x.gap.shape != (array.shape[0],):
            raise ValueError(f"x metrics of {x.width.shape} points for an array of "
                             f"{array.shape[0]} ghosted x points")
        return x
    return XMetrics.uniform(x, array.shape[0])


_NO_ARRAY = np.empty((0, 0, 0))  # "no separate output" for the numba kernels
_NO_ROWS = np.empty((0, 0))
_NO_SHIFT = np.empty(0)


@kernel(error_model="numpy", parallel=True)
def _divergence(u, v, w, width, width_x, dz, scale, out, rows):  # pragma: no cover
    nx, ny, nz = out.shape
    summing = rows.shape[0] > 0
    for i in prange(1, nx + 1):
        dx = width_x[i]
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


def owned_rows(out: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``rows`` checked to be one value per owned (x, y) row of the owned array ``out``, or
    the kernels' "no rows" when None."""
    if rows is None:
        return _NO_ROWS
    if rows.shape != out.shape[:2] or not rows.flags.c_contiguous:
        raise ValueError(f"rows must be C-ordered of shape {out.shape[:2]}, got {rows.shape}")
    return rows


def divergence(
    u, v, w, metrics: YMetrics, dx, dz: float, scale: float = 1.0, out=None, rows=None
) -> np.ndarray:
    """``scale * ∇·u`` at the owned cell centres, into ``out`` (C-ordered) or a new array;
    ``dx`` a uniform spacing or the :class:`XMetrics` of ``u``'s x range.

    With ``rows`` (shape ``(nx, ny)``), the same pass also writes there ``Σ_z u`` of each
    owned (x, y) row (the bulk velocity's parts:
    :func:`~tachyflow.numerics.reductions.weighted_rows_total`)."""
    if out is None:
        out = np.empty(tuple(n - 2 for n in u.shape))
    _divergence(u, v, w, metrics.width.ravel(), x_metrics(dx, u).width, dz, scale, out,
                owned_rows(out, rows))
    return out


@kernel(error_model="numpy", parallel=True)
def _subtract_gradient(
    u, v, w, p, gap, gap_x, dz, factor, last_v_face, shift, total, weight, fresh
):  # pragma: no cover
    nx, ny, nz = u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2
    shifting = shift.shape[0] > 0
    for i in prange(1, nx + 1):
        dx = gap_x[i]
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
    u, v, w, p, metrics: YMetrics, dx, dz: float, factor: float, walls: bool,
    shift=None, total=None, weight: float = 0.0, fresh: bool = False,
) -> None:
    """``u -= factor ∇p`` in place on the owned faces; with walls the wall faces of v keep
    their value (the last owned v face is the upper wall). With ``shift`` (one value per
    owned y row), ``u += shift[y]`` in the same pass (the flow-rate force's response);
    with ``total`` (the owned shape), ``total += weight * p`` at the owned cells, or
    ``total = weight * p`` where ``fresh``. ``dx``: as in :func:`divergence`."""
    ny = u.shape[1] - 2
    _subtract_gradient(u, v, w, p, metrics.gap.ravel(), x_metrics(dx, u).gap, dz, factor,
                       ny - 1 if walls else ny, row_shift(u, shift), owned_total(p, total),
                       float(weight), bool(fresh))


@kernel(error_model="numpy", parallel=True)
def _add_viscous(
    f, width, width_up, gap, gap_down, x_up, x_down, dz, nu, with_xz, with_y, at_faces, out,
    out_y,
):  # pragma: no cover
    # out_y of shape (0, 0, 0): the y part goes into out; otherwise it is written to out_y.
    nx, ny, nz = out.shape
    y_apart = out_y.shape[0] > 0
    # Coefficients of the x-z part and, per row j, of the y part (f[j+1] - f[j]) and
    # (f[j] - f[j-1]): no division and no branch in the inner loop. Where the x ones are
    # equal (a uniform x) the symmetric second difference, as the fused pass has it.
    xz = nu if with_xz else 0.0
    z_coefficient = xz / dz**2
    y_up, y_down = np.empty(ny), np.empty(ny)
    for j in range(ny):
        if at_faces:
            up, down, across = width_up[j], width[j], gap[j]
        else:
            up, down, across = gap[j], gap_down[j], width[j]
        scale = nu if with_y else 0.0
        y_up[j], y_down[j] = scale / (up * across), scale / (down * across)
    for i in prange(1, nx + 1):
        east, west = xz / x_up[i - 1], xz / x_down[i - 1]
        for j in range(1, ny + 1):
            a, b = y_up[j - 1], y_down[j - 1]
            for k in range(1, nz + 1):
                centre = f[i, j, k]
                if east == west:
                    x_part = east * (f[i + 1, j, k] - 2.0 * centre + f[i - 1, j, k])
                else:
                    x_part = east * (f[i + 1, j, k] - centre) - west * (centre - f[i - 1, j, k])
                z_part = z_coefficient * (f[i, j, k + 1] - 2.0 * centre + f[i, j, k - 1])
                north = a * (f[i, j + 1, k] - centre)
                south = b * (centre - f[i, j - 1, k])
                if y_apart:  # (the fused pass's order of the sums)
                    out[i - 1, j - 1, k - 1] += x_part + z_part
                    out_y[i - 1, j - 1, k - 1] = north - south
                else:
                    out[i - 1, j - 1, k - 1] += x_part + z_part + north - south


def add_viscous(
    f,
    metrics: YMetrics,
    dx,
    dz: float,
    viscosity: float,
    out,
    x_and_z: bool = True,
    y: bool = True,
    at_faces: bool = False,
    out_y: np.ndarray | None = None,
    at_x_faces: bool = False,
) -> np.ndarray:
    """``out += ν ∇² f`` over the owned cells (numba, one pass); returns ``out``.

    ``x_and_z`` and ``y`` choose the directions (uniform in z, flux form in x and y;
    ``dx`` as in :func:`divergence`); ``at_faces`` is True for a field on y-faces (v),
    False for one at y-centres (u, w, p), ``at_x_faces`` likewise in x (u).
    With ``out_y`` the y part is not added to ``out`` but written to ``out_y`` (the
    Crank–Nicolson terms, computed in the same pass as the explicit ones).
    """
    if out_y is None:
        out_y = _NO_ARRAY
    elif out_y.shape != out.shape:
        raise ValueError(f"out_y has shape {out_y.shape}, expected {out.shape}")
    x = x_metrics(dx, f)
    # The x fluxes' denominators: u's control volume spans centre to centre, its fluxes
    # sit at the centres.
    if at_x_faces:
        x_up, x_down = x.width[2:] * x.gap[1:-1], x.width[1:-1] * x.gap[1:-1]
    else:
        x_up, x_down = x.gap[1:-1] * x.width[1:-1], x.gap[:-2] * x.width[1:-1]
    _add_viscous(
        f,
        metrics.width.ravel(),
        metrics.width_up.ravel(),
        metrics.gap.ravel(),
        metrics.gap_down.ravel(),
        x_up,
        x_down,
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
def _advected(u, v, w, i, j, k, inverse_gap_x, inverse_dx, inverse_dz, inverse_width,
              inverse_gap):
    # -∇·(u u) of the three components at point (i, j, k): products on the cell's upper
    # edges and faces (u at i+1/2, v at j+1/2, ...) and on the lower ones; the spacings'
    # inverses multiply (a division takes several multiplications' time). u's control
    # volume spans centre to centre in x (inverse_gap_x), v's and w's a cell (inverse_dx).
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
            (uu_right - uu_left) * inverse_gap_x
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
def _advection(u, v, w, width, gap, width_x, gap_x, dz, out_u, out_v, out_w):  # pragma: no cover
    nx, ny, nz = out_u.shape
    for i in prange(1, nx + 1):
        inverse_gap_x, inverse_dx = 1.0 / gap_x[i], 1.0 / width_x[i]
        for j in range(1, ny + 1):
            inverse_width = 1.0 / width[j - 1]
            inverse_gap = 1.0 / gap[j - 1]
            for k in range(1, nz + 1):
                advected = _advected(u, v, w, i, j, k, inverse_gap_x, inverse_dx, 1.0 / dz,
                                     inverse_width, inverse_gap)
                out_u[i - 1, j - 1, k - 1] = advected[0]
                out_v[i - 1, j - 1, k - 1] = advected[1]
                out_w[i - 1, j - 1, k - 1] = advected[2]


def advection(u, v, w, metrics: YMetrics, dx, dz: float, out=None):
    """``-∇·(u u)`` for the three components, each at its own faces (numba, one pass),
    into ``out`` (an array of shape ``(3, nx, ny, nz)`` of the owned points) or new arrays;
    returns the three.

    The sign is that of the term on the right-hand side of the momentum equation; ``dx``
    as in :func:`divergence`.

    Products on the edges shared by two components use centred averages, e.g. ``uv`` at
    ``(i + 1/2, j + 1/2)`` is the y-average of u times the x-average of v.
    """
    if out is None:
        out = np.empty((3, *(n - 2 for n in u.shape)))
    x = x_metrics(dx, u)
    _advection(u, v, w, metrics.width.ravel(), metrics.gap.ravel(), x.width, x.gap, dz, *out)
    return tuple(out)


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
