"""The acoustics observer: a permeable FW-H surface sampled as the run goes (``[acoustics]``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.observers import Observer, ObserverState, register
from tachyflow.solvers.base import CARTESIAN_GRID, PENCIL_FIELDS, ROTOR


@register
class Acoustics(Observer):
    """Samples the ``[acoustics]`` surface from ``start_step`` (the start by default) every
    ``every`` steps, and at the end predicts the signals and spectra at the observers: a
    permeable surface on a Cartesian grid
    (:class:`~tachyflow.acoustics.in_run.InRunAcoustics`), or a fan's rotating blades
    (``surface = "blades"``, :class:`~tachyflow.acoustics.rotor.RotorNoise`)."""

    name = "acoustics"
    needs = frozenset({PENCIL_FIELDS})

    def __init__(self, config):
        self.config = config
        self.every = config.acoustics.every
        self._acoustics = None
        self._summary = None
        self._record = None  # the record a checkpoint kept, until start() goes on with it
        self._last_step = -1  # the step of the last sample

    @classmethod
    def from_case(cls, config, options):
        surface = config.acoustics.surface
        if surface == "none":
            return None
        # The blades of a rotor, or a permeable surface sampled from a Cartesian grid.
        extra = frozenset({ROTOR if surface == "blades" else CARTESIAN_GRID})
        cls.require_needs(config, f"[acoustics] surface = {surface!r}", extra)
        return cls(config)

    def due(self, step: int) -> bool:
        return step >= self.config.acoustics.start_step and super().due(step)

    def checkpoint_state(self, run) -> ObserverState | None:
        """The record so far (the signals' sums, each panel's last arrivals and held steps,
        the observer-time window), so that a restarted run hears what it would have heard
        without stopping; rank 0's arrays, the only ones written."""
        if self._acoustics is None:
            return None
        record = self._acoustics.checkpoint_state() or {}
        record["last_step"] = np.array(self._last_step)
        return ObserverState(replicated=record)

    def restore_state(self, run, state: ObserverState) -> None:
        self._record = state.replicated

    def start(self, run) -> None:
        steps, record, self._record = run.solver.steps, self._record, None
        if record is not None:
            self._begin(run, record)
            # The checkpoints observe a step before this observer samples it.
            if self.due(steps) and self._last_step < steps:
                self._sample(run)
        elif steps >= self.config.acoustics.start_step:
            self._begin(run)

    def observe(self, run) -> None:
        if self._acoustics is None:
            self._begin(run)
        else:
            self._sample(run)

    def _sample(self, run) -> None:
        self._acoustics.sample()
        self._last_step = run.solver.steps

    def _begin(self, run, record: dict | None = None) -> None:
        """Start the record here (the prediction object and its first sample), or go on
        with a ``record`` a checkpoint kept."""
        section = self.config.acoustics
        remaining = run.first_step + run.steps_to_run - run.solver.steps
        duration = section.duration or remaining * self.config.time.dt
        if section.surface == "blades":
            from tachyflow.acoustics.rotor import RotorNoise

            rotor = run.solver.rotor()
            self._acoustics = RotorNoise(
                section, run.solver, run.solver.bodies[rotor.body], rotor.blades, run.output,
                duration, record,
            )
        else:
            from tachyflow.acoustics.in_run import InRunAcoustics

            source = Path(self.config.source)
            base = source.parent if source.is_file() else "."
            self._acoustics = InRunAcoustics(
                section, run.solver, run.output, duration, base, record
            )
        if record is None:
            self._sample(run)
        else:
            self._last_step = int(record["last_step"])

    def finish(self, run) -> None:
        if self._acoustics is None:
            # A run shorter than the wait for the record: it ends normally, saying so.
            note = (
                f"acoustics: no record made: the run ended at step {run.solver.steps}, "
                f"before acoustics.start_step = {self.config.acoustics.start_step}"
            )
            run.log(note)
            if run.root:
                print(note, flush=True)
            return
        self._summary = self._acoustics.finish()
        for name, level in (self._summary or {}).get("observers", {}).items():
            run.log(f"acoustics: {name} OASPL {level:.1f} dB")

    def summary(self) -> dict | None:
        return {"acoustics": self._summary}
