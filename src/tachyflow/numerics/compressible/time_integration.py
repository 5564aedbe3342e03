"""Steps of the compressible solver: implicit (LU-SGS / DP-SGS) pseudo-time steps for
steady flows and explicit SSP-RK3 (C.-W. Shu, S. Osher, J. Comput. Phys. 77, 1988) for
unsteady ones.

Both take ``fill_ghosts(U)``, which fills the ghost cells of a state (boundary conditions,
then the block exchange, corners included): the driver's kernel/exchange alternation is
passed in, so this module stays free of MPI.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compressible import implicit
from tachyflow.numerics.compressible.residual import FlowDiscretisation


def ssp_rk3_step(U, dt, discretisation: FlowDiscretisation, fill_ghosts):
    """One SSP-RK3 step of ``dU/dt = -R(U) / area`` (``dt`` a number or a per-cell array);
    returns the new state with its ghosts filled and ``R(U)`` of the old one."""
    area = discretisation.metrics.area
    owned = (slice(None), *discretisation.metrics.owned)
    rate = dt / area
    residuals = []

    def euler(state):
        new = state.copy()
        residuals.append(discretisation.residual(state))
        new[owned] -= (rate * residuals[-1])[owned]
        return new

    first = euler(U)
    fill_ghosts(first)
    second = 0.75 * U + 0.25 * euler(first)
    fill_ghosts(second)
    third = U / 3.0 + 2.0 / 3.0 * euler(second)
    fill_ghosts(third)
    return third, residuals[0]


class ImplicitStepper:
    """Pseudo-time steps ``(area/dt + dR/dU) dU = -R`` with local time steps.

    Parameters
    ----------
    discretisation : FlowDiscretisation
    sweeps : int
        Symmetric Gauss–Seidel sweep pairs per step: 1 is LU-SGS; more is DP-SGS, with
        ``exchange_increment`` called between sweeps.
    exchange_increment : callable, optional
        Fills the ghost cells of the increment ``dU`` from the neighbouring blocks (ghosts
        on physical sides stay zero); None for one block.
    cut_partner : numpy.ndarray of int, optional
        Padded ``(ni, nj)``: for a cell next to a wake cut whose other side lies in this
        block, the padded i index of the cell across it (same j), else -1 (default: -1
        everywhere, the cut coupled through the exchanged ghosts only).
    line_implicit : bool
        Relax whole lines of constant i (block-tridiagonal along j,
        :func:`implicit.line_sgs_sweeps`) instead of single cells, with local time steps
        from the i faces' spectral radii only.

    Notes
    -----
    Local; :meth:`step` calls ``fill_ghosts`` and ``exchange_increment``, which may be
    collective.
    """

    def __init__(self, discretisation: FlowDiscretisation, sweeps: int = 1,
                 exchange_increment=None, cut_partner=None,
                 line_implicit: bool = False):  # fmt: skip
        if sweeps < 1:
            raise ValueError(f"sweeps must be >= 1, got {sweeps!r}")
        shape = discretisation.metrics.area.shape
        if cut_partner is None:
            cut_partner = np.full(shape, -1, dtype=np.int64)
        if np.shape(cut_partner) != shape:
            raise ValueError(f"cut_partner must have shape {shape}, got {np.shape(cut_partner)}")
        self.cut_partner = np.ascontiguousarray(cut_partner, dtype=np.int64)
        self.discretisation = discretisation
        self.sweeps = sweeps
        self.line_implicit = line_implicit
        self.kernel = implicit.line_sgs_sweeps if line_implicit else implicit.sgs_sweeps
        self.exchange_increment = exchange_increment
        self.increment = np.zeros((discretisation.nvar, *discretisation.metrics.area.shape))

    def step(self, U, cfl: float, fill_ghosts, residual=None) -> np.ndarray:
        """Update ``U`` (ghosts filled) in place by one implicit step at ``cfl``; returns
        the residual ``R(U)`` of the state before the step."""
        disc, m = self.discretisation, self.discretisation.metrics
        R = disc.residual(U) if residual is None else residual
        disc.spectral_radii()
        dt = disc.local_time_step(cfl, along_i_only=self.line_implicit)
        lam_i, lam_j = disc.implicit_radii()
        diagonal = implicit.diagonal(m.area, dt, lam_i, lam_j)
        dU = self.increment
        dU[...] = 0.0
        g = m.ghosts
        for sweep in range(self.sweeps):
            if sweep and self.exchange_increment is not None:
                self.exchange_increment(dU)
            self.kernel(U, R, dU, diagonal, disc.source_implicit, lam_i, lam_j,
                                m.sxi, m.syi, m.sxj, m.syj, self.cut_partner, g, disc.gamma,
                                1)  # fmt: skip
        owned = (slice(None), *m.owned)
        U[owned] += dU[owned]
        fill_ghosts(U)
        return R
