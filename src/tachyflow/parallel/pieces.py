"""Pieces of unequal size: which contiguous piece of a list each rank holds, and gathering
pieces on one rank (for visualisation geometry and pictures).

:func:`panel_share` is the rule by which ranks split a surface's panels (the FW-H
integration, a body's loads, the noise-source exchange's destinations): every rank works
it out alone. Extracted geometry differs in size from rank to rank and is known only after
extraction, so the counts travel first (one small ``allgather``), then the data with one
``Gatherv`` per array, with no pickling. Small, irregular pieces (2D slices with their
coordinates) travel pickled.
"""

from __future__ import annotations

import numpy as np


def panel_share(panels: int, rank: int, size: int) -> slice:
    """The contiguous panels of ``rank`` of ``size`` ranks: from ``panels * rank // size``
    to ``panels * (rank + 1) // size``, so shares differ by at most one panel."""
    bounds = [panels * index // size for index in range(size + 1)]
    return slice(bounds[rank], bounds[rank + 1])


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


def slabs_in_turn(comm, arrays: dict[str, np.ndarray], root: int = 0, max_bytes: int = 2**23):
    """Every rank's ``arrays`` on ``root``, a slab at a time (collective).

    A generator: on ``root`` it yields ``(rank, name, first, slab)`` for rank 0, 1, ...
    in turn, each array cut along axis 0 into slabs of at most ``max_bytes`` (at least one
    index), ``first`` being the slab's first index along axis 0 within the rank's array; it
    receives a slab only when asked for it, so ``root`` never holds more than one slab of
    another rank (what a writer streaming into one file needs, whatever the grid's size).
    On the other ranks it sends and yields nothing. Every rank must run it to the end. The
    names are the same on every rank; shapes may differ.
    """
    names = sorted(arrays)
    shapes = comm.gather({name: arrays[name].shape for name in names}, root=root)
    rank = comm.Get_rank()
    for sender in range(comm.Get_size()):
        if rank not in (sender, root):
            continue
        for name in names:
            shape = shapes[sender][name] if rank == root else arrays[name].shape
            if not np.prod(shape):
                continue
            step = max(1, max_bytes // (8 * int(np.prod(shape[1:]))))
            for first in range(0, shape[0], step):
                if sender == root:
                    yield sender, name, first, arrays[name][first : first + step]
                elif rank == root:
                    slab = np.empty((min(step, shape[0] - first), *shape[1:]))
                    comm.Recv(slab, source=sender, tag=7)
                    yield sender, name, first, slab
                else:
                    part = arrays[name][first : first + step]
                    comm.Send(np.ascontiguousarray(part, dtype=np.float64), dest=root, tag=7)


def gather_plane(comm, piece: np.ndarray, start, global_shape, axis: int, index: int, root=0):
    """The global 2D plane ``index`` normal to ``axis`` on ``root`` (None elsewhere),
    assembled from the parts of it that the ranks' 3D pieces hold (collective): only the
    plane travels, never a whole field."""
    local = index - start[axis]
    part = None
    if 0 <= local < piece.shape[axis] and piece.size:
        part = (tuple(s for a, s in enumerate(start) if a != axis),
                np.take(piece, local, axis=axis))
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


def scatter_small(comm, values: list | None, root: int = 0):
    """Item ``r`` of ``values`` (given on ``root``) on rank ``r`` (pickled; for small,
    irregular objects such as a rank's piece of a mesh) (collective)."""
    return comm.scatter(values, root=root)
