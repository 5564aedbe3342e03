"""The block-field observer: the fields of a solver on a 2D curvilinear grid of blocks (the
``compressible`` solver's C- and H-grids) as VTK StructuredGrid pieces for ParaView."""

from __future__ import annotations

from tachyflow.io.vtk_files import CurvilinearFieldWriter
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import BLOCK_FIELDS


@register
class BlockFields(Observer):
    """Writes the solver's cell fields every ``[output] fields_every`` steps and after the
    last step: each rank its block as ``fields_vtk/step_XXXXXXXX/piece_RRRRR.vts`` (its
    node coordinates and cell data; the velocity also as a vector), rank 0 the step's
    ``.pvts`` and ``fields.pvd`` (open that in ParaView). No rank holds more than its own
    block. A restarted run keeps the steps up to its checkpoint's and appends."""

    name = "block-fields"
    needs = frozenset({BLOCK_FIELDS})

    def __init__(self, every: int):
        self.every = every
        self._files = None  # CurvilinearFieldWriter, made at the first write
        self._last = None

    @classmethod
    def from_case(cls, config, options):
        every = config.output.fields_every
        return cls(every) if every and cls.applies(config) else None

    def observe(self, run) -> None:
        solver = run.solver
        if self._files is None:
            keep = run.first_step if run.restarted else None
            x, y = solver.node_coordinates()
            self._files = CurvilinearFieldWriter(
                run.comm, run.output, x, y, solver.piece_layout(), keep
            )
        pieces = {name: solver.cell_field(name) for name in solver.fields}
        self._files.write(solver.steps, solver.time, pieces)
        self._last = solver.steps

    def finish(self, run) -> None:
        if self._last != run.solver.steps:  # the final state, unless the loop just wrote it
            self.observe(run)
