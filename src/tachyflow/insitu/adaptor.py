"""The one hook between a run's time loop and visualisation (``[insitu]`` of a case).

:class:`VisualisationAdaptor` is called after every step (:meth:`after_step`); the solver
knows nothing else about visualisation. For the pipelines that are due it makes the
cell-centred fields with one ghost layer (one halo exchange per field), then

- ``insitu`` pipelines: every rank extracts its piece, rank 0 gathers and draws
  (``images/<pipeline>_<step>.png``);
- ``transit`` pipelines: the fields they need, on the cells they read (two layers for a
  slice, the stencils' box for probes), go to the in-transit stream
  (:class:`~tachyflow.insitu.transit.TransitWriter`); ``tachyflow transit-render`` draws
  them in other processes, which may come and go;

and with ``monitor = true`` rank 0 publishes the step's metrics and the newest pictures for
``tachyflow view`` (:class:`~tachyflow.insitu.monitor.MonitorPublisher`), at most a few
times a second. The time spent is kept per phase (``timings``): prepare (cell-centred
fields), extract, gather, render, transfer (to the stream), publish. With ``duty_cycle =
[on, off]`` the pipelines run only in windows of ``on`` steps, and the run measures what
they cost against the quiet steps between (:mod:`~tachyflow.insitu.duty_cycle`).
"""

from __future__ import annotations

import time as clock
from pathlib import Path

import numpy as np

from tachyflow.insitu.duty_cycle import DutyCycle
from tachyflow.insitu.options import InsituSection
from tachyflow.insitu.pipelines import Pipeline

#: Least wall time between two monitor updates (the viewer polls twice a second).
MONITOR_INTERVAL = 0.2
PHASES = ("prepare", "extract", "gather", "render", "transfer", "publish")


