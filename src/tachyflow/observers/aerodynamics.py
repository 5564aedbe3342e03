"""The aerodynamics observer of a solver with walls and force coefficients (the
``compressible`` solver): ``convergence.csv``, ``summary.json`` and ``surface.csv``.

It turns itself on for solvers that offer ``aerodynamic_summary()`` and ``wall_surface()``
(collective) besides the :class:`~tachyflow.solvers.base.Solver` interface; a case tunes
its cadence with ``[observers.aerodynamics] every = N`` (default 1: every iteration).
"""

from __future__ import annotations

import csv
import json

import numpy as np

from tachyflow.io.files import AppendedTable, replacing
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import WALL_SURFACES

RESIDUALS = ("density_residual", "residual_rhou", "residual_rhov", "residual_rhoE",
             "residual_rho_nt")
COEFFICIENTS = ("CL", "CD", "CM", "CL_p", "CL_f", "CD_p", "CD_f", "CM_p", "CM_f")


@register
class Aerodynamics(Observer):
    """Writes a row of ``convergence.csv`` (``iteration``, the residuals relative to the
    first iteration, ``CL``, ``CD``, ``CM`` and their pressure and friction parts) every
    ``every`` iterations, and at the end ``summary.json`` (coefficients, iterations,
    ``converged``, conditions) and ``surface.csv`` (``x/c``, ``y/c``, ``Cp``, ``Cf`` per
    wall face). Collective: every rank calls the solver's reductions and gathers."""

    name = "aerodynamics"
    needs = frozenset({WALL_SURFACES})
    columns = ("iteration", *RESIDUALS, *COEFFICIENTS)

    def __init__(self, every: int = 1):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}")
        self.every = every
        self._table = None
        self._recorded = None

    @classmethod
    def from_case(cls, config, options):
        if not cls.applies(config):
            return None
        return super().from_case(config, options or {})

    def start(self, run) -> None:
        if run.root:
            self._table = AppendedTable(
                run.output / "convergence.csv",
                self.columns,
                run.restarted,
                run.first_step,
                step_column="iteration",
            )

    def observe(self, run) -> None:
        statistics = run.solver.statistics()
        self._recorded = statistics["step"]
        if self._table is not None:
            self._table.append({"iteration": statistics["step"], **statistics})

    def finish(self, run) -> None:
        if self._recorded != run.solver.steps:
            self.observe(run)
        summary = run.solver.aerodynamic_summary()
        surface = run.solver.wall_surface()
        if self._table is not None:
            self._table.close()
            self._table = None
        if not run.root:
            return
        with replacing(run.output / "summary.json") as temporary:
            temporary.write_text(json.dumps(summary, indent=2, default=float) + "\n")
        with replacing(run.output / "surface.csv") as temporary:
            with temporary.open("w", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(list(surface))
                writer.writerows(np.column_stack(list(surface.values())).tolist())
        run.log(
            f"{'converged' if summary['converged'] else 'not converged'} after "
            f"{summary['iterations']} iterations: CL={summary['CL']:.6g} CD={summary['CD']:.6g} "
            f"CM={summary['CM']:.6g}"
        )

    def close(self, run) -> None:
        if self._table is not None:
            self._table.close()
            self._table = None
