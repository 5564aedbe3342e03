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


def plan(schedule: Schedule, rank: int) -> list[tuple[list, list, bool]]:
    """This rank's part of a schedule: per step, its sends ``(peer, start, stop)``, its
    receives ``(peer, start, stop)`` (element ranges of the buffer they are read from and
    land in) and whether receives combine. Steps where the rank
    neither sends nor receives are left out."""
    bounds = schedule.bounds.tolist()
    steps = []
    for item in schedule.steps():
        outgoing = np.flatnonzero(item.source == rank).tolist()
        incoming = np.flatnonzero(item.target == rank).tolist()
        if not outgoing and not incoming:
            continue
        sends = [
            (int(item.target[i]), bounds[item.first[i]], bounds[item.stop[i]]) for i in outgoing
        ]
        landing = item.landing_first()
        receives = [
            (
                int(item.source[i]),
                bounds[landing[i]],
                bounds[landing[i]] + bounds[item.stop[i]] - bounds[item.first[i]],
            )
            for i in incoming
        ]
        steps.append((sends, receives, item.reduce))
    return steps


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
    receive buffers are kept between calls, when the caller keeps them (fresh pages cost a
    page fault each on first touch).
    """
    if comm.Get_size() != schedule.size:
        raise ValueError(
            f"schedule is for {schedule.size} ranks, communicator has {comm.Get_size()}"
        )
    combine = operator(op) if schedule.operation in REDUCTIONS else None
    in_place = combine in OPERATORS.values()  # numpy ufuncs can write into the buffer
    steps = plan(schedule, comm.Get_rank()) if steps is None else steps
    scratch = {} if scratch is None else scratch
    irecv, isend, waitall = comm.Irecv, comm.Isend, MPI.Request.Waitall
    for index, (sends, receives, reduce) in enumerate(steps):
        requests, arrivals = [], []
        for position, (peer, start, stop) in enumerate(receives):
            key = (index, position, buffer.dtype.str)
            landing = scratch.get(key)
            if landing is None:
                landing = scratch[key] = np.empty(stop - start, dtype=buffer.dtype)
            requests.append(irecv(landing, peer, TAG))
            arrivals.append((start, stop, landing))
        for peer, start, stop in sends:
            requests.append(isend(buffer[start:stop], peer, TAG))
        waitall(requests)
        for start, stop, landing in arrivals:
            target = buffer[start:stop]
            if not reduce:
                target[...] = landing
            elif in_place:
                combine(target, landing, out=target)
            else:
                target[...] = combine(target, landing)
    return buffer


def native(
    comm, operation: str, buffer: np.ndarray, op=None, root: int = 0, out=None
) -> np.ndarray:
    """The MPI library's own collective (collective).

    bcast and the reductions work in place on ``buffer`` (where MPI defines no result —
    off the root of reduce, rank 0 of exscan — it is left as it was); gather, scatter and
    alltoall read ``buffer`` and write ``out``, as their MPI calls do.
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
    result = np.empty_like(buffer)
    try:
        if operation == "reduce":
            comm.Reduce(buffer, result, op=mpi_op, root=root)
        else:
            call = {"allreduce": comm.Allreduce, "scan": comm.Scan, "exscan": comm.Exscan}
            call[operation](buffer, result, op=mpi_op)
    finally:
        if callable(op):
            mpi_op.Free()
    if result_defined(operation, comm.Get_rank(), root):
        buffer[...] = result
    return buffer


def _user_op(function: Callable):
    def apply(incoming, inout, datatype):
        dtype = np.dtype(MPI._typecode(datatype))
        a = np.frombuffer(incoming, dtype=dtype)
        b = np.frombuffer(inout, dtype=dtype)
        b[...] = function(a, b)

    return MPI.Op.Create(apply, commute=True)
