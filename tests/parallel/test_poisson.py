import itertools

import numpy as np
import pytest
import scipy.sparse as sparse
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import HaloExchange, PencilDecomposition, process_grids
from tachyflow.solvers.pencil.poisson import PoissonSolver


def global_operator(grid: StaggeredGrid) -> sparse.csr_matrix:
    """The finite-volume Laplacian assembled serially, independently of the solver."""
    nx, ny, nz = grid.shape

    def periodic_second_difference(n, h):
        matrix = sparse.lil_matrix((n, n))
        for i in range(n):
            matrix[i, (i - 1) % n] += 1.0
            matrix[i, i] -= 2.0
            matrix[i, (i + 1) % n] += 1.0
        return matrix.tocsr() / h**2

    widths, centres = grid.widths_y, grid.centres_y
    matrix_y = sparse.lil_matrix((ny, ny))
    for j in range(ny):
        for neighbour in (j - 1, j + 1):
            if 0 <= neighbour < ny:
                distance = abs(centres[neighbour] - centres[j])
            elif grid.periodic_y:
                distance = 0.5 * (widths[0] + widths[-1])
            else:
                continue  # wall: no flux
            coefficient = 1.0 / (widths[j] * distance)
            matrix_y[j, neighbour % ny] += coefficient
            matrix_y[j, j] -= coefficient
    eye_x, eye_y, eye_z = (sparse.identity(n) for n in grid.shape)
    return (
        sparse.kron(sparse.kron(periodic_second_difference(nx, grid.spacing_x), eye_y), eye_z)
        + sparse.kron(sparse.kron(eye_x, matrix_y.tocsr()), eye_z)
        + sparse.kron(sparse.kron(eye_x, eye_y), periodic_second_difference(nz, grid.spacing_z))
    ).tocsr()


CASES = [
    ((8, 6, 4), True, 0.0),
    ((5, 7, 3), False, 0.0),
    ((6, 9, 8), False, 2.0),
    ((1, 4, 1), False, 1.0),
    ((3, 3, 2), True, 0.0),
]


@pytest.mark.parallel([1, 2, 3])
def test_poisson_inverts_the_discrete_operator_to_round_off_on_every_grid():
    comm = MPI.COMM_WORLD
    failures = []
    for (shape, periodic, stretching), proc_grid in itertools.product(
        CASES, process_grids(comm.size)
    ):
        grid = StaggeredGrid(shape, (2.0, 1.5, 3.0), periodic_y=periodic, stretching=stretching)
        exact = np.random.default_rng(7).standard_normal(shape)
        exact -= np.einsum("ijk,j->", exact, grid.widths_y / grid.lengths[1]) / (
            shape[0] * shape[2]
        )
        rhs = (global_operator(grid) @ exact.ravel()).reshape(shape)
        with PencilDecomposition(shape, proc_grid, comm) as decomposition:
            # Also into a planned solution: the owned cells of a ghosted field (written by
            # the last transform where z is whole, copied into elsewhere).
            field = HaloExchange(decomposition, "y").allocate()
            solution = field[1:-1, 1:-1, 1:-1]
            solver = PoissonSolver(decomposition, grid, planning="estimate", solution=solution)
            local_rhs = decomposition.scatter_global(rhs, "y")
            local_exact = decomposition.scatter_global(exact, "y")
            for out in (None, field[1:-1, 1:-1, 1:-1]):
                result = solver.solve(local_rhs, out=out)
                error = np.abs(result - local_exact).max(initial=0)
                if error > 1e-12 * np.abs(exact).max():
                    failures.append((shape, periodic, stretching, proc_grid, out is None, error))
            if not np.all(field[0] == 0.0) or not np.all(field[:, :, -1] == 0.0):
                failures.append((shape, proc_grid, "ghosts written"))
            solver.free()
    parallel_assert(not failures, str(failures))


@pytest.mark.parallel([2, 3])
def test_poisson_rejects_mismatched_input_on_every_rank():
    comm = MPI.COMM_WORLD
    grid = StaggeredGrid((4, 5, 6), (1.0, 1.0, 1.0), periodic_y=False)
    with PencilDecomposition((4, 5, 6), None, comm) as decomposition:
        with pytest.raises(ValueError, match="differs from grid shape"):
            PoissonSolver(decomposition, StaggeredGrid((4, 5, 7), (1.0, 1.0, 1.0)))
        solver = PoissonSolver(decomposition, grid, planning="estimate")
        with pytest.raises(ValueError, match="rhs must be a float64 y-pencil"):
            solver.solve(decomposition.zeros("x", np.float32))
        solver.free()
        with pytest.raises(ValueError, match="solution must be a float64 y-pencil"):
            PoissonSolver(decomposition, grid, solution=decomposition.zeros("x", np.float32))
