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
