"""The compressible solver on structured blocks: 1, 2 and 3 ranks give the serial answer,
the wake cut of a C-grid included."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.solvers.compressible.solver import CompressibleSolver

NACA = {
    "grid": "naca0012", "cells": (64, 16), "wake_cells": 12, "far_field": 8.0,
    "wall_spacing": 2e-3, "mach": 0.5, "alpha": 2.0, "reynolds": 5000.0,
}


def solver_on(comm, **values):
    case = config.load("flat-plate").replace("compressible", **{**NACA, **values})
    return CompressibleSolver.from_case(case, comm)


def final_loads(solver, steps: int, dt=None):
    for _ in range(steps):
        solver.step(solver.stable_time_step(0.5) if dt is None else dt)
    statistics = solver.statistics()
    surface = solver.wall_surface()
    return np.array([statistics[name] for name in ("CL", "CD", "CM", "CD_f")]), surface


@pytest.mark.parallel([1, 2, 3])
def test_explicit_steps_on_blocks_repeat_the_serial_run_to_round_off():
    # SSP-RK3 couples blocks only through the exchange: any block layout must give the
    # serial state, so the loads and the wall data agree to round-off.
    comm = MPI.COMM_WORLD
    parallel = solver_on(comm, time_stepping="rk3")
    loads, surface = final_loads(parallel, 30)
    parallel.blocks.free()
    if comm.rank == 0:
        serial = solver_on(MPI.COMM_SELF, time_stepping="rk3")
        expected, serial_surface = final_loads(serial, 30)
        serial.blocks.free()
        assert np.allclose(loads, expected, rtol=1e-11, atol=1e-13)
        for name in ("x/c", "Cp", "Cf"):
            assert np.allclose(surface[name], serial_surface[name], rtol=1e-10, atol=1e-13)


@pytest.mark.parallel([1, 2, 3])
def test_dp_sgs_on_blocks_converges_to_the_serial_solution():
    # DP-SGS couples blocks by Jacobi at their edges, so the iterations differ, not the
    # converged flow.
    comm = MPI.COMM_WORLD
    parallel = solver_on(comm, time_stepping="dp-sgs", sweeps=3, cfl=20.0)
    loads, _ = final_loads(parallel, 500, dt=1.0)
    assert parallel.density_residual < 1e-4
    parallel.blocks.free()
    if comm.rank == 0:
        serial = solver_on(MPI.COMM_SELF, time_stepping="dp-sgs", sweeps=3, cfl=20.0)
        reference, _ = final_loads(serial, 500, dt=1.0)
        serial.blocks.free()
        assert np.allclose(loads, reference, rtol=2e-3, atol=2e-4), (loads, reference)
