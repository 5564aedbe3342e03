"""Offscreen VTK pictures of isosurfaces and slices, and gathering their pieces over MPI.

In situ, every rank extracts its piece (:mod:`tachyflow.insitu.extract`),
:func:`gather_isosurface` / :func:`gather_slice` assemble the pieces on rank 0 and rank 0
draws them with a :class:`SceneRenderer`; in transit, a reader that holds whole fields
extracts and draws them itself, with no gathering.

Offscreen rendering needs no X server. VTK's wheels choose the OpenGL window class at run
time from ``VTK_DEFAULT_OPENGL_WINDOW``, read whenever a render window is created. Unset,
VTK tries an X server first (a warning on every window where there is none), then EGL,
then OSMesa. This module sets it to ``vtkEGLRenderWindow`` unless the user chose one:
EGL renders on a GPU's driver when there is one and otherwise on Mesa's llvmpipe (Debian
packages ``libegl1``, ``libegl-mesa0``, ``libgl1-mesa-dri``). If EGL cannot start, VTK
itself falls back to OSMesa (``libosmesa6``). A window that got no OpenGL context at all
would crash VTK at its first render, so :class:`SceneRenderer` checks for one when it is
built and raises :class:`OffscreenRenderingUnavailable` naming the packages instead.
"""

from __future__ import annotations

import os

# Before any VTK rendering module is loaded (the module docstring says why).
os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")

from pathlib import Path

import numpy as np

# Imported for what loading them does: register the text renderer and the OpenGL back end.
import vtkmodules.vtkRenderingFreeType
import vtkmodules.vtkRenderingOpenGL2  # noqa: F401
from vtkmodules.util.numpy_support import numpy_to_vtk, numpy_to_vtkIdTypeArray
from vtkmodules.vtkCommonCore import vtkLookupTable, vtkPoints
from vtkmodules.vtkCommonDataModel import (
    vtkCellArray,
    vtkPolyData,
    vtkRectilinearGrid,
)
from vtkmodules.vtkFiltersCore import vtkPolyDataNormals, vtkStaticCleanPolyData
from vtkmodules.vtkFiltersSources import vtkOutlineSource
from vtkmodules.vtkIOImage import vtkPNGWriter
from vtkmodules.vtkRenderingAnnotation import vtkScalarBarActor
from vtkmodules.vtkRenderingCore import (
    vtkActor,
    vtkCoordinate,
    vtkDataSetMapper,
    vtkPolyDataMapper,
    vtkRenderer,
    vtkRenderWindow,
    vtkTextActor,
    vtkWindowToImageFilter,
)

from tachyflow.insitu.extract import Isosurface, PlaneSlice
from tachyflow.io.files import replacing
from tachyflow.parallel.pieces import allgather_small, gather_rows, gather_small

#: Share of the window width left of the colour bar.
SCENE_WIDTH = 0.82
#: Unit vectors: direction of projection and view-up of a slice picture, per plane normal.
#: Shown are (z, y) for an x-plane, (x, z) for a y-plane and (x, y) for a z-plane, each
#: with the first axis to the right and the second up.
SLICE_VIEWS = {
    0: ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    1: ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    2: ((0.0, 0.0, -1.0), (0.0, 1.0, 0.0)),
}
#: Where an isosurface is seen from (a direction from the centre of the box), y up.
SURFACE_VIEW = (0.6, 0.5, 1.0)
#: Space around a slice, as a factor on the half height that fits it.
SLICE_MARGIN = 1.15
LOOKUP_ENTRIES = 256
#: zlib level of the PNG files. Encoding dominates a frame's cost: measured on an
#: 800 × 600 frame, level 1 takes about 25 ms against 60 ms for VTK's default 5, for a
#: file about a third larger.
PNG_COMPRESSION = 1


class OffscreenRenderingUnavailable(RuntimeError):
    """No OpenGL context could be made without a display (EGL and OSMesa both failed)."""


