"""In situ pipelines of a run: pictures and probes independent of the rank count."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.simulation import Simulation

CASE = """
[grid]
cells = [16, 12, 10]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.01
initial = "taylor-green"
[time]
steps = 4
dt = 0.05
[output]
statistics_every = 1
[insitu]
width = 160
height = 120
[[insitu.pipeline]]
name = "u-slice"
kind = "slice"
field = "u"
plane = "xy"
position = 1.0
range = [-1.0, 1.0]
every = 2
[[insitu.pipeline]]
name = "speed-surface"
kind = "isosurface"
field = "speed"
value = 0.5
colour_by = "p"
every_time = 0.1
[[insitu.pipeline]]
name = "probes"
kind = "probes"
field = "u"
points = [[1.0, 2.0, 3.0], [6.2, 0.1, 0.05], [3.3, 4.4, 5.5]]
every = 1
[[insitu.pipeline]]
name = "history"
kind = "statistics"
every = 4
"""


def run(comm, folder):
    simulation = Simulation(config.parse(CASE, "insitu.toml"), folder, comm, planning="estimate")
    try:
        summary = simulation.run()
        solver = simulation.solver
        u = solver.decomposition.gather_global(solver.cell_field("u"), "y")
    finally:
        simulation.free()
    return summary, u


@pytest.mark.parallel([1, 2, 3])
def test_pictures_and_probes_do_not_depend_on_the_rank_count(tmp_path_factory):
    from PIL import Image

    comm = MPI.COMM_WORLD
    folder = comm.bcast(tmp_path_factory.mktemp("insitu") if comm.rank == 0 else None)
    summary, u = run(comm, folder / "parallel")
    serial = run(MPI.COMM_SELF, folder / "serial") if comm.rank == 0 else None
    if comm.rank != 0:
        return
    images = folder / "parallel" / "images"
    names = sorted(path.name for path in images.glob("*.png"))
    expected = {"u-slice_00000002.png", "u-slice_00000004.png", "speed-surface_00000002.png",
                "speed-surface_00000004.png", "probes.png", "history.png"}
    assert expected <= set(names), names
    for name in ("u-slice_00000004.png", "speed-surface_00000004.png"):
        ours = np.asarray(Image.open(images / name).convert("RGB"), dtype=int)
        alone = np.asarray(Image.open(folder / "serial" / "images" / name).convert("RGB"))
        assert ours.shape == (120, 160, 3)
        assert np.mean(np.any(ours != alone, axis=2)) < 1e-3, name
        assert len(np.unique(ours.reshape(-1, 3), axis=0)) > 10  # not a blank picture
    probes = np.loadtxt(images / "probes_probes.csv", delimiter=",")
    alone = np.loadtxt(folder / "serial" / "images" / "probes_probes.csv", delimiter=",")
    assert probes.shape == (4, 5)
    np.testing.assert_allclose(probes, alone, rtol=0, atol=1e-13)
    assert set(summary["visualisation"]) >= {"extract", "gather", "render"}
    del serial, u


def test_probe_values_reproduce_a_linear_field_and_cadence_follows_time():
    from tachyflow.insitu.pipelines import Cadence, padded, probe_values
    from tachyflow.numerics.grid import StaggeredGrid

    grid = StaggeredGrid((8, 6, 5), (8.0, 3.0, 5.0), periodic_y=False, stretching=1.1)
    x = (np.arange(8) + 0.5)[:, None, None]
    z = (np.arange(5) + 0.5)[None, None, :]
    field = 2.0 * x + 3.0 * grid.centres_y[None, :, None] - z
    points = np.array([[1.2, 1.0, 2.2], [6.0, 2.5, 1.7]])
    values = probe_values(padded(field), grid, (0, 0, 0), points)
    np.testing.assert_allclose(values, 2 * points[:, 0] + 3 * points[:, 1] - points[:, 2])
    cadence = Cadence(0, 0.25)
    due = [cadence.due(step, 0.1 * step) for step in range(1, 11)]
    assert due == [False, False, True, False, True, False, False, True, False, True]


PIPE = """
[case]
solver = "cylindrical"
[grid]
cells = [6, 8, 9]
[cylinder]
length = 1.0
radius = 1.0
stretching = 1.5
[flow]
viscosity = 0.01
initial = "perturbed-pipe"
perturbation = 0.3
"""


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("case", [CASE, PIPE], ids=["cartesian", "cylindrical"])
def test_fields_made_on_a_box_are_those_cells_of_the_whole_fields(case):
    # What a transit step carries of a field only slices draw: this rank's part of a box.
    from tachyflow.insitu.boxes import CellBox
    from tachyflow.solvers.base import solver_class

    parsed = config.parse(case, "box.toml")
    solver = solver_class(parsed.case.solver).from_case(parsed, MPI.COMM_WORLD, "estimate")
    try:
        solver.step(0.01)
        own = solver.decomposition.pencil("y")
        # Across every rank's piece; inside some (those of the others empty).
        boxes = [CellBox((0, 1, 0), (6, 3, 9)), CellBox((1, 2, 3), (4, 5, 2)),
                 CellBox((0, 0, 8), (6, 8, 1))]
        for box in boxes:
            part = box.intersection(own)
            if part.size == 0:
                continue
            cells = part.within(own)
            for name in ("u", "v", "w", "p"):
                whole = solver.cell_field(name)
                made = solver.cell_field(name, out=np.empty(part.shape), cells=cells)
                assert np.array_equal(made, whole[cells]), (name, box)
            whole = solver.cell_speed(np.empty(own.shape))
            assert np.array_equal(solver.cell_speed(np.empty(part.shape), cells), whole[cells])
    finally:
        solver.free()