class VisualisationAdaptor:
    """Runs the case's visualisation pipelines as the simulation advances.

    Parameters
    ----------
    section : InsituSection
        The case's ``[insitu]`` section.
    solver : IncompressibleSolver
        The flow solver (fields, halo, decomposition, grid, step and time).
    output : path
        The run's folder: pictures go to ``images/``, the stream to ``transit/``.
    history : list of dict
        The run's statistics history (read by ``statistics`` pipelines and the monitor).

    Notes
    -----
    Construction, :meth:`after_step` and :meth:`close` are collective over the solver's
    decomposition.
    """

    def __init__(self, section: InsituSection, solver, output, history: list[dict]):
        self.section = section
        self.solver = solver
        self.decomposition = solver.decomposition
        self.output = Path(output)
        self.history = history
        self.root = self.decomposition.rank == 0
        self.pipelines = [Pipeline(p, solver.grid, solver.time) for p in section.pipeline]
        self.timings = dict.fromkeys(PHASES, 0.0)
        self.images: dict[str, Path] = {}
        self._scratch: dict[str, np.ndarray] = {}
        self._centred_buffers: dict[tuple[str, np.dtype], np.ndarray] = {}
        self._renderer = None
        self._transit = None
        self._transit_bytes = None
        self._transit_outputs: list[float] = []  # seconds of each output into the stream
        self._monitor = None
        self._published = -np.inf
        self._new_images: dict[str, Path] = {}
        self._duty_cycle = DutyCycle(*section.duty_cycle) if any(section.duty_cycle) else None
        if any(p.section.mode == "transit" for p in self.pipelines):
            from tachyflow.insitu.transit import TransitWriter

            self._transit = TransitWriter.for_case(section, solver, self.output)
        if section.monitor and self.root:
            from tachyflow.insitu.monitor import MonitorPublisher

            self._monitor = MonitorPublisher(self.output)

    def _timed(self, phase: str, started: float) -> float:
        now = clock.perf_counter()
        self.timings[phase] += now - started
        return now

    def _buffer(self, name: str, dtype) -> np.ndarray:
        """A buffer of this rank's own cells kept between steps: fresh arrays cost page
        faults each time, and the stream copies contiguous pieces fastest."""
        key = (name, np.dtype(dtype))
        if key not in self._centred_buffers:
            shape = self.solver.halo.interior(self.solver.p).shape
            self._centred_buffers[key] = np.empty(shape, dtype=dtype)
        return self._centred_buffers[key]

    def centred_fields(
        self, names, ghosted=(), dtype=np.float64, boxes=None
    ) -> dict[str, np.ndarray]:
        """Cell-centred ``names`` (u, v, w, p, speed) on this rank's cells, of ``dtype``;
        those also in ``ghosted`` on a ghosted piece (a halo exchange each: collective).
        ``boxes`` (name to :class:`~tachyflow.insitu.boxes.CellBox`, not with ``ghosted``):
        only this rank's cells inside each field's box are made."""
        halo = self.solver.halo
        own = self.decomposition.pencil("y")
        fields = {}
        for name in names:
            # Made directly in the buffer's type: no second pass to convert.
            out = self._buffer(name, dtype)
            cells = None
            if boxes is not None:
                part = boxes[name].intersection(own)
                if part.shape != own.shape:
                    cells = part.within(own)
                    out = out.reshape(-1)[: part.size].reshape(part.shape)
            if out.size == 0:
                fields[name] = out
            elif name == "speed":
                fields[name] = self.solver.cell_speed(out, cells)
            else:
                fields[name] = self.solver.cell_field(name, out=out, cells=cells)
            if name in ghosted:
                if name not in self._scratch:
                    self._scratch[name] = halo.allocate()
                halo.interior(self._scratch[name])[...] = fields[name]
                halo.exchange(self._scratch[name])
                fields[name] = self._scratch[name]
        return fields

    def after_step(self, metrics: dict) -> None:
        """Run the pipelines due after this step; publish to the monitor (collective).

        ``metrics`` holds what the viewer shows: step, time, dt, time_per_step, cfl and,
        when the step computed statistics, kinetic_energy.
        """
        now = clock.perf_counter()
        solver = self.solver
        step, time = solver.steps, solver.time
        cycle = self._duty_cycle
        if cycle is not None and not cycle.active(step):
            due = []
        else:
            due = [p for p in self.pipelines if p.cadence.due(step, time)]
        if cycle is not None:
            cycle.iteration_ended(step, now, bool(due))
        in_situ = [p for p in due if p.section.mode == "insitu"]
        transit = [p for p in due if p.section.mode == "transit"]
        if in_situ:
            started = clock.perf_counter()
            names = dict.fromkeys(name for p in in_situ for name in p.fields)
            # In situ extraction needs ghost layers; the stream needs only own cells.
            fields = self.centred_fields(names, ghosted=names)
            self._timed("prepare", started)
            for pipeline in in_situ:
                self._run_in_situ(pipeline, fields, step, time)
        if transit:
            first = started = clock.perf_counter()
            # Each field on the cells its due pipelines read (a slice's two layers).
            boxes = {}
            for pipeline in transit:
                for name in pipeline.fields:
                    cells = pipeline.cells
                    boxes[name] = boxes[name].union(cells) if name in boxes else cells
            fields = self.centred_fields(tuple(boxes), dtype=self._transit.dtype, boxes=boxes)
            started = self._timed("prepare", started)
            self._transit.write(step, time, fields, [p.name for p in transit], boxes)
            self._transit_outputs.append(self._timed("transfer", started) - first)
        if self._monitor is not None:
            self._publish(metrics)

    def _run_in_situ(self, pipeline: Pipeline, fields, step: int, time: float) -> None:
        started = clock.perf_counter()
        piece = pipeline.extract(fields, self.decomposition.pencil("y").start)
        started = self._timed("extract", started)
        whole = pipeline.gather(self.decomposition.comm, piece)
        started = self._timed("gather", started)
        if self.root:
            if self._renderer is None and pipeline.draws_scene:
                from tachyflow.insitu.render import SceneRenderer

                self._renderer = SceneRenderer((self.section.width, self.section.height))
            folder = self.output / "images"
            path = pipeline.draw(self._renderer, whole, folder, step, time, self.history)
            self.images[pipeline.name] = self._new_images[pipeline.name] = path
            self._timed("render", started)

    def _publish(self, metrics: dict) -> None:
        now = clock.perf_counter()
        if now - self._published < MONITOR_INTERVAL and not self._new_images:
            return
        images = {name: path.read_bytes() for name, path in self._new_images.items()}
        self._monitor.publish(int(metrics["step"]), float(metrics["time"]), metrics, images)
        self._new_images = {}
        self._published = self._timed("publish", now)

    def summary(self) -> dict:
        """Seconds per phase (slowest rank), and for in transit the writer's staging
        memory beside the step's data and the seconds of its first output (a reader
        attaching, buffers first touched) and the median of the others (``transit_output``);
        with a duty cycle, its measurement (``duty_cycle``, rank 0's clock) (collective)."""
        maximum = self.decomposition.maximum
        summary = {phase: maximum(seconds) for phase, seconds in self.timings.items()}
        outputs = self._transit_outputs
        if outputs:  # as many on every rank
            summary["transit_output"] = {
                "first": maximum(outputs[0]),
                "steady": maximum(float(np.median(outputs[1:] or outputs))),
                "count": len(outputs),
            }
        if self._duty_cycle is not None:
            summary["duty_cycle"] = self._duty_cycle.summary()
        if self._transit_bytes is not None:
            staging, data = self._transit_bytes
            summary["staging_bytes"] = maximum(staging)
            summary["step_bytes"] = maximum(data)
        return summary

    def close(self) -> None:
        """Close the stream, the monitor and the renderer (collective)."""
        if self._transit is not None:
            self._transit_bytes = (self._transit.buffer_bytes, self._transit.step_bytes)
            self._transit.close()
            self._transit = None
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
