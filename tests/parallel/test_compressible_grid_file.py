"""A case on a grid read from a Plot3D or CGNS file is the case on the built-in grid, bit
for bit, on 1, 2 and 3 ranks (the file holds the same nodes; the topology read from it is
the built-in grid's)."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.io.cgns import write_cgns
from tachyflow.io.plot3d import write_plot3d
from tachyflow.solvers.compressible.grids import build_grid
from tachyflow.solvers.compressible.solver import CompressibleSolver
from tests.parallel.helpers import shared_folder

NACA = {
    "grid": "naca0012", "cells": (64, 16), "wake_cells": 12, "far_field": 8.0,
    "wall_spacing": 2e-3, "mach": 0.5, "alpha": 2.0, "reynolds": 5000.0,
    "time_stepping": "dp-sgs", "sweeps": 2, "cfl": 10.0, "cfl_start": 2.0, "cfl_ramp": 4,
}
ITERATIONS = 6


def run(case, comm):
    solver = CompressibleSolver.from_case(case, comm)
    for _ in range(ITERATIONS):
        solver.step(1.0)
    statistics = solver.statistics()
    values = np.array([statistics[name] for name in sorted(statistics)])
    state = solver.U.copy()
    solver.blocks.free()
    return state, values


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_a_case_on_a_grid_file_repeats_the_built_in_grid_bit_for_bit(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    built_in = config.load("flat-plate").replace("compressible", **NACA)
    if comm.rank == 0:
        grid = build_grid(built_in.compressible)
        write_plot3d(folder / "naca.xyz", [(grid.x, grid.y)])
        write_cgns(folder / "naca.cgns", grid)
        for name in ("naca.xyz", "naca.cgns"):  # the case files name their grids relatively
            as_file = built_in.replace("compressible", grid="file", grid_file=name)
            (folder / f"{name}.toml").write_text(as_file.to_toml())
    comm.Barrier()
    expected_state, expected = run(built_in, comm)
    assert np.isfinite(expected).sum() > 10 and expected_state.std() > 0
    for name in ("naca.xyz", "naca.cgns"):
        case = config.load(str(folder / f"{name}.toml"))
        assert case.compressible.grid_file == str(folder / name)
        state, statistics = run(case, comm)
        same = np.array_equal(state, expected_state) and np.array_equal(
            statistics, expected, equal_nan=True
        )  # NaN: the turbulence residual of a laminar case
        assert comm.allreduce(same, op=MPI.LAND), (name, statistics, expected)
