"""The transit writer: a run's fields, step by step, into one SST stream per aggregator.

Every step of a stream holds ``step`` (int64), ``time`` (float64), ``content`` (a JSON
string: writer id, aggregator count, group, the fields, the pipelines of this step and the
boxes of the fields not sent whole) and one block per piece of those fields (the global
``(nx, ny, nz)`` array with the piece's start and shape; of a field sent on a box, the
part of each piece inside the box). Checks whose outcome may differ between ranks go through
:mod:`tachyflow.parallel.agreement`, so every rank raises together.
"""

from __future__ import annotations

import json
import math
import os
import time as clock
import uuid
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from tachyflow import runtime
from tachyflow.insitu.boxes import CellBox
from tachyflow.insitu.options import TRANSIT_PRECISIONS, TRANSIT_THREADS
from tachyflow.insitu.transit.aggregation import GroupAggregation, node_count
from tachyflow.insitu.transit.manifest import write_manifest
from tachyflow.insitu.transit.sst import (
    check_count,
    check_queue,
    clashing,
    cmanager_id,
    keep_step_buffers,
    reason,
    writer_parameters,
)
from tachyflow.insitu.transit.streams import (
    StreamLock,
    contact_path,
    stream_name,
    transit_folder,
)
from tachyflow.parallel.agreement import agree, collectively, on_root

# Variables every step carries; field names must differ from them.
STEP_VARIABLES = ("step", "time", "content")
# Opening rounds before the writer gives up giving every stream its own CManager ID.
OPEN_ATTEMPTS = 5


@dataclass(frozen=True)
class WriteTiming:
    """Wall time of one :meth:`TransitWriter.write` on one rank, in seconds.

    Attributes
    ----------
    step : int
        The step written.
    check : float
        Agreeing on the input over all ranks (two small allreduces).
    transfer : float
        Moving pieces to the aggregator: sending (members) or waiting for receives
        (aggregators).
    put : float
        Copying the pieces into SST (aggregators).
    end_step : float
        ``EndStep`` (aggregators): publishing the step; waits for a slow reader only with
        ``Block`` and a full queue.
    """

    step: int
    check: float
    transfer: float
    put: float
    end_step: float

    @property
    def total(self) -> float:
        """The whole write."""
        return self.check + self.transfer + self.put + self.end_step


