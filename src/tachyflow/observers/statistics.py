"""The statistics observer: a row of ``stats.csv``, a line of ``log.txt`` and a monitor line
on the run's standard output per record."""

from __future__ import annotations

import math
import time

from tachyflow.io.files import AppendedTable
from tachyflow.observers import Observer, register
from tachyflow.parallel import agreement


@register
class Statistics(Observer):
    """Records ``solver.statistics()`` every ``[output] statistics_every`` steps and after the
    last step. Rows are appended to ``stats.csv`` as they come (never rewritten), so the cost
    of a record does not grow with the run's length; after a restart the rows up to the
    checkpoint's step are kept and the run appends after them.

    With ``[output] monitor`` (the default) rank 0 also prints each record as a line,
    flushed at once, with the run's progress and the time left: above the progress bar
    on a terminal, and as plain lines in a batch job's output (a pipe, a Slurm file)."""

    name = "statistics"

    def __init__(self, every: int, monitor: bool = True):
        self.every = every
        self.monitor = monitor
        self._table = None
        self._recorded = None  # the step of the last record, kept from before a restart too
        self._started = time.perf_counter()

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.statistics_every, config.output.monitor)

    def start(self, run) -> None:
        self._started = time.perf_counter()
        self._columns = run.solver.statistics_columns
        if run.root:
            self._table = AppendedTable(
                run.output / "stats.csv", self._columns, run.restarted, run.first_step
            )
        # Every rank's: whether the last step has its record decides a collective record
        # at the finish (on rank 0 only, a restart from the last checkpoint hung there).
        self._recorded = agreement.on_root(run.comm, lambda: self._table.last_step,
                                           share=True)

    def observe(self, run) -> None:
        statistics = run.solver.statistics()
        statistics.update(dt=run.dt, cfl=run.cfl)
        # The solver's own quantities (not the placeholder of a column it has not).
        shown = [name for name in self._columns[2:]
                 if isinstance(statistics.get(name), int | float)]
        statistics.setdefault("wall_shear", math.nan)
        run.history.append(statistics)
        self._recorded = statistics["step"]
        # Rank 0 writes; a failure (a full disk) ends every rank here, together.
        agreement.on_root(run.comm, lambda: self._table.append(statistics))
        values = " ".join([*(f"{name}={statistics[name]:.6g}" for name in shown),
                           *(f"{name}={value:.6g}" for name, value in run.monitored.items())])
        run.log(f"step {statistics['step']} t={statistics['time']:.6g} {values}")
        if self.monitor and run.root:
            print(self._monitor_line(run, statistics, values), flush=True)

    def _monitor_line(self, run, statistics: dict, values: str) -> str:
        """``step N/LAST t=... <the solver's quantities> [elapsed, ETA]``."""
        last = run.first_step + run.steps_to_run
        done = statistics["step"] - run.first_step
        elapsed = time.perf_counter() - self._started
        left = elapsed / done * (last - statistics["step"]) if done > 0 else math.nan
        return (f"step {statistics['step']}/{last} t={statistics['time']:.6g} {values} "
                f"[{elapsed:.0f} s, ETA {left:.0f} s]")

    def finish(self, run) -> None:
        if self._recorded != run.solver.steps:
            self.observe(run)
        if self._table is not None:
            self._table.close()
            self._table = None
