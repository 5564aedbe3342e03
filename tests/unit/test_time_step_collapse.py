"""A run whose adaptive time step collapses (a velocity growing without bound keeps the
CFL number at its target by shrinking Δt) stops as diverged, naming it, instead of
stepping on with Δt → 0 (a coarse pipe without a model did so from t ≈ 9.7 with its
energy at 1e46)."""

import itertools

import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import SimulationDiverged
from tachyflow.simulation import Simulation


def test_a_collapsing_time_step_is_a_divergence(tmp_path):
    case = config.load("poiseuille").replace("time", dt=0.0, cfl=0.5, steps=10).replace(
        "output", images_every=0, fields_every=0, checkpoint_every=0)
    simulation = Simulation(case, tmp_path / "run", MPI.COMM_SELF, planning="estimate")
    steps = itertools.chain([0.1, 0.2, 0.05, 1e-5], itertools.repeat(1e-8))
    simulation.solver.stable_time_step = lambda cfl: next(steps)
    with pytest.raises(SimulationDiverged, match=r"the time step collapsed to 1e-08, 5\.0e-08 "
                                                 r"of its largest in this run \(0\.2\)"):
        simulation.run()
    simulation.free()


def test_a_time_step_falling_less_is_not(tmp_path):
    case = config.load("poiseuille").replace("time", dt=0.0, cfl=0.5, steps=4).replace(
        "output", images_every=0, fields_every=0, checkpoint_every=0)
    simulation = Simulation(case, tmp_path / "run", MPI.COMM_SELF, planning="estimate")
    steps = iter([0.1, 0.1, 0.2, 1e-6, 1e-6, 1e-6])
    simulation.solver.stable_time_step = lambda cfl: next(steps)
    assert simulation.run()["final_step"] == 4
    simulation.free()
