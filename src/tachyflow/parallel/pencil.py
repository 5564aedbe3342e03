"""2D ("pencil") domain decomposition of a 3D structured grid.

Conventions follow 2DECOMP&FFT, so users of CaNS and Xcompact3d feel at home:

=========== ============ ===================== =====================
orientation whole axis   split over ``p_row``  split over ``p_col``
=========== ============ ===================== =====================
``"x"``     x            y                     z
``"y"``     y            x                     z
``"z"``     z            x                     y
=========== ============ ===================== =====================

Rank ``r`` sits at grid coordinates ``(row, col)`` of a ``p_row × p_col`` Cartesian grid.
``col_comm`` holds the ``p_row`` ranks of one grid column (x↔y transposes run over it),
``row_comm`` the ``p_col`` ranks of one grid row (y↔z transposes run over it).

Local arrays are C-ordered and always indexed ``[i, j, k]`` in global ``(x, y, z)`` order;
the orientation only says which axis is whole. Pieces are split as evenly as possible
(sizes differ by at most one, larger pieces first), and a rank owns an empty piece when an
axis is shorter than the number of ranks it is split over.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tachyflow.errors import DecompositionError
from tachyflow.parallel.reductions import Reductions

ORIENTATIONS = ("x", "y", "z")
AXIS_INDEX = {"x": 0, "y": 1, "z": 2}

# For each orientation: (axis split over p_row, axis split over p_col); the third is whole.
SPLIT_AXES = {"x": (1, 2), "y": (0, 2), "z": (0, 1)}


def split_bounds(length: int, parts: int) -> np.ndarray:
    """Boundaries of ``parts`` contiguous pieces of ``range(length)``.

    Piece ``p`` is ``range(bounds[p], bounds[p + 1])``; the first ``length % parts`` pieces
    hold one cell more than the others, and pieces are empty when ``parts > length``.
    """
    base, extra = divmod(length, parts)
    sizes = np.full(parts, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


def process_grids(ranks: int) -> list[tuple[int, int]]:
    """Every factorisation ``(p_row, p_col)`` with ``p_row * p_col == ranks``."""
    return [(p, ranks // p) for p in range(1, ranks + 1) if ranks % p == 0]


def grid_cost(global_shape: Sequence[int], proc_grid: tuple[int, int]) -> tuple[int, float]:
    """Sort key that ranks process grids for a round trip of transposes (lower is better).

    First the largest local piece over the three orientations (the most loaded rank sets the
    pace, and empty pieces leave ranks idle); then a Hockney estimate of one x→y→z→y→x round
    trip per rank, in units of one cell's transfer time: each exchange over ``q`` ranks sends
    ``q - 1`` messages (latency taken as 1000 cells, typical of shared memory) and keeps
    ``1/q`` of the data local.
    """
    p_row, p_col = proc_grid
    largest = max(
        int(np.prod(_piece_shape(global_shape, orientation, p_row, p_col)))
        for orientation in ORIENTATIONS
    )
    latency_in_cells = 1000.0
    exchange = 0.0
    for q in (p_row, p_col):
        exchange += (q - 1) * latency_in_cells + largest * (1.0 - 1.0 / q)
    return largest, 2.0 * exchange


def choose_process_grid(global_shape: Sequence[int], ranks: int) -> tuple[int, int]:
    """The process grid with the lowest :func:`grid_cost`; ties go to more rows.

    More rows means fewer ranks share the contiguous z axis: the y↔z exchange then moves
    longer contiguous runs, and 2x1 round trips measured 1.2-1.5x faster than 1x2 on 2
    ranks at 128³ and 256³ (docs/benchmarks.md).
    """
    return min(process_grids(ranks), key=lambda grid: (grid_cost(global_shape, grid), -grid[0]))


def _piece_shape(global_shape, orientation, p_row, p_col):
    """Shape of the largest piece (rank 0's) of an orientation on a ``p_row × p_col`` grid."""
    shape = list(global_shape)
    row_axis, col_axis = SPLIT_AXES[orientation]
    shape[row_axis] = -(-shape[row_axis] // p_row)
    shape[col_axis] = -(-shape[col_axis] // p_col)
    return shape


@dataclass(frozen=True)
class Pencil:
    """One rank's piece of the global grid in one orientation.

    Attributes
    ----------
    orientation : str
        ``"x"``, ``"y"`` or ``"z"``: the axis that is whole on every rank.
    shape : tuple of int
        Local shape, ``(nx_local, ny_local, nz_local)``; may contain zeros.
    start : tuple of int
        Global index of the first local cell along each axis.
    """

    orientation: str
    shape: tuple[int, int, int]
    start: tuple[int, int, int]

    @property
    def stop(self) -> tuple[int, int, int]:
        """Global index one past the last local cell along each axis."""
        return tuple(s + n for s, n in zip(self.start, self.shape, strict=True))

    @property
    def slices(self) -> tuple[slice, slice, slice]:
        """Slices that cut this piece out of a global array."""
        return tuple(slice(a, b) for a, b in zip(self.start, self.stop, strict=True))

    @property
    def size(self) -> int:
        """Number of local cells."""
        return int(np.prod(self.shape))


class PencilDecomposition(Reductions):
    """A 3D grid split over a 2D ``p_row × p_col`` process grid, in three orientations.

    Owns every communicator (world, Cartesian, row, column) and every MPI datatype that the
    transposes of this decomposition use; :meth:`free` releases them all.

    Parameters
    ----------
    global_shape : sequence of 3 int
        Cells along x, y and z; each at least 1.
    proc_grid : (int, int), optional
        ``(p_row, p_col)`` with ``p_row * p_col`` equal to the communicator's size. Chosen by
        :func:`choose_process_grid` when omitted.
    comm : mpi4py.MPI.Intracomm, optional
        Communicator to decompose over; ``MPI.COMM_WORLD`` by default. ``MPI.COMM_SELF``
        gives a serial decomposition with the same API and no MPI traffic.
    periodic : bool or sequence of 3 bool
        Periodicity of x, y, z (used by halo exchanges). Default: periodic in all three.

    Raises
    ------
    DecompositionError
        Sizes not positive, a process grid whose product differs from the number of ranks,
        or a grid that is not two positive integers. Raised on every rank alike.

    Notes
    -----
    Construction is collective over ``comm`` (it creates the Cartesian communicator and its
    row and column sub-communicators); so is :meth:`free`.
    """

    def __init__(self, global_shape, proc_grid=None, comm=None, periodic=True):
        from mpi4py import MPI

        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.global_shape = _check_global_shape(global_shape)
        self.periodic = _check_periodic(periodic)
        size = self.comm.Get_size()
        if proc_grid is None:
            proc_grid = choose_process_grid(self.global_shape, size)
        self.proc_grid = _check_proc_grid(proc_grid, size)
        self.p_row, self.p_col = self.proc_grid

        # The Cartesian grid is periodic in both directions so that neighbour lookups wrap;
        # whether data wraps is decided per axis by ``self.periodic``.
        self.cart_comm = self.comm.Create_cart(
            [self.p_row, self.p_col], periods=[True, True], reorder=False
        )
        self.row, self.col = self.cart_comm.Get_coords(self.cart_comm.Get_rank())
        self.col_comm = self.cart_comm.Sub([True, False])
        self.row_comm = self.cart_comm.Sub([False, True])
        self.bounds = tuple(
            (
                split_bounds(self.global_shape[axis], self.p_row),
                split_bounds(self.global_shape[axis], self.p_col),
            )
            for axis in range(3)
        )
        self.pencils = {orientation: self.pencil(orientation) for orientation in ORIENTATIONS}
        self._datatypes: dict[tuple, object] = {}

    @property
    def rank(self) -> int:
        """Rank in ``comm``."""
        return self.comm.Get_rank()

    @property
    def size(self) -> int:
        """Number of ranks in ``comm``."""
        return self.comm.Get_size()

    def axis_bounds(self, axis: int, over: str) -> np.ndarray:
        """Piece boundaries of ``axis`` when it is split over ``"row"`` (p_row) or ``"col"``."""
        return self.bounds[axis][0 if over == "row" else 1]

    def pencil(self, orientation: str, row: int | None = None, col: int | None = None) -> Pencil:
        """The piece of the rank at grid coordinates ``(row, col)`` (default: this rank)."""
        orientation = check_orientation(orientation)
        row = self.row if row is None else row
        col = self.col if col is None else col
        shape = list(self.global_shape)
        start = [0, 0, 0]
        row_axis, col_axis = SPLIT_AXES[orientation]
        for axis, bounds, coordinate in (
            (row_axis, self.bounds[row_axis][0], row),
            (col_axis, self.bounds[col_axis][1], col),
        ):
            start[axis] = int(bounds[coordinate])
            shape[axis] = int(bounds[coordinate + 1] - bounds[coordinate])
        return Pencil(orientation, tuple(shape), tuple(start))

    def local_shape(self, orientation: str) -> tuple[int, int, int]:
        """Shape of this rank's piece in ``orientation``."""
        return self.pencils[check_orientation(orientation)].shape

    def local_start(self, orientation: str) -> tuple[int, int, int]:
        """Global offsets of this rank's piece in ``orientation``."""
        return self.pencils[check_orientation(orientation)].start

    def all_pencils(self, orientation: str) -> list[Pencil]:
        """Every rank's piece in ``orientation``, indexed by rank in ``comm``."""
        cart_ranks = {
            self.cart_comm.Get_cart_rank([row, col]): (row, col)
            for row, col in itertools.product(range(self.p_row), range(self.p_col))
        }
        return [self.pencil(orientation, *cart_ranks[rank]) for rank in range(self.size)]

    def sum_across(self, orientation: str, axis: int, values: np.ndarray) -> np.ndarray:
        """``values`` summed over the ranks among which ``axis`` is split in the
        ``orientation`` pencils (collective over them): partial sums along ``axis``
        become whole ones."""
        from mpi4py import MPI

        row_axis, col_axis = SPLIT_AXES[check_orientation(orientation)]
        if axis not in (row_axis, col_axis):
            return values.copy()
        # The row sub-communicator varies the column coordinate, and the other way round.
        comm = self.row_comm if axis == col_axis else self.col_comm
        total = np.empty_like(values)
        comm.Allreduce(np.ascontiguousarray(values), total, op=MPI.SUM)
        return total

    def zeros(self, orientation: str, dtype=np.float64) -> np.ndarray:
        """A zero-filled local array of this rank's piece in ``orientation``."""
        return np.zeros(self.local_shape(orientation), dtype=dtype)

    def scatter_global(self, global_array: np.ndarray, orientation: str) -> np.ndarray:
        """This rank's piece of a global array that every rank holds (a copy)."""
        return np.ascontiguousarray(global_array[self.pencils[orientation].slices])

    def gather_global(self, local: np.ndarray, orientation: str, root: int = 0):
        """The global array assembled on ``root`` from every rank's piece (collective).

        Returns ``None`` on the other ranks. Meant for output of moderate size (images,
        checkpoints); the pieces travel as pickled arrays.
        """
        pieces = self.comm.gather(np.ascontiguousarray(local), root=root)
        if self.rank != root:
            return None
        whole = np.empty(self.global_shape, dtype=local.dtype)
        for pencil, piece in zip(self.all_pencils(orientation), pieces, strict=True):
            whole[pencil.slices] = piece
        return whole

    def subarray(self, dtype, shape, subshape, start, order=(0, 1, 2)):
        """A committed MPI datatype of the box ``subshape`` at ``start`` of a C-ordered
        array of ``shape``, its elements taken with the array's axes in ``order`` (slowest
        first; C order by default: a subarray type); created once and owned by this
        decomposition."""
        from mpi4py import MPI
        from mpi4py.util import dtlib

        order = tuple(int(axis) for axis in order)
        key = (np.dtype(dtype).str, tuple(shape), tuple(subshape), tuple(start), order)
        datatype = self._datatypes.get(key)
        if datatype is None:
            base = dtlib.from_numpy_dtype(np.dtype(dtype))
            if order == tuple(range(len(shape))):
                datatype = base.Create_subarray(list(shape), list(subshape), list(start))
            else:  # nested strided vectors, innermost the last axis of ``order``
                itemsize = np.dtype(dtype).itemsize
                strides = [itemsize * int(np.prod(shape[axis + 1 :])) for axis in range(3)]
                datatype, parts = base, []
                for axis in reversed(order):
                    datatype = datatype.Create_hvector(int(subshape[axis]), 1, strides[axis])
                    parts.append(datatype)
                offset = sum(
                    int(first) * stride for first, stride in zip(start, strides, strict=True)
                )
                datatype = MPI.Datatype.Create_struct([1], [offset], [datatype])
                for part in parts:
                    part.Free()
            datatype = datatype.Commit()
            self._datatypes[key] = datatype
        return datatype

    def free(self) -> None:
        """Release the communicators and datatypes (collective over ``comm``)."""
        for datatype in self._datatypes.values():
            datatype.Free()
        self._datatypes.clear()
        for name in ("row_comm", "col_comm", "cart_comm"):
            communicator = getattr(self, name, None)
            if communicator is not None:
                communicator.Free()
                setattr(self, name, None)

    def __enter__(self) -> PencilDecomposition:
        return self

    def __exit__(self, *exc_info) -> None:
        self.free()

    def __repr__(self) -> str:
        nx, ny, nz = self.global_shape
        return (
            f"PencilDecomposition({nx}x{ny}x{nz} cells on {self.p_row}x{self.p_col} ranks, "
            f"periodic={self.periodic})"
        )


def check_orientation(orientation) -> str:
    """Return ``orientation`` if it is ``"x"``, ``"y"`` or ``"z"``; raise ValueError if not."""
    if orientation not in AXIS_INDEX:
        raise ValueError(f"pencil orientation must be 'x', 'y' or 'z', got {orientation!r}")
    return orientation


def parse_proc_grid(text: str) -> tuple[int, int]:
    """Parse ``"2x3"`` into ``(2, 3)``; raise DecompositionError on anything else."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise DecompositionError(f"process grid must look like ROWSxCOLS (e.g. 2x3), got {text!r}")
    return int(parts[0]), int(parts[1])


def _check_global_shape(global_shape) -> tuple[int, int, int]:
    try:
        shape = tuple(global_shape)
    except TypeError:
        raise DecompositionError(
            f"global_shape must be 3 positive integers, got {global_shape!r}"
        ) from None
    if len(shape) != 3 or not all(isinstance(n, int | np.integer) and n >= 1 for n in shape):
        raise DecompositionError(f"global_shape must be 3 positive integers, got {shape!r}")
    return tuple(int(n) for n in shape)


def _check_periodic(periodic) -> tuple[bool, bool, bool]:
    if isinstance(periodic, bool | np.bool_):
        return (bool(periodic),) * 3
    flags = tuple(periodic)
    if len(flags) != 3 or not all(isinstance(flag, bool | np.bool_) for flag in flags):
        raise DecompositionError(f"periodic must be a bool or 3 bools, got {periodic!r}")
    return tuple(bool(flag) for flag in flags)


def _check_proc_grid(proc_grid, ranks: int) -> tuple[int, int]:
    try:
        grid = tuple(proc_grid)
    except TypeError:
        raise DecompositionError(f"proc_grid must be (p_row, p_col), got {proc_grid!r}") from None
    if len(grid) != 2 or not all(isinstance(p, int | np.integer) and p >= 1 for p in grid):
        raise DecompositionError(
            f"proc_grid must be two positive integers (p_row, p_col), got {proc_grid!r}"
        )
    p_row, p_col = (int(p) for p in grid)
    if p_row * p_col != ranks:
        raise DecompositionError(
            f"proc_grid {p_row}x{p_col} has {p_row * p_col} ranks but the communicator has "
            f"{ranks}; valid grids: " + ", ".join(f"{a}x{b}" for a, b in process_grids(ranks))
        )
    return p_row, p_col
