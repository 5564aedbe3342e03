"""Implicit relaxation of ``(area/dt + dR/dU) dU = -R``: LU-SGS and DP-SGS, matrix-free.

The Jacobian is approximated by splitting the flux through each face by its spectral radius
``lambda = Lc + 2 Lv`` (S. Yoon, A. Jameson, "Lower-upper symmetric-Gauss-Seidel method for
the Euler and Navier-Stokes equations", AIAA J. 26, 1988):

``D dU_i + sum over neighbours j of 0.5 (dF_j . n_ij S_ij - lambda_ij dU_j) = -R_i``,
``D = area/dt + 0.5 sum_j lambda_ij`` (plus the Spalart–Allmaras destruction coefficient in
the fifth equation, and with dual time stepping ``area * 3/(2 dt_physical)`` of the
backward difference in physical time), ``dF_j = F(U_j + dU_j) - F(U_j)`` evaluated
directly, so no Jacobian matrix is formed.

:func:`sgs_sweeps` runs symmetric Gauss–Seidel sweeps (forward in i and j, then backward)
over the owned cells, reading the neighbours' ``dU`` in the ghost cells as given, fixed
during a sweep. One sweep pair from ``dU = 0`` is exactly LU-SGS. Inside a block the cells
are coupled Gauss–Seidel; across block boundaries they see what the last exchange put in
the ghosts: Jacobi coupling, the data-parallel symmetric Gauss–Seidel (DP-SGS) of the
parallel solver. With the whole grid in one block the same kernel is plain SGS. Physical
boundary ghosts hold ``dU = 0`` (explicit boundary conditions).
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel


@kernel
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


@kernel
def _subtract_neighbour(i, j, side, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner, gamma,
                    w, f0, f1, acc):  # pragma: no cover - compiled
    """Subtract ``0.5 (dF . n - lambda dU)`` of one neighbour (its current increment) from
    ``acc``: side 0 east, 1 west, 2 north, 3 south."""
    nvar = U.shape[0]
    if side == 0:
        ni_, nj_, nx, ny, lam = i + 1, j, sxi[i + 1, j], syi[i + 1, j], lam_i[i + 1, j]
    elif side == 1:
        ni_, nj_, nx, ny, lam = i - 1, j, -sxi[i, j], -syi[i, j], lam_i[i, j]
    elif side == 2:
        ni_, nj_, nx, ny, lam = i, j + 1, sxj[i, j + 1], syj[i, j + 1], lam_j[i, j + 1]
    else:
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
        return
    for k in range(nvar):
        w[k] = U[k, ni_, nj_]
    conservative_flux(w, nx, ny, gamma, f0)
    for k in range(nvar):
        w[k] += dU[k, di, dj]
    conservative_flux(w, nx, ny, gamma, f1)
    for k in range(nvar):
        acc[k] -= 0.5 * (f1[k] - f0[k] - lam * dU[k, di, dj])


@kernel
def _relax_cell(i, j, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
                cut_partner, gamma, w, f0, f1, acc):  # pragma: no cover - compiled
    nvar = U.shape[0]
    for k in range(nvar):
        acc[k] = -R[k, i, j]
    for side in range(4):
        _subtract_neighbour(i, j, side, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner,
                            gamma, w, f0, f1, acc)
    d = diagonal[i, j]
    for k in range(nvar):
        dU[k, i, j] = acc[k] / d
    if nvar > 4:
        dU[4, i, j] = acc[4] / (d + source_implicit[i, j])


@kernel
def sgs_sweeps(U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
               cut_partner, g, gamma, sweeps):  # pragma: no cover - compiled
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
                            sxj, syj, cut_partner, gamma, w, f0, f1, acc)
        for i in range(ni - g - 1, g - 1, -1):
            for j in range(nj - g - 1, g - 1, -1):
                _relax_cell(i, j, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi,
                            sxj, syj, cut_partner, gamma, w, f0, f1, acc)


def diagonal(area: np.ndarray, dt: np.ndarray, lam_i: np.ndarray, lam_j: np.ndarray,
             physical_rate: float = 0.0):
    """``area * (1 / dt + physical_rate) + 0.5 * (sum of the four faces' lambda)`` per cell
    (padded arrays); ``physical_rate`` is the coefficient of ``U`` in the backward
    difference of dual time stepping (``3 / (2 dt_physical)`` for BDF2), 0 in pseudo time
    alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return area * (1.0 / dt + physical_rate) + 0.5 * (
            lam_i[:-1] + lam_i[1:] + lam_j[:, :-1] + lam_j[:, 1:]
        )


@kernel
def flux_jacobian(w, nx, ny, gamma, out):  # pragma: no cover - compiled
    """``d(F . n)/dU`` at conservative ``w`` (n scaled by the face length), ``(nvar, nvar)``;
    extra variables are passive scalars carried by the mass flux."""
    nvar = w.shape[0]
    rho = w[0]
    u, v = w[1] / rho, w[2] / rho
    q2 = u * u + v * v
    p = (gamma - 1.0) * (w[3] - 0.5 * rho * q2)
    h = (w[3] + p) / rho
    vn = u * nx + v * ny
    phi = 0.5 * (gamma - 1.0) * q2
    g1 = gamma - 1.0
    out[...] = 0.0
    out[0, 1], out[0, 2] = nx, ny
    out[1, 0] = phi * nx - u * vn
    out[1, 1] = vn - (gamma - 2.0) * u * nx
    out[1, 2] = u * ny - g1 * v * nx
    out[1, 3] = g1 * nx
    out[2, 0] = phi * ny - v * vn
    out[2, 1] = v * nx - g1 * u * ny
    out[2, 2] = vn - (gamma - 2.0) * v * ny
    out[2, 3] = g1 * ny
    out[3, 0] = vn * (phi - h)
    out[3, 1] = h * nx - g1 * u * vn
    out[3, 2] = h * ny - g1 * v * vn
    out[3, 3] = gamma * vn
    for k in range(4, nvar):
        scalar = w[k] / rho
        out[k, 0] = -scalar * vn
        out[k, 1] = scalar * nx
        out[k, 2] = scalar * ny
        out[k, k] = vn


@kernel
def _solve_in_place(a, b):  # pragma: no cover - compiled
    """Solve ``a x = b`` for the columns of ``b`` (overwritten with x) by Gaussian
    elimination with partial pivoting; ``a`` is destroyed."""
    n = a.shape[0]
    m = b.shape[1]
    for c in range(n):
        pivot = c
        for r in range(c + 1, n):
            if abs(a[r, c]) > abs(a[pivot, c]):
                pivot = r
        if pivot != c:
            for k in range(n):
                a[c, k], a[pivot, k] = a[pivot, k], a[c, k]
            for k in range(m):
                b[c, k], b[pivot, k] = b[pivot, k], b[c, k]
        for r in range(c + 1, n):
            f = a[r, c] / a[c, c]
            if f != 0.0:
                for k in range(c, n):
                    a[r, k] -= f * a[c, k]
                for k in range(m):
                    b[r, k] -= f * b[c, k]
    for c in range(n - 1, -1, -1):
        for k in range(m):
            s = b[c, k]
            for r in range(c + 1, n):
                s -= a[c, r] * b[r, k]
            b[c, k] = s / a[c, c]


@kernel
def _relax_line(i, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
                cut_partner, g, gamma, lower, upper, rhs, jac, w, f0, f1, acc):
    """Solve the block-tridiagonal system of column ``i`` along j (Thomas algorithm): the
    j neighbours implicit through their flux Jacobians, the i neighbours and the column's
    ghost ends at their current increments."""
    nvar, _, nj = U.shape
    n = nj - 2 * g
    for a in range(n):
        j = g + a
        for k in range(nvar):
            acc[k] = -R[k, i, j]
        _subtract_neighbour(i, j, 0, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner, gamma,
                        w, f0, f1, acc)
        _subtract_neighbour(i, j, 1, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner, gamma,
                        w, f0, f1, acc)
        if a == 0:
            _subtract_neighbour(i, j, 3, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner,
                            gamma, w, f0, f1, acc)
        if a == n - 1:
            _subtract_neighbour(i, j, 2, U, dU, lam_i, lam_j, sxi, syi, sxj, syj, cut_partner,
                            gamma, w, f0, f1, acc)
        for k in range(nvar):
            rhs[a, k, 0] = acc[k]
        # lower[a]: coefficient of dU[j - 1]; upper[a]: of dU[j + 1]
        if a > 0:
            for k in range(nvar):
                w[k] = U[k, i, j - 1]
            flux_jacobian(w, -sxj[i, j], -syj[i, j], gamma, jac)
            for r in range(nvar):
                for c in range(nvar):
                    lower[a, r, c] = 0.5 * jac[r, c]
                lower[a, r, r] -= 0.5 * lam_j[i, j]
        if a < n - 1:
            for k in range(nvar):
                w[k] = U[k, i, j + 1]
            flux_jacobian(w, sxj[i, j + 1], syj[i, j + 1], gamma, jac)
            for r in range(nvar):
                for c in range(nvar):
                    upper[a, r, c] = 0.5 * jac[r, c]
                upper[a, r, r] -= 0.5 * lam_j[i, j + 1]
    # forward elimination: M_a = D_a - lower_a C_{a-1}; C_a = M_a^-1 upper_a;
    # d_a = M_a^-1 (rhs_a - lower_a d_{a-1}); stored in upper and rhs
    block = np.empty((nvar, nvar))
    both = np.empty((nvar, nvar + 1))
    for a in range(n):
        j = g + a
        for r in range(nvar):
            for c in range(nvar):
                block[r, c] = 0.0
            block[r, r] = diagonal[i, j]
        if nvar > 4:
            block[4, 4] += source_implicit[i, j]
        if a > 0:
            for r in range(nvar):
                for c in range(nvar):
                    s = 0.0
                    for k in range(nvar):
                        s += lower[a, r, k] * upper[a - 1, k, c]
                    block[r, c] -= s
                s = 0.0
                for k in range(nvar):
                    s += lower[a, r, k] * rhs[a - 1, k, 0]
                rhs[a, r, 0] -= s
        for r in range(nvar):
            for c in range(nvar):
                both[r, c] = upper[a, r, c] if a < n - 1 else 0.0
            both[r, nvar] = rhs[a, r, 0]
        _solve_in_place(block, both)
        for r in range(nvar):
            for c in range(nvar):
                upper[a, r, c] = both[r, c]
            rhs[a, r, 0] = both[r, nvar]
    for a in range(n - 1, -1, -1):
        j = g + a
        for r in range(nvar):
            s = rhs[a, r, 0]
            if a < n - 1:
                for k in range(nvar):
                    s -= upper[a, r, k] * dU[k, i, j + 1]
            dU[r, i, j] = s


@kernel
def line_sgs_sweeps(U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
                    cut_partner, g, gamma, sweeps):  # pragma: no cover - compiled
    """As :func:`sgs_sweeps`, but each step of a sweep relaxes a whole grid line of
    constant i: the block-tridiagonal system along j (the wall-normal direction of a
    C-grid) is solved exactly, with the flux Jacobians of the j neighbours, so the thin
    cells at the wall and the wake cut are implicit across their short side."""
    nvar, ni, nj = U.shape
    n = nj - 2 * g
    lower = np.zeros((n, nvar, nvar))
    upper = np.zeros((n, nvar, nvar))
    rhs = np.zeros((n, nvar, 1))
    jac = np.empty((nvar, nvar))
    w = np.empty(nvar)
    f0 = np.empty(nvar)
    f1 = np.empty(nvar)
    acc = np.empty(nvar)
    lines = ni - 2 * g
    for _ in range(sweeps):
        for step in range(2 * lines):  # forward in i, then backward
            i = g + step if step < lines else ni - g - 1 - (step - lines)
            _relax_line(i, U, R, dU, diagonal, source_implicit, lam_i, lam_j, sxi, syi, sxj, syj,
                        cut_partner, g, gamma, lower, upper, rhs, jac, w, f0, f1, acc)
