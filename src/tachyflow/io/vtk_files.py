"""Field output as parallel VTK XML pieces and a ParaView collection, beside the BP5 series.

For readers without ADIOS2 (a ParaView built without it, VisIt, any VTK program): every
rank writes its own piece of every field step, ``fields_vtk/step_XXXXXXXX/piece_RRRRR.vtr``
(RectilinearGrid: exact face coordinates, stretched y included; cell data u, v, w, p), and
rank 0 writes the step's ``fields_vtk/step_XXXXXXXX.pvtr`` (the pieces and their extents)
and ``fields.pvd`` (the steps with their simulated times). No rank holds more than its own
piece. Pieces are written to a temporary name and renamed; the ``.pvtr`` only after every
piece is whole, the collection last, so a reader never meets a step that is listed but
half-written.

A 2D curvilinear grid of blocks (the compressible solver's C-grids) is written the same
way by :class:`CurvilinearFieldWriter`: StructuredGrid pieces (``.vts``, the block's node
coordinates as points, z = 0) and a ``.pvts`` per step.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import gather_small


def _face_coordinates(grid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Face positions along the three axes (x, y, z; or x, r, θ)."""
    return (
        np.asarray(grid.faces_x, dtype=np.float64),
        np.asarray(grid.faces_y, dtype=np.float64),
        np.arange(grid.shape[2] + 1) * grid.spacing_z,
    )


def _piece_dataset(grid, layout):
    """An empty VTK dataset of the cells of one piece, in global extents: a rectilinear
    grid, or, on a cylindrical grid, a structured grid of Cartesian points (x, r cos θ,
    r sin θ), so that ParaView shows the pipe as it is. Returns the dataset, the piece
    files' suffix and the parallel file's type."""
    from vtkmodules.util.numpy_support import numpy_to_vtk
    from vtkmodules.vtkCommonCore import vtkPoints
    from vtkmodules.vtkCommonDataModel import vtkRectilinearGrid, vtkStructuredGrid

    faces = [
        faces[first : first + count + 1]
        for faces, first, count in zip(_face_coordinates(grid), layout.start, layout.shape,
                                       strict=True)
    ]
    extent = [
        bound for s, n in zip(layout.start, layout.shape, strict=True) for bound in (s, s + n)
    ]
    if grid.axis_names[1] == "r":
        x, r, theta = np.meshgrid(*faces, indexing="ij")
        points = np.stack([x, r * np.cos(theta), r * np.sin(theta)], axis=-1)
        flat = np.ascontiguousarray(points.transpose(2, 1, 0, 3).reshape(-1, 3))
        dataset = vtkStructuredGrid()
        dataset.SetExtent(*extent)
        vtk_points = vtkPoints()
        vtk_points.SetData(numpy_to_vtk(flat, deep=True))
        dataset.SetPoints(vtk_points)
        return dataset, ".vts", "PStructuredGrid"
    dataset = vtkRectilinearGrid()
    setters = (dataset.SetXCoordinates, dataset.SetYCoordinates, dataset.SetZCoordinates)
    for setter, name, values in zip(setters, "xyz", faces, strict=True):
        coordinates = numpy_to_vtk(np.ascontiguousarray(values), deep=True)
        coordinates.SetName(name)
        setter(coordinates)
    dataset.SetExtent(*extent)
    return dataset, ".vtr", "PRectilinearGrid"


def _cartesian_velocity(pieces, layout, spacing_theta: float) -> np.ndarray:
    """(u_x, u_r cos θ - u_θ sin θ, u_r sin θ + u_θ cos θ) at the cell centres of a piece
    of a cylindrical grid (u axial, v radial, w azimuthal), as VTK's (cells, 3) array."""
    theta = (layout.start[2] + np.arange(layout.shape[2]) + 0.5) * spacing_theta
    cos, sin = np.cos(theta)[None, None, :], np.sin(theta)[None, None, :]
    u, v, w = (np.asarray(pieces[name], np.float64) for name in "uvw")
    components = (u, v * cos - w * sin, v * sin + w * cos)
    return np.stack([c.transpose(2, 1, 0).ravel() for c in components], axis=1)


def _extent(layout) -> str:
    """VTK's extent of a piece's cells: three (first, last) node pairs, a 2D piece flat."""
    pairs = [f"{s} {s + n}" for s, n in zip(layout.start, layout.shape, strict=True)]
    return " ".join(pairs + ["0 0"] * (3 - len(pairs)))


def _whole_extent(global_shape) -> str:
    pairs = [f"0 {n}" for n in global_shape]
    return " ".join(pairs + ["0 0"] * (3 - len(pairs)))


