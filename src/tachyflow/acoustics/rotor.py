"""FW-H noise of a fan's rotating blades inside a flow run: ``[acoustics] surface =
"blades"`` with a ``fan-rotor`` body on the cylindrical solver.

The blades' triangles are the panels of a solid (impermeable) FW-H surface. The flow is
computed in the frame turning with the rotor, where the blades stand still; the listener
is in the inertial frame, where the panels turn at ``Ω`` about x: at time ``t`` a panel
at ``X`` in the frame is at ``R(Ω t) X`` with velocity ``Ω e_x × R(Ω t) X``. The
computed sector's blades stand for all of them: the rotor's other sectors are copies
turned by ``2π k / sectors`` (the flow is sector-periodic), so the whole rotor radiates.

The pressure on each panel is sampled one and a half local cell widths out along its
normal (inside a body the pressure of an immersed-boundary method means nothing), from
the ranks that own it, by the one-sided noise-source exchange (Kwon, Park & Choi's Types
A/B/C: ``[acoustics] exchange``): only the pressure stencils' values, or the loads they
give (``source-put``), travel. The static pressure is the solver's reduced pressure plus
``ρ Ω² r² / 2`` (the centrifugal part it absorbs), less the inflow plane's mean (the
ambient). Each rank integrates its contiguous share of the panels, all copies, with
Farassat's formulation 1A; the signals are summed over the ranks at the end.
"""

from __future__ import annotations

import json
import time

import numpy as np

from tachyflow.acoustics.fwh import FWHSolver
from tachyflow.acoustics.in_run import observer_times, observers_of
from tachyflow.acoustics.results import write_results
from tachyflow.acoustics.sources import SurfacePressureTerms
from tachyflow.acoustics.spectra import spectrum
from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing
from tachyflow.parallel import agreement
from tachyflow.parallel.noise_exchange import NoiseSourceExchange
from tachyflow.parallel.pieces import panel_share


def turned(vectors: np.ndarray, angle: float) -> np.ndarray:
    """``vectors`` (..., 3) turned by ``angle`` about x."""
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty_like(vectors)
    out[..., 0] = vectors[..., 0]
    out[..., 1] = cos * vectors[..., 1] - sin * vectors[..., 2]
    out[..., 2] = sin * vectors[..., 1] + cos * vectors[..., 2]
    return out


