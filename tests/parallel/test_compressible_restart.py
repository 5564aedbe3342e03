"""Checkpoints of the compressible solver: a restarted run goes on bitwise as if never
stopped (DP-SGS, same block layout), and a checkpoint written on P ranks restarts on Q
(explicit SSP-RK3, whose iterates do not depend on the block layout)."""

import csv

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.parallel.pieces import gather_small
from tachyflow.simulation import Simulation
from tests.parallel.helpers import shared_folder

# A coarse, lifting, turbulent NACA 0012 C-grid: the point-vortex far field and the SA
# variable are part of the state.
NACA = {
    "grid": "naca0012", "cells": [48, 12], "wake_cells": 8, "far_field": 8.0,
    "wall_spacing": 2e-3, "mach": 0.5, "alpha": 2.0, "reynolds": 5000.0, "turbulence": "sa",
    "vortex_correction": True, "cfl": 10.0, "cfl_start": 1.0, "cfl_ramp": 10, "sweeps": 3,
}


def naca_case(steps: int, **values):
    case = config.load("naca0012").replace("compressible", **{**NACA, **values})
    return case.replace("time", steps=steps).replace(
        "output", statistics_every=1, checkpoint_every=3, fields_every=2
    )


def whole_state(simulation) -> dict | None:
    """Every conserved variable of the grid and the scalars of the checkpoint, on rank 0."""
    solver = simulation.solver
    pieces, scalars = solver.checkpoint_state()
    gathered = gather_small(simulation.comm, (solver.piece_layout(), pieces))
    if gathered is None:
        return None
    ni, nj = solver.piece_layout().global_shape
    whole = {name: np.full((ni, nj), np.nan) for name in pieces}
    for layout, piece in gathered:
        cells = tuple(slice(s, s + n) for s, n in zip(layout.start, layout.shape, strict=True))
        for name, values in piece.items():
            whole[name][cells] = values
    return {"U": whole, "scalars": scalars, "steps": solver.steps}


def newest_checkpoint(comm, folder):
    newest = sorted((folder / "checkpoints").glob("step_*.ckpt"))[-1] if comm.rank == 0 else None
    return comm.bcast(newest, root=0)


def run(case, folder, comm, steps=None, restart=None):
    simulation = Simulation(case, folder, comm, restart=restart)
    simulation.run(steps)
    state = whole_state(simulation)
    simulation.free()
    return state


@pytest.mark.parallel([1, 2, 3])
def test_dp_sgs_restart_continues_bitwise(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    case = naca_case(8, time_stepping="dp-sgs")
    straight = run(case, folder / "straight", comm)
    run(case, folder / "stopped", comm, steps=4)  # checkpoints of steps 3 and 4
    restarted = run(case, folder / "stopped", comm, restart="latest")
    if comm.rank == 0:
        assert restarted["steps"] == straight["steps"] == 8
        for name, values in straight["U"].items():
            assert np.array_equal(restarted["U"][name], values), name
        assert restarted["scalars"] == pytest.approx(straight["scalars"], rel=0, abs=0)
        tables = [
            list(csv.DictReader((folder / run_name / "convergence.csv").open()))
            for run_name in ("straight", "stopped")
        ]
        assert [row["iteration"] for row in tables[1]] == [str(k) for k in range(1, 9)]
        assert tables[0] == tables[1]  # residuals relative to the same first iterations
        collection = (folder / "stopped" / "fields.pvd").read_text()
        assert collection.count("<DataSet") == 4 and "step_00000008.pvts" in collection


@pytest.mark.parallel([3])
def test_rk3_checkpoint_of_two_ranks_restarts_on_one_two_and_three(tmp_path_factory):
    world = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, world)
    case = naca_case(6, time_stepping="rk3")
    case = case.replace("time", steps=6, cfl=0.5)
    serial = None
    if world.rank == 0:
        serial = run(case, folder / "serial", MPI.COMM_SELF)
    writers = world.Split(0 if world.rank < 2 else MPI.UNDEFINED, world.rank)
    if writers != MPI.COMM_NULL:
        run(case, folder / "written", writers, steps=3)
        writers.Free()
    world.Barrier()
    for size in (1, 2, 3):
        readers = world.Split(0 if world.rank < size else MPI.UNDEFINED, world.rank)
        if readers == MPI.COMM_NULL:
            world.Barrier()
            continue
        checkpoint = newest_checkpoint(readers, folder / "written")
        state = run(case, folder / f"restarted-{size}", readers, restart=checkpoint)
        readers.Free()
        world.Barrier()
        if world.rank == 0:
            assert checkpoint.name == "step_00000003.ckpt"
            assert state["steps"] == 6
            for name, values in serial["U"].items():
                assert np.allclose(state["U"][name], values, rtol=1e-12, atol=1e-14), name
            for name in ("CL", "CD", "CM"):
                assert state["scalars"][name] == pytest.approx(serial["scalars"][name],
                                                               rel=1e-10, abs=1e-13)


@pytest.mark.parallel([1, 2])
def test_a_checkpoint_of_other_equations_is_refused_on_every_rank(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    run(naca_case(2), folder / "turbulent", comm)
    checkpoint = newest_checkpoint(comm, folder / "turbulent")
    laminar = naca_case(4, turbulence="laminar")
    with pytest.raises(ConfigError, match="holds"):
        Simulation(laminar, folder / "laminar", comm, restart=checkpoint)
