"""Geometry for pictures, extracted from one piece of cell-centred fields (MPI-free).

A piece is what a rank holds of a field on a :class:`~tachyflow.numerics.grid.StaggeredGrid`:
its own cells plus one ghost layer on every side, edges and corners included (a
``HaloExchange(decomposition, orientation, width=1, corners=True)``), and the global index
of its first own cell (``decomposition.pencil(orientation).start``). A reader that holds a
whole field passes it padded by one cell (``numpy.pad(field, 1, mode="wrap")``) with start
``(0, 0, 0)``. Values sit at cell centres: ``x = (i + 1/2) Δx``, ``z = (k + 1/2) Δz``,
``y = grid.centres_y[j]``.

The data are sampled at cell centres, so the geometry lives on the dual grid whose cells
join neighbouring centres. Each dual cell belongs to the piece that owns its lower
corner: a piece extracts over its own cells plus the layer above them, which is the first
ghost layer on that side. Neighbouring pieces therefore meet on a shared layer of
identical values and identical arithmetic (no cracks) and no dual cell is extracted twice
(no duplicated triangles). Only the upper ghosts are read. Along a periodic axis the last
piece's upper ghost is the periodic image of the first cell, so the pictures cover a whole
period; along a wall-bounded y they stop at the outermost centres (half a cell from the
walls), where cell-centred data end.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from tachyflow.insitu.boxes import CellBox
from tachyflow.numerics.grid import StaggeredGrid

AXIS_NAMES = "xyz"


@dataclass(frozen=True, eq=False)
class Isosurface:
    """A triangulated surface as plain arrays, cheap to send between processes.

    Parameters
    ----------
    points : ndarray, shape (n, 3), float32
        Vertex positions (x, y, z) in the grid's physical coordinates. Single precision,
        as VTK's contouring produces them: far finer than a pixel.
    triangles : ndarray, shape (m, 3), integer
        Vertex indices of each triangle, counter-clockwise seen from the side where the
        contoured field is smaller (as flying edges orders them).
    scalars : ndarray, shape (n,), float32, or None
        Value of the colouring field at each vertex; ``None`` when uncoloured.
    """

    points: np.ndarray
    triangles: np.ndarray
    scalars: np.ndarray | None = None

    def __post_init__(self):
        if not isinstance(self.points, np.ndarray) or self.points.ndim != 2:
            raise TypeError(f"points must be an (n, 3) numpy array, got {self.points!r:.80}")
        if self.points.shape[1] != 3 or self.points.dtype != np.float32:
            raise ValueError(
                f"points must be an (n, 3) float32 array, got shape {self.points.shape} "
                f"and dtype {self.points.dtype}"
            )
        triangles = self.triangles
        if (
            not isinstance(triangles, np.ndarray)
            or triangles.ndim != 2
            or triangles.shape[1] != 3
            or triangles.dtype.kind not in "iu"
        ):
            raise ValueError(
                f"triangles must be an (m, 3) integer numpy array, got {triangles!r:.80}"
            )
        if triangles.size and (triangles.min() < 0 or triangles.max() >= len(self.points)):
            raise ValueError(
                f"triangle vertex indices must lie in [0, {len(self.points)}), got "
                f"[{triangles.min()}, {triangles.max()}]"
            )
        if self.scalars is not None and (
            not isinstance(self.scalars, np.ndarray)
            or self.scalars.shape != (len(self.points),)
            or self.scalars.dtype != np.float32
        ):
            raise ValueError(
                f"scalars must be None or a float32 array of one value per point "
                f"({len(self.points)}), got {self.scalars!r:.80}"
            )

    @classmethod
    def empty(cls, coloured: bool) -> Isosurface:
        """A surface without triangles (with an empty colour array if ``coloured``)."""
        return cls(
            np.empty((0, 3), np.float32),
            np.empty((0, 3), np.int32),
            np.empty(0, np.float32) if coloured else None,
        )

    def area(self) -> float:
        """Total area of the triangles (double precision)."""
        corners = self.points.astype(np.float64)[self.triangles]
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        return 0.5 * float(np.linalg.norm(normals, axis=1).sum())


@dataclass(frozen=True, eq=False)
class PlaneSlice:
    """Values of a field on an axis-aligned plane, or one piece of them.

    Parameters
    ----------
    axis : int
        Normal of the plane: 0, 1 or 2 for ``x =``, ``y =``, ``z =``.
    position : float
        Coordinate of the plane along ``axis``.
    values : ndarray, 2D
        Values at the cell centres of the plane, indexed by the two other axes in
        increasing order ((y, z) for an x-plane, (x, z) for y, (x, y) for z). Empty on a
        piece that the plane does not cross.
    start : (int, int)
        Global cell index of ``values[0, 0]`` along those two axes.
    coordinates : (ndarray, ndarray)
        Centre coordinates of the rows and of the columns of ``values``.
    """

    axis: int
    position: float
    values: np.ndarray
    start: tuple[int, int]
    coordinates: tuple[np.ndarray, np.ndarray]

    def __post_init__(self):
        if self.axis not in (0, 1, 2):
            raise ValueError(f"slice axis must be 0, 1 or 2, got {self.axis!r}")
        if not isinstance(self.values, np.ndarray) or self.values.ndim != 2:
            raise TypeError(f"slice values must be a 2D numpy array, got {self.values!r:.80}")
        lengths = tuple(len(c) for c in self.coordinates)
        if len(self.start) != 2 or lengths != self.values.shape:
            raise ValueError(
                f"a slice of shape {self.values.shape} needs a start of 2 indices and "
                f"coordinate arrays of lengths {self.values.shape}, got start {self.start} "
                f"and lengths {lengths}"
            )

    @property
    def plane_axes(self) -> tuple[int, int]:
        """The two axes that index ``values``."""
        return tuple(a for a in range(3) if a != self.axis)


def _check_piece(field, grid: StaggeredGrid, start, name: str) -> tuple[int, int, int]:
    """The interior shape of a ghosted piece, after checking it fits the grid."""
    if not isinstance(grid, StaggeredGrid):
        raise TypeError(f"grid must be a StaggeredGrid, got {type(grid).__name__}")
    if not isinstance(field, np.ndarray) or field.ndim != 3 or field.dtype.kind != "f":
        raise TypeError(f"{name} must be a 3D floating-point numpy array, got {field!r:.80}")
    if len(start) != 3 or any(
        not isinstance(s, int | np.integer) or isinstance(s, bool) or s < 0 for s in start
    ):
        raise ValueError(f"start must be 3 non-negative integers, got {start!r}")
    interior = tuple(n - 2 for n in field.shape)
    if min(interior) < 0 or any(
        s + n > total for s, n, total in zip(start, interior, grid.shape, strict=True)
    ):
        raise ValueError(
            f"{name} of shape {field.shape} (one ghost layer on every side) starting at "
            f"{tuple(start)} does not fit the grid of {grid.shape} cells"
        )
    return interior


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _periodic(grid: StaggeredGrid) -> tuple[bool, bool, bool]:
    return (True, grid.periodic_y, True)


def _centres(grid: StaggeredGrid, axis: int, first: int, count: int) -> np.ndarray:
    """Centre coordinates of global cells ``first .. first + count - 1`` along ``axis``.

    Indices past the end of a periodic axis are the periodic images of the first cells.
    """
    cells = np.arange(first, first + count)
    if axis == 1:
        period, index = np.divmod(cells, grid.shape[1])
        return grid.centres_y[index] + period * grid.lengths[1]
    if axis == 0 and not grid.uniform_x:  # an open x: its ghost cells at most
        return grid.ghosted_centres_x()[cells + 1]
    spacing = grid.spacing_x if axis == 0 else grid.spacing_z
    return (cells + 0.5) * spacing


def _dual_block(grid: StaggeredGrid, start, interior) -> list[tuple[int, int]]:
    """Per axis, the global cells ``(first, count)`` of the block a piece extracts over."""
    block = []
    for axis, periodic in enumerate(_periodic(grid)):
        first, own = int(start[axis]), interior[axis]
        last = first + own if periodic else min(first + own, grid.shape[axis] - 1)
        block.append((first, last - first + 1 if own else 0))
    return block


def extract_isosurface(
    field: np.ndarray,
    value: float,
    grid: StaggeredGrid,
    start,
    colour_by: np.ndarray | None = None,
) -> Isosurface:
    """The surface ``field = value`` in a ghosted piece, clipped to the piece's dual cells.

    Flying edges (``vtkFlyingEdges3D``) contours the block in index space, then each
    vertex coordinate is mapped to physical space by linear interpolation between the
    centres on either side. Every vertex lies on a grid edge at a fraction that depends on
    the two values only, so this is exactly the surface that contouring the rectilinear
    grid would give, for a uniform or a stretched y alike, with the fastest contouring
    filter VTK has. Index coordinates are global, so a vertex on the seam between two
    pieces, or a vertex of a piece and the same vertex extracted from the whole field,
    comes out of the same arithmetic: the same single-precision value (a difference would
    need a double-precision rounding step to straddle a single-precision rounding
    boundary).

    Parameters
    ----------
    field : ndarray
        The contoured field on the piece's cells with one ghost layer (and corners).
    value : float
        Isovalue.
    grid : StaggeredGrid
        Geometry of the whole grid.
    start : (int, int, int)
        Global index of the piece's first own cell.
    colour_by : ndarray, optional
        A second field on the same ghosted piece, interpolated to the vertices as their
        scalars.

    Returns
    -------
    Isosurface
        Points, triangles (int32, local to the piece) and scalars.
    """
    from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
    from vtkmodules.vtkCommonDataModel import vtkDataObject, vtkImageData
    from vtkmodules.vtkFiltersCore import vtkFlyingEdges3D

    interior = _check_piece(field, grid, start, "field")
    if colour_by is not None:
        _check_piece(colour_by, grid, start, "colour_by")
        if colour_by.shape != field.shape:
            raise ValueError(
                f"colour_by has shape {colour_by.shape}, expected that of field {field.shape}"
            )
    if not _is_number(value) or not np.isfinite(value):
        raise ValueError(f"isovalue must be a finite number, got {value!r}")
    block = _dual_block(grid, start, interior)
    if any(count < 2 for _, count in block):
        return Isosurface.empty(colour_by is not None)
    # Ghosted index 1 is the first own cell; the block ends at the upper ghost at most.
    cells = tuple(slice(1, 1 + count) for _, count in block)

    image = vtkImageData()
    # Global indices as the extent, not as an origin: flying edges then adds the index
    # and the fraction in double precision before its one rounding to single precision,
    # so the pieces agree. (An origin is added after that rounding, and a seam vertex
    # would round differently in the two pieces that share it.)
    image.SetExtent(*(bound for first, count in block for bound in (first, first + count - 1)))
    arrays = (
        {"contoured": field} if colour_by is None else {"contoured": field, "colour": colour_by}
    )
    for name, array in arrays.items():
        # VTK runs x fastest; the transposed C-ordered copy has that layout.
        data = numpy_to_vtk(np.ascontiguousarray(array[cells].T).ravel(), deep=True)
        data.SetName(name)
        image.GetPointData().AddArray(data)
    contour = vtkFlyingEdges3D()
    contour.SetInputData(image)
    contour.SetInputArrayToProcess(0, 0, 0, vtkDataObject.FIELD_ASSOCIATION_POINTS, "contoured")
    contour.SetValue(0, float(value))
    contour.ComputeNormalsOff()  # index-space normals would be wrong in a stretched y
    contour.ComputeGradientsOff()
    contour.ComputeScalarsOff()
    contour.SetInterpolateAttributes(colour_by is not None)
    contour.Update()
    surface = contour.GetOutput()
    if surface.GetNumberOfPoints() == 0:
        return Isosurface.empty(colour_by is not None)

    index_points = vtk_to_numpy(surface.GetPoints().GetData())
    points = np.empty(index_points.shape, np.float32)
    for axis, (first, count) in enumerate(block):
        points[:, axis] = np.interp(
            index_points[:, axis],
            np.arange(first, first + count, dtype=np.float64),
            _centres(grid, axis, first, count),
        )
    triangles = vtk_to_numpy(surface.GetPolys().GetConnectivityArray()).reshape(-1, 3)
    scalars = None
    if colour_by is not None:
        scalars = vtk_to_numpy(surface.GetPointData().GetArray("colour")).astype(np.float32)
    return Isosurface(points, triangles.astype(np.int32), scalars)


def slice_range(grid: StaggeredGrid, axis: int) -> tuple[float, float]:
    """The positions a plane normal to ``axis`` may take for :func:`extract_slice`.

    A periodic axis: the whole period ``[0, L]``; a wall-bounded y: from the first to the
    last cell centre (cell-centred values end there).
    """
    axis = _check_axis(axis)
    if _periodic(grid)[axis]:
        return 0.0, float(grid.lengths[axis])
    centres = grid.centres_y
    return float(centres[0]), float(centres[-1])


def _check_axis(axis) -> int:
    if isinstance(axis, str) and len(axis) == 1 and axis in AXIS_NAMES:
        return AXIS_NAMES.index(axis)
    if isinstance(axis, int | np.integer) and not isinstance(axis, bool) and 0 <= axis < 3:
        return int(axis)
    raise ValueError(f"slice axis must be 'x', 'y', 'z' or 0, 1, 2, got {axis!r}")


def _layers(grid: StaggeredGrid, axis: int, position: float) -> tuple[int, float]:
    """The global cell layer ``i`` below the plane and the weight of layer ``i + 1``."""
    low, high = slice_range(grid, axis)
    if not low <= position <= high:
        raise ValueError(
            f"a plane {AXIS_NAMES[axis]} = {position!r} is outside [{low:g}, {high:g}], the "
            f"positions cell-centred values of this grid cover"
        )
    n = grid.shape[axis]
    if _periodic(grid)[axis]:
        centres = _centres(grid, axis, 0, n + 1)  # closing with the image of cell 0
        if position < centres[0]:
            position += grid.lengths[axis]
    else:
        centres = _centres(grid, axis, 0, n)
    # At least one centre is <= position; at the last centre the weight is 0.
    layer = int(np.searchsorted(centres, position, side="right")) - 1
    if position == centres[layer]:
        return layer, 0.0
    return layer, (position - centres[layer]) / (centres[layer + 1] - centres[layer])


def slice_cells(grid: StaggeredGrid, axis, position: float) -> CellBox:
    """The cells whose values :func:`extract_slice` reads for the plane ``axis =
    position``: the layer below it, and the layer above unless the plane passes through the
    centres below; the whole axis when the layer above wraps past the end of a periodic
    axis (the image of the first layer)."""
    axis = _check_axis(axis)
    layer, weight = _layers(grid, axis, float(position))
    count = 1 if weight == 0.0 else 2
    start, shape = [0, 0, 0], list(grid.shape)
    if layer + count <= grid.shape[axis]:
        start[axis], shape[axis] = layer, count
    return CellBox(tuple(start), tuple(shape))


def extract_slice(
    field: np.ndarray, grid: StaggeredGrid, start, axis, position: float
) -> PlaneSlice:
    """The piece's part of ``field`` on the plane ``axis = position``.

    The values are interpolated linearly between the two cell layers on either side of
    the plane (a plane through a layer of centres takes that layer exactly). The piece
    that owns the lower layer computes them, reading its upper ghost when the upper layer
    is the next piece's, and returns its own cells along the two other axes; the other
    pieces return an empty slice. The pieces of all ranks tile the plane.

    Parameters
    ----------
    field : ndarray
        The field on the piece's cells with one ghost layer.
    grid : StaggeredGrid
        Geometry of the whole grid.
    start : (int, int, int)
        Global index of the piece's first own cell.
    axis : {"x", "y", "z", 0, 1, 2}
        Normal of the plane.
    position : float
        Plane coordinate, within :func:`slice_range`.
    """
    interior = _check_piece(field, grid, start, "field")
    axis = _check_axis(axis)
    if not _is_number(position):
        raise TypeError(f"slice position must be a number, got {position!r}")
    position = float(position)
    layer, weight = _layers(grid, axis, position)
    plane_axes = tuple(a for a in range(3) if a != axis)
    plane_start = (int(start[plane_axes[0]]), int(start[plane_axes[1]]))
    coordinates = tuple(_centres(grid, a, int(start[a]), interior[a]) for a in plane_axes)
    local = layer - int(start[axis])
    if not 0 <= local < interior[axis]:
        return PlaneSlice(axis, position, np.empty((0, 0)), plane_start, (np.empty(0),) * 2)
    own = [slice(1, 1 + n) for n in interior]
    own[axis] = 1 + local
    below = field[tuple(own)]
    if weight == 0.0:
        values = below.copy()
    else:
        own[axis] = 2 + local
        values = (1.0 - weight) * below + weight * field[tuple(own)]
    return PlaneSlice(axis, position, values, plane_start, coordinates)
