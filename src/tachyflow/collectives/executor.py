"""Runs a schedule with mpi4py on a numpy buffer (the MPI executor).

Per step, a rank posts a receive (into a scratch array) for every message addressed to it
and a send of every segment range it owes, waits for all of them, then copies or combines
what arrived. Sends therefore carry the values from the start of the step, as the
schedule's semantics require, and a rank may send and receive the same segments in one
step (recursive doubling, rings). :func:`run` does all steps at once; :func:`start`
returns a :class:`Transfer` that the caller advances between pieces of its own work.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from tachyflow.collectives.schedule import REDUCTIONS, Schedule, result_defined

TAG = 7703
OPERATORS: dict[str, Callable] = {
    "sum": np.add,
    "prod": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
}
MPI_OPERATORS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}


def operator(op) -> Callable:
    """The numpy combining function of a named operator, or a user's commutative callable."""
    if callable(op):
        return op
    if op not in OPERATORS:
        raise ValueError(f"op must be one of {sorted(OPERATORS)} or a callable, got {op!r}")
    return OPERATORS[op]


def plan(schedule: Schedule, rank: int) -> list[tuple[list, list, list, bool]]:
    """This rank's part of a schedule: per step, its sends ``(peer, ranges)``, its receives
    ``(peer, ranges, direct)`` (direct: straight into the buffer, not through scratch), its
    local copies ``(from_ranges, to_ranges)`` (``ranges``: the
    ``(start, stop)`` element ranges a message is read from or lands in) and whether
    receives combine. Steps where the rank does nothing are left out."""
    bounds = schedule.bounds.tolist()

    def ranges(item, index, landing=False):
        runs = item.runs(index)
        return tuple(
            (bounds[c if landing else a], bounds[c if landing else a] + bounds[b] - bounds[a])
            for a, b, c in runs
        )

    steps = []
    for item in schedule.steps():
        outgoing = np.flatnonzero(item.source == rank).tolist()
        incoming = np.flatnonzero(item.target == rank).tolist()
        if not outgoing and not incoming:
            continue
        local = [i for i in outgoing if item.target[i] == rank]
        sends = [(int(item.target[i]), ranges(item, i)) for i in outgoing if i not in local]
        sent = [r for _, each in sends for r in each]
        receives = []
        for i in incoming:
            if i in local:
                continue
            landing = ranges(item, i, True)
            # Data that replace and overlap nothing this rank sends can land in place.
            direct = not item.reduce and len(landing) == 1 and not _overlaps(landing[0], sent)
            receives.append((int(item.source[i]), landing, direct))
        copies = [(ranges(item, i), ranges(item, i, True)) for i in local]
        steps.append((sends, receives, copies, item.reduce))
    return steps


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(start < span[1] and span[0] < stop for start, stop in spans)


class Transfer:
    """A schedule in progress on a buffer (see :func:`start`); collective over its
    communicator: every rank must drive its own transfer to completion.

    :meth:`test` advances it as far as the messages that have arrived allow and returns
    whether it is done; :meth:`wait` finishes it. Between the two, the caller computes:
    the steps of a schedule progress only inside these calls (HPL polls its panel
    broadcast the same way between pieces of its update). The buffer must not be touched
    until the transfer is done.
    """

    def __init__(self, comm, schedule: Schedule, buffer, op, steps, scratch, on_done=None):
        if comm.Get_size() != schedule.size:
            raise ValueError(
                f"schedule is for {schedule.size} ranks, communicator has {comm.Get_size()}"
            )
        self.buffer = buffer
        self._comm = comm
        self._combine = operator(op) if schedule.operation in REDUCTIONS else None
        self._in_place = self._combine in OPERATORS.values()  # numpy ufuncs write in place
        self._scratch = {} if scratch is None else scratch
        steps = plan(schedule, comm.Get_rank()) if steps is None else steps
        self._steps = iter(enumerate(steps))
        self._on_done = on_done
        self._requests: list | None = None
        self._arrivals: list = []
        self._reduce = False
        self._post_next()

    def _land(self, target: np.ndarray, incoming: np.ndarray) -> None:
        if not self._reduce:
            target[...] = incoming
        elif self._in_place:
            self._combine(target, incoming, out=target)
        else:
            target[...] = self._combine(target, incoming)

    def _contiguous(self, key, ranges) -> np.ndarray:
        array = self._scratch.get(key)
        if array is None:
            total = sum(stop - start for start, stop in ranges)
            array = self._scratch[key] = np.empty(total, dtype=self.buffer.dtype)
        return array

    def _post_next(self) -> None:
        """Local copies, then the receives and sends of the next step (none left: done)."""
        buffer = self.buffer
        try:
            index, (sends, receives, copies, reduce) = next(self._steps)
        except StopIteration:
            self._requests = None
            if self._on_done is not None:
                self._on_done()
            return
        self._reduce = reduce
        for origins, destinations in copies:
            for (a, b), (c, d) in zip(origins, destinations, strict=True):
                self._land(buffer[c:d], buffer[a:b])
        requests, arrivals = [], []
        for position, (peer, ranges, direct) in enumerate(receives):
            if direct:
                requests.append(self._comm.Irecv(buffer[ranges[0][0] : ranges[0][1]], peer, TAG))
                continue
            landing = self._contiguous((index, position, buffer.dtype.str), ranges)
            requests.append(self._comm.Irecv(landing, peer, TAG))
            arrivals.append((ranges, landing))
        for position, (peer, ranges) in enumerate(sends):
            if len(ranges) == 1:
                outgoing = buffer[ranges[0][0] : ranges[0][1]]
            else:
                outgoing = self._contiguous((index, "pack", position, buffer.dtype.str), ranges)
                np.concatenate([buffer[start:stop] for start, stop in ranges], out=outgoing)
            requests.append(self._comm.Isend(outgoing, peer, TAG))
        self._requests, self._arrivals = requests, arrivals

    def _finish_step(self) -> None:
        for ranges, landing in self._arrivals:
            offset = 0
            for start, stop in ranges:
                self._land(self.buffer[start:stop], landing[offset : offset + stop - start])
                offset += stop - start
        self._post_next()

    @property
    def done(self) -> bool:
        """True once every step has completed."""
        return self._requests is None

    def test(self) -> bool:
        """Complete the steps whose messages have all arrived; True when done."""
        while self._requests is not None:
            if not MPI.Request.Testall(self._requests):
                return False
            self._finish_step()
        return True

    def wait(self) -> np.ndarray:
        """Complete every remaining step; the buffer."""
        while self._requests is not None:
            MPI.Request.Waitall(self._requests)
            self._finish_step()
        return self.buffer


