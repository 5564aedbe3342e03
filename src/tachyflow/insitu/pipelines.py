"""Visualisation pipelines of a case file (``[[insitu.pipeline]]``) and when they run.

A pipeline turns cell-centred fields into a picture (or a probe record) in three steps,
so the same code serves in situ and in transit:

1. ``extract`` on a piece of the fields with one ghost layer (a rank's piece in situ; in
   transit the cells the pipeline reads, :attr:`Pipeline.cells`, periodically padded:
   the whole grid, two layers for a slice, the box of the stencils for probes, since a
   step carries each field only on the cells its due pipelines read): an isosurface, the
   piece's part of a slice, or the probe points the piece holds;
2. ``gather`` the pieces on one process (collective; nothing to do with one piece);
3. ``draw`` on that process: VTK for isosurfaces and slices, matplotlib for probe
   histories and statistics.

Each kind is one :class:`Pipeline` subclass registered by name with
:func:`register_pipeline`; the case file's ``kind`` picks it, and the names registered
are the kinds a case may use. Built in: ``slice`` (``field`` on the plane ``plane`` at
``position`` along its normal), ``isosurface`` (``field = value`` coloured by
``colour_by``), ``probes`` (``field`` at ``points``, appended to ``probes_<name>.csv`` and
plotted), ``statistics`` (the run's statistics history). Fields: u, v, w, p and ``speed``
(|u|), all at cell centres.

Reading a case file imports this module to check the kinds: heavy modules (VTK, numba,
the collectives) are imported where a pipeline first needs them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.insitu.boxes import CellBox
from tachyflow.insitu.extract import extract_isosurface, extract_slice, slice_cells
from tachyflow.insitu.options import (
    KIND_OPTIONS,
    IsosurfaceSection,
    PipelineSection,
    ProbesSection,
    SliceSection,
)
from tachyflow.io.files import replacing
from tachyflow.registry import Registry

if TYPE_CHECKING:
    from tachyflow.numerics.grid import StaggeredGrid

PLANE_NORMALS = {"yz": 0, "xz": 1, "xy": 2}


def register_pipeline(kind: str):
    """Class decorator: make a :class:`Pipeline` subclass the pipeline of ``kind`` in case
    files (``[[insitu.pipeline]] kind = "..."``), its entries read with its ``options``."""

    def add(cls):
        _KINDS.add(cls, kind)
        KIND_OPTIONS[kind] = cls.options
        return cls

    return add


def kinds() -> tuple[str, ...]:
    """The pipeline kinds a case may use: built-ins, then plug-ins'."""
    from tachyflow import plugins

    plugins.load()
    return tuple(_KINDS.classes())


def pipeline_class(kind: str) -> type[Pipeline]:
    """The pipeline registered as ``kind``."""
    known = kinds()
    if kind not in known:
        raise ConfigError(f"insitu.pipeline kind must be one of {known}, got {kind!r}")
    return _KINDS[kind]


class Cadence:
    """When a pipeline is due: every ``every`` steps, or each time the simulated time
    passes the next multiple of ``every_time`` (counted from ``start``)."""

    def __init__(self, every: int, every_time: float, start: float = 0.0):
        self.every, self.every_time = every, every_time
        self.next_time = start + every_time

    def due(self, step: int, time: float) -> bool:
        """Whether the pipeline runs after ``step``; advances the time cadence."""
        if self.every:
            return step % self.every == 0
        if time + 1e-12 * max(abs(time), 1.0) < self.next_time:
            return False
        passed = math.floor((time - self.next_time) / self.every_time) + 1
        self.next_time += passed * self.every_time
        return True


def padded(field: np.ndarray) -> np.ndarray:
    """Cells of a field with the one-cell ghost layer a piece would have, filled
    periodically: the true ghosts along periodic axes the cells span whole (a slice's
    layers need none along its normal)."""
    return np.pad(field, 1, mode="wrap")


