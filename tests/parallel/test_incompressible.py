import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition, process_grids
from tachyflow.solvers.pencil.incompressible import Forcing, IncompressibleSolver


def run(comm, proc_grid, walls: bool, steps: int = 3):
    """A few steps of a 3D flow; returns this rank's owned u, v, w and the statistics."""
    shape = (8, 6, 5)
    grid = StaggeredGrid(
        shape,
        (2 * np.pi, 2.0 if walls else 2 * np.pi, np.pi),
        periodic_y=not walls,
        stretching=1.0 if walls else 0.0,
    )
    decomposition = PencilDecomposition(shape, proc_grid, comm, periodic=(True, not walls, True))
    forcing = Forcing("flow-rate", 1.0) if walls else Forcing()
    solver = IncompressibleSolver(decomposition, grid, 0.05, forcing, planning="estimate")

    def bump(x, y, z):
        envelope = y * (2.0 - y) if walls else np.cos(y)
        return envelope * (np.sin(x) * np.cos(2 * z) + 0.3 * np.cos(3 * x + z))

    solver.set_velocity(
        lambda x, y, z: bump(x, y, z) + (1.0 if walls else 0.0),
        lambda x, y, z: 0.2 * bump(z, y, x),
        lambda x, y, z: 0.1 * bump(x + 1, y, z),
    )
    for _ in range(steps):
        solver.step(0.02)
    fields = [solver.halo.interior(f).copy() for f in (solver.u, solver.v, solver.w)]
    pencil = decomposition.pencils["y"]
    statistics = solver.statistics()
    solver.free()
    decomposition.free()
    return fields, pencil, statistics


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("walls", [False, True])
def test_solution_does_not_depend_on_the_rank_count(walls):
    comm = MPI.COMM_WORLD
    reference, _, reference_statistics = run(MPI.COMM_SELF, (1, 1), walls)
    failures = []
    for proc_grid in process_grids(comm.size):
        fields, pencil, statistics = run(comm, proc_grid, walls)
        for name, field, whole in zip("uvw", fields, reference, strict=True):
            difference = np.abs(field - whole[pencil.slices]).max(initial=0.0)
            if difference > 1e-13:
                failures.append((proc_grid, name, difference))
        for key in ("kinetic_energy", "dissipation", "bulk_velocity"):
            if abs(statistics[key] - reference_statistics[key]) > 1e-12:
                failures.append((proc_grid, key, statistics[key], reference_statistics[key]))
        if statistics["max_divergence"] > 1e-12:
            failures.append((proc_grid, "divergence", statistics["max_divergence"]))
    parallel_assert(not failures, str(failures))
