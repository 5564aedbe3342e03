"""Dual time stepping of the compressible solver on blocks: the converged physical steps of
1, 2 and 3 ranks agree to the inner tolerance (DP-SGS iterates depend on the block layout,
the solution of each step does not), and a restarted run goes on bitwise on the same rank
count, the previous time level read from the checkpoint."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.solvers.compressible.solver import CompressibleSolver
from tests.parallel.helpers import shared_folder
from tests.parallel.test_compressible_restart import naca_case, run

# Inviscid, lifting NACA 0012 on a tiny C-grid (the wake cut split between blocks).
EULER = {
    "grid": "naca0012", "cells": (32, 8), "wake_cells": 6, "far_field": 6.0,
    "wall_spacing": 1e-2, "mach": 0.5, "alpha": 2.0, "reynolds": 0.0, "sweeps": 3,
    "cfl": 50.0, "cfl_start": 2.0, "cfl_ramp": 20, "time_stepping": "dual-dp-sgs",
    "inner_iterations": 300, "inner_tolerance": 1e-8,
}
PHYSICAL_STEP = 0.1  # the flow passes the chord in 2 at M = 0.5


def physical_steps(comm, steps: int):
    """The whole grid's conserved variables after ``steps`` physical steps (on rank 0),
    the loads and the inner iterations of each step."""
    case = config.load("flat-plate").replace("time", dt=PHYSICAL_STEP)
    solver = CompressibleSolver.from_case(case.replace("compressible", **EULER), comm)
    inner = []
    for _ in range(steps):
        solver.step(PHYSICAL_STEP)
        statistics = solver.statistics()
        inner.append((statistics["inner_iterations"], statistics["inner_residual_drop"]))
    loads = np.array([solver.coefficients[name] for name in ("CL", "CD", "CM")])
    density = solver.cell_field("rho")
    layout = solver.piece_layout()
    pieces = comm.gather((layout.start, density), root=0)
    solver.blocks.free()
    if comm.rank != 0:
        return None, loads, inner
    whole = np.full(layout.global_shape, np.nan)
    for (i, j), piece in pieces:
        whole[i : i + piece.shape[0], j : j + piece.shape[1]] = piece
    return whole, loads, inner


@pytest.mark.parallel([1, 2, 3])
def test_converged_physical_steps_agree_across_rank_counts():
    comm = MPI.COMM_WORLD
    density, loads, inner = physical_steps(comm, 2)
    for iterations, drop in inner:  # converged, not stopped at the cap
        assert iterations < EULER["inner_iterations"] and drop <= 1e-8, inner
    if comm.rank == 0:
        serial, serial_loads, serial_inner = physical_steps(MPI.COMM_SELF, 2)
        if comm.size > 1:  # the block layout changes the iterates, hence their count
            print("inner iterations, serial:", serial_inner, f"{comm.size} ranks:", inner)
        print("differences from serial: density", np.abs(density - serial).max(), "loads",
              np.abs(loads - serial_loads))
        assert np.allclose(density, serial, rtol=0, atol=1e-8)
        assert np.allclose(loads, serial_loads, rtol=0, atol=1e-8), (loads, serial_loads)
        assert abs(loads[0]) > 0.05  # a lifting flow, not the free stream


@pytest.mark.parallel([1, 2, 3])
def test_dual_time_restart_continues_bitwise(tmp_path_factory):
    # Turbulent (SA) with the point-vortex far field: five variables, two time levels and
    # the lift in the ghosts all come back from the checkpoint of step 4 (of 3 and 4).
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    case = naca_case(6).replace("time", steps=6, dt=0.2)
    case = case.replace("compressible", time_stepping="dual-dp-sgs", inner_iterations=6,
                        inner_tolerance=1e-3, cfl=5.0)
    straight = run(case, folder / "straight", comm)
    run(case, folder / "stopped", comm, steps=4)
    restarted = run(case, folder / "stopped", comm, restart="latest")
    if comm.rank == 0:
        assert restarted["steps"] == straight["steps"] == 6
        assert set(straight["U"]) >= {"previous_rho", "previous_rho_nt"}
        for name, values in straight["U"].items():
            assert np.array_equal(restarted["U"][name], values), name
        assert restarted["scalars"] == pytest.approx(straight["scalars"], rel=0, abs=0,
                                                     nan_ok=True)
        assert straight["scalars"]["pseudo_iterations"] > 6
