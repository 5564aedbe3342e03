"""Ffowcs Williams–Hawkings acoustic analogy on panelled surfaces (Farassat formulation 1A).

The surface is a set of panels (centre, outward unit normal, area) that may move and
deform; flow data are sampled at the panel centres at every source time step. For an
impermeable surface only the surface velocity and the pressure are used (``u = v_s``); a
permeable surface also takes the fluid density and velocity:

``U = (1 - rho / rho0) v_s + rho u / rho0`` and
``L = (p - p0) n + rho u (u_n - v_n)``.

The kernels in :mod:`tachyflow.numerics.fwh_kernels` integrate the retarded integrands
source-time-dominantly onto a uniform observer-time grid. The scheme is fourth order by
default: source-time derivatives on 5-step stencils (``time_order = 4``) and cubic
interpolation between arrivals in observer time (``interpolation = "cubic"``); the
second-order scheme (3-step central derivatives, linear interpolation) remains as an
option. In a parallel run every rank holds its own panels; passing ``comm`` sums the
signals over the ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow import collectives
from tachyflow.errors import ConfigError
from tachyflow.numerics.fwh_kernels import (
    CUBIC_HISTORY,
    DERIVATIVE_ORDERS,
    accumulate_retarded,
    accumulate_retarded_cubic,
    finish_retarded_cubic,
    source_derivative,
)
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import allgather_small, gather_rows

# An observer closer than this fraction of a panel's width to the panel centre is on the
# surface: the one-point panel quadrature of the 1/r and 1/r^2 integrands is meaningless.
_ON_SURFACE_FRACTION = 0.5
# The kernel of each interpolation between arrivals.
_KERNELS = {"linear": accumulate_retarded, "cubic": accumulate_retarded_cubic}
INTERPOLATIONS = tuple(_KERNELS)
# Bytes per observer of its name, position and rows while an observer list is read (a
# 200,000-observer arc peaked at 317 under tracemalloc).
OBSERVER_BYTES = 400
# Copies of the signals a prediction holds: thickness and loading, their sum over the
# ranks, the total, its spectrum (complex) and what is written from it.
_SIGNAL_COPIES = 8


def memory_needed(observers: int, samples: int, panels: int, interpolation: str = "cubic",
                  ranks: int = 1) -> int:
    """Bytes a prediction of ``observers`` at ``samples`` observer times from ``panels``
    panels needs at its peak over ``ranks`` ranks of one node: an estimate, to refuse
    sizes before allocating.

    Each rank holds its panels' last arrivals per observer (:class:`FWHAccumulator`),
    the observers' distances to every panel (the observer window is found from them) and
    the signals; the observer list is read once more on each.
    """
    per_pair = 3 * 8 * CUBIC_HISTORY + 8 if interpolation == "cubic" else 3 * 8 + 1
    share = -(-panels // ranks)
    each = (share * per_pair + panels * 56 + samples * 8 * _SIGNAL_COPIES
            + OBSERVER_BYTES) * observers
    return ranks * each


@dataclass(frozen=True)
class FWHSignals:
    """Acoustic pressure at the observers on the observer-time grid.

    Attributes
    ----------
    times : numpy.ndarray
        Observer times, shape ``(nq,)``.
    thickness : numpy.ndarray
        Thickness (monopole) part ``p'_T``, shape ``(m, nq)``.
    loading : numpy.ndarray
        Loading (dipole) part ``p'_L``, shape ``(m, nq)``.
    """

    times: np.ndarray
    thickness: np.ndarray
    loading: np.ndarray

    @property
    def pressure(self) -> np.ndarray:
        """Total acoustic pressure ``p' = p'_T + p'_L``, shape ``(m, nq)``."""
        return self.thickness + self.loading


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _array(name: str, value, shape: tuple[int, ...]) -> np.ndarray:
    array = np.ascontiguousarray(value, dtype=np.float64)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    return array


