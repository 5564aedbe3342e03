"""Field output as ADIOS2 BP5 series that ParaView opens directly.

One step per write, holding cell-centred ``u``, ``v``, ``w``, ``p`` (velocity averaged
from the faces), the simulated time ``TIME`` and the ``step``. Arrays are stored as
``(nz, ny, nx)`` — ADIOS2 is row-major and VTK's x runs fastest — so that readers see the
solver's x as VTK's x. Two descriptions are attached:

- Fides (``Fides_Data_Model = rectilinear``, with the face coordinates ``x``, ``y``, ``z``):
  exact geometry, stretched y included (ParaView's Fides reader);
- VTX (``vtk.xml``, an ``ImageData``): ParaView's ADIOS2 VTX reader; written only for a
  uniform y, since image data cannot represent a stretched one.

Rank 0 writes (the ``adios2`` wheel is built without MPI); the fields are gathered to it.
BP5 commits each finished step, so a crash loses at most the step being written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.numerics.grid import StaggeredGrid

NAMES = ("u", "v", "w", "p")


def _vtx_description(grid: StaggeredGrid) -> str:
    nx, ny, nz = grid.shape
    extent = f"0 {nx} 0 {ny} 0 {nz}"
    spacing = f"{grid.spacing_x} {grid.lengths[1] / ny} {grid.spacing_z}"
    arrays = "".join(f'<DataArray Name="{name}"/>' for name in NAMES)
    return (
        '<?xml version="1.0"?><VTKFile type="ImageData" version="0.1" '
        'byte_order="LittleEndian">'
        f'<ImageData WholeExtent="{extent}" Origin="0 0 0" Spacing="{spacing}">'
        f'<Piece Extent="{extent}"><CellData Scalars="p">{arrays}'
        '<DataArray Name="TIME">TIME</DataArray></CellData></Piece></ImageData></VTKFile>'
    )


class FieldWriter:
    """Writes steps of the four fields into ``path`` (a ``.bp`` folder), on rank 0 only.

    Parameters
    ----------
    path : path
        Output folder of the BP5 series (created or replaced).
    grid : StaggeredGrid
        Geometry, for the coordinates and the descriptions.
    append : bool
        Continue an existing series (a restarted run) instead of replacing it.
    """

    def __init__(self, path, grid: StaggeredGrid, append: bool = False):
        import adios2

        self.path = Path(path)
        self.grid = grid
        append = append and self.path.exists()
        self._stream = adios2.Stream(str(self.path), "a" if append else "w")
        self._described = append

    def write(self, step: int, time: float, fields: dict[str, np.ndarray]) -> None:
        """Append one step; ``fields`` maps u, v, w, p to global cell-centred arrays."""
        stream = self._stream
        stream.begin_step()
        if not self._described:
            self._describe()
            self._described = True
        self._write_coordinates()
        stream.write("TIME", float(time))
        stream.write("step", int(step))
        for name in NAMES:
            stream.write(name, np.ascontiguousarray(fields[name].transpose(2, 1, 0)))
        stream.end_step()

    def _write_coordinates(self) -> None:
        """Face coordinates, in every step (small) so that any step stands alone."""
        grid = self.grid
        nx, _, nz = grid.shape
        self._stream.write("x", np.arange(nx + 1) * grid.spacing_x)
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
        if grid.stretching == 0:
            stream.write_attribute("vtk.xml", _vtx_description(grid))

    def close(self) -> None:
        """Finish the series."""
        self._stream.close()