class Pipeline:
    """One ``[[insitu.pipeline]]`` entry (see the module docstring).

    ``Pipeline(section, grid)`` builds the subclass registered for ``section.kind``. A new
    kind subclasses this class, registers it with :func:`register_pipeline` and overrides
    :meth:`draw`, and :meth:`extract` and :meth:`gather_pieces` when it has something to
    extract (the defaults extract and gather nothing).

    Parameters
    ----------
    section : PipelineSection
        The entry.
    grid : StaggeredGrid
        Geometry of the whole grid.
    start_time : float
        Simulated time the cadence counts from.

    Notes
    -----
    :meth:`extract` and :meth:`draw` are local; :meth:`gather` is collective over the
    communicator it is given.
    """

    kind: ClassVar[str]
    #: The options of an entry of this kind: :class:`PipelineSection` or a subclass adding
    #: the kind's keys (and checks).
    options: ClassVar[type] = PipelineSection
    #: Whether :meth:`draw` reads the run's statistics history.
    draws_history: ClassVar[bool] = False
    #: Whether :meth:`draw` needs a VTK :class:`~tachyflow.insitu.render.SceneRenderer`.
    draws_scene: ClassVar[bool] = False

    def __new__(cls, section: PipelineSection, grid: StaggeredGrid, start_time: float = 0.0):
        if cls is Pipeline:
            cls = pipeline_class(section.kind)
        return super().__new__(cls)

    def __init__(self, section: PipelineSection, grid: StaggeredGrid, start_time: float = 0.0):
        self.section = section
        self.name = section.name
        self.grid = grid
        self.cadence = Cadence(section.every, section.every_time, start_time)
        #: The fields :meth:`extract` reads.
        self.fields = (section.field,)
        self.value_range = None if section.range == (0.0, 0.0) else section.range

    @property
    def cells(self) -> CellBox:
        """The global cells whose values :meth:`extract` reads: what a transit step must
        carry of :attr:`fields` for this pipeline (the whole grid unless a kind says less)."""
        return CellBox.whole(self.grid.shape)

    # -- 1: extract on a ghosted piece -------------------------------------------------

    def extract(self, fields: dict[str, np.ndarray], start):
        """This piece's share (``fields``: ghosted cell-centred pieces, ``start``: global
        index of the first own cell); None when the kind extracts nothing."""
        return None

    # -- 2: gather (collective) --------------------------------------------------------

    def gather(self, comm, piece):
        """The whole result on rank 0 of ``comm`` (``None`` elsewhere)."""
        if comm is None or comm.Get_size() == 1:
            return piece
        return self.gather_pieces(comm, piece)

    def gather_pieces(self, comm, piece):
        """The pieces of two or more ranks joined on rank 0 (collective)."""
        return None

    # -- 3: draw (one process) ---------------------------------------------------------

    def draw(self, renderer, whole, folder, step: int, time: float, history) -> Path:
        """Draw the gathered result into ``folder``; returns the picture's path."""
        raise NotImplementedError

    def _picture(self, folder, step: int) -> Path:
        return Path(folder) / f"{self.name}_{step:08d}.png"

    def _title(self) -> str:
        return f"{self.name}: {self.section.field}"


_KINDS = Registry("pipeline kind", Pipeline, attribute="kind")


@register_pipeline("slice")
class SlicePipeline(Pipeline):
    """``field`` on the plane ``plane`` at ``position`` along its normal (VTK)."""

    options = SliceSection
    draws_scene = True

    @property
    def cells(self) -> CellBox:
        """The one or two cell layers the plane is interpolated from."""
        return slice_cells(self.grid, PLANE_NORMALS[self.section.plane], self.section.position)

    def extract(self, fields, start):
        section = self.section
        axis = PLANE_NORMALS[section.plane]
        return extract_slice(fields[section.field], self.grid, start, axis, section.position)

    def gather_pieces(self, comm, piece):
        from tachyflow.insitu.render import gather_slice

        return gather_slice(comm, piece)

    def draw(self, renderer, whole, folder, step, time, history) -> Path:
        section = self.section
        return renderer.render_slice(
            whole, self._picture(folder, step), field=section.field,
            colour_map=section.colour_map, value_range=self.value_range, title=self._title(),
            step=step, time=time,
        )


@register_pipeline("isosurface")
class IsosurfacePipeline(Pipeline):
    """The surface ``field = value``, coloured by ``colour_by`` (VTK)."""

    options = IsosurfaceSection
    draws_scene = True

    def __init__(self, section, grid, start_time: float = 0.0):
        super().__init__(section, grid, start_time)
        self.fields = tuple(dict.fromkeys((section.field, section.colour_by or section.field)))

    def extract(self, fields, start):
        section = self.section
        colour = fields[section.colour_by or section.field]
        return extract_isosurface(
            fields[section.field], section.value, self.grid, start, colour_by=colour
        )

    def gather_pieces(self, comm, piece):
        from tachyflow.insitu.render import gather_isosurface

        return gather_isosurface(comm, piece)

    def draw(self, renderer, whole, folder, step, time, history) -> Path:
        section = self.section
        box = (0.0, self.grid.lengths[0], 0.0, self.grid.lengths[1], 0.0, self.grid.lengths[2])
        return renderer.render_isosurface(
            whole, self._picture(folder, step), field=section.colour_by or section.field,
            colour_map=section.colour_map, value_range=self.value_range, bounds=box,
            title=f"{self._title()} = {section.value:g}", step=step, time=time,
        )


