"""Second-order convergence of the Poisson solve to an analytic solution."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.pencil.poisson import PoissonSolver

LENGTHS = (2.0, 1.0, 1.5)


def solve_manufactured(n: int, periodic_y: bool, stretching: float) -> float:
    """Max error of the solve for p = cos(2πx/Lx) cos(πy/Ly or 2πy/Ly) sin(2πz/Lz)."""
    lx, ly, lz = LENGTHS
    grid = StaggeredGrid((n, n, n), LENGTHS, periodic_y=periodic_y, stretching=stretching)
    x = (np.arange(n) + 0.5) * grid.spacing_x
    z = (np.arange(n) + 0.5) * grid.spacing_z
    y = grid.centres_y
    ky = 2 * np.pi / ly if periodic_y else np.pi / ly  # cos(πy/Ly): zero slope at walls
    kx, kz = 2 * np.pi / lx, 2 * np.pi / lz
    exact = (
        np.cos(kx * x)[:, None, None]
        * np.cos(ky * y)[None, :, None]
        * np.sin(kz * z)[None, None, :]
    )
    laplacian = -(kx**2 + ky**2 + kz**2) * exact
    with PencilDecomposition((n, n, n), comm=MPI.COMM_SELF) as decomposition:
        solver = PoissonSolver(decomposition, grid, planning="estimate")
        result = solver.solve(np.ascontiguousarray(laplacian))
        solver.free()
    return float(np.abs(result - exact).max())


@pytest.mark.parametrize(("periodic_y", "stretching"), [(True, 0.0), (False, 0.0), (False, 1.2)])
def test_poisson_error_falls_with_second_order(periodic_y, stretching):
    errors = [solve_manufactured(n, periodic_y, stretching) for n in (16, 32, 64)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert errors[-1] < 5e-3
    assert np.all((orders > 1.9) & (orders < 2.1)), (errors, orders)
