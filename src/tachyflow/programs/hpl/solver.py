"""HPL's solver: LU with partial pivoting of a dense matrix on a P × Q process grid
(2D block-cyclic), the triangular solve, and HPL's scaled residual.

The matrix is HPL's augmented ``N × (N+1)`` matrix ``[A | b]``: the right-hand side is
column N, so the row interchanges and the elimination reach it as they reach A, and what
is left in it at the end is ``L⁻¹ P b`` (HPL does the same; L is then never used again, so
interchanges are applied to the columns right of each panel only).

One step ``k`` of the right-looking factorisation:

1. the process column that owns panel ``k`` factors it: LAPACK ``dgetrf`` on its rows
   when P = 1; otherwise every process of the column takes part, column by column (the
   pivot search is an allgather of each process's best row, which also carries the pivot
   row to everyone), recursively halved so that most of the work is ``dtrsm``/``dgemm``
   (HPL's recursive panel factorisation); the factored top block and the pivots are then
   known to the whole process column;
2. the panel (pivots, top block, this process row's rows of it) is broadcast along each
   process row with one of the broadcasts of Kim's 1998 Korea University report, "Design
   of communication functions for high-performance multicomputers" (:data:`BROADCASTS`);
3. every process applies the interchanges to its columns right of the panel (a local
   ``dlaswp`` when P = 1; else one allgather of the rows concerned within the process
   column, which leaves the new top rows on every process of it), solves for those rows
   of U (``dtrsm``) and updates its trailing block (``dgemm``), in pieces of NB columns.

Look-ahead of depth 1: the process column that owns panel ``k+1`` updates that panel's
columns first, factors it and starts its broadcast, and only then updates the rest of its
trailing block; the others start receiving panel ``k+1`` before their update. Broadcasts
progress between the pieces of the update (the transfer is tested after each piece, as
HPL probes its broadcast), so panel ``k+1`` travels while every process is busy with step
``k``, and the factorisation of a panel is hidden behind the other columns' updates.

A zero pivot (the largest entry of a column exactly zero) is recorded in the panel's
broadcast, so every process learns it in the same step and the factorisation stops
there on all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from tachyflow import collectives
from tachyflow.models.profiles import resolve_profile
from tachyflow.numerics import dense
from tachyflow.numerics.lu import eliminate_column, interchange_sources, pivot_candidate
from tachyflow.parallel.process_grid import BlockCyclic, ProcessGrid

# HPL's broadcast names -> the algorithm of tachyflow.collectives that runs it.
BROADCASTS = {
    "binomial": "binomial",
    "ring": "pipeline",  # pipelined chain (HPL's increasing ring, segmented)
    "two-ring": "two-path",  # two pipelined chains fed alternately by the root
    "scatter-allgather": "scatter-ring",  # the k-segment broadcast with k = Q
    "native": "native",  # MPI_Ibcast of the MPI library
}
# Columns of a panel factored one by one when P > 1 (below this, recursion stops).
LEAF_COLUMNS = 16
# A panel's broadcast: [panel index, first zero pivot or -1], pivots, top block, rows.
HEADER = 2


@dataclass
class Panel:
    """A factored panel as each process of a row holds it after the broadcast.

    ``pivots`` are global rows (row ``first + i`` was interchanged with ``pivots[i]``);
    ``top`` the factored ``width × width`` top block (unit L below the diagonal, U on and
    above); ``lower`` this process row's rows of the panel at or below row ``first``;
    ``zero_pivot`` the global column of the first zero pivot, or -1.
    """

    index: int
    first: int
    width: int
    pivots: np.ndarray
    top: np.ndarray
    lower: np.ndarray
    zero_pivot: int


class _PendingPanel:
    """A panel whose broadcast is in flight."""

    def __init__(self, transfer, buffer: np.ndarray, index: int, first: int, width: int):
        self.transfer, self.buffer = transfer, buffer
        self.index, self.first, self.width = index, first, width

    def test(self) -> bool:
        return self.transfer.test()

    def wait(self) -> Panel:
        buffer = self.transfer.wait()
        width = self.width
        top_end = HEADER + width + width * width
        return Panel(
            self.index,
            self.first,
            width,
            buffer[HEADER : HEADER + width].astype(np.int64),
            buffer[HEADER + width : top_end].reshape((width, width), order="F"),
            buffer[top_end:].reshape((-1, width), order="F"),
            int(buffer[1]),
        )


class DistributedLU:
    """HPL's ``N × (N+1)`` augmented system on a process grid: generate (local), factor,
    solve and check (collective over the grid).

    Parameters
    ----------
    grid : ProcessGrid
        The P × Q processes.
    n : int
        Order N of the system.
    block : int
        Block size NB of the block-cyclic layout (and width of a panel).
    broadcast : str
        Panel broadcast, a key of :data:`BROADCASTS`.
    profile : optional
        Machine profile whose model sets the segment count of the pipelined broadcasts
        (anything :func:`~tachyflow.models.profiles.resolve_profile` takes).

    Raises
    ------
    ValueError
        N or NB below 1, or an unknown broadcast.
    """

    def __init__(self, grid: ProcessGrid, n: int, block: int, broadcast: str = "binomial",
                 profile=None):
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"the order N must be a positive integer, got {n!r}")
        if isinstance(block, bool) or not isinstance(block, int | np.integer) or block < 1:
            raise ValueError(f"the block size NB must be a positive integer, got {block!r}")
        self.grid, self.n, self.block = grid, int(n), int(block)
        self.broadcast = broadcast
        self.rows = BlockCyclic(self.n, self.block, grid.row, grid.rows)
        self.cols = BlockCyclic(self.n + 1, self.block, grid.col, grid.cols)
        self.panels = -(-self.n // self.block)
        self.a = np.zeros((self.rows.count, self.cols.count), order="F")
        capacity = HEADER + self.block + self.block**2 + self.rows.count * self.block
        self._buffers = (np.empty(capacity), np.empty(capacity))  # panels k and k+1
        self._model = resolve_profile(profile).model

    @property
    def broadcast(self) -> str:
        """The panel broadcast (a key of :data:`BROADCASTS`); may be changed between
        factorisations."""
        return self._broadcast

    @broadcast.setter
    def broadcast(self, name: str) -> None:
        if name not in BROADCASTS:
            raise ValueError(f"broadcast must be one of {sorted(BROADCASTS)}, got {name!r}")
        self._broadcast = name

    # -- the matrix ------------------------------------------------------------------------

    def generate(self, matrix) -> None:
        """Fill this process's piece of ``[A | b]`` with ``matrix(rows, columns, out)``
        (global indices; see :func:`tachyflow.numerics.lu.random_block`)."""
        matrix(self.rows.indices, self.cols.indices, out=self.a)

    # -- factorisation ---------------------------------------------------------------------

    def factor(self) -> int:
        """LU-factor ``A`` in place, carrying ``b`` along (collective). Returns the global
        column of the first zero pivot (the matrix is singular; the factorisation stopped
        there), or -1."""
        cols = self.cols
        pending = self._start_panel(0)
        for k in range(self.panels):
            panel = pending.wait()
            if panel.zero_pivot >= 0:
                return panel.zero_pivot
            trailing = cols.first_local(panel.first + panel.width)
            ahead, pending = k + 1, None
            if ahead < self.panels and self.grid.col == ahead % self.grid.cols:
                ahead_stop = cols.block_span(ahead)[1]
                self._update(panel, trailing, ahead_stop)
                pending = self._start_panel(ahead)
                self._update(panel, ahead_stop, cols.count, pending)
                continue
            if ahead < self.panels:
                pending = self._start_panel(ahead)
            self._update(panel, trailing, cols.count, pending)
        return -1

    def _start_panel(self, k: int) -> _PendingPanel:
        """Factor panel ``k`` (its process column) and start its broadcast along every
        process row; the other columns start receiving it."""
        first = k * self.block
        width = min(self.block, self.n - first)
        start = self.rows.first_local(first)
        rows_below = self.rows.count - start
        top_end = HEADER + width + width * width
        buffer = self._buffers[k % 2][: top_end + rows_below * width]
        root = k % self.grid.cols
        if self.grid.col == root:
            c0 = self.cols.block_span(k)[0]
            c1 = c0 + width  # the last block may also hold column N, b
            pivots, top, zero_pivot = self._factor_panel(self.a[start:, c0:c1], first)
            buffer[0], buffer[1] = k, zero_pivot
            buffer[HEADER : HEADER + width] = pivots
            buffer[HEADER + width : top_end] = top.ravel(order="F")
            buffer[top_end:].reshape((rows_below, width), order="F")[...] = self.a[start:, c0:c1]
        algorithm = BROADCASTS[self.broadcast]
        segments = collectives.segment_count(
            "bcast", algorithm, self.grid.cols, buffer.nbytes, self._model
        )
        if segments is not None:
            segments = max(1, min(segments, buffer.size))
        transfer = collectives.ibcast(self.grid.row_comm, buffer, root, algorithm, segments)
        return _PendingPanel(transfer, buffer, k, first, width)

    def _factor_panel(self, block: np.ndarray, first: int):
        """Factor this process's rows (at or below global row ``first``) of a panel in
        place: pivots (global rows), the factored top block, first zero pivot or -1."""
        width = block.shape[1]
        if self.grid.rows == 1:
            pivots, zero = dense.lu_factor_in_place(block)
            top = block[:width].copy(order="F")
            return first + pivots, top, (first + zero if zero >= 0 else -1)
        return _SpreadPanel(self.grid, self.rows, block, first).factor()

    # -- trailing update -------------------------------------------------------------------

    def _update(self, panel: Panel, c0: int, c1: int, pending=None) -> None:
        """Apply panel ``panel`` to local columns ``[c0, c1)``: interchanges, U rows,
        trailing ``dgemm`` in pieces of NB columns, testing ``pending`` between them."""
        if c1 <= c0:
            return
        u = self._interchange(panel, c0, c1)
        dense.solve_unit_lower(panel.top, u)
        if self.grid.rows > 1 and self.grid.row == panel.index % self.grid.rows:
            r0, r1 = self.rows.block_span(panel.index)
            self.a[r0:r1, c0:c1] = u
        below = self.rows.first_local(panel.first + panel.width)
        lower = panel.lower[below - self.rows.first_local(panel.first) :]
        for start in range(c0, c1, self.block):
            stop = min(start + self.block, c1)
            dense.gemm_update(self.a[below:, start:stop], lower, u[:, start - c0 : stop - c0])
            if pending is not None:
                pending.test()

    def _interchange(self, panel: Panel, c0: int, c1: int) -> np.ndarray:
        """Apply the panel's interchanges to local columns ``[c0, c1)``; the new top rows
        there (a view into the matrix when P = 1, else a gathered copy)."""
        rows, first, width = self.rows, panel.first, panel.width
        if self.grid.rows == 1:  # every row is here: local row = global row
            dense.swap_rows(self.a[:, c0:c1], first, panel.pivots)
            return self.a[first : first + width, c0:c1]
        top, moved, moved_from = interchange_sources(first, panel.pivots)
        sources = np.concatenate((top, moved_from))
        owners = rows.owner(sources)
        mine = sources[owners == self.grid.row]
        counts = np.bincount(owners, minlength=self.grid.rows)
        gathered = self.grid.gather_rows_along_column(
            np.ascontiguousarray(self.a[rows.local(mine), c0:c1]), counts
        )
        # Row i of `content` is the old content of sources[i] (gathered by owner).
        order = np.argsort(owners, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        content = gathered[position]
        here = rows.owner(moved) == self.grid.row
        self.a[rows.local(moved[here]), c0:c1] = content[width:][here]
        return np.asfortranarray(content[:width])

    # -- solve and check -------------------------------------------------------------------

    def solve(self) -> np.ndarray:
        """Back-substitution ``U x = L⁻¹ P b`` after :meth:`factor` (collective). Returns
        this process's entries of x: those of its columns below N, in order."""
        grid, rows, cols, nb = self.grid, self.rows, self.cols, self.block
        own_x = cols.first_local(self.n)
        x = np.zeros(own_x)
        rhs_column = cols.owner(self.n)
        rhs = cols.first_local(self.n) if grid.col == rhs_column else None
        for k in reversed(range(self.panels)):
            row_owner, col_owner = k % grid.rows, k % grid.cols
            r0, r1 = rows.block_span(k)
            solved = np.empty(min(nb, self.n - k * nb))
            c0 = cols.block_span(k)[0]
            c1 = c0 + solved.size
            if grid.row == row_owner:
                after = cols.first_local((k + 1) * nb)
                partial = -(self.a[r0:r1, after:own_x] @ x[after:])
                if rhs is not None:
                    partial += self.a[r0:r1, rhs]
                total = grid.reduce_along_row(partial, col_owner)
                if grid.col == col_owner:
                    solved[:] = solve_triangular(self.a[r0:r1, c0:c1], total, lower=False)
            if grid.col == col_owner:
                x[c0:c1] = grid.broadcast_along_column(solved, row_owner)
        return x

    def residual(self, matrix, x: np.ndarray) -> dict:
        """HPL's check ``‖Ax − b‖∞ / (ε (‖A‖∞ ‖x‖∞ + ‖b‖∞) N)`` (ε = 2⁻⁵³, HPL's), with A
        and b generated again by ``matrix`` into this process's piece (the factors are
        overwritten) and every norm reduced over the grid (collective)."""
        own_x = self.cols.first_local(self.n)
        a = matrix(self.rows.indices, self.cols.indices[:own_x], out=self.a[:, :own_x])
        b = np.empty((self.rows.count, 1), order="F")
        matrix(self.rows.indices, np.array([self.n]), out=b)
        b = b[:, 0]
        product = self.grid.sum_along_row(a @ x)
        row_sums = np.zeros(self.rows.count)
        for start in range(0, own_x, self.block):
            row_sums += np.abs(a[:, start : start + self.block]).sum(axis=1)
        row_sums = self.grid.sum_along_row(row_sums)
        norms = self.grid.maximum(
            [
                np.max(np.abs(product - b), initial=0.0),
                np.max(row_sums, initial=0.0),
                np.max(np.abs(x), initial=0.0),
                np.max(np.abs(b), initial=0.0),
            ]
        )
        residual_norm, a_norm, x_norm, b_norm = (float(v) for v in norms)
        epsilon = np.finfo(np.float64).eps / 2
        scaled = residual_norm / (epsilon * (a_norm * x_norm + b_norm) * self.n)
        return {
            "residual": scaled,
            "residual_norm": residual_norm,
            "a_norm": a_norm,
            "x_norm": x_norm,
            "b_norm": b_norm,
            "epsilon": epsilon,
        }


