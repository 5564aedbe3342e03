"""Aggregation: the ranks split into groups, each group's pieces gathered by its first rank
and copied into that rank's SST stream.

The ``adios2`` wheel has no MPI, so pieces travel with mpi4py. They go one field at a time
through at most two piece-sized buffers that rotate (the receive of the next piece overlaps
the copy of the current one into SST): a gather of the whole group first would stage a
copy that SST's ``Put``, which always copies, makes pointless. ``docs/in-transit.md`` gives
the memory this stages, measured.
"""

from __future__ import annotations

import time as clock

import numpy as np


def node_count(comm) -> int:
    """Number of shared-memory nodes among the ranks of ``comm`` (collective)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    leaders = comm.allreduce(int(node.Get_rank() == 0), op=MPI.SUM)
    node.Free()
    return leaders


class GroupAggregation:
    """This rank's part in moving a step's pieces to its group's aggregator.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The writer's communicator (no other traffic on it).
    pencils : sequence of Pencil
        Every rank's piece, by rank.
    aggregators : int
        Number of groups of contiguous ranks, each written by its first rank.
    fields : tuple of str
        Every field name the writer knows; a field's index tags its messages.
    dtype : numpy.dtype
        Type of the values.

    Notes
    -----
    Local to the rank except :meth:`send` and :meth:`put`, which a group's members and its
    aggregator call together (point-to-point within the group).
    """

    def __init__(self, comm, pencils, aggregators: int, fields: tuple[str, ...], dtype):
        from tachyflow.parallel.pencil import split_bounds

        self._comm = comm
        self._rank = comm.Get_rank()
        self._pencils = pencils
        self._fields = fields
        self._dtype = dtype
        #: First rank of each group, then the rank count.
        self.bounds = split_bounds(comm.Get_size(), aggregators)
        self.group = int(np.searchsorted(self.bounds, self._rank, side="right")) - 1
        self._ranks = range(int(self.bounds[self.group]), int(self.bounds[self.group + 1]))
        self.aggregator = self._ranks[0]
        self.is_aggregator = self._rank == self.aggregator
        piece_sizes = [pencils[r].size for r in self._ranks]
        #: Bytes of all fields of this rank's group in one step.
        self.step_bytes = sum(piece_sizes) * dtype.itemsize * len(fields)
        # Two rotating buffers overlap receiving with copying into SST; one when nothing is
        # received (only strided pieces of the aggregator's own pass through it) or when
        # two would stage more than half the group's data beyond SST's own copy.
        receives = any(piece_sizes[1:])
        halved = 4 * max(piece_sizes) <= len(fields) * sum(piece_sizes)
        self._slot_count = 2 if receives and halved else 1
        self._slot_elements = max(piece_sizes)
        self._slots: list[np.ndarray] = []
        self._copy: np.ndarray | None = None  # a member's contiguous copy of a strided piece

    @property
    def buffer_bytes(self) -> int:
        """Bytes of this rank's transfer buffers (SST's own copy of a step not included)."""
        held = [*self._slots, *([] if self._copy is None else [self._copy])]
        return sum(buffer.nbytes for buffer in held)

    def send(self, names, fields) -> float:
        """A member's part: its pieces of ``names`` (each the part of its pencil inside the
        field's box, possibly empty) to the aggregator, in that order; the seconds it took."""
        started = clock.perf_counter()
        for name in names:
            piece = fields[name]
            if piece.size == 0:
                continue
            if not piece.flags.c_contiguous:
                if self._copy is None:
                    self._copy = np.empty(self._pencils[self._rank].size, dtype=self._dtype)
                copy = self._copy[: piece.size].reshape(piece.shape)
                copy[...] = piece
                piece = copy
            self._comm.Send(piece, dest=self.aggregator, tag=self._fields.index(name))
        return clock.perf_counter() - started

    def _slot(self, user: int, shape) -> np.ndarray:
        """The rotating buffer of the ``user``-th buffered piece, of ``shape``."""
        index = user % self._slot_count
        while len(self._slots) <= index:
            self._slots.append(np.empty(self._slot_elements, dtype=self._dtype))
        return self._slots[index][: int(np.prod(shape))].reshape(shape)

    def put(self, engine, variables, names, fields, boxes) -> float:
        """The aggregator's part: every piece of the group (each its part of the field's
        box in ``boxes``) into the step begun on ``engine`` (``variables``: the stream's
        ADIOS variables by name); the seconds spent waiting for receives."""
        import adios2.bindings as adios

        transfer = 0.0
        parts = {
            (name, rank): boxes[name].intersection(self._pencils[rank])
            for name in names
            for rank in self._ranks
        }
        pieces = [key for key, part in parts.items() if part.size > 0]
        # Pieces that pass through a buffer: the members' (received) and the aggregator's
        # own when strided (SST's Put reads memory as contiguous, whatever the strides).
        buffered = [
            (name, rank)
            for name, rank in pieces
            if rank != self._rank or not fields[name].flags.c_contiguous
        ]
        requests = {}

        def receive(user: int) -> None:
            name, rank = buffered[user]
            if rank != self._rank:
                buffer = self._slot(user, parts[name, rank].shape)
                requests[user] = self._comm.Irecv(
                    buffer, source=rank, tag=self._fields.index(name)
                )

        for user in range(min(self._slot_count, len(buffered))):
            receive(user)
        user = 0
        for name, rank in pieces:
            part = parts[name, rank]
            variable = variables[name]
            variable.SetSelection([list(part.start), list(part.shape)])
            if (name, rank) == (buffered[user] if user < len(buffered) else None):
                data = self._slot(user, part.shape)
                if rank == self._rank:
                    data[...] = fields[name]
                else:
                    waiting = clock.perf_counter()
                    requests.pop(user).Wait()
                    transfer += clock.perf_counter() - waiting
                engine.Put(variable, data, adios.Mode.Sync)
                # This buffer is free again: the piece that rotates into it may come.
                if user + self._slot_count < len(buffered):
                    receive(user + self._slot_count)
                user += 1
            else:
                engine.Put(variable, fields[name], adios.Mode.Sync)
        return transfer
