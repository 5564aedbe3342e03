"""The ``pressure`` solver of case files: the unstructured pressure equation behind the one
solver interface (Jeon & Choi, "Performance Analysis of the Parallel CUPID Code in
Distributed Memory System Based Ethernet and Infiniband Network").

A steady problem: each step of a run is one Krylov solve of ``-∇·∇p + shift p = source``
(p = 0 on the boundary) from the previous solution, so a case with ``[time] steps = 1``
solves once; the statistics are the iterations, the residual and the time split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.parallel import agreement
from tachyflow.solvers.base import Solver, register
from tachyflow.solvers.unstructured.options import PRESSURE
from tachyflow.solvers.unstructured.solver import UnstructuredPressureSolver


def load_mesh(text: str, base=".") -> object:
    """A mesh from a file (relative to ``base``), or a generated box ``box:CELLS`` /
    ``tet:CELLS``; ConfigError naming ``text`` when it cannot be had."""
    from tachyflow.io.mesh import read_mesh
    from tachyflow.io.mesh_generators import box_mesh

    kind, _, count = text.partition(":")
    try:
        if kind in ("box", "tet") and count:
            return box_mesh(int(count), "hex" if kind == "box" else "tet")
        path = Path(text)
        return read_mesh(path if path.is_absolute() else Path(base) / path)
    except ValueError as error:  # a count that is not a whole number of boxes, a bad mesh
        raise ConfigError(f"mesh {text!r}: {error}") from None


@register("pressure")
class PressureEquation(Solver):
    """``[case] solver = "pressure"``: :class:`UnstructuredPressureSolver` driven as a run.

    Notes
    -----
    :meth:`from_case`, :meth:`step`, :meth:`statistics` and :meth:`gather_solution`
    are collective.
    """

    fields = ("p",)
    case_options = PRESSURE
    statistics_columns = (
        "step", "time", "dt", "cfl", "iterations", "residual", "seconds", "per_iteration",
    )

    def __init__(self, solver: UnstructuredPressureSolver, section, mesh, mesh_name: str):
        self.solver = solver
        self.section = section
        self.decomposition = solver.decomposition
        self.grid = None
        self.mesh = mesh  # whole mesh on rank 0 (None elsewhere): written with the solution
        self.mesh_name = mesh_name
        self.steps = 0
        self.time = 0.0
        self.solution = np.zeros(self.decomposition.owned)
        self.summary = None

    @classmethod
    def from_case(cls, config, comm, planning: str = "measure") -> PressureEquation:
        source = Path(config.source)
        base = source.parent if source.is_file() else Path(".")
        mesh = agreement.on_root(comm, lambda: load_mesh(config.mesh.file, base))
        section = config.pressure
        solver = UnstructuredPressureSolver(
            comm, mesh, source=section.source, boundary_value=0.0,
            partition=config.mesh.partition, diagonal_shift=section.shift, halo=section.halo,
            reduction=section.reduction,
        )
        return cls(solver, section, mesh, config.mesh.file)

    def step(self, dt: float) -> None:
        """One solve to ``[pressure] tol``."""
        self.solution, self.summary = self.solver.solve(
            self.section.method, rtol=self.section.tol, max_iterations=self.section.max_iterations
        )
        self.steps += 1
        self.time += dt

    def stable_time_step(self, cfl: float) -> float:
        return 1.0  # pseudo time: one solve per step

    def cfl_number(self, dt: float) -> float:
        return 0.0

    def cell_field(self, name: str) -> np.ndarray:
        if name != "p":
            raise ValueError(f"field must be 'p', got {name!r}")
        return self.solution[: self.decomposition.owned]

    def statistics(self) -> dict:
        summary = self.summary
        return {
            "step": self.steps,
            "time": self.time,
            "iterations": summary.iterations if summary else 0,
            "residual": summary.residual if summary else float("nan"),
            "seconds": summary.seconds if summary else 0.0,
            "per_iteration": summary.per_iteration if summary else 0.0,
        }

    def gather_solution(self):
        """The whole solution on rank 0 (None elsewhere)."""
        return self.decomposition.gather(self.cell_field("p"))

    def layout(self) -> dict:
        """Cells of the mesh."""
        return {"cells": self.decomposition.global_cells}

    def phase_seconds(self) -> dict[str, float]:
        return dict(self.summary.timings) if self.summary else {}

    def free(self) -> None:
        self.solver.free()
