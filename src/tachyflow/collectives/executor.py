"""Runs a schedule with mpi4py on a numpy buffer (the MPI executor).

Per step, a rank posts a receive (into a scratch array) for every message addressed to it
and a send of every segment range it owes, waits for all of them, then copies or combines
what arrived. Sends therefore carry the values from the start of the step, as the
schedule's semantics require, and a rank may send and receive the same segments in one
step (recursive doubling, rings).
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


def run(
    comm,
    schedule: Schedule,
    buffer: np.ndarray,
    op=None,
    steps: list | None = None,
    scratch: dict | None = None,
) -> np.ndarray:
    """Execute ``schedule`` in place on ``buffer`` (1D, C-contiguous) (collective).

    ``steps`` is this rank's :func:`plan` of the schedule and ``scratch`` a dict in which
    receive and packing buffers are kept between calls, when the caller keeps them (fresh
    pages cost a page fault each on first touch). A message of several runs is packed into
    one contiguous buffer, sent as one message and unpacked on arrival.
    """
    if comm.Get_size() != schedule.size:
        raise ValueError(
            f"schedule is for {schedule.size} ranks, communicator has {comm.Get_size()}"
        )
    combine = operator(op) if schedule.operation in REDUCTIONS else None
    in_place = combine in OPERATORS.values()  # numpy ufuncs can write into the buffer

    def land(target: np.ndarray, incoming: np.ndarray, reduce: bool) -> None:
        if not reduce:
            target[...] = incoming
        elif in_place:
            combine(target, incoming, out=target)
        else:
            target[...] = combine(target, incoming)

    def contiguous(key, ranges) -> np.ndarray:
        array = scratch.get(key)
        if array is None:
            total = sum(stop - start for start, stop in ranges)
            array = scratch[key] = np.empty(total, dtype=buffer.dtype)
        return array

    steps = plan(schedule, comm.Get_rank()) if steps is None else steps
    scratch = {} if scratch is None else scratch
    irecv, isend, waitall = comm.Irecv, comm.Isend, MPI.Request.Waitall
    for index, (sends, receives, copies, reduce) in enumerate(steps):
        for origins, destinations in copies:
            for (a, b), (c, d) in zip(origins, destinations, strict=True):
                land(buffer[c:d], buffer[a:b], reduce)
        requests, arrivals = [], []
        for position, (peer, ranges, direct) in enumerate(receives):
            if direct:
                requests.append(irecv(buffer[ranges[0][0] : ranges[0][1]], peer, TAG))
                continue
            landing = contiguous((index, position, buffer.dtype.str), ranges)
            requests.append(irecv(landing, peer, TAG))
            arrivals.append((ranges, landing))
        for position, (peer, ranges) in enumerate(sends):
            if len(ranges) == 1:
                outgoing = buffer[ranges[0][0] : ranges[0][1]]
            else:
                outgoing = contiguous((index, "pack", position, buffer.dtype.str), ranges)
                np.concatenate([buffer[start:stop] for start, stop in ranges], out=outgoing)
            requests.append(isend(outgoing, peer, TAG))
        waitall(requests)
        for ranges, landing in arrivals:
            offset = 0
            for start, stop in ranges:
                land(buffer[start:stop], landing[offset : offset + stop - start], reduce)
                offset += stop - start
    return buffer


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
