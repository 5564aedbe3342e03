"""The settled observer: ends a run once the statistics named in ``[time] stop_when`` have
settled, for steady and statistically steady runs (an airfoil's loads, a fan's Δp)."""

from __future__ import annotations

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.observers import Observer, register


def settled(values, tolerance: float) -> bool:
    """Whether a window of records has settled: their spread and the drift between the
    means of its two halves both at most ``tolerance`` times the mean's size (a constant
    passes; an oscillation or a trend does not)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 4 or not np.isfinite(values).all():
        return False
    scale = max(abs(float(values.mean())), np.finfo(float).tiny)
    half = values.size // 2
    drift = abs(float(values[half:].mean() - values[:half].mean()))
    return float(np.ptp(values)) <= tolerance * scale and drift <= tolerance * scale


@register
class Settled(Observer):
    """After each statistics record (``[output] statistics_every``), checks the last
    ``[time] stop_window`` records of each ``stop_when`` column (:func:`settled`, relative
    ``stop_tolerance``); when all have settled the run ends after this step, as at its
    last step (every observer finishes; the run's summary says so). Its decision reads the
    statistics history, equal on every rank."""

    name = "settled"

    def __init__(self, names: tuple[str, ...], window: int, tolerance: float, every: int):
        self.names, self.window, self.tolerance, self.every = names, window, tolerance, every

    @classmethod
    def from_case(cls, config, options):
        time = config.time
        if not time.stop_when:
            return None
        if not config.output.statistics_every:
            raise ConfigError(f"{config.source}: 'time.stop_when' needs statistics records: "
                              "output.statistics_every > 0")
        return cls(time.stop_when, time.stop_window, time.stop_tolerance,
                   config.output.statistics_every)

    def start(self, run) -> None:
        columns = run.solver.statistics_columns
        unknown = [name for name in self.names if name not in columns]
        if unknown:
            raise ConfigError(f"{run.config.source}: 'time.stop_when' names {unknown}, not "
                              f"columns of stats.csv ({', '.join(columns)})")

    def observe(self, run) -> None:
        recent = run.history[-self.window:]
        if len(recent) < self.window:
            return
        if all(settled([row[name] for row in recent], self.tolerance) for name in self.names):
            run.settled = (f"{', '.join(self.names)} within {self.tolerance:g} over the last "
                           f"{self.window} records")
