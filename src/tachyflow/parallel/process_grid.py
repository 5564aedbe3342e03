"""A P × Q process grid with a 2D block-cyclic layout of a dense matrix (as ScaLAPACK and
HPL lay one out), and the data movements of a distributed LU factorisation.

Rank ``r`` of the communicator sits at grid coordinates ``(row, col) = divmod(r, Q)``
(HPL's row-major process mapping). Global row ``i`` of the matrix lives on process row
``(i // nb) % P``, column ``j`` on process column ``(j // nb) % Q``; each process keeps
its rows and columns in increasing global order (:class:`BlockCyclic`). ``row_comm``
holds the Q processes of one process row (panels are broadcast along it, by the
broadcasts of :mod:`tachyflow.collectives`, a room above this one), ``col_comm`` the P
processes of one process column (pivots are searched and rows swapped within it).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
from mpi4py import MPI


class BlockCyclic:
    """Which of ``length`` global indices, in blocks of ``block``, one of ``parts``
    processes holds (the one at coordinate ``coordinate``). Local, no MPI.

    Raises
    ------
    ValueError
        A length below 0, a block below 1, or a coordinate outside ``[0, parts)``.
    """

    def __init__(self, length: int, block: int, coordinate: int, parts: int):
        if length < 0 or block < 1 or parts < 1 or not 0 <= coordinate < parts:
            raise ValueError(
                f"block-cyclic layout needs length >= 0, block >= 1 and 0 <= coordinate < "
                f"parts, got length {length}, block {block}, coordinate {coordinate}, parts "
                f"{parts}"
            )
        self.length, self.block, self.coordinate, self.parts = length, block, coordinate, parts

    @cached_property
    def indices(self) -> np.ndarray:
        """The global indices held here, in increasing order."""
        blocks = np.arange(self.coordinate, -(-self.length // self.block), self.parts)
        offsets = np.arange(self.block)
        held = (blocks[:, None] * self.block + offsets[None, :]).ravel()
        return held[held < self.length]

    @property
    def count(self) -> int:
        """How many indices are held here."""
        return int(self.indices.size)

    def owner(self, index) -> np.ndarray | int:
        """The coordinate holding global ``index`` (scalar or array)."""
        return (np.asarray(index) // self.block) % self.parts

    def first_local(self, index: int) -> int:
        """Position of the first held index at or beyond global ``index``."""
        return int(np.searchsorted(self.indices, index))

    def local(self, index) -> np.ndarray:
        """Positions of held global indices ``index`` (which must be held here)."""
        return np.searchsorted(self.indices, index)

    def block_span(self, block: int) -> tuple[int, int]:
        """Local positions ``[start, stop)`` of global block ``block`` (empty if not held)."""
        first = block * self.block
        return self.first_local(first), self.first_local(min(first + self.block, self.length))


class ProcessGrid:
    """A P × Q grid of the ranks of ``comm`` and its row and column communicators
    (collective to build and to :meth:`free`; it owns both).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        P · Q ranks.
    rows, cols : int
        P and Q.

    Raises
    ------
    ValueError
        P or Q below 1, or ``P · Q`` not the size of ``comm`` (the same on every rank).
    """

    def __init__(self, comm, rows: int, cols: int):
        size = comm.Get_size()
        if rows < 1 or cols < 1 or rows * cols != size:
            raise ValueError(f"a {rows}x{cols} process grid needs {rows * cols} ranks, got {size}")
        self.comm = comm
        self.rows, self.cols = rows, cols
        self.row, self.col = divmod(comm.Get_rank(), cols)
        self.row_comm = comm.Split(self.row, self.col)  # rank in it = col
        self.col_comm = comm.Split(self.col, self.row)  # rank in it = row

    def free(self) -> None:
        """Release the row and column communicators (collective)."""
        for name in ("row_comm", "col_comm"):
            communicator = getattr(self, name, None)
            if communicator is not None and communicator != MPI.COMM_NULL:
                communicator.Free()
            setattr(self, name, None)

    # -- along a process row ---------------------------------------------------------------

    def reduce_along_row(self, values: np.ndarray, root: int) -> np.ndarray | None:
        """Sum ``values`` over the process row into process column ``root`` (collective
        over the process row): the sum there, None elsewhere."""
        total = np.empty_like(values) if self.col == root else None
        self.row_comm.Reduce(values, total, op=MPI.SUM, root=root)
        return total

    def sum_along_row(self, values: np.ndarray) -> np.ndarray:
        """Sum ``values`` over the process row, on every process of it (collective)."""
        total = np.empty_like(values)
        self.row_comm.Allreduce(values, total, op=MPI.SUM)
        return total

    # -- along a process column ------------------------------------------------------------

    def gather_along_column(self, values: np.ndarray) -> np.ndarray:
        """Every process's ``values`` (same size everywhere) stacked by process row, on
        every process of the column (collective over the process column)."""
        if self.rows == 1:
            return values[None, :].copy()
        stacked = np.empty((self.rows, values.size), dtype=values.dtype)
        self.col_comm.Allgather(np.ascontiguousarray(values), stacked)
        return stacked

    def gather_rows_along_column(self, mine: np.ndarray, counts) -> np.ndarray:
        """Matrix rows from every process of the column, stacked by process row.

        ``mine`` is this process's ``counts[self.row] × width`` rows (C-ordered);
        ``counts`` the number of rows each process row contributes (known everywhere).
        Collective over the process column.
        """
        counts = np.asarray(counts, dtype=np.int64)
        width = mine.shape[1]
        if mine.shape[0] != counts[self.row]:
            raise ValueError(f"{mine.shape[0]} rows given, counts say {counts[self.row]}")
        if self.rows == 1:
            return np.ascontiguousarray(mine)
        stacked = np.empty((int(counts.sum()), width))
        sizes = counts * width
        self.col_comm.Allgatherv(
            np.ascontiguousarray(mine), [stacked, sizes, np.cumsum(sizes) - sizes, MPI.DOUBLE]
        )
        return stacked

    def broadcast_along_column(self, values: np.ndarray, root: int) -> np.ndarray:
        """Broadcast ``values`` in place from process row ``root`` down the process column
        (collective over the process column)."""
        if self.rows > 1:
            self.col_comm.Bcast(values, root=root)
        return values

    # -- over the whole grid ---------------------------------------------------------------

    def maximum(self, values) -> np.ndarray:
        """Element-wise maximum of ``values`` over every rank (collective)."""
        values = np.atleast_1d(np.asarray(values, dtype=np.float64))
        result = np.empty_like(values)
        self.comm.Allreduce(values, result, op=MPI.MAX)
        return result

    def barrier(self) -> None:
        """Wait for every rank (collective)."""
        self.comm.Barrier()
