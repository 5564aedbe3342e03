"""A staggered grid with a uniform core in the middle of y (``[grid] core_width`` and
``core_cells``): the faces, the growth outside, its checks, and an immersed body's loads
on it."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.grid import StaggeredGrid, core_faces
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver


def test_core_is_uniform_and_the_cells_outside_grow_by_one_ratio_to_the_walls():
    faces = core_faces(140, 30.0, 3.0, 60)
    widths = np.diff(faces)
    assert len(faces) == 141 and faces[0] == 0.0 and faces[-1] == pytest.approx(30.0, abs=1e-12)
    np.testing.assert_allclose(faces, 30.0 - faces[::-1], atol=1e-12)  # symmetric
    core = slice(40, 100)
    np.testing.assert_allclose(widths[core], 0.05, rtol=1e-12)
    np.testing.assert_allclose(faces[[40, 100]], [13.5, 16.5], rtol=1e-12)
    ratios = widths[101:] / widths[100:-1]
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-9)
    assert 1.05 < ratios[0] < 1.1 and widths[100] == pytest.approx(0.05 * ratios[0])


def test_a_core_as_fine_as_a_uniform_grid_is_uniform():
    np.testing.assert_allclose(np.diff(core_faces(10, 10.0, 2.0, 2)), 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    ("cells", "width", "core", "match"),
    [
        (10, 3.0, 3, "even"),
        (10, 3.0, 10, "even"),
        (10, 12.0, 4, "core_width"),
        (10, 8.0, 4, "coarser"),
    ],
)
def test_bad_cores_are_refused(cells, width, core, match):
    with pytest.raises(ValueError, match=match):
        core_faces(cells, 10.0, width, core)


def test_a_core_needs_walls_and_no_stretching():
    with pytest.raises(ValueError, match="periodic"):
        StaggeredGrid((4, 10, 1), (1.0, 10.0, 1.0), core=(2.0, 4))
    with pytest.raises(ValueError, match="exclude"):
        StaggeredGrid((4, 10, 1), (1.0, 10.0, 1.0), periodic_y=False, stretching=1.0,
                      core=(2.0, 4))


CASE = """
[case]
solver = "{solver}"
[grid]
cells = [16, {ny}, 1]
lengths = [4.0, 10.0, 1.0]
walls = true
core_width = 2.0
core_cells = {core}
"""


@pytest.mark.parametrize(
    ("solver", "ny", "core", "match"),
    [
        ("incompressible", 20, 5, "core_cells"),
        ("incompressible", 20, 2, "core_cells"),  # coarser than the cells outside
        ("cylindrical", 20, 10, r"unknown key 'grid\.(lengths|walls|core)"),  # Cartesian keys
    ],
)
def test_case_checks_the_core(solver, ny, core, match):
    with pytest.raises(ConfigError, match=match):
        config.parse(CASE.format(solver=solver, ny=ny, core=core), "core.toml")


def test_case_grid_has_the_core():
    case = config.parse(CASE.format(solver="incompressible", ny=20, core=10), "core.toml")
    grid = StaggeredGrid.from_section(case.grid)
    np.testing.assert_allclose(grid.faces_y, core_faces(20, 10.0, 2.0, 10))


def test_immersed_loads_weigh_each_point_by_its_own_control_volume_on_a_stretched_y():
    """A body's load is the momentum change of each forced point times its control
    volume: on the core grid a body that forces one uniform velocity change on every
    point of a component gets the volume of the points it covers."""
    text = CASE.format(solver="incompressible", ny=20, core=10)
    solver = IncompressibleSolver.from_case(config.parse(text, "core.toml"), MPI.COMM_SELF,
                                            "estimate")
    grid = solver.grid
    for name, extents in (("u", grid.widths_y), ("v", grid.centre_distances_y()[1:])):
        points = solver.immersed_points(name)
        volume = np.broadcast_to(points.volume, points.points.shape[:-1])[1:-1, 1:-1, 1:-1]
        np.testing.assert_allclose(volume[0, :, 0], grid.spacing_x * extents * 1.0)


def test_only_a_grid_of_alike_cells_is_described_as_an_image_for_paraview():
    """fields.bp's VTX description is an ImageData (one spacing per axis): a y core, a
    stretched y or an x zone would be drawn uniform, so only the Fides (rectilinear)
    description is written for them."""
    from tachyflow.io.fields import image_grid

    shape, lengths = (16, 12, 4), (4.0, 2.0, 1.0)
    assert image_grid(StaggeredGrid(shape, lengths))
    assert image_grid(StaggeredGrid(shape, lengths, periodic_y=False))
    assert not image_grid(StaggeredGrid(shape, lengths, periodic_y=False, stretching=1.2))
    assert not image_grid(StaggeredGrid(shape, lengths, periodic_y=False, core=(1.0, 8)))
    assert not image_grid(StaggeredGrid(shape, lengths, periodic_x=False,
                                        x_zone=(1.0, 2.0, 8)))
