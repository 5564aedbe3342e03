import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.acoustics.sources import PermeableSourceTerms
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.interpolation import interpolation_stencils, stencil_source_terms
from tachyflow.parallel import HaloExchange, PencilDecomposition
from tachyflow.parallel.noise_exchange import METHODS, SYNC_MODES, NoiseSourceExchange

RHO0, P0 = 1.2, 0.3
VARIANTS = [("two-sided", "lock")] + [
    (method, sync) for method in METHODS if method != "two-sided" for sync in SYNC_MODES
]


class Flow:
    """Distinct-valued global fields, with the y ghost rows (walls: v's lower wall face
    in row 0), and each rank's ghosted y-pencils of them with current ghosts."""

    def __init__(self, shape, periodic_y=True, stretching=0.0, proc_grid=None, seed=0):
        comm = MPI.COMM_WORLD
        self.grid = StaggeredGrid(shape, (1.5, 2.0, 1.0), periodic_y, stretching)
        self.decomposition = PencilDecomposition(
            shape, proc_grid, comm, periodic=(True, periodic_y, True)
        )
        self.halo = HaloExchange(self.decomposition, "y", width=1, corners=True)
        nx, ny, nz = shape
        rng = np.random.default_rng(seed)  # the same on every rank
        self.whole = []
        self.local = []
        pencil = self.decomposition.pencils["y"]
        for _ in range(4):
            values = rng.permutation(nx * (ny + 2) * nz).reshape(nx, ny + 2, nz) + 0.5
            self.whole.append(values * rng.choice([-1.0, 1.0], size=values.shape) / 7.0)
            ghosted = self.halo.allocate()
            x, z = pencil.slices[0], pencil.slices[2]
            # Interior columns with their y ghost rows; the halo fills x and z ghosts (and,
            # periodic in y, the y ghosts again).
            ghosted[1:-1, :, 1:-1] = self.whole[-1][x, :, z]
            self.local.append(self.halo.exchange(ghosted))

    def points(self, count, seed):
        rng = np.random.default_rng(seed)
        lengths = np.array(self.grid.lengths)
        points = rng.random((count, 3)) * lengths
        centres = self.grid.centres_y
        if not self.grid.periodic_y:
            points[:, 1] = centres[0] + (centres[-1] - centres[0]) * rng.random(count)
        # Periodic images and the corners of the domain wrap.
        dx = self.grid.spacing_x
        points[:6, 0] = [0.0, lengths[0] - 1e-12, -0.3 * dx, lengths[0] + 0.2 * dx, 0.1 * dx, 0]
        points[:6, 2] = [lengths[2] - 1e-12, 0.0, -2.5 * lengths[2], 0.01, 3 * lengths[2], 0]
        points[:2, 1] = centres[0], centres[-1]
        return points

    def expected(self, points, normals):
        """Source terms and raw values from the whole fields, serially."""
        stencils = interpolation_stencils(self.grid, points)
        index = stencils.indices
        values = np.empty(stencils.weights.shape)
        for q, whole in enumerate(self.whole):
            values[:, q] = whole[index[:, q, :, 0], index[:, q, :, 1] + 1, index[:, q, :, 2]]
        return stencil_source_terms(values, stencils.weights, normals, RHO0, P0), values


def unit_normals(count, seed):
    normals = np.random.default_rng(seed).normal(size=(count, 3))
    return normals / np.linalg.norm(normals, axis=1)[:, None]


def check_all_variants(flow, points, normals, destination, variants=VARIANTS):
    comm = MPI.COMM_WORLD
    expected, raw = flow.expected(points, normals)
    mine = np.flatnonzero(destination == comm.rank)
    failures = []
    for method, sync in variants:
        with NoiseSourceExchange(
            flow.decomposition, flow.grid, flow.halo, points, normals, destination,
            method=method, sync=sync, sources=PermeableSourceTerms(RHO0, P0),
        ) as exchange:
            for repeat in range(3):  # reused windows and double buffers stay right
                terms = exchange.exchange(*flow.local)
                if not (
                    np.array_equal(exchange.mine, mine) and np.array_equal(terms, expected[mine])
                ):
                    failures.append(f"{method}/{sync} exchange {repeat}")
            if method != "source-put":
                if not np.array_equal(exchange.stencil_values(*flow.local), raw[mine]):
                    failures.append(f"{method}/{sync} raw values")
            statistics = comm.allgather(exchange.statistics)
            sent = sum(s["bytes_sent"] for s in statistics)
            received = sum(s["bytes_received"] for s in statistics)
            messages = sum(s["messages_sent"] - s["messages_received"] for s in statistics)
            if sent != received or messages != 0:
                failures.append(f"{method}/{sync} statistics {statistics}")
            if set(exchange.timings) != {"pack", "communication", "unpack", "source"}:
                failures.append(f"{method}/{sync} timings {exchange.timings}")
    parallel_assert(not failures, f"rank {comm.rank}: {failures}")


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_every_variant_matches_the_serial_computation_on_a_periodic_grid():
    flow = Flow((12, 10, 9))
    points = flow.points(200, seed=1)
    destination = np.random.default_rng(2).integers(0, MPI.COMM_WORLD.size, 200)
    check_all_variants(flow, points, unit_normals(200, 3), destination)


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_every_variant_matches_on_a_stretched_walled_grid_split_along_z():
    size = MPI.COMM_WORLD.size
    flow = Flow((7, 11, 13), periodic_y=False, stretching=1.5, proc_grid=(1, size))
    points = flow.points(150, seed=4)
    destination = np.random.default_rng(5).integers(0, size, 150)
    check_all_variants(flow, points, unit_normals(150, 6), destination)


