"""Noise of rotating fan blades (FW-H formulation 1A on the blades, turned into the
inertial frame, the other sectors as copies): a steady load in the rotor's frame sounds
at the blade-passing frequency off the axis and is silent on it; 1, 2, 3 ranks alike."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.acoustics.rotor import RotorNoise
from tachyflow.solvers.cylindrical import CylindricalSolver
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


def frozen_rotor_noise(comm, folder, revolutions: float = 3.0, exchange: str = "auto"):
    """The fan's flow after a few steps, then held still in the rotor's frame while the
    rotor turns: the blades' load is steady, so their sound repeats every blade passage."""
    case = config.parse(FAN.format(parallel=f"[parallel]\nproc_grid = [{comm.size}, 1]")
                        + NOISE + f'exchange = "{exchange}"\n', "fan.toml")  # fmt: skip
    fan = CylindricalSolver.from_case(case, comm, "estimate")
    for _ in range(3):
        fan.step(0.01)
    dt, duration = 0.005, revolutions * 2 * np.pi / OMEGA
    noise = RotorNoise(case.acoustics, fan, fan.bodies[0], BLADES, folder, duration)
    for _ in range(round(duration / dt)):
        fan.time += dt
        noise.sample()
    summary = noise.finish()
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
    signals = []
    for method in methods:
        frozen_rotor_noise(world, f"{folder}/{method}", revolutions=1.5, exchange=method)
        if world.rank == 0:
            signals.append(np.loadtxt(f"{folder}/{method}/acoustics/signals.csv", delimiter=","))
    if world.rank == 0:
        for other in signals[1:]:
            assert np.allclose(
                other, signals[0], rtol=1e-10, atol=1e-12 * np.abs(signals[0]).max()
            )