def colour_map_table(name: str) -> np.ndarray:
    """The RGBA bytes (256 × 4, uint8) of a matplotlib colour map, for a lookup table.

    The pictures share matplotlib's colour maps with the statistics plots, so a name
    means the same colours everywhere.
    """
    import matplotlib

    if not isinstance(name, str) or name not in matplotlib.colormaps:
        raise ValueError(
            f"unknown colour map {name!r}; expected a matplotlib colour map name such as "
            f"'viridis', 'coolwarm' or 'RdBu_r'"
        )
    colours = matplotlib.colormaps[name].resampled(LOOKUP_ENTRIES)(np.arange(LOOKUP_ENTRIES))
    return np.round(colours * 255).astype(np.uint8)


def _check_range(value_range) -> tuple[float, float] | None:
    if value_range is None:
        return None
    try:
        low, high = (float(v) for v in value_range)
    except (TypeError, ValueError):
        raise TypeError(
            f"value_range must be None or two numbers (low, high), got {value_range!r}"
        ) from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"value_range must be two finite numbers low < high, got {value_range!r}")
    return low, high


def _automatic_range(values: np.ndarray) -> tuple[float, float]:
    """The finite extremes of ``values``; a constant maps to the middle of the colours."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())
    if low == high:
        pad = max(abs(low) * 1e-6, 1e-30)
        return low - pad, high + pad
    return low, high


def _annotation(title: str | None, step: int | None, time: float | None) -> str:
    lines = [] if title is None else [str(title)]
    when = []
    if step is not None:
        when.append(f"step {int(step)}")
    if time is not None:
        when.append(f"t = {float(time):.6g}")
    if when:
        lines.append(", ".join(when))
    return "\n".join(lines)


class SceneRenderer:
    """An offscreen VTK scene kept between frames: isosurfaces and slices to PNG files.

    The window, renderers, lookup table, colour bar, annotation, camera and the two
    pipelines (surface: merge seam vertices, smooth normals, map; slice: rectilinear
    grid, map) are built once; a frame only swaps the data, which VTK re-executes.
    Nothing here is collective: build it on the process that draws (rank 0 in situ, the
    reader in transit).

    Parameters
    ----------
    size : (int, int)
        Width and height of the pictures in pixels.
    colour_map : str
        Default matplotlib colour map name.
    background : (float, float, float)
        Background colour, RGB in [0, 1].

    Raises
    ------
    OffscreenRenderingUnavailable
        When neither EGL nor OSMesa gives an OpenGL context.
    """

    def __init__(self, size=(800, 600), colour_map: str = "viridis", background=(1, 1, 1)):
        if (
            len(size) != 2
            or any(not isinstance(n, int | np.integer) or isinstance(n, bool) for n in size)
            or min(size) < 16
        ):
            raise ValueError(f"size must be two integers >= 16 (width, height), got {size!r}")
        background = tuple(float(c) for c in background)
        if len(background) != 3 or not all(0.0 <= c <= 1.0 for c in background):
            raise ValueError(f"background must be 3 numbers in [0, 1], got {background!r}")
        self.size = (int(size[0]), int(size[1]))
        self.colour_map = colour_map
        self._lookup = vtkLookupTable()
        self._lookup.SetNumberOfTableValues(LOOKUP_ENTRIES)
        self._lookup.SetNanColor(0.5, 0.5, 0.5, 1.0)
        self._lookup_name = None
        self._use_colour_map(colour_map)  # checks the name before any window exists
        self._window = self._offscreen_window()
        ink = (0.0, 0.0, 0.0) if sum(background) > 1.5 else (1.0, 1.0, 1.0)

        self._scene = vtkRenderer()
        self._scene.SetViewport(0.0, 0.0, SCENE_WIDTH, 1.0)
        self._scene.SetBackground(*background)
        self._bar_panel = vtkRenderer()
        self._bar_panel.SetViewport(SCENE_WIDTH, 0.0, 1.0, 1.0)
        self._bar_panel.SetBackground(*background)
        self._bar_panel.InteractiveOff()
        self._window.AddRenderer(self._scene)
        self._window.AddRenderer(self._bar_panel)

        self._scalar_bar = vtkScalarBarActor()
        self._scalar_bar.SetLookupTable(self._lookup)
        self._scalar_bar.SetNumberOfLabels(5)
        self._scalar_bar.SetMaximumNumberOfColors(LOOKUP_ENTRIES)
        self._scalar_bar.SetVerticalTitleSeparation(max(4, self.size[1] // 60))
        self._scalar_bar.SetLabelFormat("%-#8.3g")
        self._scalar_bar.SetPosition(0.08, 0.08)
        self._scalar_bar.SetWidth(0.8)
        self._scalar_bar.SetHeight(0.84)
        self._scalar_bar.UnconstrainedFontSizeOn()
        for text in (
            self._scalar_bar.GetTitleTextProperty(),
            self._scalar_bar.GetLabelTextProperty(),
        ):
            text.SetColor(*ink)
            text.ShadowOff()
            text.ItalicOff()
            text.SetFontSize(max(10, self.size[1] // 40))
        self._bar_panel.AddViewProp(self._scalar_bar)

        self._annotation = vtkTextActor()
        placement = self._annotation.GetPositionCoordinate()
        placement.SetCoordinateSystemToNormalizedViewport()
        placement.SetValue(0.02, 0.98)
        text = self._annotation.GetTextProperty()
        text.SetColor(*ink)
        text.SetFontSize(max(10, self.size[1] // 32))
        text.SetVerticalJustificationToTop()
        self._scene.AddViewProp(self._annotation)

        # Surface: pieces meet on duplicated seam vertices; merging them (exact matches
        # only) lets the normals be averaged across the seams, so no seam shows.
        self._surface = vtkPolyData()
        merge = vtkStaticCleanPolyData()
        merge.SetInputData(self._surface)
        merge.ToleranceIsAbsoluteOn()
        merge.SetAbsoluteTolerance(0.0)
        normals = vtkPolyDataNormals()
        normals.SetInputConnection(merge.GetOutputPort())
        normals.SplittingOff()
        normals.ConsistencyOff()  # flying edges orients every triangle already
        normals.ComputeCellNormalsOff()
        self._surface_mapper = vtkPolyDataMapper()
        self._surface_mapper.SetInputConnection(normals.GetOutputPort())
        self._surface_mapper.SetLookupTable(self._lookup)
        self._surface_mapper.SetScalarModeToUsePointData()
        self._surface_mapper.InterpolateScalarsBeforeMappingOn()
        self._surface_actor = vtkActor()
        self._surface_actor.SetMapper(self._surface_mapper)
        self._surface_actor.GetProperty().SetColor(0.8, 0.8, 0.85)
        self._scene.AddActor(self._surface_actor)

        self._outline = vtkOutlineSource()
        outline_mapper = vtkPolyDataMapper()
        outline_mapper.SetInputConnection(self._outline.GetOutputPort())
        self._outline_actor = vtkActor()
        self._outline_actor.SetMapper(outline_mapper)
        self._outline_actor.GetProperty().SetColor(*ink)
        self._outline_actor.GetProperty().LightingOff()
        self._scene.AddActor(self._outline_actor)

        self._slice = vtkRectilinearGrid()
        self._slice_mapper = vtkDataSetMapper()
        self._slice_mapper.SetInputData(self._slice)
        self._slice_mapper.SetLookupTable(self._lookup)
        self._slice_mapper.SetScalarModeToUsePointData()
        # Colour each pixel from the interpolated value, not by blending vertex colours:
        # the pixel then shows exactly the colour map's colour of the field there.
        self._slice_mapper.InterpolateScalarsBeforeMappingOn()
        self._slice_actor = vtkActor()
        self._slice_actor.SetMapper(self._slice_mapper)
        self._slice_actor.GetProperty().LightingOff()  # unshaded: colours read true
        self._scene.AddActor(self._slice_actor)

        self._grabber = vtkWindowToImageFilter()
        self._grabber.SetInput(self._window)
        self._grabber.SetInputBufferTypeToRGB()
        self._grabber.ReadFrontBufferOff()
        self._writer = vtkPNGWriter()
        self._writer.SetCompressionLevel(PNG_COMPRESSION)
        self._writer.SetInputConnection(self._grabber.GetOutputPort())

    def _offscreen_window(self) -> vtkRenderWindow:
        window = vtkRenderWindow()
        window.SetOffScreenRendering(True)
        window.SetMultiSamples(0)
        window.SetSize(*self.size)
        window.Initialize()
        if not window.IsCurrent():
            raise OffscreenRenderingUnavailable(
                f"VTK found no offscreen OpenGL context (requested "
                f"VTK_DEFAULT_OPENGL_WINDOW={os.environ.get('VTK_DEFAULT_OPENGL_WINDOW')}, "
                f"last tried {window.GetClassName()}); install EGL with Mesa (Debian: "
                f"libegl1 libegl-mesa0 libgl1-mesa-dri) or OSMesa (Debian: libosmesa6)"
            )
        return window

    @property
    def backend(self) -> str:
        """VTK's class of the render window in use (``vtkEGLRenderWindow``, ...)."""
        return self._window.GetClassName()

    def _use_colour_map(self, name: str) -> None:
        """Refill the shared lookup table when the colour map changes."""
        if name != self._lookup_name:
            self._lookup.SetTable(numpy_to_vtk(colour_map_table(name), deep=True))
            self._lookup_name = name

    def _colour(self, values, field, colour_map, value_range) -> None:
        """Set the colour map, its range and the colour bar for this frame."""
        low, high = _check_range(value_range) or _automatic_range(values)
        self._use_colour_map(self.colour_map if colour_map is None else colour_map)
        self._lookup.SetTableRange(low, high)
        self._scalar_bar.SetTitle("" if field is None else str(field))
        self._scalar_bar.VisibilityOn()
        for mapper in (self._surface_mapper, self._slice_mapper):
            mapper.SetScalarRange(low, high)

    def render_isosurface(
        self,
        surface: Isosurface,
        path,
        *,
        field: str | None = None,
        colour_map: str | None = None,
        value_range=None,
        bounds=None,
        title: str | None = None,
        step: int | None = None,
        time: float | None = None,
    ) -> Path:
        """Draw ``surface`` (lit, coloured by its scalars if it has any) to a PNG file.

        Parameters
        ----------
        surface : Isosurface
            The whole surface (gathered, or extracted from whole fields).
        path : path
            PNG file, written atomically.
        field : str, optional
            Name of the colouring field, the colour bar's title.
        colour_map : str, optional
            matplotlib colour map name; default the renderer's.
        value_range : (float, float), optional
            Values at the ends of the colour map; default the scalars' extremes.
        bounds : (xmin, xmax, ymin, ymax, zmin, zmax), optional
            Box the camera frames, drawn as an outline; give the domain so that frames of
            a series share one view. Default: the surface's own bounds, no outline.
        title, step, time : optional
            Annotation at the top left: the title, then "step N, t = T".
        """
        if not isinstance(surface, Isosurface):
            raise TypeError(f"surface must be an Isosurface, got {type(surface).__name__}")
        framed = bounds is not None
        if framed:
            bounds = self._check_bounds(bounds)
            self._outline.SetBounds(*bounds)
        elif len(surface.points):
            corners = surface.points.astype(np.float64)
            bounds = np.column_stack([corners.min(axis=0), corners.max(axis=0)]).ravel()
        else:
            bounds = (0.0, 1.0) * 3
        coloured = surface.scalars is not None
        if coloured:
            self._colour(surface.scalars, field, colour_map, value_range)
        else:
            self._scalar_bar.VisibilityOff()

        points = vtkPoints()
        points.SetData(numpy_to_vtk(surface.points, deep=True))
        triangles = vtkCellArray()
        connectivity = surface.triangles.astype(np.int64).ravel()
        triangles.SetData(3, numpy_to_vtkIdTypeArray(connectivity, deep=True))
        self._surface.SetPoints(points)
        self._surface.SetPolys(triangles)
        self._surface.GetPointData().Initialize()
        if coloured:
            scalars = numpy_to_vtk(surface.scalars, deep=True)
            scalars.SetName("colour")
            self._surface.GetPointData().SetScalars(scalars)
        self._surface.Modified()
        self._surface_mapper.SetScalarVisibility(coloured)
        self._surface_actor.VisibilityOn()
        self._outline_actor.SetVisibility(framed)
        self._slice_actor.VisibilityOff()

        centre = np.reshape(bounds, (3, 2)).mean(axis=1)
        camera = self._scene.GetActiveCamera()
        camera.ParallelProjectionOff()
        camera.SetFocalPoint(*centre)
        camera.SetPosition(*(centre + np.array(SURFACE_VIEW)))
        camera.SetViewUp(0.0, 1.0, 0.0)
        self._scene.ResetCamera(*(float(b) for b in bounds))
        return self._write(path, title, step, time)

    @staticmethod
    def _check_bounds(bounds) -> tuple[float, ...]:
        try:
            bounds = tuple(float(b) for b in bounds)
        except (TypeError, ValueError):
            raise TypeError(f"bounds must be 6 numbers, got {bounds!r}") from None
        if len(bounds) != 6 or not all(
            np.isfinite(bounds[2 * a]) and bounds[2 * a] <= bounds[2 * a + 1] for a in range(3)
        ):
            raise ValueError(
                f"bounds must be 6 finite numbers (xmin, xmax, ymin, ymax, zmin, zmax) with "
                f"each min <= max, got {bounds!r}"
            )
        return bounds

    def render_slice(
        self,
        plane: PlaneSlice,
        path,
        *,
        field: str | None = None,
        colour_map: str | None = None,
        value_range=None,
        title: str | None = None,
        step: int | None = None,
        time: float | None = None,
    ) -> Path:
        """Draw a whole slice (gathered, or extracted from whole fields) to a PNG file.

        The plane sits at its place in space, seen along its normal with a parallel
        projection: (z, y) for an x-plane, (x, z) for a y-plane, (x, y) for a z-plane,
        first axis to the right. Values are interpolated between cell centres and the
        picture spans the first to the last centre. Parameters as
        :meth:`render_isosurface`.
        """
        if not isinstance(plane, PlaneSlice):
            raise TypeError(f"plane must be a PlaneSlice, got {type(plane).__name__}")
        if min(plane.values.shape) < 1:
            raise ValueError("cannot draw an empty slice (a piece the plane does not cross)")
        # VTK runs the lower axis fastest: the transposed C-ordered values.
        values = np.ascontiguousarray(plane.values.T, dtype=np.float64).ravel()
        self._colour(values, field, colour_map, value_range)
        coordinates = [None, None, None]
        coordinates[plane.axis] = np.array([plane.position])
        for axis, centres in zip(plane.plane_axes, plane.coordinates, strict=True):
            coordinates[axis] = np.asarray(centres, dtype=np.float64)
        self._slice.SetDimensions(*(len(c) for c in coordinates))
        self._slice.SetXCoordinates(numpy_to_vtk(coordinates[0], deep=True))
        self._slice.SetYCoordinates(numpy_to_vtk(coordinates[1], deep=True))
        self._slice.SetZCoordinates(numpy_to_vtk(coordinates[2], deep=True))
        scalars = numpy_to_vtk(values, deep=True)
        scalars.SetName("values")
        self._slice.GetPointData().SetScalars(scalars)
        self._slice.Modified()
        self._surface_actor.VisibilityOff()
        self._outline_actor.VisibilityOff()
        self._slice_actor.VisibilityOn()

        low = np.array([c[0] for c in coordinates])
        high = np.array([c[-1] for c in coordinates])
        centre = 0.5 * (low + high)
        projection, up = (np.array(v) for v in SLICE_VIEWS[plane.axis])
        right = np.cross(projection, up)
        extent = high - low
        width, height = abs(right @ extent), abs(up @ extent)
        aspect = SCENE_WIDTH * self.size[0] / self.size[1]
        camera = self._scene.GetActiveCamera()
        camera.ParallelProjectionOn()
        camera.SetFocalPoint(*centre)
        camera.SetPosition(*(centre - projection * (1.0 + np.abs(extent).max())))
        camera.SetViewUp(*up)
        camera.SetParallelScale(SLICE_MARGIN * max(0.5 * height, 0.5 * width / aspect, 1e-30))
        self._scene.ResetCameraClippingRange()
        return self._write(path, title, step, time)

    def _write(self, path, title, step, time) -> Path:
        text = _annotation(title, step, time)
        self._annotation.SetInput(text)
        self._annotation.SetVisibility(bool(text))
        self._window.Render()
        self._grabber.Modified()
        with replacing(path) as temporary:
            self._writer.SetFileName(str(temporary))
            self._writer.Write()
        return Path(path)

    def world_to_pixel(self, point) -> tuple[float, float]:
        """Where a point of space lands in the last picture: (column, row), row 0 at top.

        Pixel ``(c, r)`` of the PNG covers columns ``[c, c + 1)`` and rows ``[r, r + 1)``.
        """
        coordinate = vtkCoordinate()
        coordinate.SetCoordinateSystemToWorld()
        coordinate.SetValue(*(float(v) for v in point))
        column, up = coordinate.GetComputedDoubleDisplayValue(self._scene)
        return column, self.size[1] - up

    def close(self) -> None:
        """Release the OpenGL context."""
        self._window.Finalize()

    def __enter__(self) -> SceneRenderer:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def gather_isosurface(comm, surface: Isosurface, root: int = 0) -> Isosurface | None:
    """Every rank's piece of an isosurface, joined on ``root`` (collective over ``comm``).

    The arrays travel with ``Gatherv`` (no pickling: surfaces can be large). Returns the
    whole surface on ``root`` and ``None`` elsewhere. Raises ``ValueError`` on every rank
    when some pieces are coloured and others not.
    """
    if not isinstance(surface, Isosurface):
        raise TypeError(f"surface must be an Isosurface, got {type(surface).__name__}")
    sizes = allgather_small(
        comm, (len(surface.points), len(surface.triangles), surface.scalars is not None)
    )
    if len({coloured for _, _, coloured in sizes}) != 1:
        raise ValueError("some ranks' isosurface pieces carry scalars and some do not")
    point_counts = np.array([n for n, _, _ in sizes])
    triangle_counts = np.array([m for _, m, _ in sizes])
    points = gather_rows(comm, surface.points, point_counts, np.float32, root)
    triangles = gather_rows(comm, surface.triangles, triangle_counts, np.int32, root)
    scalars = None
    if sizes[0][2]:
        scalars = gather_rows(comm, surface.scalars, point_counts, np.float32, root)
    if comm.Get_rank() != root:
        return None
    point_offsets = np.concatenate([[0], np.cumsum(point_counts)[:-1]])
    triangles = triangles.astype(np.int64)
    triangles += np.repeat(point_offsets, triangle_counts)[:, None]
    return Isosurface(points, triangles, scalars)


