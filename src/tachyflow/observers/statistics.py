"""The statistics observer: a row of ``stats.csv`` and a line of ``log.txt`` per record."""

from __future__ import annotations

import math

from tachyflow.io.files import AppendedTable
from tachyflow.observers import Observer, register


@register
class Statistics(Observer):
    """Records ``solver.statistics()`` every ``[output] statistics_every`` steps and after the
    last step. Rows are appended to ``stats.csv`` as they come (never rewritten), so the cost
    of a record does not grow with the run's length; after a restart the rows up to the
    checkpoint's step are kept and the run appends after them."""

    name = "statistics"

    def __init__(self, every: int):
        self.every = every
        self._table = None
        self._recorded = None  # the step of the last record, kept from before a restart too

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.statistics_every)

    def start(self, run) -> None:
        self._columns = run.solver.statistics_columns
        if not run.root:
            return
        self._table = AppendedTable(
            run.output / "stats.csv", self._columns, run.restarted, run.first_step
        )
        self._recorded = self._table.last_step

    def observe(self, run) -> None:
        statistics = run.solver.statistics()
        statistics.update(dt=run.dt, cfl=run.cfl)
        statistics.setdefault("wall_shear", math.nan)
        run.history.append(statistics)
        self._recorded = statistics["step"]
        if self._table is not None:
            self._table.append(statistics)
        values = " ".join(
            f"{name}={statistics[name]:.6g}"
            for name in self._columns[2:]
            if isinstance(statistics.get(name), int | float)
        )
        run.log(f"step {statistics['step']} t={statistics['time']:.6g} {values}")

    def finish(self, run) -> None:
        if self._recorded != run.solver.steps:
            self.observe(run)
        if self._table is not None:
            self._table.close()
            self._table = None
