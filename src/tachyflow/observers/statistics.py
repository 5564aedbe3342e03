"""The statistics observer: a row of ``stats.csv`` and a line of ``log.txt`` per record."""

from __future__ import annotations

import csv
import math

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
        self._file = None
        self._writer = None
        self._recorded = None  # the step of the last record, kept from before a restart too

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.statistics_every)

    def start(self, run) -> None:
        self._columns = run.solver.statistics_columns
        if not run.root:
            return
        path = run.output / "stats.csv"
        kept = []
        if run.restarted and path.is_file():
            with path.open(newline="") as existing:
                rows = csv.DictReader(existing)
                kept = [row for row in rows if int(row["step"]) <= run.first_step]
        self._file = path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=self._columns, extrasaction="ignore")
        self._writer.writeheader()
        self._writer.writerows(kept)
        self._file.flush()
        self._recorded = int(kept[-1]["step"]) if kept else None

    def observe(self, run) -> None:
        statistics = run.solver.statistics()
        statistics.update(dt=run.dt, cfl=run.cfl)
        statistics.setdefault("wall_shear", math.nan)
        run.history.append(statistics)
        self._recorded = statistics["step"]
        if self._writer is not None:
            self._writer.writerow(statistics)
            self._file.flush()
        values = " ".join(
            f"{name}={statistics[name]:.6g}"
            for name in self._columns[2:]
            if isinstance(statistics.get(name), int | float)
        )
        run.log(f"step {statistics['step']} t={statistics['time']:.6g} {values}")

    def finish(self, run) -> None:
        if self._recorded != run.solver.steps:
            self.observe(run)
        if self._file is not None:
            self._file.close()
            self._file = self._writer = None
