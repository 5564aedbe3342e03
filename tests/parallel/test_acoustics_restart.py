"""The acoustics record rides in the checkpoints: a run restarted from any of them hears
what the run that never stopped heard (a fan's blades and a permeable sphere)."""

import shutil

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.io.bp_reading import bp_reader
from tachyflow.simulation import Simulation
from tests.parallel.helpers import shared_folder
from tests.parallel.test_in_run_acoustics import CASE as SPHERE
from tests.verification.test_immersed import FAN

# The record starts at step 6; checkpoints at 10 and 20 fall inside it, 20 near its end
# (before the fix: a record begun again there was too short to have any observer time).
FAN_NOISE = FAN.format(parallel="") + """
[time]
steps = 30
dt = 0.01
[acoustics]
surface = "blades"
every = 2
start_step = 6
c0 = 40.0
samples = 64
observers = [[6.0, 0.0, 0.0], [1.0, 6.0, 0.0]]
[output]
statistics_every = 0
checkpoint_every = 10
checkpoints_kept = 3
"""
SPHERE_NOISE = SPHERE.replace("steps = 24", "steps = 16").replace(
    "statistics_every = 0", "statistics_every = 0\ncheckpoint_every = 5\ncheckpoints_kept = 4"
).replace("samples = 64", "samples = 32") + "every = 2\nstart_step = 3\n"


def run(text, folder, restart=None):
    case = config.parse(text, "noise.toml")
    simulation = Simulation(case, folder, MPI.COMM_WORLD, restart, planning="estimate")
    try:
        return simulation.run()["acoustics"]
    finally:
        simulation.free()


@pytest.mark.parallel([2])
@pytest.mark.parametrize(
    ("text", "restarts", "series"), [(FAN_NOISE, (10, 20), False), (SPHERE_NOISE, (5,), True)],
    ids=["fan", "sphere"],
)
def test_a_restarted_run_hears_what_the_uninterrupted_one_heard(
    tmp_path_factory, text, restarts, series
):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    straight = run(text, folder / "straight")
    for step in restarts:
        # As if killed at the end after the checkpoint of `step`: its later output is there.
        again = folder / f"from-{step}"
        if comm.rank == 0:
            shutil.copytree(folder / "straight", again)
        comm.Barrier()
        checkpoint = again / "checkpoints" / f"step_{step:08d}.ckpt"
        restarted = run(text, again, checkpoint)
        if comm.rank != 0:
            continue
        assert straight["samples"] > 5
        for key in ("observers", "window", "samples", "dominant_frequency"):
            assert restarted.get(key) == straight.get(key), (step, key)
        signals = [(f / "acoustics" / "signals.csv").read_text() for f in (folder / "straight",
                                                                           again)]
        assert signals[0] == signals[1], step
        if series:  # the surface series holds each sampled time once
            with bp_reader(again / "acoustics" / "surface.bp") as reader:
                times = np.atleast_1d(reader.read("time", step_selection=[0, reader.num_steps()]))
            assert len(times) == straight["samples"] and np.all(np.diff(times) > 0), times