def check_names(fields) -> tuple[str, ...]:
    """``fields`` as a tuple of distinct names a stream can carry."""
    if isinstance(fields, str) or not isinstance(fields, Sequence):
        raise TypeError(f"fields must be a sequence of field names, got {fields!r}")
    names = tuple(fields)
    for name in names:
        if not isinstance(name, str) or not name or "/" in name or name in STEP_VARIABLES:
            raise ValueError(
                f"field names must be non-empty strings without '/' other than "
                f"{', '.join(STEP_VARIABLES)}; got {name!r} in {names!r}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"field names must be distinct, got {names!r}")
    return names


class TransitWriter:
    """Streams fields of a running simulation to in-transit readers (ADIOS2 SST).

    Parameters
    ----------
    decomposition : PencilDecomposition
        The run's decomposition; its ``orientation`` pencils are the pieces written.
    run_dir : path
        Output folder of the run; the streams live in ``RUN_DIR/transit``.
    fields : sequence of str
        Names of the fields a step may carry (a step carries any subset of them).
    grid : StaggeredGrid, optional
        Geometry, recorded in the manifest (lengths, y faces, stretching).
    aggregators : int, optional
        Number of groups of contiguous ranks, each writing one stream through its first
        rank; at most the number of ranks. Default: one per shared-memory node.
    queue_limit : int
        Steps SST queues per stream for its readers, the reserve included (at least
        ``reserve_queue_limit + 2``; ``+ 6`` with ``Block`` and several aggregators).
    queue_full_policy : {"Discard", "Block"}
        What a full queue does: drop the new step for the readers (the run never waits,
        for monitoring) or wait for the slowest reader (lossless output).
    reserve_queue_limit : int
        Steps kept for readers that attach later, counting the one at which they attach.
    dtype : numpy dtype
        Type of the fields' values.
    orientation : {"y", "x", "z"}
        Pencil orientation of the pieces given to :meth:`write`.
    threads : {"spare-cores", "rank"}
        Where SST's threads (its control plane, and the data plane that sends each step
        to the readers from this process) run when the ranks are pinned to cores and the
        machine has cores left (:func:`tachyflow.runtime.on_spare_cores`): on those, or
        on the rank's core. Elsewhere they run where the rank does.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range (on every rank alike).
    StreamInUseError
        A stream of ``run_dir`` has a live writer (on every rank).

    Notes
    -----
    Construction, :meth:`write` and :meth:`close` are collective over the decomposition's
    communicator. The writer uses a duplicate of it, so its messages never mix with the
    solver's. ``timings`` holds a :class:`WriteTiming` per write of this rank.
    """

    def __init__(
        self,
        decomposition,
        run_dir,
        fields: Sequence[str],
        *,
        grid=None,
        aggregators: int | None = None,
        queue_limit: int = 4,
        queue_full_policy: str = "Discard",
        reserve_queue_limit: int = 2,
        dtype=np.float64,
        orientation: str = "y",
        threads: str = "spare-cores",
    ):
        from tachyflow.parallel.pencil import PencilDecomposition, check_orientation

        if not isinstance(decomposition, PencilDecomposition):
            raise TypeError(f"decomposition must be a PencilDecomposition, got {decomposition!r}")
        if not isinstance(run_dir, str | os.PathLike):
            raise TypeError(f"run_dir must be a path, got {run_dir!r}")
        self.fields = check_names(fields)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind not in "iufc":
            raise ValueError(f"dtype must be a numeric type, got {self.dtype}")
        self.orientation = check_orientation(orientation)
        if threads not in TRANSIT_THREADS:
            raise ValueError(f"threads must be one of {TRANSIT_THREADS}, got {threads!r}")
        self.threads = threads
        if grid is not None and tuple(grid.shape) != decomposition.global_shape:
            raise ValueError(
                f"grid shape {tuple(grid.shape)} differs from the decomposition's "
                f"{decomposition.global_shape}"
            )
        size = decomposition.size
        if aggregators is None:
            aggregators = node_count(decomposition.comm)
        self.aggregators = check_count(aggregators, "aggregators", 1)
        if self.aggregators > size:
            raise ValueError(f"aggregators must be at most the {size} ranks, got {aggregators}")
        self.queue_limit, self.queue_full_policy, self.reserve_queue_limit = check_queue(
            queue_limit, queue_full_policy, reserve_queue_limit, self.aggregators
        )
        self.folder = transit_folder(run_dir)
        self.global_shape = decomposition.global_shape
        self._whole = CellBox.whole(self.global_shape)
        self.timings: list[WriteTiming] = []

        self._comm = decomposition.comm.Dup()
        self._rank = self._comm.Get_rank()
        self._pencils = decomposition.all_pencils(self.orientation)
        self._aggregation = GroupAggregation(
            self._comm, self._pencils, self.aggregators, self.fields, self.dtype
        )
        self.group = self._aggregation.group
        self.is_aggregator = self._aggregation.is_aggregator
        #: Bytes of all fields of this rank's group in one step.
        self.step_bytes = self._aggregation.step_bytes
        self._last_step: int | None = None
        self._lock: StreamLock | None = None
        self._adios = self._io = self._engine = None
        self._variables: dict[str, object] = {}
        self.writer_id = self._comm.bcast(uuid.uuid4().hex if self._rank == 0 else None)
        self.stream = self.folder / stream_name(self.group)

        try:
            with collectively(self._comm):
                if self.is_aggregator:
                    self._lock_stream()
            self._open_streams()
            on_root(self._comm, lambda: self._write_manifest(run_dir, grid))
        except Exception:
            self._release_stream()
            self._comm.Free()
            self._comm = None
            raise

    @classmethod
    def for_case(cls, section, solver, output) -> TransitWriter:
        """The writer of a case's ``[insitu]`` transit pipelines (collective).

        The fields are those the transit pipelines draw, of ``transit_precision``;
        ``aggregators`` is capped at the number of ranks so that one case file runs on any
        number of them.
        """
        from tachyflow.insitu.pipelines import Pipeline

        names = dict.fromkeys(
            name
            for entry in section.pipeline
            if entry.mode == "transit"
            for name in Pipeline(entry, solver.grid).fields
        )
        decomposition = solver.decomposition
        return cls(
            decomposition,
            output,
            tuple(names),
            grid=solver.grid,
            dtype=TRANSIT_PRECISIONS[section.transit_precision],
            aggregators=min(section.aggregators, decomposition.size),
            queue_limit=section.queue_limit,
            queue_full_policy=section.queue_full_policy,
            reserve_queue_limit=section.reserve_queue_limit,
            threads=section.transit_threads,
        )

    # -- opening ------------------------------------------------------------------------

    def _lock_stream(self) -> None:
        """Take this aggregator's stream (raises StreamInUseError or OSError)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = StreamLock(self.stream)
        except OSError as error:
            raise OSError(f"cannot create the transit stream {self.stream}: {error}") from error
        # We hold the lock, so a contact file still there was left by a dead writer:
        # remove it before a reader trusts it.
        contact_path(self.stream).unlink(missing_ok=True)

    def _open_streams(self) -> None:
        """Open every aggregator's stream, each with an EVPath CManager ID of its own
        (collective; raises on every rank when that fails)."""
        for _ in range(OPEN_ATTEMPTS):
            with collectively(self._comm):
                if self.is_aggregator and self._engine is None:
                    self._open_sst()
            identity = cmanager_id(contact_path(self.stream)) if self.is_aggregator else None
            clashes = clashing(self._comm.allgather(identity))
            if not clashes:
                if self._lock is not None:
                    self._lock.publish()
                return
            # The later of two clashing streams opens again in a later second, hence with
            # another seed; earlier ones keep theirs (rank 0 may host other SST streams,
            # such as the monitor's, which share its CManager).
            if self._rank in clashes:
                self._close_sst()
            clock.sleep(1.0 + 0.05 - math.modf(clock.time())[0])
        raise RuntimeError(
            f"could not give the {self.aggregators} transit streams distinct EVPath CManager "
            f"IDs in {OPEN_ATTEMPTS} attempts (ranks {sorted(clashes)} kept clashing)"
        )

    def _open_sst(self) -> None:
        """Open this aggregator's SST stream (raises RuntimeError saying why not)."""
        import adios2.bindings as adios

        try:
            self._adios = adios.ADIOS()
            self._io = self._adios.DeclareIO(f"transit-writer-{self.group}")
            self._io.SetEngine("SST")
            self._io.SetParameters(
                writer_parameters(
                    self.queue_limit, self.queue_full_policy, self.reserve_queue_limit
                )
            )
            zero = np.zeros(1, dtype=self.dtype)
            shape = list(self.global_shape)
            for name in self.fields:
                self._variables[name] = self._io.DefineVariable(
                    name, zero, shape, [0, 0, 0], shape, False
                )
            self._variables["step"] = self._io.DefineVariable("step", np.zeros(1, np.int64))
            self._variables["time"] = self._io.DefineVariable("time", np.zeros(1, np.float64))
            self._variables["content"] = self._io.DefineVariable("content")
            keep_step_buffers(self.step_bytes)
            # SST starts its threads here: they inherit this thread's cores.
            place = runtime.on_spare_cores if self.threads == "spare-cores" else nullcontext
            with place():
                self._engine = self._io.Open(str(self.stream), adios.Mode.Write)
        except (RuntimeError, ValueError) as error:
            raise RuntimeError(
                f"cannot open the SST stream {self.stream}: {reason(error)}"
            ) from error

    def _close_sst(self) -> None:
        """Close the SST stream and drop every ADIOS object: SST frees the process's
        CManager with its last stream, and the next open creates a new one."""
        if self._engine is not None:
            self._engine.Close()
            self._engine = None
        self._variables.clear()
        self._adios = self._io = None

    def _write_manifest(self, run_dir, grid) -> None:
        write_manifest(
            run_dir,
            writer_id=self.writer_id,
            bounds=self._aggregation.bounds,
            fields=self.fields,
            dtype=self.dtype,
            global_shape=self.global_shape,
            orientation=self.orientation,
            queue=(self.queue_limit, self.queue_full_policy, self.reserve_queue_limit),
            grid=grid,
        )

    # -- writing ------------------------------------------------------------------------

    @property
    def buffer_bytes(self) -> int:
        """Bytes of this rank's transfer buffers (SST's own copy of a step not included)."""
        return self._aggregation.buffer_bytes

    def write(
        self,
        step: int,
        time: float,
        fields: Mapping[str, np.ndarray],
        pipelines: Sequence[str] = (),
        boxes: Mapping[str, CellBox] | None = None,
    ) -> None:
        """Send one step (collective).

        Parameters
        ----------
        step : int
            Time step number, the same on every rank and larger than the last one written.
        time : float
            Simulated time.
        fields : mapping of str to ndarray
            This rank's piece of each field sent (interior cells, any memory layout), a
            subset of the writer's ``fields``, the same names on every rank: the whole
            pencil, or the part of it inside the field's box.
        pipelines : sequence of str
            Names of the pipelines due at this step, passed on to the readers.
        boxes : mapping of str to CellBox, optional
            The global cells sent of some fields (the same on every rank; the others are
            sent whole): each rank gives its pencil's part of the box, possibly empty, and
            readers receive the box.

        Raises
        ------
        ValueError
            Unknown names, pieces of the wrong shape or type, or steps that differ between
            ranks or do not increase (on every rank alike; a problem found on some ranks
            only names the lowest of them).
        """
        from mpi4py import MPI

        if self._comm is None:
            raise ValueError("write() on a closed TransitWriter")
        started = clock.perf_counter()
        boxes = {} if boxes is None else boxes
        problem = self._input_problem(step, time, fields, pipelines, boxes)
        if problem is not None:
            problem = ValueError(f"TransitWriter.write on rank {self._rank}: {problem}")
        agree(self._comm, problem)
        names = [name for name in self.fields if name in fields]
        mask = sum(1 << self.fields.index(name) for name in names)
        number = int(step)
        boxes = {name: boxes.get(name, self._whole) for name in names}
        # Each rank's input is valid; whether all ranks give the same step, fields and
        # boxes is one MIN over the values and their negatives: equal everywhere when
        # min == max.
        values = [number, mask]
        for name in self.fields:
            box = boxes.get(name, self._whole)
            values += [*box.start, *box.shape]
        extremes = np.array(values + [-value for value in values], dtype=np.int64)
        self._comm.Allreduce(MPI.IN_PLACE, extremes, op=MPI.MIN)
        if np.any(extremes[: len(values)] != -extremes[len(values) :]):
            raise ValueError(
                f"TransitWriter.write needs the same step, field names and boxes on every "
                f"rank; steps range from {extremes[0]} to {-extremes[len(values)]}"
            )
        if self._last_step is not None and number <= self._last_step:
            raise ValueError(
                f"steps must increase: got {number} after {self._last_step} was written"
            )
        checked = clock.perf_counter()
        if self.is_aggregator:
            transfer, put, end_step = self._write_step(
                number, float(time), names, fields, pipelines, boxes
            )
        else:
            transfer, put, end_step = self._aggregation.send(names, fields), 0.0, 0.0
        self._last_step = number
        self.timings.append(WriteTiming(number, checked - started, transfer, put, end_step))

    def _input_problem(self, step, time, fields, pipelines, boxes) -> str | None:
        """What is wrong with this rank's arguments to :meth:`write`, or None."""
        if isinstance(step, bool) or not isinstance(step, Integral):
            return f"step must be an integer, got {step!r}"
        if isinstance(time, bool) or not isinstance(time, Real) or not math.isfinite(time):
            return f"time must be a finite number, got {time!r}"
        if not isinstance(fields, Mapping):
            return f"fields must map field names to arrays, got {type(fields).__name__}"
        unknown = [name for name in fields if name not in self.fields]
        if unknown:
            return f"unknown fields {unknown}; this writer sends {list(self.fields)}"
        if not isinstance(boxes, Mapping):
            return f"boxes must map field names to CellBox, got {type(boxes).__name__}"
        for name, box in boxes.items():
            if name not in fields:
                return f"a box for {name!r}, which is not sent; fields sent: {list(fields)}"
            if not isinstance(box, CellBox):
                return f"the box of {name!r} must be a CellBox, got {box!r}"
            if box.size == 0 or box.intersection(self._whole) != box:
                return (
                    f"the box of {name!r} must hold cells of the grid of {self.global_shape} "
                    f"cells, got {box}"
                )
        pencil = self._pencils[self._rank]
        for name, piece in fields.items():
            shape = boxes[name].intersection(pencil).shape if name in boxes else pencil.shape
            if not isinstance(piece, np.ndarray) or piece.shape != shape:
                return (
                    f"field {name!r} must be this rank's {self.orientation}-pencil piece"
                    f"{' inside its box' if name in boxes else ''}, an array of shape "
                    f"{shape}; got {getattr(piece, 'shape', type(piece))}"
                )
            if piece.dtype != self.dtype:
                return f"field {name!r} must hold {self.dtype} values, got {piece.dtype}"
        if isinstance(pipelines, str) or not all(isinstance(p, str) for p in pipelines):
            return f"pipelines must be a sequence of names, got {pipelines!r}"
        return None

    def _write_step(
        self, step, time, names, fields, pipelines, boxes
    ) -> tuple[float, float, float]:
        """An aggregator's part: the group's step into its SST stream; seconds of transfer,
        put and end of step."""
        import adios2.bindings as adios

        engine, variables = self._engine, self._variables
        started = clock.perf_counter()
        engine.BeginStep()
        engine.Put(variables["step"], np.array([step], dtype=np.int64), adios.Mode.Sync)
        engine.Put(variables["time"], np.array([time], dtype=np.float64), adios.Mode.Sync)
        content = {
            "writer_id": self.writer_id,
            "aggregators": self.aggregators,
            "group": self.group,
            "fields": list(names),
            "pipelines": list(pipelines),
            "boxes": {
                name: [list(box.start), list(box.shape)]
                for name, box in boxes.items()
                if box != self._whole
            },
        }
        engine.Put(variables["content"], json.dumps(content))
        transfer = self._aggregation.put(engine, variables, names, fields, boxes)
        ending = clock.perf_counter()
        engine.EndStep()
        end_step = clock.perf_counter() - ending
        return transfer, ending - started - transfer, end_step

    # -- closing ------------------------------------------------------------------------

    def _release_stream(self) -> None:
        # SST's queue and buffers go with the ADIOS object, not at interpreter exit.
        self._close_sst()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        """End the streams (readers see their end) and free the communicator (collective).

        Waits until attached readers have released the steps they were sent.
        """
        if self._comm is None:
            return
        self._release_stream()
        self._comm.Free()
        self._comm = None

    def __enter__(self) -> TransitWriter:
        return self

    def __exit__(self, *exception) -> None:
        self.close()
