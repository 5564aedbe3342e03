"""The spectra observer: the energy spectrum E(k) of decaying isotropic turbulence at the
stations of ``[isotropic]``, beside the measured spectra (Comte-Bellot & Corrsin's
grid turbulence for the built-in ``isotropic-decay`` case), in ``spectra.csv``,
``spectra.json`` and ``images/spectra.png``.

The spectrum is that of the velocity components at their own staggered points (each
transformed on its own grid, :class:`~tachyflow.solvers.pencil.spectrum.BoxSpectrum`,
each rank its own piece; averaging them to the cell centres would damp E(k) by
``cos²(k Δ/2)`` per direction, to nothing at the Nyquist wavenumber). A station's time falls
between two steps: the spectra of the steps either side are interpolated linearly in time
(the one after alone where the step before was not within reach). Each later station is
compared over the wavenumbers both resolve, from the table's first one to the grid's
Nyquist wavenumber: the resolved energy there against the table's (trapezoidal rule in
k), and the largest relative difference of E(k).
"""

from __future__ import annotations

import json

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.observers import Observer, ObserverState, register
from tachyflow.solvers.base import CARTESIAN_GRID, PENCIL_FIELDS


@register
class Spectra(Observer):
    """E(k) at ``[isotropic] times`` (every step it checks whether a station is within
    a step; collective when it transforms). The run ends once the last station's spectrum
    is taken (as a settled run does)."""

    name = "spectra"
    every = 1
    needs = frozenset({PENCIL_FIELDS, CARTESIAN_GRID})

    def __init__(self, config):
        from tachyflow.solvers.pencil.spectrum import reference_spectra

        section = config.isotropic
        self.stations, self.times = section.stations, section.times
        self.reference_k, self.reference = reference_spectra(config)
        self.lengths = config.grid.lengths
        self.box = None
        self.spectra: dict[str, np.ndarray] = {}  # station -> E at box.wavenumbers
        self._before: tuple[float, np.ndarray] | None = None
        self.comparison: dict | None = None

    @classmethod
    def from_case(cls, config, options):
        if not (cls.applies(config) and config.isotropic.spectrum):
            return None
        return cls(config)

    def _energy(self, solver) -> np.ndarray:
        if self.box is None:
            from tachyflow.solvers.pencil.spectrum import BoxSpectrum

            self.box = BoxSpectrum(solver.decomposition, self.lengths)
        return self.box.energy([solver.halo.interior(field)
                                for field in solver.velocity_arrays()])

    def _next(self) -> int | None:
        """The index of the first station not yet sampled."""
        for index, station in enumerate(self.stations):
            if station not in self.spectra:
                return index
        return None

    def start(self, run) -> None:
        self.observe(run)

    def observe(self, run) -> None:
        index = self._next()
        if index is None:
            return
        solver, target = run.solver, self.times[index]
        now = solver.time
        if now >= target:
            energy = self._energy(solver)
            if self._before is not None and now > self._before[0]:
                then, earlier = self._before
                weight = (target - then) / (now - then)
                energy = (1.0 - weight) * earlier + weight * energy
            self.spectra[self.stations[index]] = energy
            self._before = None
            if self._next() is None:  # nothing left to measure: the run is done
                run.settled = f"the spectrum of the last station ({self.stations[-1]}) taken"
            else:
                self.observe(run)  # a later station may be due at the same step
        elif now + 1.5 * (run.dt or 0.0) >= target:
            self._before = (now, self._energy(solver))

    def checkpoint_state(self, run) -> ObserverState:
        """The spectra of the stations sampled so far (equal on every rank)."""
        return ObserverState(replicated={f"E{station}": values
                                         for station, values in self.spectra.items()})

    def restore_state(self, run, state: ObserverState) -> None:
        self.spectra = {station: np.asarray(state.replicated[f"E{station}"])
                        for station in self.stations if f"E{station}" in state.replicated}

    def finish(self, run) -> None:
        self.observe(run)
        if self.box is None:
            return
        self.comparison = self._compare()
        if run.root:
            self._write(run)

    def _compare(self) -> dict:
        """Per later station: the resolved energy over the table's range up to the grid's
        Nyquist wavenumber against the table's, and the largest relative difference."""
        from tachyflow.numerics.spectra import log_interpolated

        k = self.box.wavenumbers
        compared = {}
        for station, computed in self.spectra.items():
            table = self.reference[station]
            measured = np.isfinite(table)
            kt, et = self.reference_k[measured], table[measured]
            shared = (k >= kt[0]) & (k <= min(kt[-1], k[-1]))
            if shared.sum() < 2:
                continue
            expected = log_interpolated(kt, et, k[shared])
            compared[station] = {
                "time": self.times[self.stations.index(station)],
                "wavenumbers": [float(k[shared][0]), float(k[shared][-1])],
                "energy_ratio": float(np.trapezoid(computed[shared], k[shared])
                                      / np.trapezoid(expected, k[shared])),
                "largest_difference": float(np.max(np.abs(computed[shared] / expected - 1))),
            }
        return compared

    def _write(self, run) -> None:
        k = self.box.wavenumbers
        header = ["k", *(f"E{station}" for station in self.spectra)]
        table = np.column_stack([k, *self.spectra.values()])
        with replacing(run.output / "spectra.csv") as path:
            np.savetxt(path, table, delimiter=",", header=",".join(header), comments="")
        with replacing(run.output / "spectra.json") as path:
            path.write_text(json.dumps(self.comparison, indent=2) + "\n")
        _plot(run.output / "images" / "spectra.png", k, self.spectra, self.reference_k,
              self.reference, run.config.case.name)

    def summary(self) -> dict | None:
        return {"spectra": self.comparison} if self.comparison else None


def _plot(path, k, spectra, reference_k, reference, title) -> None:
    """E(k) of each station (lines) beside the table's (markers)."""
    from tachyflow.io.figures import new_subplots, save_figure

    figure, axes = new_subplots(1, 1, figsize=(6.4, 4.8))
    for index, (station, values) in enumerate(spectra.items()):
        colour = f"C{index}"
        axes.loglog(k[1:], values[1:], "-", color=colour, label=f"tachyflow, station {station}")
        measured = np.isfinite(reference[station])
        axes.loglog(reference_k[measured], reference[station][measured], "o", color=colour,
                    ms=4, mfc="none", label=f"measured, station {station}")
    axes.set_xlabel("k")
    axes.set_ylabel("E(k)")
    axes.set_title(title)
    axes.legend(fontsize=8)
    save_figure(figure, path)
