"""Ghost-layer (halo) exchange for pencil-distributed arrays.

A ghosted local array has ``width`` extra cells on both sides of every axis. The exchange
fills them, axis after axis, with the values of the cells they stand for: the neighbours'
cells along split axes, this rank's own cells across a periodic boundary of a whole axis.
Ghosts beyond a non-periodic boundary are left as they are (boundary conditions are the
solver's business).

The plan is general: every rank works out, for every rank of the axis' sub-communicator,
which global cells its ghosts stand for and who owns them. Pieces narrower than the ghost
width, empty pieces (whose ghosts are still filled: they stand for the cells next to an
empty range) and periodic wrap-around onto the same rank need no special case.
With ``corners=True`` each axis' exchange spans the ghosts of the other axes, so edge and
corner ghosts are filled too (axes are processed in order x, y, z).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from tachyflow.errors import DecompositionError
from tachyflow.parallel.pencil import SPLIT_AXES, PencilDecomposition, check_orientation

#: Bytes to which :meth:`HaloExchange.allocate` aligns an array's first owned element (a
#: cache line; AVX-512 loads).
OWNED_ALIGNMENT = 64


@dataclass(frozen=True)
class _Transfer:
    """Cells this rank sends to (or receives from) one peer along one axis."""

    peer: int
    indices: np.ndarray | slice  # local indices, ghosted numbering, along the axis


def _compact(indices: np.ndarray) -> np.ndarray | slice:
    """A slice where the indices are a contiguous increasing run (cheaper to index with)."""
    if len(indices) and np.array_equal(indices, np.arange(indices[0], indices[0] + len(indices))):
        return slice(int(indices[0]), int(indices[0]) + len(indices))
    return indices


def _axis_plan(bounds: np.ndarray, me: int, width: int, periodic: bool):
    """Sends and receives of one axis for the rank at coordinate ``me``.

    Returns two lists of :class:`_Transfer`: what to send to each peer and where to put
    what each peer sends. Both sides enumerate the same (ghost, owner) pairs in the order of
    the receiver's ghost index, so a message needs no header.
    """
    length = int(bounds[-1])
    parts = len(bounds) - 1
    pairs = []  # (receiver, owner, receiver ghost index, owner local index)
    for receiver in range(parts):
        start, stop = int(bounds[receiver]), int(bounds[receiver + 1])
        ghosts = list(range(start - width, start)) + list(range(stop, stop + width))
        for position, cell in enumerate(ghosts):
            if not periodic and not 0 <= cell < length:
                continue
            cell %= length
            owner = int(np.searchsorted(bounds, cell, side="right")) - 1
            ghost_index = position if position < width else stop - start + position
            pairs.append((receiver, owner, ghost_index, cell - int(bounds[owner]) + width))
    sends, receives = [], []
    for peer in range(parts):
        outgoing = sorted((g, s) for r, o, g, s in pairs if o == me and r == peer)
        incoming = sorted((g, s) for r, o, g, s in pairs if r == me and o == peer)
        if outgoing:
            sends.append(_Transfer(peer, _compact(np.array([s for _, s in outgoing]))))
        if incoming:
            receives.append(_Transfer(peer, _compact(np.array([g for g, _ in incoming]))))
    return sends, receives


class HaloExchange:
    """Fills the ghost layers of arrays distributed as pencils of one orientation.

    Parameters
    ----------
    decomposition : PencilDecomposition
        Supplies the sub-communicators, piece bounds and per-axis periodicity.
    orientation : {"x", "y", "z"}
        Pencil orientation of the arrays.
    width : int
        Number of ghost cells on each side of each axis (at least 1).
    corners : bool
        Also fill edge and corner ghosts (needed by stencils with cross terms).

    Notes
    -----
    Construction is local. :meth:`exchange` is collective over the decomposition's
    ``col_comm`` and ``row_comm``. Arrays must have the ghosted shape :attr:`shape`; use
    :meth:`allocate` and :meth:`interior`.
    """

    def __init__(
        self,
        decomposition: PencilDecomposition,
        orientation: str = "x",
        width: int = 1,
        corners: bool = False,
    ):
        orientation = check_orientation(orientation)
        if not isinstance(width, int | np.integer) or isinstance(width, bool) or width < 1:
            raise ValueError(f"halo width must be a positive integer, got {width!r}")
        self.decomposition = decomposition
        self.orientation = orientation
        self.width = int(width)
        self.corners = bool(corners)
        pencil = decomposition.pencils[orientation]
        self.local_shape = pencil.shape
        self.shape = tuple(n + 2 * self.width for n in pencil.shape)
        row_axis, col_axis = SPLIT_AXES[orientation]
        self._plans = []
        for axis in range(3):
            if axis == row_axis:
                comm, bounds = decomposition.col_comm, decomposition.axis_bounds(axis, "row")
            elif axis == col_axis:
                comm, bounds = decomposition.row_comm, decomposition.axis_bounds(axis, "col")
            else:
                comm, bounds = None, np.array([0, decomposition.global_shape[axis]])
            me = 0 if comm is None else comm.Get_rank()
            periodic = decomposition.periodic[axis]
            if periodic and decomposition.global_shape[axis] < self.width:
                raise DecompositionError(
                    f"periodic axis {'xyz'[axis]} has {decomposition.global_shape[axis]} "
                    f"cells, fewer than the halo width {self.width}"
                )
            sends, receives = _axis_plan(bounds, me, self.width, periodic)
            self._plans.append((comm, me, sends, receives))

    def allocate(self, dtype=np.float64) -> np.ndarray:
        """A zero-filled, C-ordered ghosted array whose first owned element is
        :data:`OWNED_ALIGNMENT`-byte aligned (where the item size divides it), so that a
        planned FFT may read or write the owned cells in place with SIMD loads."""
        dtype = np.dtype(dtype)
        size = int(np.prod(self.shape))
        if size == 0 or OWNED_ALIGNMENT % dtype.itemsize:
            return np.zeros(self.shape, dtype=dtype)
        spare = OWNED_ALIGNMENT // dtype.itemsize
        memory = np.zeros(size + spare, dtype=dtype)
        first_owned = int(np.ravel_multi_index((self.width,) * 3, self.shape))
        address = memory.ctypes.data + first_owned * dtype.itemsize
        shift = (-address % OWNED_ALIGNMENT) // dtype.itemsize
        return memory[shift : shift + size].reshape(self.shape)

    def interior(self, array: np.ndarray) -> np.ndarray:
        """View of the owned cells of a ghosted array."""
        w = self.width
        return array[w:-w, w:-w, w:-w]

    def _span(self, axis: int, indices) -> tuple:
        """Index of the cells at ``indices`` along ``axis``, across the other axes."""
        w = self.width
        index = []
        for other in range(3):
            if other == axis:
                index.append(indices)
            elif self.corners:
                index.append(slice(None))
            else:
                index.append(slice(w, w + self.local_shape[other]))
        return tuple(index)

    def exchange(self, array: np.ndarray, *more: np.ndarray, axes=(0, 1, 2)) -> np.ndarray:
        """Fill the ghosts of ``array`` (and of ``more`` arrays) in place; return ``array``
        (collective; every rank passes the same ``axes``).

        Several arrays travel together: one message per neighbour and axis carries the
        ghosts of all of them (the velocity's three components in one exchange, not three).
        Only the ghosts beyond the ends of ``axes`` are filled (by default all three axes';
        with corners, each spans the other axes' ghosts as they are).
        """
        if isinstance(axes, int) or not set(axes) <= {0, 1, 2}:
            raise ValueError(f"axes must be a collection of 0, 1, 2, got {axes!r}")
        arrays = (array, *more)
        for candidate in arrays:
            if not isinstance(candidate, np.ndarray):
                raise TypeError(
                    f"halo exchange needs numpy arrays, got {type(candidate).__name__}"
                )
            if candidate.shape != self.shape:
                raise ValueError(
                    f"array has shape {candidate.shape} but ghosted {self.orientation}-pencils"
                    f" of width {self.width} on rank {self.decomposition.rank} have shape "
                    f"{self.shape}"
                )
        dtype = np.result_type(*arrays)
        for axis, (comm, me, sends, receives) in enumerate(self._plans):
            if axis not in axes:
                continue
            requests, incoming = [], []
            for transfer in receives:
                if transfer.peer != me:
                    span = self._span(axis, transfer.indices)
                    buffer = np.empty((len(arrays), *array[span].shape), dtype=dtype)
                    requests.append(comm.Irecv(buffer, source=transfer.peer, tag=axis))
                    incoming.append((span, buffer))
            for transfer in sends:
                if transfer.peer != me:
                    span = self._span(axis, transfer.indices)
                    # Filled in place, not np.stack: its length-1 axes can carry strides that
                    # mpi4py's strict contiguity check refuses.
                    block = np.empty((len(arrays), *array[span].shape), dtype=dtype)
                    for a, values in zip(arrays, block, strict=True):
                        values[...] = a[span]
                    requests.append(comm.Isend(block, dest=transfer.peer, tag=axis))
                    incoming.append((None, block))  # keeps the send buffer alive
            local_send = next((t for t in sends if t.peer == me), None)
            local_receive = next((t for t in receives if t.peer == me), None)
            if local_send is not None:
                source = self._span(axis, local_send.indices)
                target = self._span(axis, local_receive.indices)
                for a in arrays:
                    a[target] = a[source]
            if requests:
                MPI.Request.Waitall(requests)
            for span, buffer in incoming:
                if span is not None:
                    for a, values in zip(arrays, buffer, strict=True):
                        a[span] = values
        return array
