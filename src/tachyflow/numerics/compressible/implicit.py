"""Implicit relaxation of ``(area/dt + dR/dU) dU = -R``: LU-SGS and DP-SGS, matrix-free.

The Jacobian is approximated by splitting the flux through each face by its spectral radius
``lambda = Lc + 2 Lv`` (S. Yoon, A. Jameson, "Lower-upper symmetric-Gauss-Seidel method for
the Euler and Navier-Stokes equations", AIAA J. 26, 1988):

``D dU_i + sum over neighbours j of 0.5 (dF_j . n_ij S_ij - lambda_ij dU_j) = -R_i``,
``D = area/dt + 0.5 sum_j lambda_ij`` (plus the Spalart–Allmaras destruction coefficient in
the fifth equation), ``dF_j = F(U_j + dU_j) - F(U_j)`` evaluated directly, so no Jacobian
matrix is formed.

:func:`sgs_sweeps` runs symmetric Gauss–Seidel sweeps (forward in i and j, then backward)
over the owned cells, reading the neighbours' ``dU`` in the ghost cells as given, fixed
during a sweep. One sweep pair from ``dU = 0`` is exactly LU-SGS. Inside a block the cells
are coupled Gauss–Seidel; across block boundaries they see what the last exchange put in
the ghosts: Jacobi coupling, the data-parallel symmetric Gauss–Seidel (DP-SGS) of the
parallel solver. With the whole grid in one block the same kernel is plain SGS. Physical
boundary ghosts hold ``dU = 0`` (explicit boundary conditions).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def conservative_flux(w, nx, ny, gamma, out):  # pragma: no cover - compiled
    """``F(w) . n`` of conservative ``w`` (n scaled by the face length)."""
    rho = w[0]
    u, v = w[1] / rho, w[2] / rho
    p = (gamma - 1.0) * (w[3] - 0.5 * rho * (u * u + v * v))
    vn = u * nx + v * ny
    out[0] = rho * vn
    out[1] = w[1] * vn + p * nx
    out[2] = w[2] * vn + p * ny
    out[3] = (w[3] + p) * vn
    for k in range(4, w.shape[0]):
        out[k] = w[k] * vn


@numba.njit(cache=True)
def _relax_cell(i, j, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
                cut_partner, gamma, w, f0, f1, acc):  # pragma: no cover - compiled  # fmt: skip
    nvar = U.shape[0]
    for k in range(nvar):
        acc[k] = -R[k, i, j]
    for side in range(4):
        if side == 0:  # east: face i + 1, outward +
            ni_, nj_, nx, ny, lam = i + 1, j, sxi[i + 1, j], syi[i + 1, j], lam_i[i + 1, j]
        elif side == 1:  # west: face i, outward -
            ni_, nj_, nx, ny, lam = i - 1, j, -sxi[i, j], -syi[i, j], lam_i[i, j]
        elif side == 2:  # north
            ni_, nj_, nx, ny, lam = i, j + 1, sxj[i, j + 1], syj[i, j + 1], lam_j[i, j + 1]
        else:  # south
            ni_, nj_, nx, ny, lam = i, j - 1, -sxj[i, j], -syj[i, j], lam_j[i, j]
        # Across a wake cut whose other side is in this block, the increment is read from
        # the cell itself (Gauss-Seidel), not from its ghost copy of the last exchange.
        di, dj = ni_, nj_
        if side == 3 and cut_partner[i, j] >= 0:
            di, dj = cut_partner[i, j], j
        zero = True
        for k in range(nvar):
            if dU[k, di, dj] != 0.0:
                zero = False
        if zero:
            continue
        for k in range(nvar):
            w[k] = U[k, ni_, nj_]
        conservative_flux(w, nx, ny, gamma, f0)
        for k in range(nvar):
            w[k] += dU[k, di, dj]
        conservative_flux(w, nx, ny, gamma, f1)
        for k in range(nvar):
            acc[k] -= 0.5 * (f1[k] - f0[k] - lam * dU[k, di, dj])
    d = diagonal[i, j]
    for k in range(nvar):
        dU[k, i, j] = acc[k] / d
    if nvar > 4:
        dU[4, i, j] = acc[4] / (d + source_implicit[i, j])


@numba.njit(cache=True)
def sgs_sweeps(U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
               cut_partner, g, gamma, sweeps):  # pragma: no cover - compiled  # fmt: skip
    """``sweeps`` symmetric Gauss–Seidel sweep pairs over the owned cells of ``dU`` (its
    ghost values fixed); ``diagonal = area/dt + 0.5 sum lambda``; ``cut_partner[i, j]``
    (padded shape, -1 elsewhere): for a cell whose south neighbour across a wake cut is
    cell ``(cut_partner[i, j], j)`` of this block, that cell's padded i index."""
    nvar, ni, nj = U.shape
    w = np.empty(nvar)
    f0 = np.empty(nvar)
    f1 = np.empty(nvar)
    acc = np.empty(nvar)
    for _ in range(sweeps):
        for i in range(g, ni - g):
            for j in range(g, nj - g):
                _relax_cell(i, j, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi,
                            sxj, syj, cut_partner, gamma, w, f0, f1, acc)  # fmt: skip
        for i in range(ni - g - 1, g - 1, -1):
            for j in range(nj - g - 1, g - 1, -1):
                _relax_cell(i, j, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi,
                            sxj, syj, cut_partner, gamma, w, f0, f1, acc)  # fmt: skip


def diagonal(area: np.ndarray, dt: np.ndarray, lam_i: np.ndarray, lam_j: np.ndarray):
    """``area / dt + 0.5 * (sum of the four faces' lambda)`` per cell (padded arrays)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return area / dt + 0.5 * (lam_i[:-1] + lam_i[1:] + lam_j[:, :-1] + lam_j[:, 1:])
