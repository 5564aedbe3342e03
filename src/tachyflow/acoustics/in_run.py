"""FW-H noise prediction inside a flow run: the ``[acoustics]`` section of a case file.

A permeable surface (sphere, box, cylinder or a surface mesh) is sampled from the
distributed flow every ``every`` steps. Each panel is integrated by one rank (contiguous
shares); the flow values its second-order stencil needs live on the ranks that own those
cells, and :class:`~tachyflow.parallel.noise_exchange.NoiseSourceExchange` brings them (or,
with the ``source-put`` strategy, the four source terms computed where the flow lives) to
it. Each rank feeds its panels' source terms to an :class:`~tachyflow.acoustics.FWHAccumulator`
step by step, so nothing of the record is kept but the signals. Rank 0 also gathers the
sampled source terms into ``acoustics/surface.bp`` for ``tachyflow acoustics`` after the
fact. At the end the signals are summed over the ranks and written with their spectra::

    acoustics/surface.vtu   the panels with normals, areas, owner rank and the last sample
    acoustics/surface.bp/   the sampled source terms, step by step (BP5)
    acoustics/signals.csv   p' (total, thickness, loading) per observer; spectra.csv,
                            bands.csv, spectra.png, directivity.png for an arc

The observer-time window is decided at the start from the simulated time the record will
cover (``duration``, or steps × dt): from the last first arrival of any panel at any
observer to the first last arrival. The flow is incompressible: the density is ``rho0``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow import collectives, runtime
from tachyflow.acoustics import surfaces
from tachyflow.acoustics.fwh import FWHSolver, memory_needed
from tachyflow.acoustics.options import AcousticsSection
from tachyflow.acoustics.results import arc_observers, write_results
from tachyflow.acoustics.sources import PermeableSourceTerms
from tachyflow.errors import ConfigError
from tachyflow.io.surface_series import SurfaceSeriesWriter
from tachyflow.parallel import agreement
from tachyflow.parallel.noise_exchange import NoiseSourceExchange
from tachyflow.parallel.pieces import panel_share


def build_surface(section: AcousticsSection, base: Path) -> surfaces.Surface:
    """The surface a case's ``[acoustics]`` section describes (mesh paths relative to
    the case file's folder ``base``)."""
    if section.surface == "sphere":
        return surfaces.sphere(section.centre, section.radius, section.panels)
    if section.surface == "cylinder":
        # About square panels: the side takes `around` × around·length/(2πr) of them, each
        # cap about around²/(2π).
        share = section.length / (2 * np.pi * section.radius) + 1 / np.pi
        around = max(8, round(np.sqrt(section.panels / share)))
        return surfaces.cylinder(
            section.centre, section.axis, section.radius, section.length, around=around
        )
    if section.surface == "box":
        return surfaces.box(section.lower, section.upper, section.spacing)
    mesh = Path(section.mesh)
    return surfaces.from_mesh(mesh if mesh.is_absolute() else base / mesh)


def planned_panels(section: AcousticsSection) -> int | None:
    """About how many panels ``section``'s sphere, cylinder or box will have, before they
    are made; None for a mesh file (its panels are counted once read)."""
    if section.surface in ("sphere", "cylinder"):
        return section.panels
    if section.surface == "box":
        x, y, z = np.subtract(section.upper, section.lower)
        return int(2 * (x * y + y * z + z * x) / section.spacing**2)
    return None


def check_memory(section: AcousticsSection, panels: int, comm) -> None:
    """ConfigError when ``section``'s observers, samples and ``panels`` panels would not
    fit in this node's memory on ``comm``'s ranks (collective: rank 0 decides)."""
    count = len(section.observers) + (section.arc_count if section.arc_radius > 0 else 0)
    ranks = comm.Get_size()
    needed = memory_needed(count, section.samples, panels, section.interpolation, ranks)
    what = (f"[acoustics]: {count:,} observers x {section.samples:,} samples from "
            f"{panels:,} panels on {ranks} rank(s)")
    agreement.on_root(comm, lambda: runtime.require_memory(needed, what))


