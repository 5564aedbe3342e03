"""The acoustics observer: a permeable FW-H surface sampled as the run goes (``[acoustics]``)."""

from __future__ import annotations

from pathlib import Path

from tachyflow.observers import Observer, register
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

    def start(self, run) -> None:
        if run.solver.steps >= self.config.acoustics.start_step:
            self._begin(run)

    def observe(self, run) -> None:
        if self._acoustics is None:
            self._begin(run)
        else:
            self._acoustics.sample()

    def _begin(self, run) -> None:
        """Start the record here: the prediction object and its first sample."""
        section = self.config.acoustics
        remaining = run.first_step + run.steps_to_run - run.solver.steps
        duration = section.duration or remaining * self.config.time.dt
        if section.surface == "blades":
            from tachyflow.acoustics.rotor import RotorNoise

            rotor = run.solver.rotor()
            self._acoustics = RotorNoise(
                section, run.solver, run.solver.bodies[rotor.body], rotor.blades, run.output,
                duration,
            )
        else:
            from tachyflow.acoustics.in_run import InRunAcoustics

            source = Path(self.config.source)
            base = source.parent if source.is_file() else "."
            self._acoustics = InRunAcoustics(section, run.solver, run.output, duration, base)
        self._acoustics.sample()

    def finish(self, run) -> None:
        if self._acoustics is None:
            raise ValueError(
                f"acoustics: the run ended at step {run.solver.steps}, before "
                f"acoustics.start_step = {self.config.acoustics.start_step}"
            )
        self._summary = self._acoustics.finish()
        for name, level in (self._summary or {}).get("observers", {}).items():
            run.log(f"acoustics: {name} OASPL {level:.1f} dB")

    def summary(self) -> dict | None:
        return {"acoustics": self._summary}
