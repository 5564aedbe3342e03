"""Soak (make test-slow): recording statistics every step for 5,000 steps does not slow a
run down as it goes (stats.csv and log.txt are appended to, never rewritten)."""

import time

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config, observers
from tachyflow.simulation import Simulation


@observers.register
class StepClock(observers.Observer):
    """Records the wall clock after every step (turned on by ``[observers.soak-clock]``)."""

    name = "soak-clock"
    every = 1

    def __init__(self):
        self.times = []

    def observe(self, run) -> None:
        self.times.append(time.perf_counter())


@pytest.mark.slow
def test_statistics_every_step_for_5000_steps_keep_their_pace(tmp_path):
    text = (
        '[case]\nname = "soak"\n[grid]\ncells = [32, 32, 32]\n'
        '[flow]\nviscosity = 0.000625\ninitial = "taylor-green"\n'
        "[time]\nsteps = 5000\ncfl = 0.5\n[output]\nstatistics_every = 1\n"
        "[observers.soak-clock]\n"
    )
    run = Simulation(config.parse(text, "soak.toml"), tmp_path, MPI.COMM_SELF, planning="estimate")
    run.run()
    clock = next(o for o in run.observers if o.name == "soak-clock")
    run.free()
    steps = np.diff(clock.times)
    early, late = np.median(steps[100:1100]), np.median(steps[-1000:])
    assert late < 1.5 * early, (early, late)  # was 83 -> 15 steps/s with full rewrites
    assert (tmp_path / "stats.csv").read_text().count("\n") == 5001
    assert (tmp_path / "log.txt").read_text().count(" step ") >= 5000