class FWHSolver:
    """Far-field pressure from panel data by Farassat's formulation 1A.

    Parameters
    ----------
    observers : array_like
        Observer positions, shape ``(m, 3)``; anywhere off the surface.
    observer_times : array_like
        Uniform, increasing observer times at which the signals are wanted, shape
        ``(nq,)`` with ``nq >= 2``. Samples that no source step reaches stay zero.
    c0 : float, optional
        Ambient speed of sound (positive).
    rho0 : float, optional
        Ambient density (positive).
    p0 : float, optional
        Ambient pressure, subtracted from the surface pressure.
    permeable : bool, optional
        Whether the surface is permeable (needs density and velocity data) or a solid
        wall (the fluid moves with it).
    comm : mpi4py.MPI.Comm, optional
        When given, :meth:`solve` sums the ranks' signals (each rank its own panels).
    time_order : int, optional
        Order of the source-time derivatives: 4 (5-step stencils, the default) or 2
        (3-step). A record needs at least ``time_order + 1`` steps.
    interpolation : str, optional
        How a panel's signal is interpolated between its arrivals onto the observer
        times: ``"cubic"`` (fourth order, the default) or ``"linear"`` (second order).

    Raises
    ------
    ValueError
        If a parameter has the wrong shape or value.
    TypeError
        If ``permeable`` is not a bool or ``time_order`` not an int.
    """

    def __init__(
        self,
        observers,
        observer_times,
        *,
        c0: float = 340.0,
        rho0: float = 1.225,
        p0: float = 0.0,
        permeable: bool = False,
        comm=None,
        time_order: int = 4,
        interpolation: str = "cubic",
    ):
        observers = np.ascontiguousarray(observers, dtype=np.float64)
        if observers.ndim != 2 or observers.shape[1] != 3 or observers.shape[0] == 0:
            raise ValueError(
                f"observers must have shape (m, 3) with m >= 1, got {observers.shape}"
            )
        self.observers = _array("observers", observers, observers.shape)
        times = np.asarray(observer_times, dtype=np.float64)
        if times.ndim != 1 or times.size < 2 or not np.all(np.isfinite(times)):
            raise ValueError(
                f"observer_times must be a finite 1D array of at least 2 times, got shape "
                f"{times.shape}"
            )
        step = (times[-1] - times[0]) / (times.size - 1)
        if step <= 0.0 or not np.allclose(np.diff(times), step, rtol=1e-9, atol=0.0):
            raise ValueError("observer_times must be uniformly spaced and increasing")
        self.observer_times = times
        self.c0 = _positive("c0", c0)
        self.rho0 = _positive("rho0", rho0)
        self.p0 = float(p0)
        if not isinstance(permeable, bool):
            raise TypeError(f"permeable must be a bool, got {type(permeable).__name__}")
        self.permeable = permeable
        self.comm = comm
        if isinstance(time_order, bool) or not isinstance(time_order, int | np.integer):
            raise TypeError(f"time_order must be an int, got {type(time_order).__name__}")
        if time_order not in DERIVATIVE_ORDERS:
            raise ValueError(f"time_order must be one of {DERIVATIVE_ORDERS}, got {time_order!r}")
        self.time_order = int(time_order)
        if interpolation not in INTERPOLATIONS:
            raise ValueError(
                f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}"
            )
        self.interpolation = interpolation

    @property
    def min_steps(self) -> int:
        """Source steps a record needs: one derivative stencil."""
        return self.time_order + 1

    def solve(
        self,
        times,
        positions,
        normals,
        areas,
        surface_velocity,
        pressure,
        density=None,
        velocity=None,
    ) -> FWHSignals:
        """Integrate the surface data of all source times.

        Parameters
        ----------
        times : array_like
            Strictly increasing source times, shape ``(nt,)`` with ``nt >= time_order + 1``.
        positions : array_like
            Panel centres, shape ``(nt, np, 3)``.
        normals : array_like
            Outward unit normals (into the fluid being radiated to), shape ``(nt, np, 3)``.
        areas : array_like
            Panel areas, shape ``(np,)`` (positive).
        surface_velocity : array_like
            Panel velocity ``v_s``, shape ``(nt, np, 3)``; ``|v_s| < c0``.
        pressure : array_like
            Pressure at the panels, shape ``(nt, np)``.
        density, velocity : array_like, optional
            Fluid density ``(nt, np)`` and velocity ``(nt, np, 3)`` at the panels; required
            for a permeable surface and not accepted for an impermeable one.

        Returns
        -------
        FWHSignals
            Thickness and loading pressure at the observers (summed over ranks when the
            solver has a communicator).

        Raises
        ------
        ValueError
            On mismatched shapes, non-increasing times, non-unit normals, supersonic panels
            or an observer on the surface (a ConfigError: the observers are input).
        """
        times = np.asarray(times, dtype=np.float64)
        if times.ndim != 1 or times.size < self.min_steps:
            raise ValueError(
                f"times must be 1D with at least {self.min_steps} steps (time_order "
                f"{self.time_order}), got shape {times.shape}"
            )
        if not np.all(np.diff(times) > 0.0):
            raise ValueError("times must be strictly increasing")
        areas = np.asarray(areas, dtype=np.float64)
        if areas.ndim != 1:
            raise ValueError(f"areas must have shape (np,), got {areas.shape}")
        nt, npanel = times.size, areas.size
        areas = _array("areas", areas, (npanel,))
        if np.any(areas <= 0.0):
            raise ValueError(f"areas must be positive, got minimum {areas.min()!r}")
        vec, scal = (nt, npanel, 3), (nt, npanel)
        positions = _array("positions", positions, vec)
        normals = _array("normals", normals, vec)
        norm_error = np.abs(np.linalg.norm(normals, axis=-1) - 1.0).max(initial=0.0)
        if norm_error > 1e-6:
            raise ValueError(f"normals must be unit vectors, got |n| off by {norm_error:.3g}")
        surface_velocity = _array("surface_velocity", surface_velocity, vec)
        peak = np.linalg.norm(surface_velocity / self.c0, axis=-1).max(initial=0.0)
        if peak >= 1.0:
            raise ValueError(f"panel Mach number must be below 1, got {peak:.3g}")
        gauge = _array("pressure", pressure, scal) - self.p0

        if self.permeable:
            if density is None or velocity is None:
                raise ValueError("a permeable surface needs density and velocity data")
            density = _array("density", density, scal)
            velocity = _array("velocity", velocity, vec)
            ratio = (density / self.rho0)[..., None]
            flux = (1.0 - ratio) * surface_velocity + ratio * velocity
            relative = np.einsum("tpi,tpi->tp", velocity - surface_velocity, normals)
            load = gauge[..., None] * normals + (density * relative)[..., None] * velocity
        else:
            if density is not None or velocity is not None:
                raise ValueError(
                    "density and velocity are only used on a permeable surface; the fluid "
                    "moves with an impermeable one"
                )
            flux = surface_velocity
            load = gauge[..., None] * normals
        # d(U.n)/dtau is U̇_n + U_ṅ: differencing U_n itself includes the normal's turning.
        normal_flux = np.einsum("tpi,tpi->tp", flux, normals)
        accumulator = self.accumulator(areas)
        accumulator.add(times, positions, surface_velocity, normal_flux, load)
        return accumulator.finish()

    def accumulator(self, areas) -> FWHAccumulator:
        """A step-by-step integrator for panels of these ``areas`` (see FWHAccumulator)."""
        return FWHAccumulator(self, areas)

    def sum_over_ranks(self, local: np.ndarray) -> np.ndarray:
        """``local`` summed over the solver's ranks (collective)."""
        total = np.empty_like(local)
        collectives.allreduce(self.comm, local.ravel(), "sum", "native", out=total.ravel())
        return total


