"""The surface-traction loads of an immersed body are the same on 1, 2 and 3 ranks, and bad
input is refused."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.numerics import immersed
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver
from tachyflow.solvers.pencil.surface_loads import SurfaceLoads, cylinder_side

CASE = """
[case]
solver = "incompressible"
[grid]
cells = [32, 16, 1]
lengths = [8.0, 4.0, 0.25]
x_boundaries = "inflow-outflow"
[flow]
viscosity = 0.1
initial = "inflow"
"""


def surface_loads(comm):
    solver = IncompressibleSolver.from_case(config.parse(CASE, "s.toml"), comm, "estimate")
    spin = immersed.RigidMotion((2.5, 2.0, 0.0), (0.0, 0.0, 1.0), 1.0)
    body = immersed.CircularCylinder((2.5, 2.0, 0.0), 0.5, (0.0, 0.0, 1.0), spin)
    solver.immerse([body])
    for _ in range(3):
        solver.step(0.02)
    surface = SurfaceLoads(solver, body, cylinder_side((2.5, 2.0, 0.125), 0.5, 0.25, 48))
    loads = surface.loads()
    surface.free()
    return loads


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_surface_loads_do_not_depend_on_the_rank_count():
    serial = surface_loads(MPI.COMM_SELF)
    parallel = surface_loads(MPI.COMM_WORLD)
    assert serial[0] > 0  # a drag
    np.testing.assert_allclose(parallel, serial, rtol=1e-10, atol=1e-12)


def test_a_probe_distance_must_be_positive():
    solver = IncompressibleSolver.from_case(config.parse(CASE, "s.toml"), MPI.COMM_SELF,
                                            "estimate")
    body = immersed.CircularCylinder((2.5, 2.0, 0.0), 0.5)
    with pytest.raises(ValueError, match="probe_cells must be a positive number, got 0"):
        SurfaceLoads(solver, body, cylinder_side((2.5, 2.0, 0.125), 0.5, 0.25), probe_cells=0)
