"""The bodies observer: the loads of the fluid on each immersed body, ``forces.csv`` and
``images/forces.png``."""

from __future__ import annotations

import csv

import numpy as np

from tachyflow.io.files import AppendedTable
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import IMMERSED_BODIES, ROTOR

LOADS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")


@register
class BodyLoads(Observer):
    """Records the force and moment (about the origin) of the fluid on every
    ``[[immersed.body]]`` every ``[immersed] forces_every`` steps and after the last step:
    a row of ``forces.csv`` (``step``, ``time``, then ``NAME_Fx`` ... ``NAME_Mz`` per body,
    averaged over the step), and at the end a plot of their histories. A case with a fan
    has :class:`~tachyflow.observers.fan.FanPerformance` instead, which adds the fan's
    columns to the same rows."""

    name = "bodies"
    needs = frozenset({IMMERSED_BODIES})
    extra_columns: tuple[str, ...] = ()

    def __init__(self, config):
        self.every = config.immersed.forces_every
        self.names = tuple(body.name for body in config.immersed.body)
        self.columns = ["step", "time", *self.extra_columns]
        self.columns += [f"{name}_{load}" for name in self.names for load in LOADS]
        self._table = None
        self._last = None

    @classmethod
    def from_case(cls, config, options):
        # A rotor's loads come with its performance (the fan observer, a subclass).
        if not cls.applies(config) or ROTOR in config.provides:
            return None
        return cls(config)

    def extra_values(self, run, loads: np.ndarray) -> dict:
        """Values of ``extra_columns`` for a row (collective)."""
        return {}

    def start(self, run) -> None:
        if run.root:
            self._table = AppendedTable(
                run.output / "forces.csv", self.columns, run.restarted, run.first_step
            )

    def observe(self, run) -> None:
        solver = run.solver
        loads = np.asarray(solver.body_loads)  # equal on every rank
        self._last = {"step": solver.steps, "time": solver.time}
        self._last.update(self.extra_values(run, loads))
        per_body = self.columns[2 + len(self.extra_columns) :]
        self._last.update(zip(per_body, (float(value) for value in loads.ravel()), strict=True))
        if self._table is not None:
            self._table.append(self._last)

    def finish(self, run) -> None:
        # The last step's row, unless it is written already, or this process took no step
        # (a restart from the last checkpoint: its loads were those of the row there).
        stepped = run.solver.steps > run.first_step
        if stepped and (self._last is None or self._last["step"] != run.solver.steps):
            self.observe(run)
        if self._table is None:
            return
        self._table = AppendedTable.closed(self._table)
        self._plot(run)

    def close(self, run) -> None:
        self._table = AppendedTable.closed(self._table)

    def _rows(self, run) -> list[dict]:
        with (run.output / "forces.csv").open(newline="") as table:
            return list(csv.DictReader(table))

    def _plot(self, run) -> None:
        from tachyflow.io.figures import new_subplots, save_figure

        rows = self._rows(run)
        if len(rows) < 2:
            return
        time = np.array([float(row["time"]) for row in rows])
        figure, axes = new_subplots(2, 1, figsize=(8, 6), sharex=True)
        for name in self.names:
            for axis, loads in zip(axes, (LOADS[:3], LOADS[3:]), strict=True):
                for load in loads:
                    values = [float(row[f"{name}_{load}"]) for row in rows]
                    axis.plot(time, values, label=f"{name} {load}")
        axes[0].set_ylabel("force on the body")
        axes[1].set_ylabel("moment about the origin")
        axes[1].set_xlabel("time")
        for axis in axes:
            axis.legend(fontsize="small", ncol=3)
            axis.grid(alpha=0.3)
        (run.output / "images").mkdir(exist_ok=True)
        save_figure(figure, run.output / "images" / "forces.png")

    def summary(self) -> dict | None:
        return {"body_loads": self._last}