def start(
    comm,
    schedule: Schedule,
    buffer: np.ndarray,
    op=None,
    steps: list | None = None,
    scratch: dict | None = None,
    on_done=None,
) -> Transfer:
    """Start ``schedule`` on ``buffer`` (1D, C-contiguous) and return the
    :class:`Transfer` that completes it (collective, non-blocking).

    ``steps`` is this rank's :func:`plan` of the schedule and ``scratch`` a dict in which
    receive and packing buffers are kept between calls, when the caller keeps them (fresh
    pages cost a page fault each on first touch). A message of several runs is packed into
    one contiguous buffer, sent as one message and unpacked on arrival. ``on_done`` is
    called once the last step has completed.
    """
    return Transfer(comm, schedule, buffer, op, steps, scratch, on_done)


def run(
    comm,
    schedule: Schedule,
    buffer: np.ndarray,
    op=None,
    steps: list | None = None,
    scratch: dict | None = None,
) -> np.ndarray:
    """Execute ``schedule`` in place on ``buffer`` (collective; :func:`start` then wait)."""
    return start(comm, schedule, buffer, op, steps, scratch).wait()


class NativeTransfer:
    """A non-blocking call of the MPI library (``MPI_Ibcast``) behind the
    :class:`Transfer` interface."""

    def __init__(self, request, buffer: np.ndarray):
        self.buffer = buffer
        self._request = request

    @property
    def done(self) -> bool:
        return self._request is None

    def test(self) -> bool:
        if self._request is not None and self._request.Test():
            self._request = None
        return self._request is None

    def wait(self) -> np.ndarray:
        if self._request is not None:
            self._request.Wait()
            self._request = None
        return self.buffer


def native(
    comm, operation: str, buffer: np.ndarray, op=None, root: int = 0, out=None
) -> np.ndarray:
    """The MPI library's own collective (collective).

    bcast works in place on ``buffer``; the others read ``buffer`` and write ``out`` (a new
    array for reductions when ``out`` is None), as their MPI calls do, and return it —
    None for a reduction where MPI defines no result (off the root of reduce, rank 0 of
    exscan).
    """
    if operation == "bcast":
        comm.Bcast(buffer, root=root)
        return buffer
    if operation == "gather":
        comm.Gather(buffer, out, root=root)
        return out
    if operation == "scatter":
        comm.Scatter(buffer, out, root=root)
        return out
    if operation == "alltoall":
        comm.Alltoall(buffer, out)
        return out
    mpi_op = MPI_OPERATORS.get(op) if not callable(op) else _user_op(op)
    if mpi_op is None:
        raise ValueError(f"op must be one of {sorted(OPERATORS)} or a callable, got {op!r}")
    result = np.empty_like(buffer) if out is None else out
    try:
        if operation == "reduce":
            comm.Reduce(buffer, result, op=mpi_op, root=root)
        else:
            call = {"allreduce": comm.Allreduce, "scan": comm.Scan, "exscan": comm.Exscan}
            call[operation](buffer, result, op=mpi_op)
    finally:
        if callable(op):
            mpi_op.Free()
    return result if result_defined(operation, comm.Get_rank(), root) else None


def _user_op(function: Callable):
    def apply(incoming, inout, datatype):
        dtype = np.dtype(MPI._typecode(datatype))
        a = np.frombuffer(incoming, dtype=dtype)
        b = np.frombuffer(inout, dtype=dtype)
        b[...] = function(a, b)

    return MPI.Op.Create(apply, commute=True)
