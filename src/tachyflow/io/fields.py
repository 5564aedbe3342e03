"""Field output as ADIOS2 BP5 series that ParaView opens directly.

One step per write, holding cell-centred ``u``, ``v``, ``w``, ``p`` (velocity averaged
from the faces), the simulated time ``TIME`` and the ``step``. Arrays are stored as
``(nz, ny, nx)`` — ADIOS2 is row-major and VTK's x runs fastest — so that readers see the
solver's x as VTK's x. Two descriptions are attached:

- Fides (``Fides_Data_Model = rectilinear``, with the face coordinates ``x``, ``y``, ``z``):
  exact geometry, stretched y included (ParaView's Fides reader);
- VTX (``vtk.xml``, an ``ImageData``): ParaView's ADIOS2 VTX reader; written only where
  every cell is alike (:func:`image_grid`), since image data cannot represent a stretched
  x or y.

The ``adios2`` wheel is built without MPI, so rank 0 writes, but no rank ever holds a whole
field: the pieces reach rank 0 one slab of one rank at a time
(:func:`tachyflow.parallel.pieces.slabs_in_turn`, 8 MiB at most) and each is put as its
block of the global array, then handed to the file (``PerformDataWrite``) before the next
arrives, so rank 0's extra memory does not grow with the grid. BP5 commits each finished step, so a
crash loses at most the step being written; a restarted run first drops the steps written
after its checkpoint (:func:`trim_series`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.io.bp_reading import bp_reader, bp_stream
from tachyflow.io.files import adios2_failure
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import gather_small, slabs_in_turn

NAMES = ("u", "v", "w", "p")


def image_grid(grid: StaggeredGrid) -> bool:
    """Whether ``grid``'s cells are all alike (x and y uniform: no stretching, no y core,
    no x zone), so that an ``ImageData`` describes it."""
    return grid.uniform_x and grid.stretching == 0 and grid.core is None


def _vtx_description(grid: StaggeredGrid) -> str:
    nx, ny, nz = grid.shape
    extent = f"0 {nx} 0 {ny} 0 {nz}"
    spacing = f"{grid.lengths[0] / nx} {grid.lengths[1] / ny} {grid.spacing_z}"
    arrays = "".join(f'<DataArray Name="{name}"/>' for name in NAMES)
    return (
        '<?xml version="1.0"?><VTKFile type="ImageData" version="0.1" '
        'byte_order="LittleEndian">'
        f'<ImageData WholeExtent="{extent}" Origin="0 0 0" Spacing="{spacing}">'
        f'<Piece Extent="{extent}"><CellData Scalars="p">{arrays}'
        '<DataArray Name="TIME">TIME</DataArray></CellData></Piece></ImageData></VTKFile>'
    )


class FieldWriter:
    """Writes steps of cell-centred fields into ``path`` (a ``.bp`` folder) (collective).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The ranks holding the pieces; rank 0 writes.
    path : path
        Output folder of the BP5 series (created or replaced).
    grid : StaggeredGrid
        Geometry, for the coordinates and the descriptions.
    layout : tachyflow.io.checkpoint.PieceLayout
        Where this rank's piece lies in the global grid.
    keep_until : int, optional
        Continue an existing series (a restarted run), keeping its steps up to this one.
    """

    def __init__(self, comm, path, grid: StaggeredGrid, layout, keep_until: int | None = None):
        self.comm = comm
        self.path = Path(path)
        self.grid = grid
        self._layouts = gather_small(comm, layout)
        self._stream = None
        self._described = False

        def open_series() -> None:
            import adios2

            append = keep_until is not None and self.path.exists()
            if append:
                trim_series(self.path, keep_until)
            self._stream = adios2.Stream(str(self.path), "a" if append else "w")
            self._described = append

        agreement.on_root(comm, open_series)

    def write(self, step: int, time: float, pieces: dict[str, np.ndarray]) -> None:
        """Append one step of this rank's cell-centred ``pieces`` of u, v, w, p (collective)."""
        problem = None
        incoming = slabs_in_turn(self.comm, {name: pieces[name] for name in NAMES})
        if self._stream is not None:
            stream = self._stream
            try:
                stream.begin_step()
                if not self._described:
                    self._describe()
                    self._described = True
                self._write_coordinates()
                stream.write("TIME", float(time))
                stream.write("step", int(step))
            except Exception as error:  # the other ranks still send: receive, then agree
                problem = error
            for rank, name, first, slab in incoming:
                if problem is None:
                    try:
                        self._write_slab(self._layouts[rank], name, first, slab)
                    except Exception as error:
                        problem = error
            if problem is None:
                try:
                    stream.end_step()  # where BP5 writes: a full disk shows here
                except Exception as error:
                    problem = error
            if isinstance(problem, RuntimeError):  # ADIOS2's: as an OSError naming the file
                problem = adios2_failure(problem, self.path)
        else:
            for _ in incoming:
                pass
        agreement.agree(self.comm, problem)

    def _write_slab(self, layout, name: str, first: int, slab: np.ndarray) -> None:
        """A slab (along x) of one rank's block of a field, handed to the file (rank 0)."""
        # The series is (nz, ny, nx): x is the last axis there.
        start = [layout.start[2], layout.start[1], layout.start[0] + first]
        block = np.ascontiguousarray(slab.transpose(2, 1, 0))
        self._stream.write(name, block, list(reversed(layout.global_shape)), start,
                           list(block.shape))
        self._stream.engine.perform_data_write()

    def _write_coordinates(self) -> None:
        """Face coordinates, in every step (small) so that any step stands alone."""
        grid = self.grid
        nz = grid.shape[2]
        self._stream.write("x", np.ascontiguousarray(grid.faces_x))
        self._stream.write("y", np.ascontiguousarray(grid.faces_y))
        self._stream.write("z", np.arange(nz + 1) * grid.spacing_z)

    def _describe(self) -> None:
        stream, grid = self._stream, self.grid
        stream.write_attribute("Fides_Data_Model", "rectilinear")
        stream.write_attribute("Fides_X_Variable", "x")
        stream.write_attribute("Fides_Y_Variable", "y")
        stream.write_attribute("Fides_Z_Variable", "z")
        stream.write_attribute("Fides_Variable_List", list(NAMES))
        stream.write_attribute("Fides_Variable_Associations", ["cells"] * len(NAMES))
        stream.write_attribute("Fides_Time_Variable", "TIME")
        if image_grid(grid):
            stream.write_attribute("vtk.xml", _vtx_description(grid))

    def close(self) -> None:
        """Finish the series (collective)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def trim_series(path, last_step: float, variable: str = "step") -> None:
    """Drop the steps whose ``variable`` is beyond ``last_step`` from the series ``path``
    (one process).

    A run killed after its last checkpoint wrote field steps that its restart writes again;
    the kept steps are copied into a new series, an x-slab of one variable at a time (never
    a whole field), which then replaces the old one. A surface series is cut by its
    ``"time"``.
    """
    import shutil

    import adios2

    path = Path(path)
    with bp_reader(path) as reader:
        selection = [0, reader.num_steps()]
        steps = np.atleast_1d(reader.read(variable, step_selection=selection)).tolist()
    if all(step <= last_step for step in steps):
        return
    trimmed = path.with_name(f".{path.name}.trimmed")
    shutil.rmtree(trimmed, ignore_errors=True)
    with bp_stream(path) as source, adios2.Stream(str(trimmed), "w") as target:
        for index, _ in enumerate(source.steps()):
            if steps[index] > last_step:
                break
            target.begin_step()
            if index == 0:
                for name, attribute in source.available_attributes().items():
                    value = source.read_attribute(name)
                    target.write_attribute(name, value if attribute["Type"] != "string"
                                           else str(value))
            for name, variable in source.available_variables().items():
                shape = [int(n) for n in variable["Shape"].split(",")] if variable["Shape"] else []
                if len(shape) != 3:
                    target.write(name, source.read(name))
                    continue
                for z in range(shape[0]):  # (nz, ny, nx): a plane of constant z at a time
                    plane = source.read(name, [z, 0, 0], [1, shape[1], shape[2]])
                    target.write(name, plane, shape, [z, 0, 0], [1, shape[1], shape[2]])
                    target.engine.perform_data_write()
            target.end_step()
    shutil.rmtree(path)
    trimmed.rename(path)
