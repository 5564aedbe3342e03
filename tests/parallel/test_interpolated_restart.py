"""A restart onto another grid (``--interpolate``): a channel and a pipe written on a
coarse grid continue on a finer one, divergence-free, close to the coarse flow, the same
on 1, 2 and 3 ranks; solvers without it refuse in one line."""

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.simulation import Simulation
from tests.parallel.helpers import SMALL_CHANNEL, shared_folder

PIPE = """
[case]
solver = "cylindrical"
[grid]
cells = [8, 6, 8]
[cylinder]
length = 2.0
radius = 1.0
stretching = 1.0
sectors = 2
[flow]
viscosity = 0.01
forcing = "flow-rate"
forcing_value = 1.0
initial = "perturbed-pipe"
perturbation = 0.3
seed = 2
[time]
steps = 4
[output]
statistics_every = 2
checkpoint_every = 4
"""
CASES = {"channel": (SMALL_CHANNEL, (12, 15, 9)), "pipe": (PIPE, (12, 9, 12))}


def gathered(simulation):
    solver = simulation.solver
    return {name: solver.decomposition.gather_global(solver.cell_field(name), "y")
            for name in ("u", "v", "w")}


def fine_run(case, folder, checkpoint, comm):
    """The fine case restarted from the coarse checkpoint: its state right after the
    restart, then two more steps."""
    simulation = Simulation(case, folder, comm, restart=checkpoint, interpolate=True)
    solver = simulation.solver
    state = {"steps": solver.steps, "divergence": solver.max_divergence(),
             "bulk": solver.bulk_velocity(), "fields": gathered(simulation)}
    summary = simulation.run(2)
    state["final"] = summary["final_step"], summary["final_statistics"]["kinetic_energy"]
    simulation.free()
    return state


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_coarse_run_continues_on_a_finer_grid(tmp_path_factory, name):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    text, cells = CASES[name]
    coarse = config.parse(text, "case.toml")
    simulation = Simulation(coarse, folder / "coarse", comm)
    simulation.run()
    coarse_bulk = simulation.solver.bulk_velocity()
    coarse_energy = simulation.solver.statistics()["kinetic_energy"]
    simulation.free()
    checkpoint = sorted((folder / "coarse" / "checkpoints").glob("*.ckpt"))[-1]
    fine = coarse.replace("grid", cells=cells)
    state = fine_run(fine, folder / "fine", checkpoint, comm)
    last = coarse.time.steps
    parallel_assert(state["steps"] == last, "the restart does not continue the step count")
    parallel_assert(state["divergence"] < 1e-10,
                    f"not divergence-free after the restart: {state['divergence']}")
    parallel_assert(abs(state["bulk"] - coarse_bulk) < 0.02 * abs(coarse_bulk),
                    f"bulk velocity {state['bulk']} far from the coarse {coarse_bulk}")
    step, energy = state["final"]
    parallel_assert(step == last + 2 and abs(energy - coarse_energy) < 0.1 * coarse_energy,
                    f"did not continue: step {step}, energy {energy} (coarse {coarse_energy})")
    alone = fine_run(fine, folder / f"alone-{comm.rank}", checkpoint, MPI.COMM_SELF)
    if comm.rank == 0:
        for component in ("u", "v", "w"):
            np.testing.assert_allclose(state["fields"][component], alone["fields"][component],
                                       rtol=0, atol=1e-12)


def test_solvers_without_it_refuse_in_one_line(tmp_path):
    case = config.load("flat-plate").replace("time", steps=1)
    with pytest.raises(ConfigError, match=r"--interpolate: solver \w+ restarts only on the grid"):
        Simulation(case, tmp_path / "plate", MPI.COMM_SELF, restart=tmp_path / "x.ckpt",
                   interpolate=True)
    with pytest.raises(ConfigError, match="--interpolate needs --restart"):
        Simulation(case, tmp_path / "plate", MPI.COMM_SELF, interpolate=True)