def gather_slice(comm, piece: PlaneSlice, root: int = 0) -> PlaneSlice | None:
    """Every rank's piece of a slice, assembled on ``root`` (collective over ``comm``).

    Slices are small (two dimensions), so the pieces travel pickled. Returns the whole
    slice on ``root`` and ``None`` elsewhere; raises ``ValueError`` on ``root`` when the
    pieces disagree on the plane or do not tile it exactly once.
    """
    if not isinstance(piece, PlaneSlice):
        raise TypeError(f"piece must be a PlaneSlice, got {type(piece).__name__}")
    pieces = gather_small(comm, piece if piece.values.size else (piece.axis, piece.position), root)
    if comm.Get_rank() != root:
        return None
    planes = {p[:2] if isinstance(p, tuple) else (p.axis, p.position) for p in pieces}
    if len(planes) != 1:
        raise ValueError(f"slice pieces lie on different planes (axis, position): {planes}")
    pieces = [p for p in pieces if isinstance(p, PlaneSlice)]
    if not pieces:
        raise ValueError(f"no rank's piece crosses the plane (axis, position) {planes.pop()}")
    shape = tuple(max(p.start[a] + p.values.shape[a] for p in pieces) for a in range(2))
    values = np.empty(shape, np.result_type(*(p.values.dtype for p in pieces)))
    coordinates = (np.empty(shape[0]), np.empty(shape[1]))
    covered = np.zeros(shape, np.int64)
    for p in pieces:
        cells = tuple(slice(s, s + n) for s, n in zip(p.start, p.values.shape, strict=True))
        values[cells] = p.values
        covered[cells] += 1
        for a in range(2):
            coordinates[a][cells[a]] = p.coordinates[a]
    if not np.all(covered == 1):
        raise ValueError(
            f"slice pieces do not tile the {shape} plane exactly once "
            f"({np.count_nonzero(covered == 0)} cells missing, "
            f"{np.count_nonzero(covered > 1)} covered twice)"
        )
    return PlaneSlice(pieces[0].axis, pieces[0].position, values, (0, 0), coordinates)
