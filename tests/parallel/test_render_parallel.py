import numpy as np
import pytest
from mpi4py import MPI
from PIL import Image
from pytest_mpi import parallel_assert

from tachyflow.insitu.extract import extract_isosurface, extract_slice
from tachyflow.insitu.render import gather_isosurface, gather_slice
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import HaloExchange, PencilDecomposition, process_grids
from tests.unit.test_render import cell_centres

GRIDS = {
    "periodic": StaggeredGrid((24, 20, 16), (1.0, 1.0, 1.0)),
    "walls": StaggeredGrid((20, 24, 16), (1.0, 1.0, 1.0), periodic_y=False, stretching=1.5),
    # Fewer x cells than ranks: some pieces are empty, some one cell wide.
    "narrow": StaggeredGrid((2, 12, 10), (1.0, 1.0, 1.0), periodic_y=False),
}
# Off centre, across the periodic x boundary: pieces of the sphere on both ends of x.
CENTRE = (0.1, 0.45, 0.55)
RADIUS = 0.3


def fields(grid):
    """Periodic distance to CENTRE (the contoured field) and a colouring field."""
    x, y, z = cell_centres(grid)
    offsets = [x - CENTRE[0], y - CENTRE[1], z - CENTRE[2]]
    for axis in (0, 2):
        offsets[axis] = (offsets[axis] + 0.5) % 1.0 - 0.5
    return np.sqrt(sum(o**2 for o in offsets)), np.sin(2 * np.pi * x) + y * z


def distributed(decomposition, orientation, field):
    """This rank's piece of ``field`` with its ghost layer filled by a halo exchange."""
    halo = HaloExchange(decomposition, orientation, width=1, corners=True)
    piece = halo.allocate()
    halo.interior(piece)[...] = decomposition.scatter_global(field, orientation)
    return halo.exchange(piece)


def sorted_triangles(surface):
    """The triangles' vertex coordinates (and scalars), in an order independent of pieces."""
    corners = np.concatenate(
        [surface.points[surface.triangles], surface.scalars[surface.triangles][..., None]],
        axis=-1,
    ).reshape(len(surface.triangles), -1)
    return corners[np.lexsort(corners.T[::-1])]


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("name", GRIDS)
def test_gathered_isosurface_is_the_serial_one(name):
    comm = MPI.COMM_WORLD
    grid = GRIDS[name]
    distance, colour = fields(grid)
    serial = extract_isosurface(
        np.pad(distance, 1, mode="wrap"), RADIUS, grid, (0, 0, 0), np.pad(colour, 1, mode="wrap")
    )
    assert len(serial.triangles) > 100  # a surface worth comparing
    failures = []
    for proc_grid in process_grids(comm.size):
        with PencilDecomposition(
            grid.shape, proc_grid, comm, periodic=(True, grid.periodic_y, True)
        ) as decomposition:
            for orientation in "xyz":
                start = decomposition.pencil(orientation).start
                piece = extract_isosurface(
                    distributed(decomposition, orientation, distance),
                    RADIUS,
                    grid,
                    start,
                    distributed(decomposition, orientation, colour),
                )
                whole = gather_isosurface(comm, piece)
                if comm.rank != 0:
                    assert whole is None
                    continue
                case = (proc_grid, orientation)
                if len(whole.triangles) != len(serial.triangles):
                    failures.append((case, len(whole.triangles), len(serial.triangles)))
                elif whole.area() != pytest.approx(serial.area(), rel=1e-12):
                    failures.append((case, whole.area(), serial.area()))
                elif not np.array_equal(sorted_triangles(whole), sorted_triangles(serial)):
                    failures.append((case, "vertices or scalars differ"))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("name", GRIDS)
def test_gathered_slice_is_the_serial_one_exactly(name):
    comm = MPI.COMM_WORLD
    grid = GRIDS[name]
    _, field = fields(grid)
    ghosted = np.pad(field, 1, mode="wrap")
    planes = [
        ("x", 0.0),  # between the last layer and the periodic image of the first
        ("x", 0.52),
        ("y", grid.centres_y[5]),  # through a layer of centres
        ("y", 0.61),
        ("z", 0.999),
    ]
    failures = []
    for proc_grid in process_grids(comm.size):
        with PencilDecomposition(
            grid.shape, proc_grid, comm, periodic=(True, grid.periodic_y, True)
        ) as decomposition:
            for orientation in "xyz":
                piece_field = distributed(decomposition, orientation, field)
                start = decomposition.pencil(orientation).start
                for axis, position in planes:
                    piece = extract_slice(piece_field, grid, start, axis, position)
                    whole = gather_slice(comm, piece)
                    if comm.rank != 0:
                        assert whole is None
                        continue
                    serial = extract_slice(ghosted, grid, (0, 0, 0), axis, position)
                    same = (
                        whole.axis == serial.axis
                        and whole.position == serial.position
                        and np.array_equal(whole.values, serial.values)
                        and all(
                            np.array_equal(a, b)
                            for a, b in zip(whole.coordinates, serial.coordinates, strict=True)
                        )
                    )
                    if not same:
                        failures.append((proc_grid, orientation, axis, position))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([2, 3])
def test_pieces_coloured_on_some_ranks_only_raise_on_every_rank():
    comm = MPI.COMM_WORLD
    grid = GRIDS["periodic"]
    distance, colour = fields(grid)
    ghosted = np.pad(distance, 1, mode="wrap")
    colour_by = np.pad(colour, 1, mode="wrap") if comm.rank == 0 else None
    piece = extract_isosurface(ghosted, RADIUS, grid, (0, 0, 0), colour_by)
    with pytest.raises(ValueError, match="some ranks' isosurface pieces carry scalars"):
        gather_isosurface(comm, piece)


@pytest.mark.parallel([2, 3])
def test_in_situ_picture_matches_the_in_transit_one(tmp_path_factory):
    # In situ: pieces extracted per rank, gathered, drawn on rank 0. In transit: the whole
    # field extracted and drawn by one process. Same surface, so the same picture, but
    # for pixels where the triangle order changes which of two coincident fragments wins.
    from tachyflow.insitu.render import SceneRenderer

    comm = MPI.COMM_WORLD
    grid = GRIDS["walls"]
    distance, colour = fields(grid)
    with PencilDecomposition(grid.shape, None, comm, periodic=(True, False, True)) as pencils:
        piece = extract_isosurface(
            distributed(pencils, "y", distance),
            RADIUS,
            grid,
            pencils.pencil("y").start,
            distributed(pencils, "y", colour),
        )
        gathered = gather_isosurface(comm, piece)
    differing = 0.0
    if comm.rank == 0:
        whole = extract_isosurface(
            np.pad(distance, 1, mode="wrap"),
            RADIUS,
            grid,
            (0, 0, 0),
            np.pad(colour, 1, mode="wrap"),
        )
        folder = tmp_path_factory.mktemp("pictures")
        box = (0.0, 1.0, 0.0, 1.0, 0.0, 1.0)
        with SceneRenderer((320, 240)) as renderer:
            pictures = [
                np.asarray(
                    Image.open(
                        renderer.render_isosurface(
                            surface, folder / f"{name}.png", field="c", bounds=box, step=1
                        )
                    ).convert("RGB"),
                    dtype=int,
                )
                for name, surface in (("in-situ", gathered), ("in-transit", whole))
            ]
        differing = np.mean(np.abs(pictures[0] - pictures[1]).max(axis=-1) > 2)
    parallel_assert(differing < 0.001, f"{differing:.2%} of the pixels differ")
