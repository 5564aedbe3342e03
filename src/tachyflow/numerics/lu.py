"""MPI-free pieces of a distributed LU factorisation with partial pivoting (HPL).

- :func:`random_block`: the entries of HPL's random matrix at any rows and columns, from a
  counter-based generator keyed by the global index, so every rank makes its own piece of
  one matrix whatever the layout (HPL uses a linear congruential generator with jumps;
  the distribution is the same, uniform in [-0.5, 0.5), the numbers are not).
- :func:`interchange_sources`: what a sequence of row interchanges does to the rows it
  touches, so that the rows can be moved between processes in one exchange.
- :func:`pivot_candidate` and :func:`eliminate_column`: one column of a panel
  factorisation on a rank's rows (the search for the largest entry, then scaling and the
  rank-one update), for panels whose rows are spread over several processes.

Dense BLAS and LAPACK on blocks live in :mod:`tachyflow.numerics.dense`.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel

_GOLDEN = 0x9E3779B97F4A7C15


@kernel
def _fill_random(rows, columns, seed, out):  # pragma: no cover
    # splitmix64 of (column << 32 | row) mixed with the seed; the top 53 bits as a double.
    for j in range(columns.size):
        high = np.uint64(columns[j]) << np.uint64(32)
        for i in range(rows.size):
            z = (high | np.uint64(rows[i])) * np.uint64(0x9E3779B97F4A7C15) + seed
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
            out[i, j] = np.float64(z >> np.uint64(11)) * 1.1102230246251565e-16 - 0.5


def random_block(rows, columns, seed: int = 42, out: np.ndarray | None = None) -> np.ndarray:
    """Entries ``(rows[i], columns[j])`` of the random matrix numbered ``seed``: uniform in
    [-0.5, 0.5), each a function of its global indices and the seed alone.

    Parameters
    ----------
    rows, columns : array_like of int
        Global indices (0 <= index < 2**32).
    seed : int
        Which matrix (0 <= seed < 2**64).
    out : ndarray, optional
        A ``len(rows) × len(columns)`` float64 array to fill (a block of a larger one is
        fine); a new Fortran-ordered array when None.
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    columns = np.ascontiguousarray(columns, dtype=np.int64)
    for label, values in (("rows", rows), ("columns", columns)):
        if values.ndim != 1 or (values.size and (values.min() < 0 or values.max() >= 2**32)):
            raise ValueError(f"{label} must be a 1D array of indices in [0, 2**32)")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed!r}")
    if out is None:
        out = np.empty((rows.size, columns.size), order="F")
    elif out.shape != (rows.size, columns.size) or out.dtype != np.float64:
        raise ValueError(f"out must be a {rows.size}x{columns.size} float64 array")
    _fill_random(rows, columns, np.uint64(int(seed) * _GOLDEN % 2**64), out)
    return out


def interchange_sources(first: int, pivots) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the interchanges ``row first + i <-> row pivots[i]`` (in order) do.

    Returns ``top`` (the row whose content ends in row ``first + i``, for each i),
    ``moved`` (rows at or beyond ``first + len(pivots)`` whose content changes) and
    ``moved_from`` (the row whose content each of them receives, always one of the top
    rows). Rows are global indices, as are the pivots (``pivots[i] >= first + i``).
    """
    pivots = np.asarray(pivots, dtype=np.int64)
    count = pivots.size
    if count and np.any(pivots < first + np.arange(count)):
        raise ValueError("each pivot row must be at or below the row it replaces")
    content: dict[int, int] = {}
    for offset, pivot in enumerate(pivots.tolist()):
        row = first + offset
        content[row], content[pivot] = content.get(pivot, pivot), content.get(row, row)
    top = np.array([content.get(first + i, first + i) for i in range(count)], dtype=np.int64)
    below = sorted(r for r, source in content.items() if r >= first + count and r != source)
    moved = np.array(below, dtype=np.int64)
    return top, moved, np.array([content[r] for r in below], dtype=np.int64)


def pivot_candidate(column: np.ndarray) -> int:
    """Index of the entry of largest magnitude (the first of equals); -1 when empty."""
    if column.size == 0:
        return -1
    return int(np.argmax(np.abs(column)))


@kernel
def _eliminate(panel, active, column, stop, pivot_row):  # pragma: no cover
    pivot = pivot_row[column]
    if pivot != 0.0:
        inverse = 1.0 / pivot
        for i in range(active, panel.shape[0]):
            panel[i, column] *= inverse
    for j in range(column + 1, stop):
        factor = pivot_row[j]
        if factor != 0.0:
            for i in range(active, panel.shape[0]):
                panel[i, j] -= panel[i, column] * factor


def eliminate_column(
    panel: np.ndarray, active: int, column: int, stop: int, pivot_row: np.ndarray
) -> None:
    """One step of right-looking elimination on a rank's rows of a panel, in place.

    The rows ``active:`` of ``panel`` (those below the pivot's row) are divided by the pivot
    ``pivot_row[column]`` in ``column`` (left alone when the pivot is zero: the matrix is
    singular), then the rank-one update ``panel[active:, column+1:stop] -= l ⊗
    pivot_row[column+1:stop]`` is applied.
    """
    if not 0 <= column < stop <= panel.shape[1] or pivot_row.shape != (panel.shape[1],):
        raise ValueError(f"column {column} and stop {stop} do not fit a panel of {panel.shape}")
    _eliminate(panel, active, column, stop, pivot_row)
