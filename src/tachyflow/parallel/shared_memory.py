"""Arrays in MPI-3 shared memory: every rank of a node reads its peers' arrays directly.

Within one node an exchange through MPI copies each block twice (into the library's shared
buffers and out again) besides any packing; a rank that reads the block straight from its
peer's array copies it once. :class:`SharedArrays` allocates one array per rank of a
communicator in an ``MPI_Win_allocate_shared`` window and maps every rank's array into
each process, so a transpose can *pull* its blocks (``Transposer(shared=True)``).
"""

from __future__ import annotations

import numpy as np

# Each rank's array starts on a cache line (FFTW plans SIMD codelets on such arrays).
ALIGNMENT = 64


def on_one_node(comm) -> bool:
    """Whether every rank of ``comm`` shares memory with every other (collective; the same
    answer on every rank)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        alone = node.Get_size() == comm.Get_size()
    finally:
        node.Free()
    return bool(comm.allreduce(alone, op=MPI.LAND))


class SharedArrays:
    """One C-ordered array per rank of ``comm`` in a shared-memory window.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        Every rank on one node (:func:`on_one_node`); the window's communicator is a
        duplicate owned by this object.
    shape : tuple of int
        This rank's array shape (the ranks' shapes may differ).
    dtype : numpy dtype

    Attributes
    ----------
    array : numpy.ndarray
        This rank's array.
    peers : list of numpy.ndarray
        Every rank's array, by rank in ``comm`` (this rank's is :attr:`array`).

    Notes
    -----
    Construction and :meth:`free` are collective over ``comm``, as are :meth:`publish`
    and :meth:`release`, which order the ranks' reads and writes: what a rank wrote to its
    array before :meth:`publish` is what its peers read after it, and a rank may write its
    array again once every rank passed :meth:`release`.
    """

    def __init__(self, comm, shape, dtype):
        from mpi4py import MPI

        self.comm = comm.Dup()
        dtype = np.dtype(dtype)
        shapes = self.comm.allgather(tuple(int(n) for n in shape))
        size = int(np.prod(shapes[self.comm.Get_rank()])) * dtype.itemsize
        self.window = MPI.Win.Allocate_shared(size + ALIGNMENT, 1, comm=self.comm)
        self.peers = []
        for rank, peer_shape in enumerate(shapes):
            memory, _ = self.window.Shared_query(rank)
            raw = np.frombuffer(memory, dtype=np.uint8)
            start = (-raw.ctypes.data) % ALIGNMENT
            count = int(np.prod(peer_shape))
            block = raw[start : start + count * dtype.itemsize]
            self.peers.append(block.view(dtype).reshape(peer_shape))
        self.array = self.peers[self.comm.Get_rank()]
        # One passive epoch for the window's life: Sync orders the loads and stores.
        self.window.Lock_all()

    def publish(self) -> None:
        """Make every rank's writes to its array visible to the others (collective)."""
        self.window.Sync()
        self.comm.Barrier()
        self.window.Sync()

    def release(self) -> None:
        """Wait until every rank has finished reading its peers' arrays (collective)."""
        self.comm.Barrier()

    def free(self) -> None:
        """Release the window and its communicator (collective)."""
        if self.window is not None:
            self.peers, self.array = [], None
            self.window.Unlock_all()
            self.window.Free()
            self.window = None
            self.comm.Free()
