"""Noise of rotating fan blades (FW-H formulation 1A on the blades, turned into the
inertial frame, the other sectors as copies): a steady load in the rotor's frame sounds
at the blade-passing frequency off the axis and is silent on it; 1, 2, 3 ranks alike."""

import dataclasses

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.acoustics.rotor import RotorNoise
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver
from tests.verification.test_immersed import FAN

NOISE = """
[acoustics]
surface = "blades"
c0 = 8.0
samples = 256
duration = 4.7
observers = [[6.0, 0.0, 0.0], [1.0, 6.0, 0.0]]
"""
OMEGA, BLADES = 4.0, 5


def frozen_fan(comm, exchange: str = "auto"):
    """The fan's flow after a few steps, and its case."""
    case = config.parse(FAN.format(parallel=f"[parallel]\nproc_grid = [{comm.size}, 1]")
                        + NOISE + f'exchange = "{exchange}"\n', "fan.toml")
    fan = CylindricalSolver.from_case(case, comm, "estimate")
    for _ in range(3):
        fan.step(0.01)
    return fan, case


def rotor_noise(fan, section, folder, revolutions: float = 3.0):
    """``fan``'s flow held still in the rotor's frame while the rotor turns: the blades'
    load is steady, so their sound repeats every blade passage."""
    start, dt, duration = fan.time, 0.005, revolutions * 2 * np.pi / OMEGA
    noise = RotorNoise(section, fan, fan.bodies[0], BLADES, folder, duration)
    for _ in range(round(duration / dt)):
        fan.time += dt
        noise.sample()
    fan.time = start
    return noise.finish()


def frozen_rotor_noise(comm, folder):
    fan, case = frozen_fan(comm)
    summary = rotor_noise(fan, case.acoustics, folder)
    fan.free()
    fan.decomposition.free()
    return summary


@pytest.mark.parallel([1, 2, 3])
def test_a_steadily_loaded_rotor_sounds_at_the_blade_passing_frequency(tmp_path):
    world = MPI.COMM_WORLD
    folder = world.bcast(str(tmp_path))
    serial = frozen_rotor_noise(MPI.COMM_SELF, f"{folder}/serial") if world.rank == 0 else None
    parallel = frozen_rotor_noise(world, f"{folder}/parallel")
    if world.rank != 0:
        return
    passing = BLADES * OMEGA / (2 * np.pi)
    assert serial["blade_passing_frequency"] == pytest.approx(passing)
    window = serial["window"][1] - serial["window"][0]
    assert abs(serial["dominant_frequency"]["observer-1"] - passing) < 1.0 / window
    # On the axis every blade is always as far: a steady load there gives a steady sound.
    assert serial["observers"]["observer-0"] < serial["observers"]["observer-1"] - 40
    for name, level in serial["observers"].items():
        if level > -100:  # not silence, where round-off sets the level
            assert parallel["observers"][name] == pytest.approx(level, abs=1e-6)
    signals = np.loadtxt(f"{folder}/serial/acoustics/signals.csv", delimiter=",")
    assert np.abs(signals[:, 4]).max() > 0  # observer-1's pressure is there


@pytest.mark.parallel([3])
def test_the_rotor_sounds_the_same_whatever_carries_its_pressure(tmp_path):
    """The four ways of the noise-source exchange (Kwon, Park & Choi's Types) give the
    same signals."""
    world = MPI.COMM_WORLD
    folder = world.bcast(str(tmp_path))
    methods = ("two-sided", "put", "aggregated-put", "source-put")
    fan, case = frozen_fan(world)  # one flow, heard through each exchange in turn
    signals = []
    for method in methods:
        section = dataclasses.replace(case.acoustics, exchange=method)
        rotor_noise(fan, section, f"{folder}/{method}", revolutions=0.5)
        if world.rank == 0:
            signals.append(np.loadtxt(f"{folder}/{method}/acoustics/signals.csv", delimiter=","))
    fan.free()
    fan.decomposition.free()
    if world.rank == 0:
        heard = np.abs(signals[0][:, 1:]).max(axis=1) > 0
        assert heard.mean() > 0.3, "too little of the signal reached the observers"
        for other in signals[1:]:
            assert np.allclose(
                other, signals[0], rtol=1e-10, atol=1e-12 * np.abs(signals[0]).max()
            )
