"""The cylinder-wake observer: drag and lift coefficients, Strouhal number and
recirculation length of the flow past a circular cylinder (the immersed-boundary
verification against body-fitted solutions), in ``wake.json``.

With the cylinder (diameter ``D``, axis along z, spanning the domain's ``Lz``) in a
uniform inflow ``U`` and ρ = 1, from the fluid's force on it (``body_loads``):

* ``Cd = 2 F_x / (U² D Lz)``, ``CL = 2 F_y / (U² D Lz)``, every step;
* over the record from ``average_from`` (a time) on, cut to whole periods of the lift
  between its first and last upward zero crossing: the mean drag, the lift amplitude
  (half its peak-to-peak), the Strouhal number ``f D / U`` from the mean period between
  crossings and from the peak of the lift's spectrum (Hann window, zero-padded, the
  peak refined by a parabola through the three largest values); a steady wake (no
  crossing) has the record's mean drag only;
* at the end, the recirculation length ``L / D``: where the streamwise velocity on the
  wake's centreline (``y`` of the cylinder's centre, interpolated linearly between the
  rows of cells either side) first turns positive behind the cylinder, from its rear
  (``x_c + D/2``), by linear interpolation between the faces either side. In unsteady
  flow this is the instantaneous bubble, recorded but not averaged.

The history starts with the run (a restart starts a new one).
"""

from __future__ import annotations

import json
import math

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing
from tachyflow.observers import Observer, ObserverState, register
from tachyflow.parallel.pieces import gather_small
from tachyflow.solvers.base import CARTESIAN_GRID, IMMERSED_BODIES
from tachyflow.solvers.pencil.bodies import shape_class


