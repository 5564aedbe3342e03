"""The spatial operator: ``R(U) = sum over faces of (F_c - F_v) . n S - area * source``.

``dU/dt = -R / area`` in every owned cell. The inviscid flux is :mod:`.fluxes` of the MUSCL
states (:mod:`.reconstruction`). The viscous flux takes face gradients of ``u, v, T`` (and
``nu_tilde``) as the mean of the two cells' Green–Gauss gradients with the directional
correction along the line joining the cell centroids (J. Blazek, *Computational Fluid
Dynamics: Principles and Applications*, sec. 5.4.2; second order on smooth grids): with
``t`` the unit vector and ``l`` the distance between the centroids,
``grad_f = mean - (mean . t - (q_R - q_L) / l) t``. Cell gradients need one ghost layer
of gradients, hence both ghost layers of values: a block's ghost cells, corners included,
must be filled (boundary conditions, then the exchange) before :meth:`residual`.

Stress ``tau = (mu + mu_t) (grad u + grad u^T - 2/3 div u I)``, heat flux
``-c_p (mu / Pr + mu_t / Pr_t) grad T`` with ``Pr = 0.72``, ``Pr_t = 0.9``, ``mu`` by
Sutherland's law.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.compressible import turbulence
from tachyflow.numerics.compressible.fluxes import SCHEMES, numerical_flux
from tachyflow.numerics.compressible.gas import (
    PRANDTL,
    PRANDTL_TURBULENT,
    primitive_into,
    sutherland,
)
from tachyflow.numerics.compressible.metrics import BlockMetrics
from tachyflow.numerics.compressible.reconstruction import LIMITERS, face_states


@kernel
def convective_residual(Q, sx, sy, direction, g, scheme, limiter, parameter, gamma, R):
    """Add the inviscid fluxes through the faces of one direction (0: i-faces, 1: j-faces)
    to the residual of the owned cells."""  # pragma: no cover - compiled
    nvar, ni, nj = Q.shape
    stencil = np.empty((4, nvar))
    left = np.empty(nvar)
    right = np.empty(nvar)
    flux = np.empty(nvar)
    faces_i = ni - 2 * g + (1 if direction == 0 else 0)
    faces_j = nj - 2 * g + (1 if direction == 1 else 0)
    di, dj = (1, 0) if direction == 0 else (0, 1)
    for a in range(faces_i):
        for b in range(faces_j):
            fi, fj = a + g, b + g  # face index = index of the cell after it
            for s in range(4):
                ci, cj = fi + (s - 2) * di, fj + (s - 2) * dj
                for k in range(nvar):
                    stencil[s, k] = Q[k, ci, cj]
            face_states(stencil[0], stencil[1], stencil[2], stencil[3], limiter, left, right)
            length = np.sqrt(sx[fi, fj] ** 2 + sy[fi, fj] ** 2)
            numerical_flux(
                scheme, left, right, sx[fi, fj] / length, sy[fi, fj] / length, gamma,
                parameter, flux,
            )
            before_i, before_j = fi - di, fj - dj
            owned_before = before_i >= g and before_j >= g
            owned_after = fi < ni - g and fj < nj - g
            for k in range(nvar):
                f = flux[k] * length
                if owned_before:
                    R[k, before_i, before_j] += f
                if owned_after:
                    R[k, fi, fj] -= f


@kernel
def cell_gradients(W, sxi, syi, sxj, syj, area, g, grad):  # pragma: no cover - compiled
    """Green–Gauss gradients ``grad[k, 0|1]`` of the fields ``W[k]`` in the owned cells and
    the first ghost layer (face values: the mean of the two cells)."""
    nw, ni, nj = W.shape
    for i in range(g - 1, ni - g + 1):
        for j in range(g - 1, nj - g + 1):
            for k in range(nw):
                c = W[k, i, j]
                east, west = 0.5 * (c + W[k, i + 1, j]), 0.5 * (c + W[k, i - 1, j])
                north, south = 0.5 * (c + W[k, i, j + 1]), 0.5 * (c + W[k, i, j - 1])
                gx = east * sxi[i + 1, j] - west * sxi[i, j] + north * sxj[i, j + 1]
                gx -= south * sxj[i, j]
                gy = east * syi[i + 1, j] - west * syi[i, j] + north * syj[i, j + 1]
                gy -= south * syj[i, j]
                grad[k, 0, i, j] = gx / area[i, j]
                grad[k, 1, i, j] = gy / area[i, j]


@kernel
def face_gradient(W, grad, k, li, lj, ri, rj, tx, ty, distance):  # pragma: no cover
    """Gradient of ``W[k]`` at the face between cells L and R (directional correction)."""
    gx = 0.5 * (grad[k, 0, li, lj] + grad[k, 0, ri, rj])
    gy = 0.5 * (grad[k, 1, li, lj] + grad[k, 1, ri, rj])
    correction = gx * tx + gy * ty - (W[k, ri, rj] - W[k, li, lj]) / distance
    return gx - correction * tx, gy - correction * ty


@kernel
def viscous_residual(
    W, grad, U, mu, mut, xc, yc, sx, sy, direction, g, gamma, prandtl, prandtl_t, R
):  # pragma: no cover - compiled
    """Subtract the viscous fluxes through the faces of one direction from the residual.
    ``W = (u, v, T[, nu_tilde])``."""
    nvar, ni, nj = U.shape
    cp = 1.0 / (gamma - 1.0)
    faces_i = ni - 2 * g + (1 if direction == 0 else 0)
    faces_j = nj - 2 * g + (1 if direction == 1 else 0)
    di, dj = (1, 0) if direction == 0 else (0, 1)
    flux = np.zeros(nvar)
    for a in range(faces_i):
        for b in range(faces_j):
            ri, rj = a + g, b + g
            li, lj = ri - di, rj - dj
            dx, dy = xc[ri, rj] - xc[li, lj], yc[ri, rj] - yc[li, lj]
            distance = np.sqrt(dx * dx + dy * dy)
            tx, ty = dx / distance, dy / distance
            ux, uy = face_gradient(W, grad, 0, li, lj, ri, rj, tx, ty, distance)
            vx, vy = face_gradient(W, grad, 1, li, lj, ri, rj, tx, ty, distance)
            Tx, Ty = face_gradient(W, grad, 2, li, lj, ri, rj, tx, ty, distance)
            mu_f = 0.5 * (mu[li, lj] + mu[ri, rj])
            mut_f = 0.5 * (mut[li, lj] + mut[ri, rj])
            u_f = 0.5 * (W[0, li, lj] + W[0, ri, rj])
            v_f = 0.5 * (W[1, li, lj] + W[1, ri, rj])
            effective = mu_f + mut_f
            conductivity = cp * (mu_f / prandtl + mut_f / prandtl_t)
            divergence = ux + vy
            txx = effective * (2.0 * ux - 2.0 / 3.0 * divergence)
            tyy = effective * (2.0 * vy - 2.0 / 3.0 * divergence)
            txy = effective * (uy + vx)
            nx, ny = sx[ri, rj], sy[ri, rj]
            flux[1] = txx * nx + txy * ny
            flux[2] = txy * nx + tyy * ny
            flux[3] = u_f * flux[1] + v_f * flux[2] + conductivity * (Tx * nx + Ty * ny)
            if nvar > 4:
                nx_, ny_ = face_gradient(W, grad, 3, li, lj, ri, rj, tx, ty, distance)
                rho_nt = 0.5 * (U[4, li, lj] + U[4, ri, rj])
                coefficient = turbulence.diffusion_coefficient(mu_f, rho_nt)
                flux[4] = coefficient / turbulence.SIGMA * (nx_ * nx + ny_ * ny)
            owned_before = li >= g and lj >= g
            owned_after = ri < ni - g and rj < nj - g
            for k in range(1, nvar):
                if owned_before:
                    R[k, li, lj] -= flux[k]
                if owned_after:
                    R[k, ri, rj] += flux[k]


@kernel
def turbulence_source(Q, grad, mu, area, distance, g, R, implicit):  # pragma: no cover
    """Subtract ``area * source`` of Spalart–Allmaras from ``R[4]`` in the owned cells and
    store the implicit coefficient (times area) in ``implicit``."""
    _, ni, nj = Q.shape
    for i in range(g, ni - g):
        for j in range(g, nj - g):
            rho = Q[0, i, j]
            vorticity = abs(grad[1, 0, i, j] - grad[0, 1, i, j])
            grad2 = grad[3, 0, i, j] ** 2 + grad[3, 1, i, j] ** 2
            value, coefficient = turbulence.source(
                rho, Q[4, i, j], mu[i, j] / rho, vorticity, distance[i, j], grad2
            )
            R[4, i, j] -= area[i, j] * value
            implicit[i, j] = area[i, j] * coefficient


@kernel
def face_spectral_radii(
    Q, mu, mut, xc, yc, sx, sy, direction, g, gamma, prandtl, prandtl_t, convective, viscous
):  # pragma: no cover - compiled
    """Inviscid ``(|V.n| + c) S`` and viscous ``nu_max S / l`` spectral radii of the
    faces of one direction that bound owned cells."""
    nvar, ni, nj = Q.shape
    faces_i = ni - 2 * g + (1 if direction == 0 else 0)
    faces_j = nj - 2 * g + (1 if direction == 1 else 0)
    di, dj = (1, 0) if direction == 0 else (0, 1)
    for a in range(faces_i):
        for b in range(faces_j):
            ri, rj = a + g, b + g
            li, lj = ri - di, rj - dj
            nx, ny = sx[ri, rj], sy[ri, rj]
            length = np.sqrt(nx * nx + ny * ny)
            rho = 0.5 * (Q[0, li, lj] + Q[0, ri, rj])
            u = 0.5 * (Q[1, li, lj] + Q[1, ri, rj])
            v = 0.5 * (Q[2, li, lj] + Q[2, ri, rj])
            c = 0.5 * (
                np.sqrt(gamma * Q[3, li, lj] / Q[0, li, lj])
                + np.sqrt(gamma * Q[3, ri, rj] / Q[0, ri, rj])
            )
            convective[ri, rj] = abs(u * nx + v * ny) + c * length
            m = 0.5 * (mu[li, lj] + mu[ri, rj])
            mt = 0.5 * (mut[li, lj] + mut[ri, rj])
            nu = max(4.0 / 3.0 * (m + mt), gamma * (m / prandtl + mt / prandtl_t))
            if nvar > 4:
                nu = max(nu, (m + 0.5 * rho * (Q[4, li, lj] + Q[4, ri, rj])) / turbulence.SIGMA)
            dx, dy = xc[ri, rj] - xc[li, lj], yc[ri, rj] - yc[li, lj]
            viscous[ri, rj] = nu / rho * length / np.sqrt(dx * dx + dy * dy)


class FlowDiscretisation:
    """The spatial discretisation of one block: residual, spectral radii, time steps.

    Parameters
    ----------
    metrics : BlockMetrics
        The block's geometry.
    free_stream : FreeStream
        Conditions (its Reynolds number 0: Euler equations).
    scheme : {"roe", "ausm+up"}
    limiter : {"van-albada", "minmod", "none", "first-order"}
    turbulence : {"laminar", "sa"}
        ``"sa"``: Spalart–Allmaras, five variables; needs ``wall_distance``.
    wall_distance : ndarray, optional
        Distance of every cell centre (padded array) to the nearest wall.
    entropy_fix : float
        Harten's ``delta / (|V| + c)`` for Roe's flux.

    Notes
    -----
    Local: arrays of this block in, arrays out; no communication.
    """

    def __init__(self, metrics: BlockMetrics, free_stream, scheme: str = "roe",
                 limiter: str = "van-albada", turbulence: str = "laminar",
                 wall_distance=None, entropy_fix: float = 0.1):
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
        if limiter not in LIMITERS:
            raise ValueError(f"limiter must be one of {sorted(LIMITERS)}, got {limiter!r}")
        if turbulence not in ("laminar", "sa"):
            raise ValueError(f"turbulence must be 'laminar' or 'sa', got {turbulence!r}")
        if turbulence == "sa" and (wall_distance is None or free_stream.reynolds <= 0):
            raise ValueError("turbulence 'sa' needs wall_distance and a Reynolds number > 0")
        self.metrics = metrics
        self.free_stream = free_stream
        self.scheme = SCHEMES[scheme]
        self.limiter = LIMITERS[limiter]
        self.parameter = entropy_fix if scheme == "roe" else free_stream.mach
        self.viscous = free_stream.reynolds > 0
        self.turbulent = turbulence == "sa"
        self.nvar = 5 if self.turbulent else 4
        self.gamma = free_stream.gamma
        shape = metrics.area.shape
        self.wall_distance = None if wall_distance is None else np.asarray(wall_distance, float)
        self.Q = np.zeros((self.nvar, *shape))
        self.mu = np.zeros(shape)
        self.mut = np.zeros(shape)
        nw = self.nvar - 1
        self.W = np.zeros((nw, *shape))
        self.grad = np.zeros((nw, 2, *shape))
        self.source_implicit = np.zeros(shape)
        ni, nj = shape
        self.convective_i, self.viscous_i = np.zeros((ni + 1, nj)), np.zeros((ni + 1, nj))
        self.convective_j, self.viscous_j = np.zeros((ni, nj + 1)), np.zeros((ni, nj + 1))

    def primitives(self, U: np.ndarray) -> np.ndarray:
        """Primitive variables of every cell (stored in :attr:`Q`)."""
        primitive_into(U, self.Q, self.gamma)
        return self.Q

    def update_state(self, U: np.ndarray) -> None:
        """Primitive variables and viscosities of ``U`` (what :meth:`spectral_radii`
        reads; :meth:`residual` does this too)."""
        self.primitives(U)
        if self.viscous:
            self._transport(U)

    def _transport(self, U: np.ndarray) -> None:
        Q = self.Q
        temperature = self.gamma * Q[3] / Q[0]
        if self.viscous:
            fs = self.free_stream
            self.mu[...] = sutherland(temperature, fs.viscosity, fs.sutherland_constant)
        if self.turbulent:
            turbulence.eddy_viscosity_into(U, self.mu, self.mut)

    def residual(self, U: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``R(U)`` in the owned cells (zero in ghost cells); ghosts of ``U`` filled."""
        m, g = self.metrics, self.metrics.ghosts
        R = np.zeros_like(U) if out is None else out
        R[...] = 0.0
        Q = self.primitives(U)
        convective_residual(Q, m.sxi, m.syi, 0, g, self.scheme, self.limiter, self.parameter,
                            self.gamma, R)
        convective_residual(Q, m.sxj, m.syj, 1, g, self.scheme, self.limiter, self.parameter,
                            self.gamma, R)
        if not self.viscous:
            return R
        self._transport(U)
        W = self.W
        W[0], W[1], W[2] = Q[1], Q[2], self.gamma * Q[3] / Q[0]
        if self.turbulent:
            W[3] = Q[4]
        cell_gradients(W, m.sxi, m.syi, m.sxj, m.syj, m.area, g, self.grad)
        for direction, (sx, sy) in enumerate(((m.sxi, m.syi), (m.sxj, m.syj))):
            viscous_residual(W, self.grad, U, self.mu, self.mut, m.xc, m.yc, sx, sy, direction,
                             g, self.gamma, PRANDTL, PRANDTL_TURBULENT, R)
        if self.turbulent:
            turbulence_source(Q, self.grad, self.mu, m.area, self.wall_distance, g, R,
                              self.source_implicit)
        return R

    def spectral_radii(self) -> None:
        """Face spectral radii of the state of the last :meth:`residual` (or
        :meth:`primitives` and transport of it)."""
        m, g = self.metrics, self.metrics.ghosts
        for direction, (sx, sy, convective, viscous) in enumerate((
            (m.sxi, m.syi, self.convective_i, self.viscous_i),
            (m.sxj, m.syj, self.convective_j, self.viscous_j),
        )):
            face_spectral_radii(self.Q, self.mu, self.mut, m.xc, m.yc, sx, sy, direction, g,
                                self.gamma, PRANDTL, PRANDTL_TURBULENT, convective,
                                viscous)

    def local_time_step(self, cfl: float, along_i_only: bool = False) -> np.ndarray:
        """``cfl * area / (sum over the four faces of (Lc + 4 Lv) / 2)`` per cell (padded;
        meaningful in the owned cells), from :meth:`spectral_radii`. ``along_i_only``:
        over the two i faces only, for relaxations implicit along j (whose stability
        the j faces, across the thin cells at walls, do not limit)."""
        li = self.convective_i + 4.0 * self.viscous_i
        total = 0.5 * (li[:-1] + li[1:])
        if not along_i_only:
            lj = self.convective_j + 4.0 * self.viscous_j
            total = total + 0.5 * (lj[:, :-1] + lj[:, 1:])
        with np.errstate(divide="ignore"):
            return cfl * self.metrics.area / total

    def implicit_radii(self) -> tuple[np.ndarray, np.ndarray]:
        """Face coefficients ``Lc + 2 Lv`` of the approximate Jacobians of LU-SGS."""
        return (self.convective_i + 2.0 * self.viscous_i,
                self.convective_j + 2.0 * self.viscous_j)
