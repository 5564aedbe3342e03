"""Blocks of a 2D structured grid over a ``Pi x Pj`` process grid, with a wake cut.

The layout of MPINS2D (B.-S. Lee, J.-W. Hong, S. Lee, D. H. Lee, "Performance Analysis of
Cluster Network Interfaces for Parallel Computing of Computational Fluid Dynamics"): a C-
or H-grid of ``ni x nj`` cells is cut into ``Pi`` pieces along ``i`` (round the body) and
``Pj`` along ``j`` (off the wall); each rank owns one block and keeps ``g`` ghost layers on
every side, so its arrays have shape ``(..., ni_loc + 2g, nj_loc + 2g)``.

Ghost cells stand for these global cells:

- inside the grid: the cell itself, wherever it lives (side and corner neighbours);
- below ``j = 0`` on the wake cut (the first and last ``wake_cut`` cells in ``i``): ghost
  ``(i, -1 - k)`` is cell ``(ni - 1 - i, k)``, the cell facing it across the cut, on this
  rank, another, or several;
- across ``i`` when ``periodic_i`` (an O-grid): cell ``i mod ni``;
- anything else (the wall below ``j = 0``, the far field above ``j = nj - 1``, the outflow
  beyond ``i = 0`` and ``i = ni - 1``) is a physical boundary: :meth:`StructuredBlocks.
  exchange` leaves those ghosts alone and :meth:`StructuredBlocks.boundary_sides` says
  where they are, for the solver's boundary conditions.

The exchange plan maps every ghost cell directly to its owner, so corner ghosts come in the
same single round of messages as side ghosts, and a block whose mirrored wake range spans
several blocks simply has several peers. The plan is built once, at construction, with one
``Alltoall`` of counts and one message per peer of the requested cells; each exchange is
then one non-blocking message per peer each way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tachyflow.parallel.pencil import split_bounds
from tachyflow.parallel.reductions import Reductions

_PLAN_TAG = 7101
_EXCHANGE_TAG = 7102


@dataclass(frozen=True)
class BoundarySegment:
    """A piece of a physical boundary on one side of a block.

    Attributes
    ----------
    side : {"i_low", "i_high", "j_low", "j_high"}
    kind : {"wall", "wake", "farfield", "outflow"}
    start, stop : int
        Global cell range along the side: ``i`` for the ``j`` sides, ``j`` for the ``i``
        sides.
    """

    side: str
    kind: str
    start: int
    stop: int


def block_grids(ni: int, nj: int, ranks: int, ghosts: int) -> list[tuple[int, int]]:
    """Every ``(Pi, Pj)`` with ``Pi * Pj == ranks`` whose blocks hold ``>= ghosts`` cells."""
    return [
        (pi, ranks // pi)
        for pi in range(1, ranks + 1)
        if ranks % pi == 0 and ni // pi >= ghosts and nj // (ranks // pi) >= ghosts
    ]


def choose_block_grid(ni: int, nj: int, ranks: int, ghosts: int) -> tuple[int, int]:
    """The block grid with the smallest largest block, then the shortest halo, then most
    splits in ``i``.

    Splits in ``i`` win ties because ``i`` is the long direction of a C-grid (280 x 64
    for the RAE 2822) and the solver's sweeps along ``j`` stay whole on a rank.
    """
    candidates = block_grids(ni, nj, ranks, ghosts)
    if not candidates:
        raise ValueError(
            f"a {ni} x {nj} grid cannot be split over {ranks} ranks into blocks of at least "
            f"ghosts = {ghosts} cells each way"
        )

    def cost(grid):
        bi, bj = math.ceil(ni / grid[0]), math.ceil(nj / grid[1])
        return bi * bj, bi + bj, -grid[0]

    return min(candidates, key=cost)


class StructuredBlocks(Reductions):
    """This rank's block of an ``ni x nj`` structured grid and the exchanges between blocks.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The ranks to spread the grid over.
    ni, nj : int
        Cells along ``i`` (round the body) and ``j`` (off the wall).
    ghosts : int
        Ghost layers on each side (2 for the solver's second-order stencils).
    wake_cut : int
        Cells on each side of a C-grid's wake cut (0: none, the whole ``j = 0`` is wall).
    periodic_i : bool
        Wrap ``i`` (an O-grid).
    proc_grid : (int, int), optional
        ``(Pi, Pj)``; by default :func:`choose_block_grid`.

    Notes
    -----
    Construction is collective over ``comm`` (it creates a Cartesian communicator, owned by
    this object, and builds the exchange plan); so are :meth:`exchange`, :meth:`sum`,
    :meth:`max` and :meth:`free`. :meth:`boundary_sides` and :meth:`node_piece` are local.
    Blocks differ by at most one cell per direction, larger blocks first.

    Raises
    ------
    ValueError
        Sizes, ghost count or wake not valid, a process grid whose product is not the
        number of ranks, or blocks thinner than ``ghosts``; raised on every rank alike.
    """

    def __init__(self, comm, ni, nj, ghosts=2, wake_cut=0, periodic_i=False, proc_grid=None):
        for name, value, least in (("ni", ni, 1), ("nj", nj, 1), ("ghosts", ghosts, 1)):
            if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        if not isinstance(wake_cut, int | np.integer) or not 0 <= 2 * wake_cut <= ni:
            raise ValueError(
                f"wake_cut must be an integer in [0, ni/2 = {ni / 2}], got {wake_cut!r}"
            )
        self.ni, self.nj, self.ghosts = int(ni), int(nj), int(ghosts)
        self.wake_cut = int(wake_cut)
        self.periodic_i = bool(periodic_i)
        size = comm.Get_size()
        if proc_grid is None:
            proc_grid = choose_block_grid(self.ni, self.nj, size, self.ghosts)
        self.proc_grid = _check_block_grid(proc_grid, size, self.ni, self.nj, self.ghosts)
        self.comm = comm.Create_cart(list(self.proc_grid), periods=[self.periodic_i, False])
        self.coords = tuple(self.comm.Get_coords(self.comm.Get_rank()))
        self._bounds = (
            split_bounds(self.ni, self.proc_grid[0]),
            split_bounds(self.nj, self.proc_grid[1]),
        )
        i0, i1 = (int(b) for b in self._bounds[0][self.coords[0] : self.coords[0] + 2])
        j0, j1 = (int(b) for b in self._bounds[1][self.coords[1] : self.coords[1] + 2])
        self.i_range, self.j_range = range(i0, i1), range(j0, j1)
        g = self.ghosts
        self.block_shape = (i1 - i0, j1 - j0)
        self.shape_with_ghosts = (i1 - i0 + 2 * g, j1 - j0 + 2 * g)
        self._build_plan()

    # ---------------------------------------------------------------- the plan
    def _ghost_sources(self):
        """Local flat indices of this block's ghosts that stand for cells, and those cells."""
        g = self.ghosts
        i = np.arange(self.i_range.start - g, self.i_range.stop + g)
        j = np.arange(self.j_range.start - g, self.j_range.stop + g)
        big_i, big_j = np.meshgrid(i, j, indexing="ij")
        owned = np.zeros(big_i.shape, dtype=bool)
        owned[g:-g, g:-g] = True
        source_i, source_j = big_i.ravel(), big_j.ravel()
        valid = ~owned.ravel()
        if self.periodic_i:
            source_i = source_i % self.ni
        else:
            valid &= (source_i >= 0) & (source_i < self.ni)
        below = source_j < 0
        w = self.wake_cut
        cut = below & ((source_i < w) | (source_i >= self.ni - w)) & valid
        source_i = np.where(cut, self.ni - 1 - source_i, source_i)
        source_j = np.where(cut, -1 - source_j, source_j)
        valid &= ~(below & ~cut) & (source_j < self.nj)
        ghosts = np.flatnonzero(valid)
        return ghosts, source_i[ghosts], source_j[ghosts]

    def _owner(self, cell_i: np.ndarray, cell_j: np.ndarray) -> np.ndarray:
        """Rank (in the Cartesian communicator) owning each global cell."""
        block_i = np.searchsorted(self._bounds[0], cell_i, side="right") - 1
        block_j = np.searchsorted(self._bounds[1], cell_j, side="right") - 1
        # MPI numbers a Cartesian communicator's ranks row-major in their coordinates.
        return (block_i * self.proc_grid[1] + block_j).astype(np.int64)

    def _local_flat(self, cell_i: np.ndarray, cell_j: np.ndarray) -> np.ndarray:
        g = self.ghosts
        return (cell_i - self.i_range.start + g) * self.shape_with_ghosts[1] + (
            cell_j - self.j_range.start + g
        )

    def _build_plan(self) -> None:
        from mpi4py import MPI

        me, size = self.comm.Get_rank(), self.comm.Get_size()
        ghosts, cell_i, cell_j = self._ghost_sources()
        owners = self._owner(cell_i, cell_j) if len(ghosts) else np.zeros(0, dtype=np.int64)
        wanted = np.bincount(owners, minlength=size).astype(np.int64)
        asked = np.empty(size, dtype=np.int64)
        self.comm.Alltoall(wanted, asked)
        self._receives, self._sends, self._local = [], [], None
        requests, keep = [], []
        for peer in np.flatnonzero(wanted):
            mine = owners == peer
            if peer == me:
                self._local = (ghosts[mine], self._local_flat(cell_i[mine], cell_j[mine]))
                continue
            self._receives.append((int(peer), ghosts[mine]))
            message = np.ascontiguousarray(np.stack([cell_i[mine], cell_j[mine]]))
            keep.append(message)
            requests.append(self.comm.Isend(message, dest=int(peer), tag=_PLAN_TAG))
        incoming = []
        for peer in np.flatnonzero(asked):
            if peer == me:
                continue
            message = np.empty((2, asked[peer]), dtype=np.int64)
            requests.append(self.comm.Irecv(message, source=int(peer), tag=_PLAN_TAG))
            incoming.append((int(peer), message))
        MPI.Request.Waitall(requests)
        self._sends = [(peer, self._local_flat(*message)) for peer, message in incoming]

    # ---------------------------------------------------------------- arrays
    def allocate(self, *leading: int, dtype=np.float64) -> np.ndarray:
        """A zero array of shape ``leading + shape_with_ghosts``."""
        return np.zeros((*leading, *self.shape_with_ghosts), dtype=dtype)

    def interior(self, array: np.ndarray) -> np.ndarray:
        """View of the owned cells of a ghosted array."""
        g = self.ghosts
        return array[..., g:-g, g:-g]

    def exchange(self, array: np.ndarray) -> np.ndarray:
        """Fill the ghost cells that stand for cells of the grid, in place (collective).

        ``array`` has shape ``(..., ni_loc + 2g, nj_loc + 2g)`` and is C-contiguous; every
        leading index (a variable of the state, say) travels in the same messages.
        Physical-boundary ghosts are left as they are. Returns ``array``.
        """
        from mpi4py import MPI

        if not isinstance(array, np.ndarray):
            raise TypeError(f"exchange needs a numpy array, got {type(array).__name__}")
        if array.ndim < 2 or array.shape[-2:] != self.shape_with_ghosts:
            raise ValueError(
                f"array has shape {array.shape} but this block with {self.ghosts} ghost "
                f"layers needs (..., {self.shape_with_ghosts[0]}, {self.shape_with_ghosts[1]})"
            )
        if not array.flags.c_contiguous:
            raise ValueError("exchange needs a C-contiguous array (np.ascontiguousarray)")
        flat = array.reshape((*array.shape[:-2], -1))
        requests, unpack = [], []
        for peer, ghosts in self._receives:
            buffer = np.empty((*flat.shape[:-1], len(ghosts)), dtype=array.dtype)
            requests.append(self.comm.Irecv(buffer, source=peer, tag=_EXCHANGE_TAG))
            unpack.append((ghosts, buffer))
        sent = []
        for peer, cells in self._sends:
            buffer = np.ascontiguousarray(flat[..., cells])
            sent.append(buffer)  # alive until Waitall
            requests.append(self.comm.Isend(buffer, dest=peer, tag=_EXCHANGE_TAG))
        if self._local is not None:
            ghosts, cells = self._local
            flat[..., ghosts] = flat[..., cells]
        MPI.Request.Waitall(requests)
        for ghosts, buffer in unpack:
            flat[..., ghosts] = buffer
        return array

    # ---------------------------------------------------------------- geometry
    def boundary_sides(self) -> list[BoundarySegment]:
        """The physical boundaries of this block, with their global cell extents.

        ``j_low`` splits into ``"wake"`` (the cut, filled by :meth:`exchange`) and
        ``"wall"`` segments; ``j_high`` is ``"farfield"``; ``i_low`` and ``i_high`` are
        ``"outflow"`` unless ``periodic_i``. Sides inside the grid are not listed.
        """
        (i0, i1), (j0, j1) = (
            (self.i_range.start, self.i_range.stop),
            (
                self.j_range.start,
                self.j_range.stop,
            ),
        )
        segments = []
        if j0 == 0:
            w, ni = self.wake_cut, self.ni
            for kind, start, stop in (("wake", 0, w), ("wall", w, ni - w), ("wake", ni - w, ni)):
                start, stop = max(start, i0), min(stop, i1)
                if start < stop:
                    segments.append(BoundarySegment("j_low", kind, start, stop))
        if j1 == self.nj:
            segments.append(BoundarySegment("j_high", "farfield", i0, i1))
        if not self.periodic_i:
            if i0 == 0:
                segments.append(BoundarySegment("i_low", "outflow", j0, j1))
            if i1 == self.ni:
                segments.append(BoundarySegment("i_high", "outflow", j0, j1))
        return segments

    def node_piece(self, x_nodes, y_nodes) -> tuple[np.ndarray, np.ndarray]:
        """This block's node coordinates with ``g`` ghost layers, shape
        ``(ni_loc + 1 + 2g, nj_loc + 1 + 2g)`` each.

        ``x_nodes``, ``y_nodes`` are the global ``(ni + 1, nj + 1)`` node arrays; only the
        entries this block needs are read, so a memory map (``np.load(...,
        mmap_mode="r")``) keeps the global grid off the rank. A 281 x 65 grid is small
        enough to generate identically on every rank instead. Ghost nodes: across the wake
        cut the mirrored nodes (node ``(i, -k)`` is node ``(ni - i, k)``, the trailing-edge
        node included), through the wall the point reflection ``2 r(i, 0) - r(i, k)``,
        beyond the far field and the outflow linear extrapolation, round ``i`` when
        periodic. Local.
        """
        pieces = []
        for nodes in (x_nodes, y_nodes):
            if getattr(nodes, "shape", None) != (self.ni + 1, self.nj + 1):
                raise ValueError(
                    f"node arrays must have shape ({self.ni + 1}, {self.nj + 1}) for "
                    f"{self.ni} x {self.nj} cells, got {getattr(nodes, 'shape', None)}"
                )
            g = self.ghosts
            i = np.arange(self.i_range.start - g, self.i_range.stop + g + 1)
            j = np.arange(self.j_range.start - g, self.j_range.stop + g + 1)
            big_i, big_j = np.meshgrid(i, j, indexing="ij")
            pieces.append(
                self._node_values(nodes, big_i.ravel(), big_j.ravel()).reshape(big_i.shape)
            )
        return pieces[0], pieces[1]

    def _node_values(self, nodes, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Values of global nodes ``(i, j)``, ghosts by the rules of :meth:`node_piece`."""
        ni, nj, w = self.ni, self.nj, self.wake_cut
        if self.periodic_i:
            i = i % ni
        values = np.empty(i.shape, dtype=np.float64)
        inside = (i >= 0) & (i <= ni) & (j >= 0) & (j <= nj)
        if inside.any():
            values[inside] = nodes[i[inside], j[inside]]
        high = j > nj
        below = j < 0
        cut = below & ((i <= w) | (i >= ni - w)) if w > 0 else np.zeros_like(below)
        wall = below & ~cut
        beyond = ~inside & ~high & ~below
        if high.any():
            edge = self._node_values(nodes, i[high], np.full(high.sum(), nj))
            inner = self._node_values(nodes, i[high], np.full(high.sum(), nj - 1))
            values[high] = edge + (j[high] - nj) * (edge - inner)
        if cut.any():
            values[cut] = self._node_values(nodes, ni - i[cut], -j[cut])
        if wall.any():
            surface = self._node_values(nodes, i[wall], np.zeros(wall.sum(), dtype=np.int64))
            values[wall] = 2.0 * surface - self._node_values(nodes, i[wall], -j[wall])
        if beyond.any():
            left = i[beyond] < 0
            edge_i = np.where(left, 0, ni)
            inner_i = np.where(left, 1, ni - 1)
            reach = np.where(left, -i[beyond], i[beyond] - ni)
            edge = self._node_values(nodes, edge_i, j[beyond])
            values[beyond] = edge + reach * (edge - self._node_values(nodes, inner_i, j[beyond]))
        return values

    # ---------------------------------------------------------------- reductions
    def sum(self, x):
        """Sum over all ranks of a number, or element-wise of an array (collective)."""
        return self._allreduce(x, "SUM")

    def max(self, x):
        """Largest over all ranks of a number, or element-wise of an array (collective)."""
        return self._allreduce(x, "MAX")

    def maximum(self, value: float) -> float:
        """Largest ``value`` over all ranks (collective): the run driver's name for
        :meth:`max` of a number."""
        return self.max(float(value))

    def _allreduce(self, x, operation: str):
        from mpi4py import MPI

        op = getattr(MPI, operation)
        if np.ndim(x) == 0:
            return self.comm.allreduce(float(x), op=op)
        values = np.ascontiguousarray(x, dtype=np.float64)
        total = np.empty_like(values)
        self.comm.Allreduce(values, total, op=op)
        return total

    def free(self) -> None:
        """Release the Cartesian communicator (collective)."""
        if self.comm is not None:
            self.comm.Free()
            self.comm = None

    def __enter__(self) -> StructuredBlocks:
        return self

    def __exit__(self, *exc_info) -> None:
        self.free()

    def __repr__(self) -> str:
        return (
            f"StructuredBlocks({self.ni}x{self.nj} cells on {self.proc_grid[0]}x"
            f"{self.proc_grid[1]} blocks, ghosts={self.ghosts}, wake_cut={self.wake_cut}, "
            f"periodic_i={self.periodic_i})"
        )


def _check_block_grid(proc_grid, ranks: int, ni: int, nj: int, ghosts: int) -> tuple[int, int]:
    try:
        pi, pj = proc_grid
    except (TypeError, ValueError):
        raise ValueError(f"proc_grid must be (Pi, Pj), got {proc_grid!r}") from None
    if not all(isinstance(p, int | np.integer) and p >= 1 for p in (pi, pj)):
        raise ValueError(f"proc_grid must be two positive integers (Pi, Pj), got {proc_grid!r}")
    if pi * pj != ranks:
        raise ValueError(
            f"proc_grid {pi}x{pj} has {pi * pj} blocks but the communicator has {ranks} ranks"
        )
    for name, cells, parts in (("ni", ni, pi), ("nj", nj, pj)):
        if cells // parts < ghosts:
            raise ValueError(
                f"{name} = {cells} cells over {parts} blocks gives blocks of {cells // parts} "
                f"cells, fewer than ghosts = {ghosts}"
            )
    return int(pi), int(pj)
