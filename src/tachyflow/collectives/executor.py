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

from tachyflow.collectives.schedule import Schedule

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


def run(comm, schedule: Schedule, buffer: np.ndarray, op=None) -> np.ndarray:
    """Execute ``schedule`` in place on ``buffer`` (1D, C-contiguous) (collective)."""
    if comm.Get_size() != schedule.size:
        raise ValueError(
            f"schedule is for {schedule.size} ranks, communicator has {comm.Get_size()}"
        )
    combine = operator(op) if schedule.operation != "bcast" else None
    rank = comm.Get_rank()
    bounds = schedule.bounds
    for item in schedule.steps():
        outgoing = np.flatnonzero(item.source == rank)
        incoming = np.flatnonzero(item.target == rank)
        if outgoing.size == 0 and incoming.size == 0:
            continue
        requests, arrivals = [], []
        for index in incoming.tolist():
            start, stop = bounds[item.first[index]], bounds[item.stop[index]]
            scratch = np.empty(stop - start, dtype=buffer.dtype)
            requests.append(comm.Irecv(scratch, source=int(item.source[index]), tag=TAG))
            arrivals.append((start, stop, scratch))
        for index in outgoing.tolist():
            start, stop = bounds[item.first[index]], bounds[item.stop[index]]
            requests.append(comm.Isend(buffer[start:stop], dest=int(item.target[index]), tag=TAG))
        MPI.Request.Waitall(requests)
        for start, stop, scratch in arrivals:
            if item.reduce:
                buffer[start:stop] = combine(buffer[start:stop], scratch)
            else:
                buffer[start:stop] = scratch
    return buffer


def native(comm, operation: str, buffer: np.ndarray, op=None, root: int = 0) -> np.ndarray:
    """The MPI library's own collective on ``buffer``, in place (collective)."""
    if operation == "bcast":
        comm.Bcast(buffer, root=root)
        return buffer
    mpi_op = MPI_OPERATORS.get(op) if not callable(op) else _user_op(op)
    if mpi_op is None:
        raise ValueError(f"op must be one of {sorted(OPERATORS)} or a callable, got {op!r}")
    result = np.empty_like(buffer)
    try:
        if operation == "allreduce":
            comm.Allreduce(buffer, result, op=mpi_op)
        else:
            comm.Reduce(buffer, result, op=mpi_op, root=root)
    finally:
        if callable(op):
            mpi_op.Free()
    buffer[...] = result if (operation == "allreduce" or comm.Get_rank() == root) else buffer
    return buffer


def _user_op(function: Callable):
    def apply(incoming, inout, datatype):
        dtype = np.dtype(MPI._typecode(datatype))
        a = np.frombuffer(incoming, dtype=dtype)
        b = np.frombuffer(inout, dtype=dtype)
        b[...] = function(a, b)

    return MPI.Op.Create(apply, commute=True)
