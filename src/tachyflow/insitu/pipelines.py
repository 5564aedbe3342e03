"""Visualisation pipelines of a case file (``[[insitu.pipeline]]``) and when they run.

A pipeline turns cell-centred fields into a picture (or a probe record) in three steps,
so the same code serves in situ and in transit:

1. ``extract`` on a piece of the fields with one ghost layer (a rank's piece in situ, the
   whole periodically padded field in transit): an isosurface, the piece's part of a
   slice, or the probe points the piece holds;
2. ``gather`` the pieces on one process (collective; nothing to do with one piece);
3. ``draw`` on that process: VTK for isosurfaces and slices, matplotlib for probe
   histories and statistics.

Kinds: ``slice`` (``field`` on the plane ``plane`` at ``position`` along its normal),
``isosurface`` (``field = value`` coloured by ``colour_by``), ``probes`` (``field`` at
``points``, appended to ``probes_<name>.csv`` and plotted), ``statistics`` (the run's
statistics history). Fields: u, v, w, p and ``speed`` (|u|), all at cell centres.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from tachyflow import collectives
from tachyflow.config import PipelineSection
from tachyflow.insitu.extract import extract_isosurface, extract_slice
from tachyflow.io.files import replacing
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.interpolation import CORNER_OFFSETS, interpolation_stencils

PLANE_NORMALS = {"yz": 0, "xz": 1, "xy": 2}


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
    """A whole periodic field with the one-cell ghost layer a piece would have."""
    return np.pad(field, 1, mode="wrap")


class Pipeline:
    """One ``[[insitu.pipeline]]`` entry (see the module docstring).

    Parameters
    ----------
    section : PipelineSection
        The entry.
    grid : StaggeredGrid
        Geometry of the whole grid.
    start_time : float
        Simulated time the cadence counts from.
    """

    def __init__(self, section: PipelineSection, grid: StaggeredGrid, start_time: float = 0.0):
        self.section = section
        self.name = section.name
        self.kind = section.kind
        self.grid = grid
        self.cadence = Cadence(section.every, section.every_time, start_time)
        colour = section.colour_by or section.field
        self.fields = (
            () if self.kind == "statistics" else tuple(dict.fromkeys((section.field, colour)))
        )
        self.value_range = None if section.range == (0.0, 0.0) else section.range
        self.points = np.array(section.points, dtype=np.float64).reshape(-1, 3)
        self._probe_history: list[list[float]] = []

    # -- 1: extract on a ghosted piece -------------------------------------------------

    def extract(self, fields: dict[str, np.ndarray], start):
        """This piece's share (``fields``: ghosted cell-centred pieces, ``start``: global
        index of the first own cell)."""
        section = self.section
        if self.kind == "slice":
            axis = PLANE_NORMALS[section.plane]
            return extract_slice(fields[section.field], self.grid, start, axis, section.position)
        if self.kind == "isosurface":
            colour = fields[section.colour_by or section.field]
            return extract_isosurface(
                fields[section.field], section.value, self.grid, start, colour_by=colour
            )
        if self.kind == "probes":
            return probe_values(fields[section.field], self.grid, start, self.points)
        return None

    # -- 2: gather (collective) --------------------------------------------------------

    def gather(self, comm, piece):
        """The whole result on rank 0 of ``comm`` (``None`` elsewhere)."""
        from tachyflow.insitu.render import gather_isosurface, gather_slice

        if comm is None or comm.Get_size() == 1:
            return piece
        if self.kind == "slice":
            return gather_slice(comm, piece)
        if self.kind == "isosurface":
            return gather_isosurface(comm, piece)
        if self.kind == "probes":
            # Each point has one owner; the others hold NaN, which counts as 0.
            found = collectives.reduce(comm, np.nan_to_num(piece, nan=0.0), "sum", 0, "native")
            if comm.Get_rank() != 0:
                return None
            return found
        return None

    # -- 3: draw (one process) ---------------------------------------------------------

    def draw(self, renderer, whole, folder, step: int, time: float, history) -> Path:
        """Draw the gathered result into ``folder``; returns the picture's path."""
        section = self.section
        path = Path(folder) / f"{self.name}_{step:08d}.png"
        title = f"{self.name}: {section.field}"
        if self.kind == "slice":
            return renderer.render_slice(
                whole, path, field=section.field, colour_map=section.colour_map,
                value_range=self.value_range, title=title, step=step, time=time,
            )  # fmt: skip
        if self.kind == "isosurface":
            box = (0.0, self.grid.lengths[0], 0.0, self.grid.lengths[1], 0.0, self.grid.lengths[2])
            return renderer.render_isosurface(
                whole, path, field=section.colour_by or section.field,
                colour_map=section.colour_map, value_range=self.value_range, bounds=box,
                title=f"{title} = {section.value:g}", step=step, time=time,
            )  # fmt: skip
        if self.kind == "probes":
            self._probe_history.append([step, time, *whole.tolist()])
            self._write_probes(Path(folder))
            return _plot_probes(
                self._probe_history, section.field, Path(folder) / f"{self.name}.png"
            )
        from tachyflow.insitu.plots import plot_history

        return plot_history(history, Path(folder) / f"{self.name}.png")

    def _write_probes(self, folder: Path) -> None:
        header = "step,time," + ",".join(f"probe_{i}" for i in range(len(self.points)))
        with replacing(folder / f"probes_{self.name}.csv") as temporary:
            np.savetxt(temporary, np.array(self._probe_history), delimiter=",", header=header)


def probe_values(field: np.ndarray, grid: StaggeredGrid, start, points: np.ndarray):
    """Trilinear values at ``points`` of a ghosted cell-centred piece; NaN for points in
    cells the piece does not own (each point has exactly one owner, which holds the whole
    stencil within its ghost layer)."""
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
    from tachyflow.io.figures import pyplot, save_figure

    plt = pyplot()
    record = np.array(history)
    figure, axis = plt.subplots(figsize=(7, 3.5))
    for index in range(record.shape[1] - 2):
        axis.plot(record[:, 1], record[:, 2 + index], label=f"probe {index}")
    axis.set_xlabel("t")
    axis.set_ylabel(field)
    axis.legend(fontsize="small")
    figure.tight_layout()
    return save_figure(figure, path, dpi=100)