class _SpreadPanel:
    """Factorisation of a panel whose rows are spread over a process column (P > 1):
    recursive halving down to :data:`LEAF_COLUMNS` columns, factored one column at a time
    (collective over the process column)."""

    def __init__(self, grid: ProcessGrid, rows: BlockCyclic, block: np.ndarray, first: int):
        self.grid, self.rows, self.block, self.first = grid, rows, block, first
        self.width = block.shape[1]
        self.global_rows = rows.indices[rows.first_local(first) :]
        self.top = np.zeros((self.width, self.width), order="F")
        self.pivots = np.zeros(self.width, dtype=np.int64)
        self.zero_pivot = -1

    def factor(self):
        self._factor(0, self.width)
        return self.pivots, self.top, self.zero_pivot

    def _local(self, row: int) -> int:
        return int(np.searchsorted(self.global_rows, row))

    def _factor(self, lo: int, hi: int) -> None:
        if hi - lo <= LEAF_COLUMNS:
            for column in range(lo, hi):
                self._column(column, hi)
            return
        mid = (lo + hi) // 2
        self._factor(lo, mid)
        # Rows lo..mid of U right of the left half, from the pivot rows every process
        # holds; written back where they live, then the update below them.
        u = self.top[lo:mid, mid:hi]
        dense.solve_unit_lower(self.top[lo:mid, lo:mid], u)
        rows = np.arange(self.first + lo, self.first + mid)
        here = self.rows.owner(rows) == self.grid.row
        self.block[[self._local(r) for r in rows[here]], mid:hi] = u[here]
        below = self._local(self.first + mid)
        dense.gemm_update(self.block[below:, mid:hi], self.block[below:, lo:mid], u)
        self._factor(mid, hi)

    def _column(self, column: int, stop: int) -> None:
        width, block, row = self.width, self.block, self.first + column
        active = self._local(row)
        best = pivot_candidate(block[active:, column])
        offer = np.zeros(2 + 2 * width)
        offer[:2] = (-1.0, -1.0)
        if best >= 0:
            offer[0] = abs(block[active + best, column])
            offer[1] = self.global_rows[active + best]
            offer[2 : 2 + width] = block[active + best]
        owns_row = self.rows.owner(row) == self.grid.row
        if owns_row:
            offer[2 + width :] = block[active]
        offers = self.grid.gather_along_column(offer)
        # The largest magnitude wins, the lowest global row among equals: the same
        # choice on every process.
        candidates = np.flatnonzero(offers[:, 1] >= 0)
        winner = candidates[np.lexsort((offers[candidates, 1], -offers[candidates, 0]))[0]]
        pivot = int(offers[winner, 1])
        pivot_row = offers[winner, 2 : 2 + width].copy()
        if offers[winner, 0] == 0.0 and self.zero_pivot < 0:
            self.zero_pivot = row
        if pivot != row and self.rows.owner(pivot) == self.grid.row:
            block[self._local(pivot)] = offers[self.rows.owner(row), 2 + width :]
        if owns_row:
            block[active] = pivot_row
        self.top[column] = pivot_row
        self.pivots[column] = pivot
        eliminate_column(block, self._local(row + 1), column, stop, pivot_row)
