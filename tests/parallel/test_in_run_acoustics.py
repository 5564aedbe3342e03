"""FW-H inside a flow run: the [acoustics] section on a small Taylor-Green case."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.simulation import Simulation

CASE = """
[grid]
cells = [12, 12, 12]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.01
initial = "taylor-green"
[time]
steps = 24
dt = 0.05
[output]
statistics_every = 0
[acoustics]
surface = "sphere"
centre = [3.0, 3.3, 3.1]
radius = 1.5
panels = 200
c0 = 40.0
rho0 = 1.0
samples = 64
observers = [[13.0, 3.0, 3.0], [3.0, 3.0, 14.0]]
arc_radius = 12.0
arc_plane = "xz"
arc_centre = [3.0, 3.3, 3.1]
arc_count = 3
"""


def run(comm, folder, text=CASE):
    case = config.parse(text, "acoustic.toml")
    simulation = Simulation(case, folder, comm, planning="estimate")
    try:
        return simulation.run()
    finally:
        simulation.free()


@pytest.mark.parallel([1, 2, 3])
def test_signals_are_finite_and_independent_of_the_rank_count(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = tmp_path_factory.mktemp("acoustics") if comm.rank == 0 else None
    folder = comm.bcast(folder)
    summary = run(comm, folder / "parallel")
    serial = run(MPI.COMM_SELF, folder / f"serial-{comm.rank}") if comm.rank == 0 else None
    if comm.rank != 0:
        return
    assert summary["acoustics"]["samples"] == 25  # the start and every step
    found = np.loadtxt(folder / "parallel" / "acoustics" / "signals.csv", delimiter=",")
    expected = np.loadtxt(folder / "serial-0" / "acoustics" / "signals.csv", delimiter=",")
    assert np.all(np.isfinite(found)) and found.shape == expected.shape
    assert found.shape[1] == 1 + 3 * 5  # time, then p, thickness, loading per observer
    assert np.abs(found[:, 1:]).max() > 0
    np.testing.assert_allclose(found, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
    assert serial["acoustics"]["observers"].keys() == summary["acoustics"]["observers"].keys()
    outputs = folder / "parallel" / "acoustics"
    for name in ("surface.vtu", "spectra.csv", "bands.csv", "directivity.png"):
        assert (outputs / name).is_file(), name
    assert (outputs / "surface.bp").is_dir()


@pytest.mark.parallel([2])
def test_recorded_series_reproduces_the_in_run_signals_offline(tmp_path_factory):
    from tachyflow.acoustics import FWHSolver, offline

    comm = MPI.COMM_WORLD
    folder = comm.bcast(tmp_path_factory.mktemp("series") if comm.rank == 0 else None)
    run(comm, folder)
    if comm.rank != 0:
        return
    data = offline.read_surface_data(folder / "acoustics" / "surface.bp", permeable=True)
    in_run = np.loadtxt(folder / "acoustics" / "signals.csv", delimiter=",")
    observers = np.array([[13.0, 3.0, 3.0], [3.0, 3.0, 14.0]])
    solver = FWHSolver(observers, in_run[:, 0], c0=40.0, rho0=1.0, permeable=True)
    signals = offline.predict(solver, data, slice(None))
    np.testing.assert_allclose(signals.pressure[0], in_run[:, 1], rtol=1e-9, atol=1e-12)


@pytest.mark.parallel([1, 2])
def test_a_surface_leaving_the_domain_is_refused_on_every_rank(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = comm.bcast(tmp_path_factory.mktemp("bad") if comm.rank == 0 else None)
    with pytest.raises((ConfigError, ValueError)):
        run(comm, folder, CASE.replace("[grid]", "[case]\nname = 'x'\n[grid]\nwalls = true")
            .replace("radius = 1.5", "radius = 3.2"))