class _PieceSeries:
    """A series of field steps, each rank writing its own piece of every step, rank 0 the
    step's parallel file and ``fields.pvd`` (see :class:`VTKFieldWriter`).

    Parameters
    ----------
    comm, folder, layout, keep_until
        As :class:`VTKFieldWriter`.
    dataset
        This rank's empty VTK dataset (geometry only) in global extents.
    suffix, parallel_type : str
        The pieces' suffix (``.vtr``, ``.vts``) and the parallel file's type.
    """

    def __init__(self, comm, folder, layout, keep_until, dataset, suffix, parallel_type):
        self.comm = comm
        self.folder = Path(folder)
        self.layout = layout
        self._layouts = gather_small(comm, layout)
        self._dataset, self._suffix, self._parallel_type = dataset, suffix, parallel_type
        self._global_shape = tuple(layout.global_shape)
        self._entries: list[tuple[float, str]] = []
        collection = self.folder / "fields.pvd"
        if keep_until is not None and comm.Get_rank() == 0 and collection.exists():
            self._entries = [
                (time, name)
                for time, name in _read_collection(collection)
                if _step_of(name) <= keep_until
            ]

    def _vector_names(self, names: list[str]) -> list[str]:
        """The vector cell arrays written beside the fields ``names`` (equal on every rank)."""
        return []

    def _vectors(self, pieces) -> dict[str, np.ndarray]:
        """Those vector arrays of this rank's ``pieces``, as VTK's (cells, 3) arrays."""
        return {}

    def write(self, step: int, time: float, pieces: dict[str, np.ndarray]) -> Path:
        """Write this rank's cell-centred ``pieces`` of one step (collective)."""
        from vtkmodules.util.numpy_support import numpy_to_vtk
        from vtkmodules.vtkIOXML import vtkXMLRectilinearGridWriter, vtkXMLStructuredGridWriter

        stem = f"fields_vtk/step_{step:08d}"
        piece_name = f"{stem}/piece_{self.comm.Get_rank():05d}{self._suffix}"
        with agreement.collectively(self.comm, OSError):
            if self.layout.size:
                cells = self._dataset.GetCellData()
                for index in reversed(range(cells.GetNumberOfArrays())):
                    cells.RemoveArray(index)
                flats = []  # VTK borrows them (no copy) until the piece is written
                for name, values in pieces.items():
                    # VTK's x runs fastest: (nx, ny, nz) in C order is (nz, ny, nx) transposed.
                    flat = np.ascontiguousarray(np.asarray(values, np.float64).T)
                    flats.append(flat)
                    array = numpy_to_vtk(flat.ravel())
                    array.SetName(name)
                    cells.AddArray(array)
                for name, vector in self._vectors(pieces).items():
                    flats.append(vector)
                    array = numpy_to_vtk(vector)
                    array.SetName(name)
                    cells.AddArray(array)
                writer = (
                    vtkXMLStructuredGridWriter()
                    if self._suffix == ".vts"
                    else vtkXMLRectilinearGridWriter()
                )
                writer.SetInputData(self._dataset)
                writer.SetDataModeToAppended()
                writer.SetCompressorTypeToZLib()
                with replacing(self.folder / piece_name) as temporary:
                    writer.SetFileName(str(temporary))
                    if writer.Write() != 1:
                        raise OSError(f"VTK could not write {self.folder / piece_name}")
        path = self.folder / f"{stem}.p{self._suffix[1:]}"
        vectors = self._vector_names(list(pieces))
        agreement.on_root(
            self.comm, lambda: self._write_step(path, step, time, list(pieces), vectors)
        )
        return path

    def _write_step(self, path: Path, step: int, time: float, names, vectors) -> None:
        """The step's parallel file (``.pvtr`` or ``.pvts``) and the collection (rank 0)."""
        arrays = "".join(
            f'      <PDataArray type="Float64" Name="{name}"'
            + (' NumberOfComponents="3"' if name in vectors else "")
            + "/>\n"
            for name in [*names, *vectors]
        )
        if self._suffix == ".vts":
            geometry = (
                '    <PPoints>\n      <PDataArray type="Float64" NumberOfComponents="3"/>\n'
                "    </PPoints>\n"
            )
        else:
            coordinates = "".join(
                f'      <PDataArray type="Float64" Name="{a}"/>\n' for a in "xyz"
            )
            geometry = f"    <PCoordinates>\n{coordinates}    </PCoordinates>\n"
        pieces = "".join(
            f'    <Piece Extent="{_extent(layout)}" '
            f'Source="step_{step:08d}/piece_{rank:05d}{self._suffix}"/>\n'
            for rank, layout in enumerate(self._layouts)
            if layout.size
        )
        whole = _whole_extent(self._global_shape)
        kind = self._parallel_type
        text = (
            f'<?xml version="1.0"?>\n<VTKFile type="{kind}" version="0.1" '
            'byte_order="LittleEndian" header_type="UInt32">\n'
            f'  <{kind} WholeExtent="{whole}" GhostLevel="0">\n'
            f"    <PCellData>\n{arrays}    </PCellData>\n"
            f"{geometry}{pieces}  </{kind}>\n</VTKFile>\n"
        )
        with replacing(path) as temporary:
            temporary.write_text(text)
        relative = path.relative_to(self.folder).as_posix()
        self._entries = [entry for entry in self._entries if entry[1] != relative]
        self._entries.append((float(time), relative))
        self._write_collection()

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


