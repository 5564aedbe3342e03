"""The visualisation observer: ``[insitu]`` pipelines (in situ and in transit) and the monitor."""

from __future__ import annotations

from tachyflow.observers import Observer, register
from tachyflow.solvers.base import PENCIL_FIELDS


@register
class Visualisation(Observer):
    """Runs :class:`~tachyflow.insitu.adaptor.VisualisationAdaptor` after every step (it
    decides which pipelines are due) when the case has ``[insitu]`` pipelines or a monitor."""

    name = "visualisation"
    needs = frozenset({PENCIL_FIELDS})
    every = 1

    def __init__(self, section):
        self.section = section
        self._adaptor = None
        self._summary = None

    @classmethod
    def from_case(cls, config, options):
        section = config.insitu
        if not section.pipeline and not section.monitor:
            return None
        cls.require_needs(config, "[insitu]")
        return cls(section)

    def start(self, run) -> None:
        from tachyflow.insitu.adaptor import VisualisationAdaptor

        self._adaptor = VisualisationAdaptor(self.section, run.solver, run.output, run.history)

    def observe(self, run) -> None:
        metrics = {
            "step": run.solver.steps,
            "time": run.solver.time,
            "dt": run.dt,
            "cfl": run.cfl,
            "time_per_step": run.step_seconds,
        }
        if run.history:
            metrics["kinetic_energy"] = run.history[-1]["kinetic_energy"]
        self._adaptor.after_step(metrics)

    def finish(self, run) -> None:
        self._adaptor.close()
        self._summary = self._adaptor.summary()

    def summary(self) -> dict | None:
        return None if self._summary is None else {"visualisation": self._summary}