class RotorNoise:
    """Samples the blades of a rotor from the running flow and integrates their noise.

    Parameters
    ----------
    section : AcousticsSection
        ``[acoustics]`` with ``surface = "blades"`` (observers, c0, rho0, exchange, sync,
        samples).
    solver : CylindricalSolver
        The flow, with the rotor among its immersed bodies.
    blades : TriangulatedBody
        The rotor's blades in the computed sector (in the frame).
    blade_count : int
        Blades of the whole rotor (for the blade-passing frequency).
    output : path
        Results go to ``output/acoustics``.
    duration : float
        Simulated time the record will cover from now.
    record : dict, optional
        What :meth:`checkpoint_state` gave before a restart: the record goes on from it
        (its start and duration, not ``duration``).

    Notes
    -----
    Construction, :meth:`sample` and :meth:`finish` are collective over the solver's
    decomposition.
    """

    def __init__(
        self, section, solver, blades, blade_count: int, output, duration: float, record=None
    ):
        from pathlib import Path

        self.section, self.solver = section, solver
        grid, decomposition = solver.grid, solver.decomposition
        self.folder = Path(output) / "acoustics"
        self.rotation = solver.rotor().rotation
        self.copies = grid.sectors
        self.passing = blade_count * abs(self.rotation) / (2 * np.pi)
        mesh = blades.mesh
        centres, normals = mesh.triangles_center, mesh.face_normals
        count = len(centres)
        radii = np.hypot(centres[:, 1], centres[:, 2])
        widths = np.interp(radii, grid.centres_y, grid.widths_y)
        lengths = np.interp(centres[:, 0], grid.centres_x, grid.widths_x)
        size = np.cbrt(lengths * widths * radii * grid.spacing_z)
        samples = centres + 1.5 * size[:, None] * normals
        polar = np.stack(
            [
                np.clip(samples[:, 0], grid.centres_x[0], grid.centres_x[-1]),
                np.clip(np.hypot(samples[:, 1], samples[:, 2]), grid.centres_y[0],
                        grid.centres_y[-1]),
                np.mod(np.arctan2(samples[:, 2], samples[:, 1]), grid.lengths[2]),
            ],
            axis=1,
        )
        rank, ranks = decomposition.rank, decomposition.size
        destination = np.empty(count, dtype=np.int64)
        for owner in range(ranks):
            destination[panel_share(count, owner, ranks)] = owner
        self.exchange = NoiseSourceExchange(
            decomposition, grid, solver.halo, polar, normals, destination,
            method=section.exchange, sync=section.sync, sources=SurfacePressureTerms(),
        )
        self.share = share = panel_share(count, rank, ranks)
        self.centres, self.normals = centres[share], normals[share]
        self.centrifugal = 0.5 * self.rotation**2 * radii[share] ** 2
        self.names, observers, self.arc_angles = observers_of(section)
        # Distances bounds over a turn: the panels sweep circles about x.
        axial = observers[:, None, 0] - centres[None, :, 0]
        off_axis = np.hypot(observers[:, 1], observers[:, 2])[:, None]
        self._nearest = np.hypot(axial, off_axis - radii[None]).min()
        farthest = np.hypot(axial, off_axis + radii[None]).max()
        self.start, self.duration = (solver.time, duration) if record is None else (
            float(value) for value in record["window"])
        times = observer_times(section, self.start, self.duration, self._nearest, farthest)
        self.fwh = FWHSolver(
            observers, times, c0=section.c0, rho0=section.rho0, permeable=False,
            comm=decomposition.comm, time_order=section.time_order,
            interpolation=section.interpolation,
        )
        areas = mesh.area_faces[share]
        self.accumulator = self.fwh.accumulator(np.tile(areas, self.copies))
        self.last_time = self.start
        self.samples = 0
        if record is not None:
            self.accumulator.restore_state(record, share, self.copies)
            self.last_time, samples = (float(value) for value in record["progress"])
            self.samples = int(samples)
        # The cost split of the paper's table: the exchange's phases, then the FW-H sums.
        self.seconds = dict.fromkeys(("pack", "communication", "unpack", "source"), 0.0)
        self.seconds["integration"] = 0.0

    def sample(self) -> None:
        """Sample the blades' pressure and integrate one source step (collective)."""
        solver = self.solver
        ambient = solver.section_pressures([solver.grid.centres_x[0]])[0]
        terms = self.exchange.exchange(*solver.staggered_fields())
        for phase, seconds in self.exchange.timings.items():
            self.seconds[phase] += seconds
        began = time.perf_counter()
        load = terms[:, 1:] + (self.centrifugal - ambient)[:, None] * self.normals
        positions, velocities, fluxes, loads = [], [], [], []
        for copy in range(self.copies):
            angle = self.rotation * solver.time + 2 * np.pi * copy / self.copies
            position = turned(self.centres, angle)
            normal = turned(self.normals, angle)
            velocity = np.cross([self.rotation, 0.0, 0.0], position)
            positions.append(position)
            velocities.append(velocity)
            fluxes.append(np.einsum("pi,pi->p", velocity, normal))
            loads.append(turned(load, angle))
        self.accumulator.add(
            [solver.time],
            np.concatenate(positions)[None],
            np.concatenate(velocities)[None],
            np.concatenate(fluxes)[None],
            np.concatenate(loads)[None],
        )
        self.seconds["integration"] += time.perf_counter() - began
        self.last_time = solver.time
        self.samples += 1

    def checkpoint_state(self) -> dict[str, np.ndarray] | None:
        """The record so far, for ``record`` after a restart, on rank 0 (None elsewhere)
        (collective)."""
        record = self.accumulator.checkpoint_state(self.share, self.copies)
        if record is not None:
            record["window"] = np.array([self.start, self.duration])
            record["progress"] = np.array([self.last_time, self.samples])
        return record

    def finish(self) -> dict | None:
        """Sum the signals over the ranks and write them (collective; rank 0 writes and
        returns the OASPL and dominant frequency per observer, the window, the
        blade-passing frequency and the cost per phase, also as ``summary.json``)."""
        complete = self.fwh.observer_times <= self.last_time + self._nearest / self.section.c0
        if complete.sum() < 8:
            raise ConfigError(
                f"acoustics: the run stopped at t = {self.last_time:.4g}, before the observer "
                "window had 8 complete samples; run longer or lower acoustics.duration"
            )
        signals = self.accumulator.finish()
        self.exchange.free()

        def results() -> dict:
            trimmed = type(signals)(
                signals.times[complete], signals.thickness[:, complete],
                signals.loading[:, complete],
            )
            oaspl = write_results(self.folder, self.names, trimmed, self.arc_angles)
            rate = 1.0 / (trimmed.times[1] - trimmed.times[0])
            summary = {
                "observers": dict(zip(self.names, map(float, oaspl), strict=True)),
                "dominant_frequency": {
                    name: dominant_frequency(signal, rate)
                    for name, signal in zip(self.names, trimmed.pressure, strict=True)
                },
                "blade_passing_frequency": self.passing,
                "window": [float(trimmed.times[0]), float(trimmed.times[-1])],
                "samples": self.samples,
                "seconds_rank0": dict(self.seconds),
            }
            with replacing(self.folder / "summary.json") as path:
                path.write_text(json.dumps(summary, indent=2) + "\n")
            return summary

        # Rank 0 writes; a failure (a full disk) ends every rank together.
        return agreement.on_root(self.solver.decomposition.comm, results)


def dominant_frequency(pressure: np.ndarray, rate: float) -> float:
    """The frequency of the largest peak of a signal's periodogram (one Hann window over
    the whole record: the finest resolution), 0 excluded."""
    whole = spectrum(pressure, rate, segment=len(pressure))
    return float(whole.frequencies[1 + np.argmax(whole.psd[1:])])