@pytest.mark.parallel(nprocs=[2, 3])
def test_points_bound_for_one_rank_and_ranks_owning_nothing():
    comm = MPI.COMM_WORLD
    # Two columns in x over 2 or 3 rows: the last rank owns no cells when there are 3.
    flow = Flow((2, 6, 5), proc_grid=(comm.size, 1))
    points = flow.points(60, seed=7)
    normals = unit_normals(60, 8)
    last = comm.size - 1
    check_all_variants(flow, points, normals, np.full(60, last))
    # All on rank 0: with 3 ranks the last owns nothing, is no destination and stays out.
    check_all_variants(flow, points, normals, np.zeros(60, dtype=int), VARIANTS[::3])
    exchange = NoiseSourceExchange(
        flow.decomposition,
        flow.grid,
        flow.halo,
        points,
        normals,
        np.zeros(60, int),
        sources=PermeableSourceTerms(),
    )
    outside = exchange.surface_ranks.size < comm.size
    parallel_assert(outside == (comm.size == 3), f"surface ranks {exchange.surface_ranks}")
    if comm.rank == last and outside:
        assert exchange.exchange(*flow.local).shape == (0, 4)
        assert exchange.statistics["messages_sent"] == 0
    exchange.free()
    exchange.free()  # a second free is harmless


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_update_replans_for_moved_points():
    comm = MPI.COMM_WORLD
    flow = Flow((8, 9, 10), periodic_y=False, stretching=1.0)
    points, normals = flow.points(120, seed=9), unit_normals(120, 10)
    destination = np.arange(120) % comm.size
    for method in ("put", "source-put"):
        exchange = NoiseSourceExchange(
            flow.decomposition, flow.grid, flow.halo, points, normals, destination,
            method=method, sync="pscw", sources=PermeableSourceTerms(RHO0, P0),
        )
        exchange.exchange(*flow.local)
        moved = flow.points(90, seed=11)
        moved_normals = unit_normals(90, 12)
        moved_destination = np.full(90, comm.size // 2)
        exchange.update(moved, moved_normals, moved_destination)
        terms = exchange.exchange(*flow.local)
        expected, _ = flow.expected(moved, moved_normals)
        mine = np.flatnonzero(moved_destination == comm.rank)
        parallel_assert(np.array_equal(terms, expected[mine]), f"{method} after update")
        exchange.free()


def build(flow, points, normals, destination, **options):
    options.setdefault("sources", PermeableSourceTerms())
    return NoiseSourceExchange(
        flow.decomposition, flow.grid, flow.halo, points, normals, destination, **options
    )


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_bad_input_raises_on_every_rank():
    comm = MPI.COMM_WORLD
    flow = Flow((6, 7, 5), periodic_y=False, stretching=1.0)
    points, normals = flow.points(20, seed=13), unit_normals(20, 14)
    destination = np.zeros(20, dtype=int)
    with pytest.raises(ValueError, match=r"normals must have shape \(20, 3\)"):
        build(flow, points, normals[:, :2], destination)
    with pytest.raises(ValueError, match="destination of point 3 is rank"):
        build(flow, points, normals, np.where(np.arange(20) == 3, comm.size, 0))
    with pytest.raises(TypeError, match="integer ranks"):
        build(flow, points, normals, destination.astype(float))
    with pytest.raises(ValueError, match="unit vectors"):
        build(flow, points, 2 * normals, destination)
    outside = points.copy()
    outside[5, 1] = 0.0  # below the first cell centre, between the wall and it
    with pytest.raises(ValueError, match=r"point 5 at .* outside"):
        build(flow, outside, normals, destination)
    # Only one rank's copy differs: every rank still raises.
    differing = points.copy()
    if comm.rank == comm.size - 1:
        differing[0, 0] += 0.25
    if comm.size > 1:
        with pytest.raises(ValueError, match="identical on every rank"):
            build(flow, differing, normals, destination)
        # A problem found on one rank only is raised on all.
        with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
            build(flow, points[:, :2] if comm.rank == 1 else points, normals, destination)
    with pytest.raises(ValueError, match="method must be"):
        build(flow, points, normals, destination, method="alltoall")
    with pytest.raises(ValueError, match="sync must be"):
        build(flow, points, normals, destination, sync="flush")
    with pytest.raises(ValueError, match="rho0 must be a positive"):
        PermeableSourceTerms(rho0=0.0)
    with pytest.raises(TypeError, match="sources must have from_values"):
        build(flow, points, normals, destination, sources="fast")
    with pytest.raises(ValueError, match="corners=True"):
        no_corners = HaloExchange(flow.decomposition, "y", width=1, corners=False)
        NoiseSourceExchange(
            flow.decomposition, flow.grid, no_corners, points, normals, destination,
            method="source-put", sources=PermeableSourceTerms(),
        )
    exchange = build(flow, points, normals, destination, method="put")
    with pytest.raises(ValueError, match="ghosted y-pencil"):
        exchange.exchange(*flow.local[:3], flow.local[3][1:])
    exchange.free()
