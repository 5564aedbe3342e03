"""The transit reader: one process attached to every stream of a run, stepping them in
lockstep.

A step is returned only when every stream has delivered it (the writer's step index is
the same for one ``write`` on every stream). With ``Discard`` each aggregator drops steps
on its own; the reader then releases the streams that are behind the newest step any
stream holds until all hold the same one, and counts the steps it skipped.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time as clock
from numbers import Real
from pathlib import Path

import numpy as np

from tachyflow.insitu.boxes import CellBox
from tachyflow.insitu.transit.manifest import MANIFEST, read_manifest
from tachyflow.insitu.transit.sst import (
    clashing,
    cmanager_id,
    keep_step_buffers,
    reader_parameters,
    reason,
)
from tachyflow.insitu.transit.streams import contact_path, transit_folder, writer_alive

# Seconds between looks at the manifest and locks while a reader waits for a writer.
ATTACH_POLL = 0.1
# Seconds between polls for a stream's next step. BeginStep with a timeout arms an EVPath
# timer whose removal races with a step's arrival: readers died of it (a segmentation
# fault in libcmselect_LTX_remove_periodic) twice at 128^3. A zero timeout arms none, and
# the sleeps between polls keep the reader interruptible. They double from the first to
# the longest while no step comes: quick at a fast cadence, few polls at a slow one.
BEGIN_STEP_POLL = (0.002, 0.05)
# A reader that dies between registering with a writer and that writer's next step leaves
# the writer a dangling connection, which crashes it (TCP control) or hangs it (ENet) at
# that step: these signals wait until attaching is over.
DEFERRED_SIGNALS = {signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT}


class _ReaderStream:
    """One attached SST stream of a reader (opening it waits for the writer's next step)."""

    def __init__(self, adios, path: Path, name: str):
        import adios2.bindings as bindings

        self.path = path
        self.name = name
        self.io = adios.DeclareIO(name)
        self.io.SetEngine("SST")
        self.io.SetParameters(reader_parameters())
        self.engine = self.io.Open(str(path), bindings.Mode.Read)
        self.held: int | None = None  # writer step index of the step begun, if any

    def value(self, name: str, dtype):
        import adios2.bindings as bindings

        value = np.zeros(1, dtype=dtype)
        self.engine.Get(self.io.InquireVariable(name), value, bindings.Mode.Sync)
        return value[0]

    def content(self) -> dict:
        import adios2.bindings as bindings

        return json.loads(self.engine.Get(self.io.InquireVariable("content"), bindings.Mode.Sync))

    def release(self) -> None:
        if self.held is not None:
            self.engine.EndStep()
            self.held = None

    def drain(self) -> bool:
        """Release every step that is ready now; False when the stream has ended."""
        import adios2.bindings as bindings

        while (status := self.engine.BeginStep(bindings.StepMode.Read, 0.0)) == (
            bindings.StepStatus.OK
        ):
            self.engine.EndStep()
        return status == bindings.StepStatus.NotReady


class TransitReader:
    """Attached to the transit streams of a run; yields whole fields step by step.

    Parameters
    ----------
    run_dir : path
        Output folder of the run (which may not have started yet).
    timeout : float, optional
        Seconds to wait for a live writer when attaching and for each next step; None
        waits as long as it takes. Attaching completes at the writer's next step after
        the wait, whatever the timeout.

    Raises
    ------
    TimeoutError
        No live writer within ``timeout``.

    Notes
    -----
    Not MPI: one process. Iterating yields ``(step, time, fields)`` with ``fields`` a dict
    of arrays (fresh ones every step) and ends when the run closes its streams or dies
    (see :attr:`end_status`). Each array holds the cells the writer sent of that field:
    the whole grid, or the box :attr:`boxes` gives (a
    :class:`~tachyflow.insitu.boxes.CellBox` per field, whole ones included).
    :attr:`pipelines` names the pipelines due at the step last returned. :meth:`close`
    detaches; the run goes on, and a new reader may attach.
    Once attached, the process's heap serves and keeps blocks of up to twice a step
    (:func:`~tachyflow.insitu.transit.sst.keep_step_buffers`): the fields and SST's buffers
    of each step then reuse memory already faulted in (at 128³, 376k → 120k page faults
    over 20 steps, nearly all of them the start-up's).
    """

    def __init__(self, run_dir, timeout: float | None = None):
        import adios2.bindings as bindings

        if not isinstance(run_dir, str | os.PathLike):
            raise TypeError(f"run_dir must be a path, got {run_dir!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, Real) or not timeout > 0
        ):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        self.run_dir = Path(run_dir)
        self.timeout = None if timeout is None else float(timeout)
        self.manifest: dict = {}
        self.pipelines: tuple[str, ...] = ()
        self.boxes: dict[str, CellBox] = {}
        self.skipped = 0
        #: None while the run goes on; "end of stream" after it closed, "writer lost" if
        #: it died.
        self.end_status: str | None = None
        self._adios = bindings.ADIOS()
        self._opened = 0
        self._streams: list[_ReaderStream] = []
        self._attach()

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the fields the writer may send."""
        return tuple(self.manifest["fields"])

    @property
    def global_shape(self) -> tuple[int, int, int]:
        """Cells along x, y, z."""
        return tuple(self.manifest["global_shape"])

    def _deadline(self) -> float | None:
        return None if self.timeout is None else clock.monotonic() + self.timeout

    def _attach(self) -> None:
        deadline = self._deadline()
        folder = transit_folder(self.run_dir)
        while True:
            manifest = read_manifest(self.run_dir)
            if manifest is None:
                waiting = f"no {MANIFEST} yet"
            else:
                paths = [folder / name for name in manifest["streams"]]
                identities = [cmanager_id(contact_path(path)) for path in paths]
                if any(writer_alive(path) is False for path in paths):
                    waiting = "no live writer (the run has not started or has ended)"
                elif clashing(identities):
                    # Opening both would route one writer's messages to the other, which
                    # would crash it. The writer avoids this; a stale pair can still meet.
                    waiting = "two streams share an EVPath CManager ID"
                else:
                    problem = self._open_all(paths, manifest["queue_full_policy"] == "Block")
                    # A new run writes its manifest once its streams are open: one that
                    # changed meanwhile means these streams may belong to another run.
                    if problem is None and read_manifest(self.run_dir) != manifest:
                        self._detach()
                        problem = "the run was restarted while attaching"
                    if problem is None:
                        self.manifest = manifest
                        itemsize = np.dtype(manifest["dtype"]).itemsize
                        keep_step_buffers(
                            math.prod(self.global_shape) * itemsize * len(self.fields)
                        )
                        return
                    waiting = problem
            if deadline is not None and clock.monotonic() >= deadline:
                raise TimeoutError(
                    f"no transit stream to attach to in {folder} after {self.timeout:g} s: "
                    f"{waiting}"
                )
            clock.sleep(ATTACH_POLL)

    def _open_all(self, paths, blocking: bool) -> str | None:
        """Open every stream; on failure close those opened and say why.

        ``blocking``: the writer's queue full policy is Block.
        """
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED_SIGNALS)
        try:
            for path in paths:
                self._opened += 1
                try:
                    stream = _ReaderStream(self._adios, path, f"transit-reader-{self._opened}")
                except RuntimeError as error:
                    self._detach()
                    return f"cannot open {path}: {reason(error)}"
                self._streams.append(stream)
                if not blocking or len(self._streams) == len(paths):
                    continue
                # Each open lasts until its writer's next step or two, while the streams
                # opened before fill their queues; with Block a full queue would stop the
                # run before the next open could complete. Nothing has been read yet:
                # empty them (their reserved steps go too).
                for opened in self._streams:
                    if not opened.drain():
                        self._detach()
                        return f"{opened.path} ended while attaching"
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return None

    def _begin(self, stream: _ReaderStream, deadline) -> bool:
        """Begin the stream's next step; False when the stream has ended."""
        import adios2.bindings as bindings

        pause, longest = BEGIN_STEP_POLL
        while True:
            status = stream.engine.BeginStep(bindings.StepMode.Read, 0.0)
            if status == bindings.StepStatus.OK:
                stream.held = stream.engine.CurrentStep()
                return True
            if status != bindings.StepStatus.NotReady:
                ended = status == bindings.StepStatus.EndOfStream
                self.end_status = "end of stream" if ended else "writer lost"
                return False
            if deadline is not None and clock.monotonic() >= deadline:
                raise TimeoutError(f"no new step from {stream.path} in {self.timeout:g} s")
            clock.sleep(pause)
            pause = min(2 * pause, longest)

    def read(self):
        """The next step every stream delivered: ``(step, time, fields)``, or None at the end.

        Raises TimeoutError when no step came within ``timeout``; the steps already begun
        are kept, so calling again goes on from there.
        """
        if self.end_status is not None or not self._streams:
            return None
        deadline = self._deadline()
        released = set()
        while True:
            for stream in self._streams:
                if stream.held is None and not self._begin(stream, deadline):
                    for other in self._streams:
                        other.release()
                    return None
            target = max(stream.held for stream in self._streams)
            behind = [stream for stream in self._streams if stream.held < target]
            if not behind:
                break
            for stream in behind:
                released.add(stream.held)
                stream.release()
        self.skipped += len(released)
        return self._assemble(target)

    def _assemble(self, index: int):
        import adios2.bindings as bindings

        contents = [stream.content() for stream in self._streams]
        steps = {int(stream.value("step", np.int64)) for stream in self._streams}
        writers = {content["writer_id"] for content in contents}
        if len(steps) != 1 or len(writers) != 1 or writers != {self.manifest["writer_id"]}:
            raise RuntimeError(
                f"the streams of {transit_folder(self.run_dir)} disagree at writer step "
                f"{index} (steps {sorted(steps)}, writers {sorted(writers)}); the run was "
                "restarted while attaching: attach again"
            )
        first = self._streams[0]
        step, time = steps.pop(), float(first.value("time", np.float64))
        names = contents[0]["fields"]
        whole = CellBox.whole(self.global_shape)
        sent = contents[0].get("boxes", {})
        boxes = {name: CellBox(*sent[name]) if name in sent else whole for name in names}
        dtype = np.dtype(self.manifest["dtype"])
        fields = {name: np.empty(boxes[name].shape, dtype=dtype) for name in names}
        covered = dict.fromkeys(names, 0)
        copies = []
        for stream in self._streams:
            for name in names:
                blocks = stream.engine.BlocksInfo(name, index)
                if not blocks:  # every piece of this group is empty
                    continue
                variable = stream.io.InquireVariable(name)
                for block in blocks:
                    start = [int(n) for n in block["Start"].split(",")]
                    count = [int(n) for n in block["Count"].split(",")]
                    target = fields[name][CellBox(start, count).within(boxes[name])]
                    variable.SetSelection([start, count])
                    if not target.flags.c_contiguous:
                        copies.append((target, np.empty(count, dtype=dtype)))
                        target = copies[-1][1]
                    stream.engine.Get(variable, target, bindings.Mode.Deferred)
                    covered[name] += target.size
        for stream in self._streams:
            stream.engine.PerformGets()
        for target, received in copies:
            target[...] = received
        for stream in self._streams:
            stream.release()
        missing = [name for name, cells in covered.items() if cells != boxes[name].size]
        if missing:
            raise RuntimeError(
                f"writer step {index} of {transit_folder(self.run_dir)} does not cover the "
                f"cells sent of {missing}"
            )
        self.pipelines = tuple(contents[0]["pipelines"])
        self.boxes = boxes
        return step, time, fields

    def __iter__(self):
        while (item := self.read()) is not None:
            yield item

    def _detach(self) -> None:
        for stream in self._streams:
            if self.end_status != "writer lost":
                stream.release()
            stream.engine.Close()
            self._adios.RemoveIO(stream.name)
        self._streams = []

    def close(self) -> None:
        """Detach from the run's streams; the run goes on."""
        self._detach()

    def __enter__(self) -> TransitReader:
        return self

    def __exit__(self, *exception) -> None:
        self.close()