@register_pipeline("probes")
class ProbesPipeline(Pipeline):
    """``field`` at ``points``: appended to ``probes_<name>.csv`` and plotted."""

    options = ProbesSection

    def __init__(self, section, grid, start_time: float = 0.0):
        super().__init__(section, grid, start_time)
        self.points = np.array(section.points, dtype=np.float64).reshape(-1, 3)
        self._cells = probe_cells(grid, self.points)
        self._history: list[list[float]] = []

    @property
    def cells(self) -> CellBox:
        """The cells the points' stencils read (see :func:`probe_cells`)."""
        return self._cells

    def extract(self, fields, start):
        return probe_values(fields[self.section.field], self.grid, start, self.points)

    def gather_pieces(self, comm, piece):
        from tachyflow import collectives

        # Each point has one owner; the others hold NaN, which counts as 0.
        found = collectives.reduce(comm, np.nan_to_num(piece, nan=0.0), "sum", 0, "native")
        return found if comm.Get_rank() == 0 else None

    def draw(self, renderer, whole, folder, step, time, history) -> Path:
        folder = Path(folder)
        self._history.append([step, time, *whole.tolist()])
        header = "step,time," + ",".join(f"probe_{i}" for i in range(len(self.points)))
        with replacing(folder / f"probes_{self.name}.csv") as temporary:
            np.savetxt(temporary, np.array(self._history), delimiter=",", header=header)
        return _plot_probes(self._history, self.section.field, folder / f"{self.name}.png")


@register_pipeline("statistics")
class StatisticsPipeline(Pipeline):
    """The run's statistics history, redrawn (matplotlib); reads no field."""

    draws_history = True

    def __init__(self, section, grid, start_time: float = 0.0):
        super().__init__(section, grid, start_time)
        self.fields = ()

    def draw(self, renderer, whole, folder, step, time, history) -> Path:
        from tachyflow.insitu.plots import plot_history

        return plot_history(history, Path(folder) / f"{self.name}.png")


def probe_cells(grid: StaggeredGrid, points: np.ndarray) -> CellBox:
    """The smallest box holding, for every point, the cell that owns it and the cells of
    its trilinear stencil of cell-centred values; the whole axis where a stencil wraps
    around the end of a periodic axis (its cells are not contiguous then)."""
    from tachyflow.numerics.interpolation import interpolation_stencils

    stencils = interpolation_stencils(grid, points)
    lower = stencils.lower[:, 3, :]  # cell-centred values: the stencils of p
    first = np.minimum(stencils.cells, lower).min(axis=0)
    stop = np.maximum(stencils.cells + 1, lower + 2).max(axis=0)
    start, shape = [0, 0, 0], list(grid.shape)
    for axis, cells in enumerate(grid.shape):
        if 0 <= first[axis] and stop[axis] <= cells:
            start[axis], shape[axis] = int(first[axis]), int(stop[axis] - first[axis])
    return CellBox(tuple(start), tuple(shape))


def probe_values(field: np.ndarray, grid: StaggeredGrid, start, points: np.ndarray):
    """Trilinear values at ``points`` of a ghosted cell-centred piece; NaN for points in
    cells the piece does not own (each point has exactly one owner, which holds the whole
    stencil within its ghost layer)."""
    from tachyflow.numerics.interpolation import CORNER_OFFSETS, interpolation_stencils

    stencils = interpolation_stencils(grid, points)
    offset = np.asarray(start, dtype=np.int64)
    interior = np.array(field.shape) - 2
    relative = stencils.cells - offset
    own = np.all((relative >= 0) & (relative < interior), axis=1)
    # Cell-centred values use the stencils of p (index 3 of u, v, w, p).
    corners = (stencils.lower[own, 3, :] - offset + 1)[:, None, :] + CORNER_OFFSETS[None]
    values = np.full(len(points), np.nan)
    samples = field[corners[..., 0], corners[..., 1], corners[..., 2]]
    values[own] = np.sum(stencils.weights[own, 3, :] * samples, axis=1)
    return values


def _plot_probes(history: list[list[float]], field: str, path: Path) -> Path:
    from tachyflow.io.figures import new_subplots, save_figure

    record = np.array(history)
    figure, axis = new_subplots(figsize=(7, 3.5))
    for index in range(record.shape[1] - 2):
        axis.plot(record[:, 1], record[:, 2 + index], label=f"probe {index}")
    axis.set_xlabel("t")
    axis.set_ylabel(field)
    axis.legend(fontsize="small")
    figure.tight_layout()
    return save_figure(figure, path, dpi=100)
