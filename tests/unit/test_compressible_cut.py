"""The wake cut inside the implicit sweeps: which cells the kernel couples directly."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.numerics.compressible.time_integration import ImplicitStepper
from tachyflow.solvers.compressible.solver import CompressibleSolver


def test_the_wake_cut_in_one_block_pairs_each_cell_with_the_one_across():
    case = config.load("rae2822").replace("compressible", cells=(56, 16), wake_cells=8)
    solver = CompressibleSolver.from_case(case, MPI.COMM_SELF)
    partner = solver.stepper.cut_partner
    g, ni, cut = 2, 56, 8
    row = partner[:, g]
    paired = np.flatnonzero(row >= 0)
    expected = [i + g for i in range(ni) if i < cut or i >= ni - cut]
    assert paired.tolist() == expected
    assert all(row[row[i]] == i and row[i] == ni - 1 - (i - g) + g for i in paired)
    assert (np.delete(partner, g, axis=1) == -1).all()
    solver.blocks.free()


def test_a_cut_partner_array_of_the_wrong_shape_is_refused():
    case = config.load("rae2822").replace("compressible", cells=(56, 16), wake_cells=8)
    solver = CompressibleSolver.from_case(case, MPI.COMM_SELF)
    with pytest.raises(ValueError, match="cut_partner must have shape"):
        ImplicitStepper(solver.discretisation, 2, None, np.full((3, 3), -1))
    solver.blocks.free()
