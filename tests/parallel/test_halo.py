import itertools

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.errors import DecompositionError
from tachyflow.parallel import HaloExchange, PencilDecomposition, process_grids
from tests.conftest import index_array

HALO_SHAPES = [(8, 8, 8), (7, 5, 3), (2, 3, 1), (6, 2, 5), (1, 4, 3)]
PERIODICITY = [(True, True, True), (False, True, False), (False, False, False)]


def expected_ghosted(reference, pencil, width, periodic, corners):
    """The ghosted local array, built directly from the global array (NaN = untouched)."""
    shape = reference.shape
    ghosted = np.full([n + 2 * width for n in pencil.shape], np.nan)
    index = []
    for axis in range(3):
        cells = np.arange(pencil.start[axis] - width, pencil.stop[axis] + width)
        index.append(cells)
    for position in itertools.product(*(range(n) for n in ghosted.shape)):
        cell = [index[axis][position[axis]] for axis in range(3)]
        ghost_axes = sum(not (width <= position[a] < width + pencil.shape[a]) for a in range(3))
        if ghost_axes > 1 and not corners:
            continue
        if all(periodic[a] or 0 <= cell[a] < shape[a] for a in range(3)):
            ghosted[position] = reference[tuple(c % n for c, n in zip(cell, shape, strict=True))]
    return ghosted


@pytest.mark.parallel([1, 2, 3])
def test_ghosts_hold_exactly_the_neighbours_values():
    comm = MPI.COMM_WORLD
    failures = []
    for shape, periodic in itertools.product(HALO_SHAPES, PERIODICITY):
        reference = index_array(shape)
        for grid in process_grids(comm.size):
            with PencilDecomposition(shape, grid, comm, periodic=periodic) as decomposition:
                for orientation, width, corners in itertools.product("xyz", (1, 2), (False, True)):
                    if any(p and n < width for p, n in zip(periodic, shape, strict=True)):
                        continue
                    halo = HaloExchange(decomposition, orientation, width, corners)
                    array = halo.allocate()
                    array[...] = np.nan
                    halo.interior(array)[...] = decomposition.scatter_global(
                        reference, orientation
                    )
                    halo.exchange(array)
                    expected = expected_ghosted(
                        reference, decomposition.pencils[orientation], width, periodic, corners
                    )
                    if not np.array_equal(array, expected, equal_nan=True):
                        failures.append((shape, periodic, grid, orientation, width, corners))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([1, 2, 3])
def test_arrays_exchanged_together_equal_arrays_exchanged_one_by_one():
    """One message per neighbour for u, v, w gives bitwise the three exchanges' ghosts."""
    comm = MPI.COMM_WORLD
    failures = []
    shape = (7, 5, 3)
    for periodic, grid in itertools.product(PERIODICITY, process_grids(comm.size)):
        with PencilDecomposition(shape, grid, comm, periodic=periodic) as decomposition:
            for orientation, corners in itertools.product("xyz", (False, True)):
                halo = HaloExchange(decomposition, orientation, 1, corners)
                together, alone = [], []
                for component in range(3):
                    array = halo.allocate()
                    array[...] = np.nan
                    halo.interior(array)[...] = decomposition.scatter_global(
                        index_array(shape) + 1000 * component, orientation
                    )
                    together.append(array)
                    alone.append(halo.exchange(array.copy()))
                halo.exchange(*together)
                if not all(
                    np.array_equal(a, b, equal_nan=True)
                    for a, b in zip(together, alone, strict=True)
                ):
                    failures.append((periodic, grid, orientation, corners))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([1, 2, 3])
def test_an_exchange_of_some_axes_fills_only_their_ghosts():
    # Each axis' ghosts as a whole exchange fills them (without corners: the ghost planes of
    # that axis alone), the others' left as they were; arrays aligned at their owned cells.
    comm = MPI.COMM_WORLD
    failures = []
    shape = (7, 5, 6)
    reference = index_array(shape)
    for grid in process_grids(comm.size):
        with PencilDecomposition(shape, grid, comm) as decomposition:
            halo = HaloExchange(decomposition, "y", 1)
            whole = halo.allocate()
            whole[...] = np.nan
            halo.interior(whole)[...] = decomposition.scatter_global(reference, "y")
            if halo.interior(whole).size and halo.interior(whole).ctypes.data % 64:
                failures.append((grid, "owned cells not aligned"))
            partial = whole.copy()
            halo.exchange(whole)
            for axes in ((0,), (2,), (0, 2)):
                array = partial.copy()
                halo.exchange(array, axes=axes)
                for axis in range(3):
                    ends = [slice(1, -1)] * 3
                    ends[axis] = [0, -1]
                    expected = whole if axis in axes else partial
                    if not np.array_equal(array[tuple(ends)], expected[tuple(ends)],
                                          equal_nan=True):
                        failures.append((grid, axes, axis))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([2, 3])
def test_halo_bad_input_raises_on_every_rank():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((4, 2, 4), None, comm) as decomposition:
        with pytest.raises(
            DecompositionError, match="axis y has 2 cells, fewer than the halo width 3"
        ):
            HaloExchange(decomposition, "x", width=3)
        with pytest.raises(ValueError, match="halo width must be a positive integer, got 0"):
            HaloExchange(decomposition, "x", width=0)
        halo = HaloExchange(decomposition, "z", width=1)
        with pytest.raises(ValueError, match="ghosted z-pencils of width 1"):
            halo.exchange(decomposition.zeros("z"))
        with pytest.raises(ValueError, match="ghosted z-pencils of width 1"):
            halo.exchange(halo.allocate(), decomposition.zeros("z"))
        with pytest.raises(TypeError, match="needs numpy arrays, got list"):
            halo.exchange(halo.allocate(), [0.0])
        with pytest.raises(ValueError, match="axes must be a collection of 0, 1, 2, got 3"):
            halo.exchange(halo.allocate(), axes=3)
