"""``[time] stop_when``: a run ends once its named statistics have settled."""

import json

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.observers.settled import settled
from tachyflow.simulation import Simulation


def test_a_constant_settles_an_oscillation_and_a_trend_do_not():
    steps = np.arange(40)
    assert settled(np.full(40, 0.31), 1e-6)
    assert settled(0.31 + 1e-9 * np.sin(steps), 1e-6)
    assert not settled(0.31 + 1e-3 * np.sin(steps), 1e-6)  # oscillates
    assert not settled(0.31 + 1e-5 * steps, 1e-6)  # still drifting
    assert not settled([1.0, np.nan, 1.0, 1.0], 1e-3) and not settled([1.0, 1.0], 1.0)


def case(text):
    base = config.load("poiseuille").replace("grid", cells=(4, 16, 4))
    return config.parse(base.to_toml() + text, "settled.toml").replace(
        "output", statistics_every=5, images_every=0, checkpoint_every=0, fields_every=0)


def test_a_steady_channel_ends_once_its_energy_has_settled(tmp_path):
    steady = case("").replace("flow", initial="poiseuille").replace(
        "time", steps=2000, stop_when=("kinetic_energy", "wall_shear"), stop_window=10,
        stop_tolerance=1e-6)
    simulation = Simulation(steady, tmp_path / "steady", MPI.COMM_WORLD, planning="estimate")
    summary = simulation.run()
    simulation.free()
    assert summary["final_step"] == 50  # the tenth record: the first full window
    assert "kinetic_energy, wall_shear within 1e-06" in summary["settled"]
    timings = json.loads((tmp_path / "steady" / "timings.json").read_text())
    assert timings["settled"] == summary["settled"]


def test_a_developing_channel_runs_on_and_bad_names_are_refused(tmp_path):
    developing = case("").replace("time", steps=60, stop_when=("kinetic_energy",),
                                  stop_window=4, stop_tolerance=1e-9)
    simulation = Simulation(developing, tmp_path / "dev", MPI.COMM_WORLD, planning="estimate")
    summary = simulation.run()
    simulation.free()
    assert summary["final_step"] == 60 and summary["settled"] is None
    wrong = developing.replace("time", stop_when=("lift",))
    simulation = Simulation(wrong, tmp_path / "wrong", MPI.COMM_WORLD, planning="estimate")
    with pytest.raises(ConfigError, match=r"'time\.stop_when' names \['lift'\]"):
        simulation.run()
    simulation.free()