def observers_of(section: AcousticsSection) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Names, positions ``(m, 3)`` and arc angles (degrees) of a section's observers."""
    names = [f"observer-{index}" for index in range(len(section.observers))]
    positions = np.array(section.observers, dtype=np.float64).reshape(-1, 3)
    angles = np.zeros(0)
    if section.arc_radius > 0:
        angles, points = arc_observers(
            section.arc_radius, section.arc_plane, section.arc_start, section.arc_stop,
            section.arc_count, section.arc_centre,
        )
        names += [f"arc-{angle:g}" for angle in angles]
        positions = np.concatenate([positions, points])
    return names, positions, angles


def observer_times(section, start: float, duration: float, nearest: float, farthest: float):
    """The observer times that every panel reaches in a record of ``duration`` from
    ``start``: from the last first arrival (over ``farthest``) to the first last arrival
    (over ``nearest``), ``section.samples`` of them. ConfigError (bad input: the case's
    steps, duration or speed of sound) when there are none."""
    first = start + farthest / section.c0
    last = start + duration + nearest / section.c0
    if not last > first:
        raise ConfigError(
            f"acoustics: the record ({duration:.3g} of simulated time) is shorter than the "
            "spread of arrival times over the surface; no observer time would see every "
            "panel: raise acoustics.duration or the number of steps"
        )
    return np.linspace(first, last, section.samples)


