"""Reductions of a rank's owned cells to one number, each in one compiled pass without
temporaries (MPI-free: the decomposition combines the ranks' numbers).

:func:`chained_sum` is the one way a row is summed inside a kernel (four interleaved
partial sums in a fixed order), so that a fused sum, such as a divergence pass's row sums
or :func:`centred_energy_sum`, gives the same bits as :func:`y_weighted_sum` of the array
it never builds. Also the checks of every iteration: :func:`convective_rate` (the CFL
rate) and :func:`all_finite` (NaN and infinities).
"""

from __future__ import annotations

import numba
import numpy as np

from tachyflow.numerics.compiled import kernel


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


@kernel(error_model="numpy")
def _convective_rate(u, v, w, inverse_dx, inverse_widths, inverse_dz):  # pragma: no cover
    nx, ny, nz = u.shape
    largest = 0.0
    for i in range(nx):
        inverse_width_x = inverse_dx[i]
        for j in range(ny):
            inverse_dy = inverse_widths[j]
            for k in range(nz):
                rate = (
                    abs(u[i, j, k]) * inverse_width_x
                    + abs(v[i, j, k]) * inverse_dy
                    + abs(w[i, j, k]) * inverse_dz
                )
                if rate > largest or rate != rate:  # NaN wins, as in np.max
                    largest = rate
    return largest


def convective_rate(u, v, w, dx, widths: np.ndarray, dz: float) -> float:
    """``max(|u|/Δx_i + |v|/Δy_j + |w|/Δz)`` over arrays of the owned cells (possibly a
    halo array's interior views), in one pass without temporaries; NaN if a value is NaN.
    ``dx``: a uniform spacing or the owned cells' x widths."""
    inverse_dx = 1.0 / np.broadcast_to(np.asarray(dx, dtype=np.float64), u.shape[:1])
    if not u.shape == v.shape == w.shape or u.ndim != 3 or widths.shape != (u.shape[1],):
        raise ValueError(
            f"expected u, v, w of one shape (nx, ny, nz) and widths (ny,), got {u.shape}, "
            f"{v.shape}, {w.shape}, {widths.shape}"
        )
    inverse_widths = 1.0 / np.asarray(widths, dtype=np.float64)
    return float(_convective_rate(u, v, w, np.ascontiguousarray(inverse_dx), inverse_widths,
                                  1.0 / dz))


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
    """``Σ rows[i, j] weights[j]`` of row sums from
    :func:`~tachyflow.numerics.stencils.divergence`: the same bits as :func:`y_weighted_sum`
    of the values they sum."""
    if rows.ndim != 2 or weights.shape != (rows.shape[1],):
        raise ValueError(
            f"expected rows (nx, ny) and weights (ny,), got {rows.shape}, {weights.shape}"
        )
    return float(_weighted_rows_total(rows, np.ascontiguousarray(weights, dtype=np.float64)))