def upward_crossings(time: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Times at which ``values`` crosses zero upwards (linear interpolation)."""
    index = np.flatnonzero((values[:-1] < 0) & (values[1:] >= 0))
    fraction = -values[index] / (values[index + 1] - values[index])
    return time[index] + fraction * (time[index + 1] - time[index])


def spectral_peak(time: np.ndarray, values: np.ndarray, padding: int = 16) -> float:
    """Frequency of the largest peak of the spectrum of ``values`` (uniform ``time``;
    its mean removed, a Hann window, zero-padded ``padding`` times, the peak refined
    by a parabola through the three largest bins' log magnitudes)."""
    samples = len(values)
    spacing = (time[-1] - time[0]) / (samples - 1)
    padded = padding * samples
    magnitude = np.abs(np.fft.rfft((values - values.mean()) * np.hanning(samples), padded))
    peak = int(np.argmax(magnitude[1:-1])) + 1
    below, centre, above = np.log(magnitude[peak - 1 : peak + 2] + 1e-300)
    shift = 0.5 * (below - above) / (below - 2.0 * centre + above)
    return (peak + shift) / (padded * spacing)


def wake_statistics(
    time, drag, lift, diameter: float = 1.0, velocity: float = 1.0, steady_lift: float = 1e-6
) -> dict:
    """Mean drag, drag and lift amplitudes and Strouhal numbers of a record of the drag
    and lift coefficients (see the module's description); ``time`` need not be uniform
    (the spectrum is taken of the record resampled uniformly). A lift amplitude below
    ``steady_lift`` is a steady wake."""
    time, drag, lift = (np.asarray(values, dtype=float) for values in (time, drag, lift))
    if not (time.ndim == 1 and time.shape == drag.shape == lift.shape and len(time) >= 2):
        raise ValueError(
            f"time, drag and lift must be 1D records of one length >= 2, got shapes "
            f"{time.shape}, {drag.shape}, {lift.shape}"
        )
    crossings = upward_crossings(time, lift - lift.mean())
    if np.ptp(lift) < 2.0 * steady_lift:  # a symmetric wake: crossings of round-off
        crossings = crossings[:0]
    statistics = {"samples": len(time), "periods": max(len(crossings) - 1, 0)}
    if len(crossings) < 3:  # steady, or too short a record for a period
        statistics.update(drag_mean=float(drag.mean()), lift_mean=float(lift.mean()))
        return statistics
    inside = (time >= crossings[0]) & (time <= crossings[-1])
    window = time[inside]
    weights = np.gradient(window)  # the trapezoid rule on a non-uniform record
    period = (crossings[-1] - crossings[0]) / (len(crossings) - 1)
    uniform = np.linspace(window[0], window[-1], len(window))
    frequency = spectral_peak(uniform, np.interp(uniform, window, lift[inside]))
    statistics.update(
        drag_mean=float(np.sum(drag[inside] * weights) / np.sum(weights)),
        drag_amplitude=float(0.5 * np.ptp(drag[inside])),
        lift_mean=float(np.sum(lift[inside] * weights) / np.sum(weights)),
        lift_amplitude=float(0.5 * np.ptp(lift[inside])),
        strouhal=diameter / (period * velocity),
        strouhal_spectrum=float(frequency * diameter / velocity),
        window=[float(crossings[0]), float(crossings[-1])],
    )
    return statistics


def recirculation_length(x: np.ndarray, velocity: np.ndarray, rear: float) -> float:
    """Distance from ``rear`` to the first upward zero crossing of ``velocity(x)`` behind
    it (NaN when the velocity there never turns from negative to positive)."""
    behind = x > rear
    crossings = upward_crossings(x[behind], velocity[behind])
    return float(crossings[0] - rear) if len(crossings) else math.nan


@register
class CylinderWake(Observer):
    """Drag and lift coefficients of the immersed cylinder ``body`` every step; at the end
    ``wake.json`` with :func:`wake_statistics` from ``average_from`` on and the
    recirculation length (Cartesian incompressible solver, cylinder along z).

    Turned on by ``[observers.cylinder-wake]`` with ``body`` (the ``[[immersed.body]]``
    name) and ``average_from`` (a time). Collective: every rank keeps the coefficients
    (equal on all); the centreline is gathered to rank 0 (one line of x).
    """

    name = "cylinder-wake"
    every = 1
    needs_config = True
    needs = frozenset({CARTESIAN_GRID, IMMERSED_BODIES})

    def __init__(self, config, body: str = "cylinder", average_from: float = 0.0):
        found = [section for section in config.immersed.body if section.name == body]
        if len(found) != 1 or not shape_class(found[0].shape).circular:
            raise ConfigError(
                f"{config.source}: [observers.cylinder-wake] body must name one "
                f"[[immersed.body]] of a circular shape ('cylinder'), got {body!r}"
            )
        section = found[0]
        if not np.allclose(np.abs(section.axis), (0.0, 0.0, 1.0)) or section.hollow:
            raise ConfigError(
                f"{config.source}: [observers.cylinder-wake] needs a solid cylinder along z, "
                f"got axis {section.axis!r}, hollow = {section.hollow!r}"
            )
        if not (math.isfinite(average_from) and average_from >= 0):
            raise ConfigError(
                f"{config.source}: [observers.cylinder-wake] average_from must be a time "
                f">= 0, got {average_from!r}"
            )
        self.body = [section.name for section in config.immersed.body].index(body)
        self.centre = tuple(float(value) for value in section.centre)
        self.diameter = 2.0 * float(section.radius)
        self.velocity = float(config.grid.inflow_velocity)
        self.span = float(config.grid.lengths[2])
        self.average_from = float(average_from)
        self._history: list[tuple[float, float, float]] = []
        self.statistics: dict | None = None

    def observe(self, run) -> None:
        solver = run.solver
        scale = 2.0 / (self.velocity**2 * self.diameter * self.span)
        force = np.asarray(solver.body_loads)[self.body]
        self._history.append((solver.time, scale * force[0], scale * force[1]))

    def checkpoint_state(self, run) -> ObserverState:
        """The coefficients so far (three numbers a step, equal on every rank): a restarted
        run averages over the whole record, not only what follows the restart."""
        return ObserverState(replicated={"history": np.array(self._history).reshape(-1, 3)})

    def restore_state(self, run, state: ObserverState) -> None:
        self._history = [tuple(map(float, row)) for row in state.replicated["history"]]

    def _centreline(self, solver) -> tuple[np.ndarray, np.ndarray] | None:
        """x of the u faces and u on the wake's centreline, on rank 0 (collective)."""
        pencil = solver.decomposition.pencils["y"]
        centres = solver.grid.centres_y
        row = int(np.clip(np.searchsorted(centres, self.centre[1]), 1, len(centres) - 1))
        weight = (self.centre[1] - centres[row - 1]) / (centres[row] - centres[row - 1])
        piece = None
        if pencil.size and pencil.start[2] == 0:  # the first z plane (the flow is 2D)
            u = solver.halo.interior(solver.staggered_fields()[0])[:, :, 0]
            line = (1.0 - weight) * u[:, row - 1] + weight * u[:, row]
            piece = (pencil.start[0], line)
        pieces = gather_small(solver.decomposition.comm, piece)
        if pieces is None:
            return None
        found = sorted((piece for piece in pieces if piece is not None), key=lambda p: p[0])
        velocity = np.concatenate([line for _, line in found])
        x = solver.grid.faces_x[1 : len(velocity) + 1]  # u's faces
        return x, velocity

    def finish(self, run) -> None:
        if not self._history or self._history[-1][0] != run.solver.time:
            self.observe(run)
        centreline = self._centreline(run.solver)
        if not run.root:
            return
        record = np.array(self._history)
        kept = record[record[:, 0] >= self.average_from]
        if len(kept) < 2:
            kept = record[-2:] if len(record) >= 2 else np.repeat(record, 2, axis=0)
        statistics = wake_statistics(*kept.T, self.diameter, self.velocity)
        rear = self.centre[0] + 0.5 * self.diameter
        length = recirculation_length(*centreline, rear) / self.diameter
        statistics["recirculation_length"] = None if math.isnan(length) else length  # no bubble
        statistics.update(
            time=float(run.solver.time),
            steps=int(run.solver.steps),
            average_from=self.average_from,
            drag_last=float(record[-1, 1]),
            lift_last=float(record[-1, 2]),
        )
        self.statistics = statistics
        with replacing(run.output / "wake.json") as path:
            path.write_text(json.dumps(statistics, indent=2) + "\n")
        np.savetxt(
            run.output / "wake-coefficients.csv",
            record,
            delimiter=",",
            header="time,drag_coefficient,lift_coefficient",
            comments="",
        )

    def summary(self) -> dict | None:
        return self.statistics
