"""Gathering pieces of unequal size on one rank (for visualisation geometry and pictures).

Extracted geometry differs in size from rank to rank and is known only after extraction,
so the counts travel first (one small ``allgather``), then the data with one ``Gatherv``
per array, with no pickling. Small, irregular pieces (2D slices with their coordinates)
travel pickled.
"""

from __future__ import annotations

import numpy as np


def allgather_small(comm, value) -> list:
    """``value`` of every rank, on every rank (pickled; for a few numbers) (collective)."""
    return comm.allgather(value)


def gather_small(comm, value, root: int = 0) -> list | None:
    """``value`` of every rank on ``root``, ``None`` elsewhere (pickled) (collective)."""
    return comm.gather(value, root=root)


def gather_rows(comm, rows: np.ndarray, counts, dtype, root: int = 0) -> np.ndarray | None:
    """The ranks' arrays joined along axis 0 on ``root`` (``None`` elsewhere) (collective).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        Ranks taking part.
    rows : numpy.ndarray
        This rank's rows, shape ``(n, ...)``; the trailing shape is the same on every rank.
    counts : sequence of int
        Rows of every rank (as :func:`allgather_small` gives them), identical on all ranks.
    dtype : numpy dtype
        Type the rows travel and arrive in.
    """
    rows = np.ascontiguousarray(rows, dtype)
    width = int(np.prod(rows.shape[1:], dtype=np.int64))
    sizes = np.asarray(counts, dtype=np.int64) * width
    at_root = comm.Get_rank() == root
    whole = np.empty(int(sizes.sum()), dtype) if at_root else None
    comm.Gatherv(rows.ravel(), [whole, sizes] if at_root else None, root=root)
    return whole.reshape(-1, *rows.shape[1:]) if at_root else None


def pieces_in_turn(comm, arrays: dict[str, np.ndarray], root: int = 0):
    """Every rank's ``arrays`` on ``root``, one rank's at a time (collective).

    A generator: on ``root`` it yields ``(rank, arrays)`` for rank 0, 1, ... in turn,
    receiving the next rank's arrays only when asked for them, so that ``root`` never
    holds more than one rank's pieces (what a writer streams into one file needs); on the
    other ranks it sends and yields nothing. Every rank must run it to the end. The names
    are the same on every rank; shapes may differ.
    """
    names = sorted(arrays)
    shapes = comm.gather({name: arrays[name].shape for name in names}, root=root)
    if comm.Get_rank() != root:
        for name in names:
            comm.Send(np.ascontiguousarray(arrays[name], dtype=np.float64), dest=root, tag=7)
        return
    for rank, rank_shapes in enumerate(shapes):
        if rank == root:
            yield rank, arrays
            continue
        received = {name: np.empty(rank_shapes[name]) for name in names}
        for name in names:
            comm.Recv(received[name], source=rank, tag=7)
        yield rank, received


def gather_plane(comm, piece: np.ndarray, start, global_shape, axis: int, index: int, root=0):
    """The global 2D plane ``index`` normal to ``axis`` on ``root`` (None elsewhere),
    assembled from the parts of it that the ranks' 3D pieces hold (collective): only the
    plane travels, never a whole field."""
    local = index - start[axis]
    part = None
    if 0 <= local < piece.shape[axis] and piece.size:
        part = (tuple(s for a, s in enumerate(start) if a != axis),
                np.take(piece, local, axis=axis))  # fmt: skip
    parts = comm.gather(part, root=root)
    if comm.Get_rank() != root:
        return None
    shape = tuple(n for a, n in enumerate(global_shape) if a != axis)
    plane = np.empty(shape, dtype=piece.dtype)
    for found in parts:
        if found is not None:
            (first, second), values = found
            plane[first : first + values.shape[0], second : second + values.shape[1]] = values
    return plane
