import numpy as np
import pytest
from mpi4py import MPI

from tachyflow.acoustics import FWHSolver
from tests.unit.test_fwh import C0, RHO0, STRENGTH, WIDTH, monopole_field, sphere


@pytest.mark.parallel([1, 2, 3])
def test_ranks_holding_panel_shares_sum_to_the_serial_signal():
    comm = MPI.COMM_WORLD
    times = np.arange(0.0, 12.0 * WIDTH, WIDTH / 20.0)
    centres, normals, areas = sphere(1.0, 8, 16)
    nt = times.size
    positions = np.broadcast_to(centres, (nt, *centres.shape))
    pressure, velocity, _ = monopole_field(positions, times[:, None], 0.0, STRENGTH)
    data = {
        "positions": positions,
        "normals": np.broadcast_to(normals, positions.shape),
        "areas": areas,
        "surface_velocity": np.zeros(positions.shape),
        "pressure": pressure,
        "density": RHO0 + pressure / C0**2,
        "velocity": velocity,
    }
    observers = np.array([[10.0, 0.0, 0.0], [0.0, 7.0, 7.0]])
    observer_times = np.linspace(0.0, 12.0 * WIDTH + 12.0 / C0, 200)
    options = {"c0": C0, "rho0": RHO0, "permeable": True}
    serial = FWHSolver(observers, observer_times, **options).solve(times, **data)
    mine = np.array_split(np.arange(areas.size), comm.size)[comm.rank]
    local = {k: (v[mine] if k == "areas" else v[:, mine]) for k, v in data.items()}
    summed = FWHSolver(observers, observer_times, comm=comm, **options).solve(times, **local)
    scale = np.abs(serial.pressure).max()
    assert np.abs(summed.thickness - serial.thickness).max() < 1e-12 * scale
    assert np.abs(summed.loading - serial.loading).max() < 1e-12 * scale


@pytest.mark.parallel([1, 2, 3])
def test_an_observer_on_one_ranks_panel_raises_on_every_rank_instead_of_hanging():
    comm = MPI.COMM_WORLD
    times = np.arange(0.0, 4.0 * WIDTH, WIDTH / 20.0)
    centres, normals, areas = sphere(1.0, 8, 16)
    nt = times.size
    positions = np.broadcast_to(centres, (nt, *centres.shape))
    pressure, _, _ = monopole_field(positions, times[:, None], 0.0, STRENGTH)
    last = areas.size - 1  # owned by the last rank only
    observers = np.array([[10.0, 0.0, 0.0], centres[last]])
    solver = FWHSolver(observers, np.linspace(0.0, 4.0 * WIDTH, 50), c0=C0, rho0=RHO0, comm=comm)
    mine = np.array_split(np.arange(areas.size), comm.size)[comm.rank]
    with pytest.raises(ValueError, match=r"observer 1 at .* is on the surface"):
        solver.solve(
            times, positions[:, mine], np.broadcast_to(normals, positions.shape)[:, mine],
            areas[mine], np.zeros(positions[:, mine].shape), pressure[:, mine],
        )
