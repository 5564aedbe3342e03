"""An open x refined round a zone (``[grid] x_zone``): the faces, the finite-volume
operators (second order on the stretched cells), the pressure solve by the x operator's
eigen-decomposition (the discrete operator inverted to round-off, the cosine transform's
solution on uniform cells, second order), LES on it at 1, 2 and 3 ranks (the developing
channel on it: tests/verification/test_incompressible.py)."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sparse
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.numerics import fft, stencils
from tachyflow.numerics.grid import StaggeredGrid, growth_ratio, zone_faces
from tachyflow.parallel import PencilDecomposition, process_grids
from tachyflow.solvers.pencil.poisson import PoissonSolver
from tests.verification.test_incompressible import channel_entrance, x_zone


def test_zone_faces_are_uniform_in_the_zone_and_grow_alike_on_both_sides():
    faces = zone_faces(60, 10.0, 3.0, 5.0, 20)
    widths = np.diff(faces)
    assert faces[0] == 0.0 and faces[-1] == 10.0
    zone = (faces[:-1] >= 3.0 - 1e-12) & (faces[1:] <= 5.0 + 1e-12)
    assert zone.sum() == 20 and np.allclose(widths[zone], 0.1, rtol=1e-12, atol=0)
    before, after = widths[: np.argmax(zone)], widths[np.argmax(zone) + 20 :]
    outwards = [np.concatenate(([0.1], side)) for side in (before[::-1], after)]
    ratios = [side[1:] / side[:-1] for side in outwards]  # from the zone's spacing out
    for r in ratios:
        # The ratio rises by equal steps over the first quarter of the side's cells (from 1
        # at the zone), then stays constant.
        ramp = max(1, len(r) // 4)
        expected = np.log(r[-1]) * np.minimum(np.arange(1, len(r) + 1) / ramp, 1.0)
        assert np.allclose(np.log(r), expected, rtol=1e-9) and r[-1] > 1
    assert abs(ratios[0][-1] - ratios[1][-1]) < 0.05  # whole cells: as alike as they allow
    assert growth_ratio(widths) == pytest.approx(max(ratios[0][-1], ratios[1][-1]))
    # A zone at an end has cells on one side only; a zone over everything is uniform.
    assert np.diff(zone_faces(30, 6.0, 0.0, 2.0, 20))[:20] == pytest.approx(np.full(20, 0.1))
    assert np.allclose(zone_faces(8, 2.0, 0.0, 2.0, 8), np.linspace(0, 2, 9), atol=1e-15)
    with pytest.raises(ValueError, match="zone must satisfy"):
        zone_faces(20, 1.0, 0.5, 1.5, 10)
    with pytest.raises(ValueError, match="leave a cell"):
        zone_faces(20, 1.0, 0.2, 0.5, 20)
    with pytest.raises(ValueError, match="coarser than"):
        zone_faces(200, 1.0, 0.2, 0.5, 10)
    with pytest.raises(ValueError, match="periodic x must be uniform"):
        StaggeredGrid((8, 4, 4), (1.0, 1.0, 1.0), x_zone=(0.2, 0.5, 4))
    stretched = StaggeredGrid((60, 4, 4), (10.0, 1.0, 1.0), periodic_x=False,
                              x_zone=(3.0, 5.0, 20))
    with pytest.raises(ValueError, match="x is stretched"):
        _ = stretched.spacing_x


def test_x_eigenpairs_on_uniform_cells_are_the_cosine_transforms():
    values, forward, backward = fft.stretched_neumann_eigenpairs(np.full(12, 0.25))
    assert np.allclose(values, fft.neumann_laplacian_eigenvalues(12, 0.25), rtol=0,
                       atol=1e-12 * abs(values).max())
    widths = np.diff(zone_faces(40, 4.0, 1.0, 2.0, 16))
    values, forward, backward = fft.stretched_neumann_eigenpairs(widths)
    assert np.abs(backward @ forward - np.eye(40)).max() < 1e-12
    assert values[0] == 0.0 and np.all(np.diff(values) < 0)
    with pytest.raises(ValueError, match="positive widths"):
        fft.stretched_neumann_eigenpairs(np.array([1.0, -1.0]))


def stretched_operator(grid: StaggeredGrid) -> sparse.csr_matrix:
    """The finite-volume Laplacian with a stretched open x assembled serially, apart from
    the solver: zero flux through the ends of x and through walls in y."""

    def second_difference(widths, periodic):
        n = len(widths)
        matrix = sparse.lil_matrix((n, n))
        for i in range(n):
            for neighbour in (i - 1, i + 1):
                if not 0 <= neighbour < n and not periodic:
                    continue
                other = widths[neighbour % n]
                coefficient = 1.0 / (widths[i] * 0.5 * (widths[i] + other))
                matrix[i, neighbour % n] += coefficient
                matrix[i, i] -= coefficient
        return matrix.tocsr()

    eye_x, eye_y, eye_z = (sparse.identity(n) for n in grid.shape)
    z = second_difference(np.full(grid.shape[2], grid.spacing_z), True)
    return (
        sparse.kron(sparse.kron(second_difference(grid.widths_x, False), eye_y), eye_z)
        + sparse.kron(sparse.kron(eye_x, second_difference(grid.widths_y, grid.periodic_y)),
                      eye_z)
        + sparse.kron(sparse.kron(eye_x, eye_y), z)
    ).tocsr()


@pytest.mark.parallel([1, 2, 3])
def test_the_pressure_solve_inverts_the_stretched_x_operator_to_round_off():
    comm = MPI.COMM_WORLD
    failures = []
    for (shape, walls), proc_grid in itertools.product(
        (((14, 6, 4), True), ((9, 5, 3), False)), process_grids(comm.size)
    ):
        grid = StaggeredGrid(shape, (3.0, 1.0, 1.0), periodic_y=not walls,
                             stretching=1.0 if walls else 0.0, periodic_x=False,
                             x_zone=(1.0, 1.5, 4))
        exact = np.random.default_rng(3).standard_normal(shape)
        weights = np.einsum("i,j->ij", grid.volume_weights_x, grid.volume_weights_y)
        exact -= np.einsum("ijk,ij->", exact, weights) / shape[2]
        rhs = (stretched_operator(grid) @ exact.ravel()).reshape(shape)
        with PencilDecomposition(shape, proc_grid, comm,
                                 periodic=(False, not walls, True)) as decomposition:
            solver = PoissonSolver(decomposition, grid, planning="estimate")
            local_rhs = decomposition.scatter_global(rhs, "y")
            local_exact = decomposition.scatter_global(exact, "y")
            for overlap, slabs in ((False, True), (False, False), (True, False)):
                solver.overlap = overlap
                if solver.slabs:
                    solver.slabs = slabs
                result = solver.solve(local_rhs)
                # The solve's constant is the cells' mean, not the volume's: compare less it.
                shift = decomposition.sum(float(np.sum(result - local_exact))) / np.prod(shape)
                error = np.abs(result - local_exact - shift).max(initial=0)
                if error > 1e-11 * np.abs(exact).max():
                    failures.append((shape, proc_grid, overlap, slabs, error))
            solver.free()
    parallel_assert(not failures, str(failures))


def solve(grid: StaggeredGrid, rhs: np.ndarray) -> np.ndarray:
    with PencilDecomposition(grid.shape, comm=MPI.COMM_SELF,
                             periodic=(False, grid.periodic_y, True)) as decomposition:
        solver = PoissonSolver(decomposition, grid, planning="estimate")
        result = solver.solve(np.ascontiguousarray(rhs))
        solver.free()
    return result


def test_the_dense_x_solve_equals_the_cosine_transform_on_uniform_cells():
    shape, lengths = (10, 6, 4), (2.0, 1.0, 1.0)
    uniform = StaggeredGrid(shape, lengths, periodic_y=False, periodic_x=False)
    # A zone over the whole of x: uniform cells, solved by the eigen-decomposition.
    dense = StaggeredGrid(shape, lengths, periodic_y=False, periodic_x=False,
                          x_zone=(0.0, 2.0, 10))
    assert not dense.uniform_x and np.allclose(dense.widths_x, 0.2, rtol=1e-14)
    rhs = np.random.default_rng(5).standard_normal(shape)
    rhs -= rhs.mean()
    assert np.abs(solve(dense, rhs) - solve(uniform, rhs)).max() < 1e-12


def test_the_stretched_pressure_solve_is_second_order():
    errors = []
    for level in range(3):
        n = 16 * 2**level
        grid = StaggeredGrid((3 * n, n, 2), (3.0, 1.0, 0.5), periodic_y=False,
                             periodic_x=False, x_zone=(1.0, 1.5, n // 2))
        x, y = grid.centres_x[:, None, None], grid.centres_y[None, :, None]
        exact = np.cos(np.pi * x / 3.0) * np.cos(np.pi * y) + 0.0 * np.zeros((1, 1, 2))
        rhs = -(np.pi**2 / 9 + np.pi**2) * exact
        result = solve(grid, rhs)
        weights = np.einsum("i,j->ij", grid.volume_weights_x, grid.volume_weights_y)
        difference = result - exact
        difference -= np.einsum("ijk,ij->", difference, weights) / 2
        errors.append(np.abs(difference).max())
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 1.8), (errors, orders)


def operator_errors(n: int):
    """Max errors of divergence, gradient, Laplacian (centre and face fields) and
    advection on a stretched x against the exact values of analytic fields of x and y."""
    grid = StaggeredGrid((4 * n, n, 2), (4.0, 1.0, 0.5), periodic_x=False,
                         x_zone=(1.0, 2.0, n))
    metrics = stencils.YMetrics.from_grid(grid)
    x_metrics = stencils.XMetrics.from_grid(grid, 0, grid.shape[0])
    ky, dz = 2 * np.pi, grid.spacing_z
    centres = grid.ghosted_centres_x()[:, None, None]
    faces = grid.ghosted_faces_x()[:, None, None]
    ny = grid.shape[1]
    y_centres = ((np.arange(-1, ny + 1) + 0.5) / ny)[None, :, None]
    y_faces = ((np.arange(-1, ny + 1) + 1.0) / ny)[None, :, None]
    ones = np.ones((1, 1, 4))
    u = (np.sin(faces) * np.cos(ky * y_centres)) * ones
    v = (np.cos(centres) * np.sin(ky * y_faces) / ky) * ones
    w = np.zeros_like(u)
    p = np.sin(centres) * np.cos(ky * y_centres) * ones
    interior = (slice(1, -1), slice(1, -1), slice(1, -1))
    errors = {}
    divergence = stencils.divergence(u, v, w, metrics, x_metrics, dz)
    exact = (np.cos(centres) * np.cos(ky * y_centres) * 2) * ones
    errors["divergence"] = np.abs(divergence - exact[interior]).max()
    gradient_u, gradient_v, gradient_w = (np.zeros_like(u) for _ in range(3))
    stencils.subtract_gradient(gradient_u, gradient_v, gradient_w, p, metrics, x_metrics, dz,
                               -1.0, walls=False)
    exact = np.cos(faces) * np.cos(ky * y_centres) * ones
    errors["gradient"] = np.abs(gradient_u[interior] - exact[interior]).max()
    for name, field, at_x_faces in (("laplacian (centres)", p, False),
                                    ("laplacian (faces)", u, True)):
        out = np.zeros(tuple(s - 2 for s in field.shape))
        stencils.add_viscous(field, metrics, x_metrics, dz, 1.0, out, at_x_faces=at_x_faces)
        errors[name] = np.abs(out + (1 + ky**2) * field[interior]).max()
    # -∇·(u u) = -(u ∂x u + v ∂y u) of a divergence-free field: -sin x cos x.
    advected = stencils.advection(u, -v, w, metrics, x_metrics, dz)[0]
    exact = -np.sin(faces) * np.cos(faces) * np.ones_like(u)
    errors["advection"] = np.abs(advected - exact[interior]).max()
    return errors


def test_the_operators_keep_second_order_on_a_stretched_x():
    levels = [operator_errors(n) for n in (16, 32, 64)]
    for name in levels[0]:
        errors = np.array([level[name] for level in levels])
        orders = np.log2(errors[:-1] / errors[1:])
        assert np.all(orders > 1.8), (name, errors, orders)


def cylindrical_operator_errors(n: int):
    """The cylindrical kernels' x parts on a stretched x (fields of x only: u = sin x,
    p = sin x): divergence, gradient, the axial second derivative and advection."""
    from tachyflow.numerics import cylindrical_stencils
    from tachyflow.numerics.cylindrical_grid import CylindricalGrid

    grid = CylindricalGrid((4 * n, 4, 3), 4.0, 1.0, 0.5, sectors=4, periodic_x=False,
                           x_zone=(1.0, 2.0, n))
    metrics = cylindrical_stencils.RadialMetrics.from_grid(grid)
    x_metrics = stencils.XMetrics.from_grid(grid, 0, grid.shape[0])
    shape = (grid.shape[0] + 2, grid.shape[1] + 2, grid.shape[2] + 2)
    faces = np.broadcast_to(grid.ghosted_faces_x()[:, None, None], shape)
    centres = np.broadcast_to(grid.ghosted_centres_x()[:, None, None], shape)
    u, p, zero = np.sin(faces).copy(), np.sin(centres).copy(), np.zeros(shape)
    interior = (slice(1, -1),) * 3
    dt = grid.spacing_z
    errors = {}
    divergence = cylindrical_stencils.divergence(u, zero, zero, metrics, x_metrics, dt)
    errors["divergence"] = np.abs(divergence - np.cos(centres)[interior]).max()
    gradient = np.zeros(shape)
    cylindrical_stencils.subtract_gradient(gradient, zero.copy(), zero.copy(), p, metrics,
                                           x_metrics, dt, -1.0)
    errors["gradient"] = np.abs(gradient[interior] - np.cos(faces)[interior]).max()
    explicit = np.zeros((3, *divergence.shape))
    cylindrical_stencils.add_viscous(u, zero, zero, metrics, x_metrics, dt, None, -1, 1.0,
                                     explicit)
    errors["axial second derivative"] = np.abs(explicit[0] + np.sin(faces)[interior]).max()
    advected = cylindrical_stencils.advection(u, zero, zero, metrics, x_metrics, dt, 0.0)[0]
    exact = -2.0 * np.sin(faces) * np.cos(faces)
    errors["advection"] = np.abs(advected - exact[interior]).max()
    return errors


def test_the_cylindrical_operators_keep_second_order_on_a_stretched_x():
    levels = [cylindrical_operator_errors(n) for n in (16, 32, 64)]
    for name in levels[0]:
        errors = np.array([level[name] for level in levels])
        orders = np.log2(errors[:-1] / errors[1:])
        assert np.all(orders > 1.8), (name, errors, orders)


def test_a_case_s_x_zone_is_checked_against_its_grid():
    from tachyflow import config
    from tachyflow.errors import ConfigError

    def parse(grid, more=""):
        text = ('[case]\nsolver = "incompressible"\n[grid]\ncells = [40, 8, 1]\n'
                f"lengths = [10.0, 1.0, 1.0]\nwalls = true\n{grid}\n{more}")
        return config.parse(text, "zone.toml")

    open_x = 'x_boundaries = "inflow-outflow"\n'
    with pytest.raises(ConfigError, match=r"grid\.x_zone_cells.*inflow-outflow"):
        parse("x_zone = [2.0, 4.0]\nx_zone_cells = 20")
    with pytest.raises(ConfigError, match=r"grid\.x_zone.*lengths\[0\] = 10"):
        parse(open_x + "x_zone = [2.0, 14.0]\nx_zone_cells = 20")
    with pytest.raises(ConfigError, match=r"grid\.x_zone_cells.*finer than the cells"):
        parse(open_x + "x_zone = [2.0, 4.0]\nx_zone_cells = 2")
    grid = parse(open_x + "x_zone = [2.0, 4.0]\nx_zone_cells = 20").grid
    assert StaggeredGrid.from_section(grid).widths_x.min() == pytest.approx(0.1)


PIPE_LES = """
[case]
solver = "cylindrical"
[grid]
cells = [12, 9, 10]
x_boundaries = "inflow-outflow"
inflow_profile = "laminar"
x_zone = [1.0, 2.0]
x_zone_cells = 6
[cylinder]
length = 4.0
radius = 1.0
stretching = 1.0
rotation = 0.5
[flow]
viscosity = 0.002
initial = "perturbed-pipe"
perturbation = 0.3
seed = 3
[les]
model = "{model}"
[parallel]
proc_grid = [{ranks}, 1]
"""


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("solver", ["incompressible", "cylindrical"])
def test_a_large_eddy_simulation_on_a_stretched_x_is_the_same_on_any_rank_count(solver):
    """ν_t and its stress on a stretched x split over every rank: Smagorinsky's model on
    the developing channel, Vreman's on a perturbed rotating pipe."""
    from tachyflow import config
    from tachyflow.solvers.pencil.cylindrical import CylindricalSolver

    world = MPI.COMM_WORLD
    results = []
    for comm in (MPI.COMM_SELF, world):
        if solver == "incompressible":
            parallel = f'[parallel]\nproc_grid = [{comm.size}, 1]\n[les]\nmodel = "smagorinsky"'
            case = channel_entrance(comm, nx=30, ny=12, parallel=parallel, zone=x_zone(20))
        else:
            text = PIPE_LES.format(model="vreman", ranks=comm.size)
            case = CylindricalSolver.from_case(config.parse(text, "pipe.toml"), comm,
                                               "estimate")
        for _ in range(5):
            case.step(0.02)
        assert case.max_divergence() < 1e-12
        ratio = case.statistics()["max_eddy_viscosity_ratio"]
        results.append([ratio] + [case.decomposition.gather_global(case.cell_field(name), "y")
                                  for name in ("u", "nu_t")])
        case.free()
        case.decomposition.free()
    if world.rank == 0:
        assert results[0][0] > 1e-3  # the model acts
        for serial, parallel in zip(results[0][1:], results[1][1:], strict=True):
            assert np.abs(serial - parallel).max() < 1e-12 * max(np.abs(serial).max(), 1.0)



@pytest.mark.parallel([1, 2, 3])
def test_the_statistics_weight_a_stretched_x_by_its_cells():
    """The volume means of stats.csv on a stretched x weight each cell by its volume:
    the mean of u = x / Lx is the cells' widths' sum over its face values (unweighted,
    the zone's many small cells near x = 0 would pull it down), on any rank count."""
    world = MPI.COMM_WORLD
    channel = channel_entrance(world, nx=30, ny=12, zone=x_zone(20),
                               parallel=f"[parallel]\nproc_grid = [{world.size}, 1]")
    channel.set_velocity(lambda x, y, z: x / 12.0 + 0 * y + 0 * z, 0.0, 0.0)
    faces = channel.grid.faces_x[1:]  # u's x (the cell's upper face)
    exact = float(np.sum(channel.grid.widths_x * faces / 12.0)) / 12.0
    assert channel.volume_average(channel.halo.interior(channel.u)) == pytest.approx(exact,
                                                                                  rel=1e-12)
    assert abs(exact - np.mean(faces / 12.0)) > 0.05  # (0.520 against 0.416)
    energy = channel.statistics()["kinetic_energy"]
    assert energy > 0
    channel.free()
    channel.decomposition.free()