class InRunAcoustics:
    """Samples a permeable FW-H surface from the running flow and integrates it.

    Parameters
    ----------
    section : AcousticsSection
        The case's ``[acoustics]`` section (``surface`` not ``"none"``).
    solver : IncompressibleSolver
        The flow solver: its decomposition, grid, ghosted fields and halo.
    output : path
        The run's output folder; results go to ``output/acoustics``.
    duration : float
        Simulated time the record will cover from now.
    base : path
        Folder that relative mesh paths start from (the case file's).
    record : dict, optional
        What :meth:`checkpoint_state` gave before a restart: the record goes on from it
        (its start and duration, not ``duration``), the surface series too.

    Notes
    -----
    Construction, :meth:`sample` and :meth:`finish` are collective over the solver's
    decomposition. Errors in the section (a surface outside the domain, an observer on
    it) are raised on every rank.
    """

    def __init__(
        self, section: AcousticsSection, solver, output, duration: float, base=".", record=None
    ):
        self.section = section
        self.decomposition = decomposition = solver.decomposition
        self.solver = solver
        self.folder = Path(output) / "acoustics"
        planned = planned_panels(section)
        if planned is not None:  # before a sphere's, cylinder's or box's panels are made
            check_memory(section, planned, decomposition.comm)
        self.surface = build_surface(section, Path(base))
        if planned is None:
            check_memory(section, self.surface.areas.size, decomposition.comm)
        self.names, observers, self.arc_angles = observers_of(section)
        count = self.surface.areas.size
        rank, size = decomposition.rank, decomposition.size
        self.destination = destination = np.empty(count, dtype=np.int64)
        for owner in range(size):
            destination[panel_share(count, owner, size)] = owner
        self.exchange = NoiseSourceExchange(
            decomposition, solver.grid, solver.halo, self.surface.centres,
            self.surface.normals, destination, method=section.exchange, sync=section.sync,
            sources=PermeableSourceTerms(section.rho0, section.p0),
        )
        self.share = panel_share(count, rank, size)
        self.start, self.duration = (solver.time, duration) if record is None else (
            float(value) for value in record["window"])
        distances = np.linalg.norm(observers[:, None, :] - self.surface.centres[None], axis=2)
        times = observer_times(
            section, self.start, self.duration, distances.min(), distances.max()
        )
        self.fwh = FWHSolver(
            observers, times, c0=section.c0,
            rho0=section.rho0, p0=section.p0, permeable=True, comm=decomposition.comm,
            time_order=section.time_order, interpolation=section.interpolation,
        )
        self.accumulator = self.fwh.accumulator(self.surface.areas[self.share])
        self._positions = self.surface.centres[self.share][None]
        self._still = np.zeros_like(self._positions)
        self._gathered = np.zeros((count, 4))
        self.last_time = self.start
        self.samples = 0
        if record is not None:
            self.accumulator.restore_state(record, self.share)
            self.last_time, samples = (float(value) for value in record["progress"])
            self.samples = int(samples)

        def open_series() -> SurfaceSeriesWriter:
            self.folder.mkdir(parents=True, exist_ok=True)
            # After a restart, the steps a killed run sampled after its checkpoint go.
            return SurfaceSeriesWriter(
                self.folder / "surface.bp", self.surface.areas,
                keep_until=None if record is None else self.last_time,
            )

        # Rank 0 writes; here and below a failure (a full disk) ends every rank together.
        self._series = agreement.on_root(decomposition.comm, open_series)

    def sample(self) -> None:
        """Sample the current flow and integrate it (collective)."""
        solver = self.solver
        terms = self.exchange.exchange(*solver.staggered_fields())
        self.accumulator.add(
            [solver.time], self._positions, self._still, terms[None, :, 0], terms[None, :, 1:]
        )
        self.last_time = solver.time
        self.samples += 1
        # Rank 0 records every panel: each rank contributes its share, the rest zero.
        local = np.zeros_like(self._gathered)
        local[self.exchange.mine] = terms
        collectives.reduce(self.decomposition.comm, local.ravel(), "sum", 0, "native",
                           out=self._gathered.ravel())
        agreement.on_root(self.decomposition.comm, lambda: self._series.write(
            solver.time,
            {
                "positions": self.surface.centres,
                "normals": self.surface.normals,
                "surface_velocity": np.zeros_like(self.surface.centres),
                "normal_flux": self._gathered[:, 0],
                "load": self._gathered[:, 1:],
            },
        ))

    def checkpoint_state(self) -> dict[str, np.ndarray] | None:
        """The record so far, for ``record`` after a restart, on rank 0 (None elsewhere)
        (collective)."""
        record = self.accumulator.checkpoint_state(self.share)
        if record is not None:
            record["window"] = np.array([self.start, self.duration])
            record["progress"] = np.array([self.last_time, self.samples])
        return record

    def write_surface(self) -> Path | None:
        """The panels with their last sample as VTK (rank 0; after a :meth:`sample`)."""
        if self._series is None:
            return None
        path = self.folder / "surface.vtu"
        surfaces.write_surface(
            self.surface,
            path,
            {
                "normal_flux": self._gathered[:, 0],
                "load": self._gathered[:, 1:],
                "integrating_rank": self.destination.astype(np.float64),
            },
        )
        return path

    def finish(self) -> dict | None:
        """Sum the signals over the ranks and write them (collective; rank 0 writes).

        Returns, on rank 0, the OASPL per observer and the observer-time window that the
        record fully covers; ``None`` elsewhere.
        """
        # Only observer times every panel's record reaches are complete (decided on values
        # identical on every rank, so all raise together).
        distances = np.linalg.norm(
            self.fwh.observers[:, None, :] - self.surface.centres[None], axis=2
        )
        complete = self.fwh.observer_times <= self.last_time + distances.min() / self.section.c0
        if complete.sum() < 8:
            raise ConfigError(
                f"acoustics: the run stopped at t = {self.last_time:.4g}, before the observer "
                "window had 8 complete samples; run longer or lower acoustics.duration"
            )
        signals = self.accumulator.finish()
        self.exchange.free()

        def results() -> dict:
            if self.section.write_surface:
                self.write_surface()
            self._series.close()
            self._series = None
            trimmed = type(signals)(
                signals.times[complete], signals.thickness[:, complete],
                signals.loading[:, complete],
            )
            oaspl = write_results(self.folder, self.names, trimmed, self.arc_angles)
            return {
                "observers": dict(zip(self.names, map(float, oaspl), strict=True)),
                "window": [float(trimmed.times[0]), float(trimmed.times[-1])],
                "samples": self.samples,
            }

        return agreement.on_root(self.decomposition.comm, results)
