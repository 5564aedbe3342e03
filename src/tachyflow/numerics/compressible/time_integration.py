"""Steps of the compressible solver: implicit (LU-SGS / DP-SGS) pseudo-time steps for
steady flows; for unsteady ones explicit SSP-RK3 (C.-W. Shu, S. Osher, J. Comput. Phys. 77,
1988) or dual time stepping (A. Jameson, AIAA paper 91-1596, 1991: each physical step of the
second-order backward difference solved by the implicit pseudo-time iterations).

All take ``fill_ghosts(U)``, which fills the ghost cells of a state (boundary conditions,
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
                 line_implicit: bool = False):
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

    def step(self, U, cfl: float, fill_ghosts, residual=None,
             physical_rate: float = 0.0) -> np.ndarray:
        """Update ``U`` (ghosts filled) in place by one implicit step at ``cfl``; returns
        the residual ``R(U)`` of the state before the step. With dual time stepping
        ``residual`` is the unsteady residual and ``physical_rate`` the coefficient of
        ``area * U`` in it, which joins the diagonal."""
        disc, m = self.discretisation, self.discretisation.metrics
        R = disc.residual(U) if residual is None else residual
        disc.spectral_radii()
        dt = disc.local_time_step(cfl, along_i_only=self.line_implicit)
        lam_i, lam_j = disc.implicit_radii()
        diagonal = implicit.diagonal(m.area, dt, lam_i, lam_j, physical_rate)
        dU = self.increment
        dU[...] = 0.0
        g = m.ghosts
        for sweep in range(self.sweeps):
            if sweep and self.exchange_increment is not None:
                self.exchange_increment(dU)
            self.kernel(U, R, dU, diagonal, disc.source_implicit, lam_i, lam_j,
                                m.sxi, m.syi, m.sxj, m.syj, self.cut_partner, g, disc.gamma,
                                1)
        owned = (slice(None), *m.owned)
        U[owned] += dU[owned]
        fill_ghosts(U)
        return R


class DualTimeStepper:
    """Physical time steps by the second-order backward difference (BDF2), each solved by
    pseudo-time iterations of an :class:`ImplicitStepper` (dual time stepping).

    Step ``n -> n + 1`` drives the unsteady residual

    ``R*(U) = R(U) + area * (3 U - 4 U^n + U^(n-1)) / (2 dt)``

    to zero by implicit pseudo-time iterations from ``U = U^n``, ``3 area / (2 dt)`` added
    to their diagonal; they stop when the L2 norm of the density equation's ``R* / area``
    has fallen by ``inner_tolerance`` from its first value or after ``inner_iterations``.
    The first step, with no ``U^(n-1)``, is a backward Euler (BDF1) step,
    ``R* = R + area (U - U^n) / dt``: its local error is second order, so the scheme stays
    second order (BDF2 from two equal levels would be first order).

    Parameters
    ----------
    stepper : ImplicitStepper
        The pseudo-time iteration (LU-SGS or DP-SGS).
    inner_iterations : int
        The most pseudo-time iterations per physical step.
    inner_tolerance : float
        The relative drop of the inner residual that ends a physical step, in (0, 1).
    global_sums : callable
        ``global_sums(array)``: the sums of a small array over all blocks (the identity
        for one block); the stopping test is decided on values equal on all blocks.

    Attributes
    ----------
    previous : numpy.ndarray or None
        ``U^(n-1)`` (padded, owned cells meaningful); None before the first step.
    iterations : int
        The pseudo-time iterations of the last step.
    residual_drop : float
        Its final inner residual relative to its first.

    Notes
    -----
    Local; :meth:`step` calls ``fill_ghosts``, ``global_sums`` and the stepper's exchange,
    which may be collective.
    """

    def __init__(self, stepper: ImplicitStepper, inner_iterations: int,
                 inner_tolerance: float, global_sums):
        if inner_iterations < 1:
            raise ValueError(f"inner_iterations must be >= 1, got {inner_iterations!r}")
        if not 0 < inner_tolerance < 1:
            raise ValueError(f"inner_tolerance must be in (0, 1), got {inner_tolerance!r}")
        self.stepper = stepper
        self.inner_iterations = inner_iterations
        self.inner_tolerance = inner_tolerance
        self.global_sums = global_sums
        self.previous = None
        self.iterations = 0
        self.residual_drop = float("nan")

    def _density_norm(self, unsteady: np.ndarray) -> float:
        m = self.stepper.discretisation.metrics
        rate = unsteady[0][m.owned] / m.area[m.owned]
        sums = self.global_sums(np.array([np.sum(rate**2), rate.size], dtype=float))
        return float(np.sqrt(sums[0] / sums[1]))

    def step(self, U, dt: float, cfl, fill_ghosts) -> np.ndarray:
        """Advance ``U`` (ghosts filled) in place by one physical step ``dt``; ``cfl(k)``
        is the pseudo-time CFL number of inner iteration ``k`` (from 0). Returns ``R(U)``
        of the new state (the spatial residual, ``-area dU/dt``)."""
        disc = self.stepper.discretisation
        area = disc.metrics.area
        if self.previous is None:  # backward Euler: area (U - U^n) / dt
            rate, history = 1.0 / dt, U / dt
        else:  # BDF2: area (3/2 U - 2 U^n + 1/2 U^(n-1)) / dt
            rate, history = 1.5 / dt, (2.0 * U - 0.5 * self.previous) / dt
        current = U.copy()
        first = None
        iteration = 0
        while True:
            R = disc.residual(U)
            unsteady = R + area * (rate * U - history)
            norm = self._density_norm(unsteady)
            first = norm if first is None else first
            drop = norm / first if first > 0 else 0.0  # 0: U^n already solves the step
            if iteration == self.inner_iterations or drop <= self.inner_tolerance:
                break
            self.stepper.step(U, cfl(iteration), fill_ghosts, unsteady, rate)
            iteration += 1
        self.previous = current
        self.iterations, self.residual_drop = iteration, drop
        return R
