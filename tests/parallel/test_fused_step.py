"""The fused velocity update (advection, viscous terms, forcing, RK3 increments, the
implicit y solves and the projection's divergence at once) gives the separate kernels'
values bit for bit: with walls (Crank–Nicolson in y) and
without, with a pressure gradient and a flow rate, and around an immersed body."""

from importlib import resources

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import config
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition
from tachyflow.solvers.pencil.base import Inflow
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver

CYLINDER = """
[[immersed.body]]
name = "rod"
shape = "cylinder"
centre = [3.0, 1.0, 0.0]
radius = 0.4
"""


def case_of(name: str, comm, split: str = "x"):
    if name == "poiseuille":  # walls and a pressure gradient, with a body in the flow
        text = (resources.files("tachyflow") / "cases" / "poiseuille.toml").read_text()
        case = config.parse(text + CYLINDER, "poiseuille-rod.toml")
    else:
        case = config.load(name)
    proc_grid = (comm.size, 1) if split == "x" else (1, comm.size)
    return case.replace("grid", cells=(12, 10, 8)).replace("parallel", proc_grid=proc_grid)


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize(
    "name, split",
    [("channel", "x"), ("taylor-green", "x"), ("poiseuille", "x"), ("channel", "z")],
)
def test_fused_steps_equal_the_separate_kernels_bit_for_bit(name, split):
    # z split: the fused pass's divergence leaves the first z cells to after the exchange.
    comm = MPI.COMM_WORLD
    fields = []
    for fused in (True, False):
        solver = IncompressibleSolver.from_case(case_of(name, comm, split), comm, "estimate")
        assert solver.fused  # the default where x is periodic
        solver.fused = fused
        for _ in range(3):
            solver.step(0.01)
        fields.append([solver.halo.interior(f).copy() for f in (*solver.velocity_arrays(),
                                                                  solver.p)])
        phases = solver.phase_seconds()
        assert ("velocity" in phases) == fused and ("advection" in phases) != fused
        solver.free()
        solver.decomposition.free()
    equal = all(np.array_equal(a, b) for a, b in zip(*fields, strict=True))
    parallel_assert(equal, f"{name}: the fused step differs from the separate kernels")


def test_the_fused_pass_is_refused_where_x_is_open():
    shape = (8, 6, 4)
    grid = StaggeredGrid(shape, (4.0, 2.0, 1.0), periodic_y=False, periodic_x=False)
    with PencilDecomposition(shape, (1, 1), MPI.COMM_SELF, periodic=(False, False, True)) as d:
        solver = IncompressibleSolver(d, grid, 0.1, planning="estimate", inflow=Inflow())
        assert not solver.fused  # the default where x is open
        with pytest.raises(ValueError, match="fused=True needs a grid periodic in x"):
            solver.fused = True
        with pytest.raises(TypeError, match="fused must be True or False, got 1"):
            solver.fused = 1
        solver.free()


def test_switching_between_the_fused_pass_and_the_separate_kernels_keeps_the_values():
    # The fused pass overwrites the previous substep's terms in place, the separate kernels
    # write a second array: switched between steps (as bench step does), each must still
    # find the previous substep's terms where the other left them.
    comm = MPI.COMM_SELF
    fields = []
    for switching in (True, False):
        solver = IncompressibleSolver.from_case(case_of("channel", comm), comm, "estimate")
        for step in range(4):
            solver.fused = switching and step % 2 == 1
            solver.step(0.01)
        fields.append([solver.halo.interior(f).copy() for f in solver.velocity_arrays()])
        solver.free()
        solver.decomposition.free()
    assert all(np.array_equal(a, b) for a, b in zip(*fields, strict=True))