class FWHAccumulator:
    """Integrates a surface's source terms as they come, one or more steps at a time.

    A flow run feeds each sampled step (:meth:`add`) and reads the signals at the end
    (:meth:`finish`); feeding the whole record at once gives the same numbers. The
    source-time derivatives are the differences of :func:`source_derivative` of the
    solver's ``time_order`` (central inside, one-sided at the two ends), so a step is
    integrated once the ``time_order / 2`` next ones have arrived, and the last
    ``time_order / 2`` at :meth:`finish` (the accumulator keeps ``time_order + 1`` steps).
    With cubic interpolation it also keeps each (panel, observer) pair's last three
    arrivals, and :meth:`finish` adds the last interval.

    Parameters
    ----------
    solver : FWHSolver
        Observers, observer-time grid, medium and communicator.
    areas : array_like
        Panel areas, shape ``(np,)``, positive; the panels of this rank.

    Notes
    -----
    :meth:`finish` is collective when the solver has a communicator (the ranks' signals
    are summed); :meth:`add` is local.
    """

    def __init__(self, solver: FWHSolver, areas):
        areas = np.asarray(areas, dtype=np.float64)
        if areas.ndim != 1:
            raise ValueError(f"areas must have shape (np,), got {areas.shape}")
        self.areas = _array("areas", areas, areas.shape)
        if np.any(self.areas <= 0.0):
            raise ValueError(f"areas must be positive, got minimum {self.areas.min()!r}")
        self.solver = solver
        npanel, m = self.areas.size, solver.observers.shape[0]
        nq = solver.observer_times.size
        self.thickness = np.zeros((m, nq))
        self.loading = np.zeros((m, nq))
        # Per (panel, observer) the last arrivals (time, thickness, loading) and whether
        # (linear) or how many times (cubic) one came.
        if solver.interpolation == "cubic":
            history = (npanel, m, CUBIC_HISTORY)
            self._state = (*(np.zeros(history) for _ in range(3)), np.zeros((npanel, m), int))
        else:
            self._state = (*(np.zeros((npanel, m)) for _ in range(3)), np.zeros((npanel, m), bool))
        self._min_distance = _ON_SURFACE_FRACTION * np.sqrt(self.areas)
        # The last steps received (at most one stencil: a derivative needs the neighbours),
        # of which the first `_done` are integrated already.
        self._width = solver.time_order + 1
        self._held: list[np.ndarray] | None = None
        self._done = 0
        self._problem: ConfigError | None = None  # an observer on this rank's panels
        self.steps = 0

    def add(self, times, positions, surface_velocity, normal_flux, load) -> None:
        """Take ``nt >= 1`` further source steps.

        Parameters
        ----------
        times : array_like
            Source times, shape ``(nt,)``, increasing and after the previous ones.
        positions, surface_velocity, load : array_like
            Panel centres, panel velocities and loading vectors ``L``, ``(nt, np, 3)``.
        normal_flux : array_like
            ``U_n`` per panel, shape ``(nt, np)``.
        """
        times = np.atleast_1d(np.asarray(times, dtype=np.float64))
        nt, npanel = times.size, self.areas.size
        vec = (nt, npanel, 3)
        chunk = [
            times,
            _array("positions", positions, vec),
            _array("surface_velocity", surface_velocity, vec) / self.solver.c0,
            _array("normal_flux", normal_flux, (nt, npanel)),
            _array("load", load, vec),
        ]
        if self._held is not None:
            chunk = [
                np.concatenate([held, new]) for held, new in zip(self._held, chunk, strict=True)
            ]
        if not np.all(np.diff(chunk[0]) > 0.0):
            raise ValueError("source times must be strictly increasing from step to step")
        self.steps += nt
        total, width, half = chunk[0].size, self._width, self._width // 2
        if total >= width:
            # Rows with `half` neighbours on both sides are final; the first rows at the
            # very start take the edge formula, as they would over the whole record.
            self._integrate(chunk, self._done, total - half)
            self._done = min(total, width) - half
        self._held = [values[max(total - width, 0) :] for values in chunk]

    def finish(self) -> FWHSignals:
        """Integrate the held-back steps and return the signals (collective with a comm)."""
        solver = self.solver
        if self.steps < solver.min_steps:
            raise ValueError(
                f"FW-H needs at least {solver.min_steps} source steps (time_order "
                f"{solver.time_order}), got {self.steps}"
            )
        held = self._held
        self._integrate(held, self._done, held[0].size)
        if solver.interpolation == "cubic" and self._problem is None:
            start, step = self._grid()
            finish_retarded_cubic(*self._state, start, step, self.thickness, self.loading)
        self._held, self._done = None, 0
        self.steps = 0
        thickness, loading = self.thickness, self.loading
        if solver.comm is not None:
            agreement.agree(solver.comm, self._problem)
            thickness = solver.sum_over_ranks(thickness)
            loading = solver.sum_over_ranks(loading)
        return FWHSignals(solver.observer_times.copy(), thickness, loading)

    def checkpoint_state(self, share: slice, copies: int = 1) -> dict[str, np.ndarray] | None:
        """The record so far as whole-surface arrays, on rank 0 of the solver's communicator
        (None elsewhere), from which :meth:`restore_state` goes on as if never stopped, on
        any rank count (collective with a communicator: an observer found on the surface
        is raised on every rank here, since a restart would not know of it).

        Parameters
        ----------
        share : slice
            This rank's panels of the surface (contiguous shares in rank order:
            :func:`~tachyflow.parallel.pieces.panel_share`).
        copies : int
            The accumulator's panels are ``copies`` blocks of the share's panels, one after
            the other (a rotor's sectors).
        """
        comm = self.solver.comm
        if comm is not None:
            agreement.agree(comm, self._problem)
        npanel = self.areas.size
        held = self._held or [np.zeros(0), *(np.zeros((0, npanel, *tail))
                                             for tail in ((3,), (3,), (), (3,)))]
        rows = {f"arrival_{k}": state for k, state in enumerate(self._state)}
        # The held steps with the panel axis first, like the arrivals.
        for name, values in zip(("positions", "mach", "normal_flux", "load"), held[1:],
                                strict=True):
            rows[f"held_{name}"] = np.moveaxis(values, 0, 1)
        record = {
            "held_times": held[0],
            "counters": np.array([self._done, self.steps]),
        }
        signals = np.stack([self.thickness, self.loading])[None]
        if comm is None:
            whole = {name: _by_panel(values, copies) for name, values in rows.items()}
            return {**record, **whole, "signals": signals}
        counts = allgather_small(comm, share.stop - share.start)
        for name, values in rows.items():
            gathered = gather_rows(comm, _by_panel(values, copies), counts, values.dtype)
            if gathered is not None:
                record[name] = gathered
        # Each rank's sums apart: a restart on as many ranks adds in the same order.
        stacked = gather_rows(comm, signals, [1] * len(counts), np.float64)
        if stacked is None:
            return None
        return {**record, "signals": stacked}

    def restore_state(self, record: dict[str, np.ndarray], share: slice, copies: int = 1) -> None:
        """Continue the record :meth:`checkpoint_state` gave (on every rank, the same
        ``record``; ``share`` and ``copies`` as there, for this rank's panels now).
        ConfigError when the record is of another surface, observers or observer times."""
        kept = np.shape(record["arrival_0"])
        panels = np.shape(_by_panel(self._state[0], copies))[1:]
        if kept[1:] != panels or np.shape(record["signals"])[1:] != (2, *self.thickness.shape):
            raise ConfigError(
                f"the checkpoint's acoustics record ({kept[0]} panels, arrivals {kept[1:]}) is "
                f"not of this case's surface and observers (arrivals {panels}): the "
                "[acoustics] section changed since it was written"
            )
        for k, state in enumerate(self._state):
            state[...] = _of_share(record[f"arrival_{k}"], share, copies)
        times = np.asarray(record["held_times"], dtype=np.float64)
        self._held = None
        if times.size:
            held = [_of_share(record[f"held_{name}"], share, copies)
                    for name in ("positions", "mach", "normal_flux", "load")]
            self._held = [times, *(np.ascontiguousarray(np.moveaxis(h, 1, 0)) for h in held)]
        self._done, self.steps = (int(n) for n in record["counters"])
        signals = np.asarray(record["signals"], dtype=np.float64)
        comm = self.solver.comm
        rank, size = (0, 1) if comm is None else (comm.Get_rank(), comm.Get_size())
        if len(signals) == size:
            mine = signals[rank]
        else:  # another rank count: rank 0 carries the sums so far
            mine = signals.sum(axis=0) if rank == 0 else np.zeros_like(signals[0])
        self.thickness[...], self.loading[...] = mine

    def _grid(self) -> tuple[float, float]:
        """Start and step of the uniform observer-time grid."""
        times = self.solver.observer_times
        return times[0], (times[-1] - times[0]) / (times.size - 1)

    def _integrate(self, chunk, first: int, stop: int) -> None:
        """Integrate rows ``first..stop-1`` of ``chunk``, differencing over all its rows."""
        times, positions, mach, normal_flux, load = chunk
        rows = slice(first, stop)
        solver = self.solver
        order = solver.time_order
        bad = np.full(3, -1, dtype=np.int64)
        _KERNELS[solver.interpolation](
            times[rows],
            positions[rows],
            self.areas,
            normal_flux[rows],
            source_derivative(normal_flux, times, order)[rows],
            load[rows],
            source_derivative(load, times, order)[rows],
            mach[rows],
            source_derivative(mach, times, order)[rows],
            solver.observers,
            solver.c0,
            solver.rho0,
            self._min_distance,
            *self._grid(),
            *self._state,
            self.thickness,
            self.loading,
            bad,
        )
        if bad[0] >= 0 and self._problem is None:
            k, i, j = (int(b) for b in bad)
            self._problem = ConfigError(
                f"observer {j} at {solver.observers[j].tolist()} is on the surface: within "
                f"half a panel width of panel {i} at {positions[first + k, i].tolist()} "
                f"(time {times[first + k]!r})"
            )
            if solver.comm is None:
                raise self._problem
            # With ranks, the panel is one rank's: every rank learns of it in finish().


def _by_panel(values: np.ndarray, copies: int) -> np.ndarray:
    """Rows of ``copies`` blocks of a share's panels as one row per panel of the share
    (``(copies * n, ...)`` to ``(n, copies, ...)``): gathered over the ranks, the rows
    are then in the surface's panel order."""
    blocks = values.reshape(copies, -1, *values.shape[1:])
    return np.ascontiguousarray(np.swapaxes(blocks, 0, 1))


def _of_share(values: np.ndarray, share: slice, copies: int) -> np.ndarray:
    """The rows of ``share`` of whole-surface rows (:func:`_by_panel`'s layout) back in
    ``copies`` blocks."""
    rows = np.asarray(values)[share]
    return np.swapaxes(rows, 0, 1).reshape(-1, *rows.shape[2:])
