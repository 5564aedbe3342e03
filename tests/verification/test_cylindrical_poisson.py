"""The pressure Poisson solve on cylindrical grids (x, r, θ): FFT (or, open in x, a cosine
transform) in x, FFT in θ, a tridiagonal solve in r per mode with no flux through the axis;
second order, rank-independent."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.pencil.poisson import PoissonSolver

LENGTH, RADIUS = 3.0, 1.0


def manufactured(grid: CylindricalGrid):
    """An exact solution with zero normal gradient at the walls (and at the ends of an open
    x), regular at the axis, and its Laplacian, at the cell centres (global arrays)."""
    nx, _, nt = grid.shape
    x = (np.arange(nx) + 0.5) * grid.spacing_x
    theta = (np.arange(nt) + 0.5) * grid.spacing_z
    r = grid.centres_y
    k = (2 if grid.periodic_x else 1) * np.pi / LENGTH
    if grid.through_axis:  # f = r^m - m r^(m+2) / ((m+2) R²): f'(R) = 0, ~ r^m at the axis
        m = 2 if grid.sectors == 1 else grid.sectors  # a mode the sector repeats
        f = r**m - m * r ** (m + 2) / ((m + 2) * RADIUS**2)
        f2 = m * (m - 1) * r ** (m - 2) - m * (m + 1) * r**m / RADIUS**2
        f1 = m * r ** (m - 1) - m * r ** (m + 1) / RADIUS**2
        radial = f2 + f1 / r - m**2 * f / r**2
    else:  # cos(π (r - a) / d): zero slope at both walls, mode 0 in θ
        m, a = 0, grid.inner_radius
        d = RADIUS - a
        f = np.cos(np.pi * (r - a) / d)
        f1 = -np.pi / d * np.sin(np.pi * (r - a) / d)
        radial = -((np.pi / d) ** 2) * f + f1 / r
    angular = np.cos(m * theta)
    exact = np.cos(k * x)[:, None, None] * f[None, :, None] * angular[None, None, :]
    laplacian = (
        np.cos(k * x)[:, None, None] * (radial - k**2 * f)[None, :, None] * angular[None, None, :]
    )
    return exact, laplacian


def solve_error(n: int, comm, **geometry) -> float:
    grid = CylindricalGrid((n, n, n), LENGTH, RADIUS, **geometry)
    exact, laplacian = manufactured(grid)
    periodic = (grid.periodic_x, False, True)
    with PencilDecomposition(grid.shape, comm=comm, periodic=periodic) as pencils:
        solver = PoissonSolver(pencils, grid, planning="estimate")
        piece = pencils.pencils["y"].slices
        result = solver.solve(np.ascontiguousarray(laplacian[piece]))
        solver.free()
        error = np.abs(result - exact[piece]).max() if result.size else 0.0
        return pencils.comm.allreduce(float(error), op=MPI.MAX)


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize(
    "geometry",
    [
        {},
        {"sectors": 3},
        {"stretching": 1.5},
        {"inner_radius": 0.4, "stretching": 1.0},
        {"periodic_x": False, "stretching": 1.0},
    ],
    ids=["pipe", "sector", "stretched-pipe", "annulus", "open-x"],
)
def test_cylindrical_poisson_is_second_order_through_the_axis_and_in_annuli(geometry):
    comm = MPI.COMM_WORLD
    errors = [solve_error(n, comm, **geometry) for n in (12, 24)]
    order = np.log2(errors[0] / errors[1])
    assert 1.8 < order < 2.3, (errors, order)


@pytest.mark.parallel([2, 3])
@pytest.mark.parametrize("periodic_x", [True, False], ids=["periodic-x", "open-x"])
def test_cylindrical_poisson_inverts_the_discrete_operator_on_any_rank_count(periodic_x):
    """Solving on P ranks equals solving on one, to round-off."""
    world = MPI.COMM_WORLD
    grid = CylindricalGrid((8, 7, 6), LENGTH, RADIUS, stretching=1.0, periodic_x=periodic_x)
    rhs = np.random.default_rng(1).standard_normal(grid.shape)
    results = []
    periodic = (periodic_x, False, True)
    for comm in (MPI.COMM_SELF, world):
        with PencilDecomposition(grid.shape, comm=comm, periodic=periodic) as pencils:
            solver = PoissonSolver(pencils, grid, planning="estimate")
            piece = pencils.pencils["y"].slices
            solution = solver.solve(np.ascontiguousarray(rhs[piece]))
            results.append(pencils.gather_global(solution, "y"))
            solver.free()
    if world.rank == 0:
        assert np.abs(results[0] - results[1]).max() < 1e-12 * np.abs(results[0]).max()