class VTKFieldWriter(_PieceSeries):
    """Writes every rank's piece of each field step and keeps ``fields.pvd`` up to date.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The ranks holding the pieces; :meth:`write` is collective over it.
    folder : path
        The run's output folder; files go to ``folder/fields_vtk`` and ``folder/fields.pvd``.
    grid : StaggeredGrid or CylindricalGrid
        Geometry of the cells (a cylindrical grid is written in Cartesian points).
    layout : tachyflow.io.checkpoint.PieceLayout
        Where this rank's piece lies in the global grid.
    keep_until : int, optional
        Keep the steps up to this one that an earlier run listed in ``fields.pvd`` (a
        restarted run: the checkpoint's step; later ones were written after it, by the run
        that did not finish, and are dropped).
    """

    def __init__(self, comm, folder, grid, layout, keep_until: int | None = None):
        self.grid = grid
        super().__init__(comm, folder, layout, keep_until, *_piece_dataset(grid, layout))

    def _vector_names(self, names):
        # On a cylindrical grid, the velocity as a Cartesian vector, for glyphs and streamlines.
        return ["velocity"] if self._suffix == ".vts" and {"u", "v", "w"} <= set(names) else []

    def _vectors(self, pieces):
        if not self._vector_names(list(pieces)):
            return {}
        return {"velocity": _cartesian_velocity(pieces, self.layout, self.grid.spacing_z)}


class CurvilinearFieldWriter(_PieceSeries):
    """:class:`VTKFieldWriter` for the blocks of a 2D curvilinear grid: each rank writes its
    block as a StructuredGrid piece (``.vts``: its nodes, z = 0, and its cells' fields),
    rank 0 the step's ``.pvts`` and ``fields.pvd``. With fields ``u`` and ``v`` the
    velocity ``(u, v, 0)`` is written too, as a vector.

    Parameters
    ----------
    comm, folder, layout, keep_until
        As :class:`VTKFieldWriter`; ``layout`` places this block's cells in the
        ``(ni, nj)`` grid.
    x, y : ndarray, shape (ni_loc + 1, nj_loc + 1)
        This block's node coordinates.
    """

    def __init__(self, comm, folder, x, y, layout, keep_until: int | None = None):
        from vtkmodules.util.numpy_support import numpy_to_vtk
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkCommonDataModel import vtkStructuredGrid

        nodes = tuple(n + 1 for n in layout.shape)
        if len(layout.shape) != 2 or np.shape(x) != nodes or np.shape(y) != nodes:
            raise ValueError(
                f"x and y must be the {nodes} nodes of a 2D block of {tuple(layout.shape)} "
                f"cells, got {np.shape(x)} and {np.shape(y)}"
            )
        dataset = vtkStructuredGrid()
        dataset.SetExtent(*(int(n) for n in _extent(layout).split()))
        x, y = (np.asarray(c, np.float64).T.ravel() for c in (x, y))  # i runs fastest
        points = np.stack([x, y, np.zeros_like(x)], axis=1)
        vtk_points = vtkPoints()
        vtk_points.SetData(numpy_to_vtk(np.ascontiguousarray(points), deep=True))
        dataset.SetPoints(vtk_points)
        super().__init__(comm, folder, layout, keep_until, dataset, ".vts", "PStructuredGrid")

    def _vector_names(self, names):
        return ["velocity"] if {"u", "v"} <= set(names) else []

    def _vectors(self, pieces):
        if not self._vector_names(list(pieces)):
            return {}
        u, v = (np.asarray(pieces[name], np.float64).T.ravel() for name in "uv")
        return {"velocity": np.ascontiguousarray(np.stack([u, v, np.zeros_like(u)], axis=1))}


def _step_of(name: str) -> int:
    """The step of a collection entry ``fields_vtk/step_XXXXXXXX.ext``."""
    return int(Path(name).stem.split("_")[-1])


def _read_collection(path: Path) -> list[tuple[float, str]]:
    """The (time, file) entries of a ``.pvd`` this module wrote."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.parse(path).getroot()
    return [(float(entry.get("timestep")), entry.get("file")) for entry in root.iter("DataSet")]


def read_cell_data(path) -> dict[str, np.ndarray]:
    """The cell arrays of a VTK XML file, serial or parallel (``.vtu``, ``.pvtu``, ``.vtr``,
    ``.pvtr``, ...), as numpy arrays in the file's cell order."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLGenericDataObjectReader

    reader = vtkXMLGenericDataObjectReader()
    reader.SetFileName(str(path))
    reader.Update()
    cells = reader.GetOutput().GetCellData()
    return {
        cells.GetArrayName(index): vtk_to_numpy(cells.GetArray(index))
        for index in range(cells.GetNumberOfArrays())
    }
