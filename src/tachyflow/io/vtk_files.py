"""Field output as plain VTK XML files and a ParaView collection, beside the BP5 series.

For readers without ADIOS2 (a ParaView built without it, VisIt, any VTK program): every
field step is one file in ``fields_vtk/`` — ``.vti`` (ImageData) when y is uniform, ``.vtr``
(RectilinearGrid, exact face coordinates) when it is stretched — with cell data u, v, w, p,
and ``fields.pvd`` lists them with their simulated times. Every file is written to a
temporary name and renamed, the collection last, so a reader never meets a step that is
listed but half-written. Rank 0 writes what it gathered, like the BP5 writer.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.numerics.grid import StaggeredGrid


def _grid_dataset(grid: StaggeredGrid):
    """An empty VTK dataset of the grid's cells: image data if y is uniform."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonDataModel import vtkImageData, vtkRectilinearGrid

    nx, ny, nz = grid.shape
    if grid.stretching == 0:
        dataset = vtkImageData()
        dataset.SetDimensions(nx + 1, ny + 1, nz + 1)
        dataset.SetSpacing(grid.spacing_x, grid.lengths[1] / ny, grid.spacing_z)
        return dataset, ".vti"
    dataset = vtkRectilinearGrid()
    dataset.SetDimensions(nx + 1, ny + 1, nz + 1)
    dataset.SetXCoordinates(numpy_to_vtk(np.arange(nx + 1) * grid.spacing_x, deep=True))
    dataset.SetYCoordinates(numpy_to_vtk(np.ascontiguousarray(grid.faces_y), deep=True))
    dataset.SetZCoordinates(numpy_to_vtk(np.arange(nz + 1) * grid.spacing_z, deep=True))
    return dataset, ".vtr"


class VTKFieldWriter:
    """Writes one VTK XML file per field step and keeps ``fields.pvd`` up to date.

    Parameters
    ----------
    folder : path
        The run's output folder; files go to ``folder/fields_vtk`` and ``folder/fields.pvd``.
    grid : StaggeredGrid
        Geometry of the cells.
    append : bool
        Keep the steps an earlier (restarted) run listed in ``fields.pvd``.
    """

    def __init__(self, folder, grid: StaggeredGrid, append: bool = False):
        self.folder = Path(folder)
        self.grid = grid
        self._dataset, self._suffix = _grid_dataset(grid)
        self._entries: list[tuple[float, str]] = []
        collection = self.folder / "fields.pvd"
        if append and collection.exists():
            self._entries = _read_collection(collection)

    def write(self, step: int, time: float, fields: dict[str, np.ndarray]) -> Path:
        """Write the global cell-centred ``fields`` of one step (arrays ``(nx, ny, nz)``)."""
        from vtkmodules.util.numpy_support import numpy_to_vtk
        from vtkmodules.vtkIOXML import vtkXMLImageDataWriter, vtkXMLRectilinearGridWriter

        cells = self._dataset.GetCellData()
        for index in reversed(range(cells.GetNumberOfArrays())):
            cells.RemoveArray(index)
        for name, values in fields.items():
            # VTK's x runs fastest: (nx, ny, nz) in C order is (nz, ny, nx) transposed.
            flat = np.ascontiguousarray(np.asarray(values, dtype=np.float64).transpose(2, 1, 0))
            array = numpy_to_vtk(flat.ravel(), deep=True)
            array.SetName(name)
            cells.AddArray(array)
        relative = f"fields_vtk/step_{step:08d}{self._suffix}"
        path = self.folder / relative
        writer = (
            vtkXMLImageDataWriter() if self._suffix == ".vti" else vtkXMLRectilinearGridWriter()
        )
        writer.SetInputData(self._dataset)
        writer.SetDataModeToAppended()
        writer.SetCompressorTypeToZLib()
        with replacing(path) as temporary:
            writer.SetFileName(str(temporary))
            if writer.Write() != 1:
                raise OSError(f"VTK could not write {path}")
        self._entries = [entry for entry in self._entries if entry[1] != relative]
        self._entries.append((float(time), relative))
        self._write_collection()
        return path

    def _write_collection(self) -> None:
        rows = "".join(
            f'    <DataSet timestep="{time!r}" part="0" file={quoteattr(name)}/>\n'
            for time, name in self._entries
        )
        text = (
            '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
            f"  <Collection>\n{rows}  </Collection>\n</VTKFile>\n"
        )
        with replacing(self.folder / "fields.pvd") as temporary:
            temporary.write_text(text)


def _read_collection(path: Path) -> list[tuple[float, str]]:
    """The (time, file) entries of a ``.pvd`` this module wrote."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.parse(path).getroot()
    return [(float(entry.get("timestep")), entry.get("file")) for entry in root.iter("DataSet")]
