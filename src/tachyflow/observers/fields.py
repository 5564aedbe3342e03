"""The field observer: cell-centred fields as an ADIOS2 BP5 series (and VTK XML files)."""

from __future__ import annotations

from tachyflow.io.fields import FieldWriter
from tachyflow.io.vtk_files import VTKFieldWriter
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import PENCIL_FIELDS


@register
class Fields(Observer):
    """Appends the solver's cell-centred fields to ``fields.bp`` (and, with ``[output]
    vtk_fields``, to ``fields.pvd`` as one ``.pvtr`` of per-rank pieces) every ``[output]
    fields_every`` steps and after the last step, each rank writing or sending only its own
    piece. A restarted run keeps the steps up to its checkpoint's and appends."""

    name = "fields"
    needs = frozenset({PENCIL_FIELDS})

    def __init__(self, every: int, vtk: bool):
        self.every = every
        self.vtk = vtk
        self._series = None  # FieldWriter, opened at the first write
        self._vtk_files = None
        self._last = None

    @classmethod
    def from_case(cls, config, options):
        every = config.output.fields_every
        if not every or not cls.applies(config):
            return None
        return cls(every, config.output.vtk_fields)

    def observe(self, run) -> None:
        solver = run.solver
        pieces = {name: solver.cell_field(name) for name in solver.fields}
        self._last = solver.steps
        if self._series is None:
            layout, keep = solver.piece_layout(), run.first_step if run.restarted else None
            self._series = FieldWriter(run.comm, run.output / "fields.bp", solver.grid, layout,
                                       keep)
            if self.vtk:
                self._vtk_files = VTKFieldWriter(run.comm, run.output, solver.grid, layout, keep)
        self._series.write(solver.steps, solver.time, pieces)
        if self._vtk_files is not None:
            self._vtk_files.write(solver.steps, solver.time, pieces)

    def finish(self, run) -> None:
        if self._last != run.solver.steps:  # the final state, unless the loop just wrote it
            self.observe(run)
        self.close(run)

    def close(self, run) -> None:
        if self._series is not None:
            self._series.close()
            self._series = self._vtk_files = None
