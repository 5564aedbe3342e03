import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.errors import DecompositionError
from tachyflow.parallel import PencilDecomposition, process_grids
from tests.conftest import SHAPES


@pytest.mark.parallel([1, 2, 3])
def test_pieces_tile_the_global_grid_exactly_once():
    comm = MPI.COMM_WORLD
    problems = []
    for shape in SHAPES:
        for grid in process_grids(comm.size):
            with PencilDecomposition(shape, grid, comm) as decomposition:
                for orientation in "xyz":
                    count = np.zeros(shape, dtype=int)
                    pieces = comm.allgather(decomposition.pencils[orientation])
                    if pieces != decomposition.all_pencils(orientation):
                        problems.append(("all_pencils disagrees", shape, grid, orientation))
                    for piece in pieces:
                        count[piece.slices] += 1
                    whole = "xyz".index(orientation)
                    if not (count == 1).all():
                        problems.append(("not a tiling", shape, grid, orientation))
                    for piece in pieces:
                        if piece.shape[whole] != shape[whole]:
                            problems.append(("axis not whole", shape, grid, orientation))
                    for axis in range(3):
                        sizes = {p.shape[axis] for p in pieces}
                        if max(sizes) - min(sizes) > 1:
                            problems.append(("uneven by more than one", shape, grid, axis))
                if decomposition.col_comm.size != grid[0]:
                    problems.append(("col_comm size", shape, grid))
                if decomposition.row_comm.size != grid[1]:
                    problems.append(("row_comm size", shape, grid))
    parallel_assert(not problems, str(problems[:5]))


@pytest.mark.parallel([2, 3])
def test_impossible_process_grid_raises_on_every_rank():
    comm = MPI.COMM_WORLD
    with pytest.raises(
        DecompositionError,
        match=rf"1x1 has 1 ranks but the communicator has "
        rf"{comm.size}",
    ):
        PencilDecomposition((8, 8, 8), (1, 1), comm)
    with pytest.raises(DecompositionError, match=r"positive integers, got \(8, 0, 8\)"):
        PencilDecomposition((8, 0, 8), None, comm)


@pytest.mark.parallel([3])
def test_prime_rank_count_larger_than_an_axis_leaves_empty_pieces():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((2, 2, 2), None, comm) as decomposition:
        sizes = comm.allgather(decomposition.pencils["x"].size)
    parallel_assert(sorted(sizes) == [0, 4, 4], f"x-pencil sizes {sizes}")
