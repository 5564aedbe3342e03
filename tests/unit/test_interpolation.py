import numpy as np
import pytest

from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.interpolation import (
    CORNER_OFFSETS,
    QUANTITIES,
    gathered_source_terms,
    ghosted_flat_indices,
    interpolate,
    interpolation_stencils,
    permeable_source_terms,
    stencil_source_terms,
    take_values,
)

PERIODIC = StaggeredGrid((6, 5, 4), (1.5, 2.0, 0.8), periodic_y=True)
WALLS = StaggeredGrid((5, 9, 7), (1.0, 2.0, 3.0), periodic_y=False, stretching=1.8)
# Coefficients (a, b, c, d) of a + b x + c y + d z, distinct per quantity.
LINEAR = np.array([[0.3, 1.0, -2.0, 0.5], [-1.0, 0.25, 3.0, -1.5], [2.0, -0.7, 0.9, 1.1],
                   [0.1, 1.3, 0.4, -2.2]])


def positions(grid: StaggeredGrid, quantity: str, index: np.ndarray) -> np.ndarray:
    """Coordinates of a quantity's values at unwrapped indices ``(..., 3)`` (the table of
    the module notes, extended by periodicity past the ends)."""
    dx, dz = grid.spacing_x, grid.spacing_z
    i, j, k = index[..., 0], index[..., 1], index[..., 2]
    x = (i + (1.0 if quantity == "u" else 0.5)) * dx
    z = (k + (1.0 if quantity == "w" else 0.5)) * dz
    if quantity == "v":
        y = grid.faces_y[j + 1]
    else:
        length = grid.lengths[1]
        extended = np.concatenate(
            ([grid.centres_y[-1] - length], grid.centres_y, [grid.centres_y[0] + length])
        )
        y = extended[j + 1]
    return np.stack([x, y, z], axis=-1)


def random_points(grid: StaggeredGrid, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    points = rng.random((count, 3)) * np.array(grid.lengths)
    if not grid.periodic_y:
        low, high = grid.centres_y[0], grid.centres_y[-1]
        points[:, 1] = low + (high - low) * rng.random(count)
    return points


def wrapped(grid: StaggeredGrid, points: np.ndarray) -> np.ndarray:
    lengths = np.array(grid.lengths)
    result = points.copy()
    axes = [0, 1, 2] if grid.periodic_y else [0, 2]
    result[:, axes] = np.mod(points[:, axes], lengths[axes])
    return result


@pytest.mark.parametrize("grid", [PERIODIC, WALLS], ids=["periodic", "stretched-walls"])
def test_linear_fields_are_reproduced_for_every_staggering(grid):
    points = random_points(grid, 400, seed=1)
    # Points on the periodic boundaries and on the extreme centres between walls.
    points[:4] = [[0.0, grid.centres_y[0], 0.0], [grid.lengths[0] - 1e-13, grid.centres_y[-1],
                  grid.lengths[2] - 1e-13], [0.5 * grid.spacing_x, grid.centres_y[1], 0.0],
                  [grid.spacing_x, grid.centres_y[-2], 0.5 * grid.spacing_z]]
    stencils = interpolation_stencils(grid, points)
    corners = stencils.lower[:, :, None, :] + CORNER_OFFSETS
    values = np.empty(stencils.weights.shape)
    target = np.empty((len(points), 4))
    at = wrapped(grid, points)
    for q, name in enumerate(QUANTITIES):
        xyz = positions(grid, name, corners[:, q])
        a, b, c, d = LINEAR[q]
        values[:, q] = a + b * xyz[..., 0] + c * xyz[..., 1] + d * xyz[..., 2]
        target[:, q] = a + b * at[:, 0] + c * at[:, 1] + d * at[:, 2]
    assert np.allclose(interpolate(values, stencils.weights), target, rtol=0, atol=1e-12)


@pytest.mark.parametrize("grid", [PERIODIC, WALLS], ids=["periodic", "stretched-walls"])
def test_stencils_lie_within_one_cell_of_the_point_and_weights_are_convex(grid):
    points = random_points(grid, 2000, seed=2)
    points[:, 0] += grid.lengths[0] * np.round(np.linspace(-3, 3, len(points)))
    stencils = interpolation_stencils(grid, points)
    offset = stencils.lower - stencils.cells[:, None, :]
    assert np.all((offset == -1) | (offset == 0))
    assert np.all(stencils.weights >= 0)
    assert np.allclose(stencils.weights.sum(axis=2), 1.0, rtol=0, atol=1e-14)
    # The containing cell brackets the point.
    at = wrapped(grid, points)
    x_faces = stencils.cells[:, 0] * grid.spacing_x
    assert np.all((x_faces <= at[:, 0] + 1e-12) & (at[:, 0] < x_faces + grid.spacing_x + 1e-12))
    assert np.all(grid.faces_y[stencils.cells[:, 1]] <= at[:, 1])
    assert np.all(at[:, 1] <= grid.faces_y[stencils.cells[:, 1] + 1])


def test_periodic_indices_wrap_and_images_give_the_same_stencil():
    grid = PERIODIC
    nx, ny, nz = grid.shape
    points = random_points(grid, 300, seed=3)
    shifted = points + np.array(grid.lengths) * np.array([2.0, -1.0, 3.0])
    one, other = interpolation_stencils(grid, points), interpolation_stencils(grid, shifted)
    assert np.array_equal(one.indices, other.indices)
    assert np.allclose(one.weights, other.weights, rtol=0, atol=1e-12)
    corners = one.lower[:, :, None, :] + CORNER_OFFSETS
    assert np.array_equal(one.indices, corners % np.array([nx, ny, nz]))
    assert one.indices.min() == 0 and np.all(
        one.indices.max(axis=(0, 1, 2)) == [nx - 1, ny - 1, nz - 1]
    )
    # Near x = 0 the p stencil reaches back to the last cell.
    near = interpolation_stencils(grid, [[0.1 * grid.spacing_x, 1.0, 0.4]])
    assert near.lower[0, 3, 0] == -1
    assert sorted(set(near.indices[0, 3, :, 0])) == [0, nx - 1]


def test_v_between_walls_reads_the_lower_wall_face():
    grid = WALLS
    stencils = interpolation_stencils(grid, [[0.3, grid.centres_y[0], 1.0]])
    v = QUANTITIES.index("v")
    assert stencils.lower[0, v, 1] == -1
    assert stencils.indices[0, v, :, 1].min() == -1
    # Other quantities never leave the cells.
    others = [QUANTITIES.index(name) for name in "uwp"]
    assert stencils.indices[0, others, :, 1].min() == 0


def smooth(grid: StaggeredGrid, xyz: np.ndarray, quantity: int) -> np.ndarray:
    """A smooth field, periodic in x and z (and y when periodic)."""
    x, y, z = xyz[..., 0], xyz[..., 1], xyz[..., 2]
    lx, ly, lz = grid.lengths
    y_part = np.cos(2 * np.pi * y / ly) if grid.periodic_y else np.exp(y / ly)
    return (
        (quantity + 1)
        * np.sin(2 * np.pi * x / lx + quantity)
        * np.cos(2 * np.pi * z / lz)
        * y_part
    )


def sampled_error(grid: StaggeredGrid, points: np.ndarray) -> float:
    """Largest interpolation error of :func:`smooth` from whole-grid arrays gathered with
    the wrapped indices; v carries the lower wall face in an extra first row."""
    nx, ny, nz = grid.shape
    cells = np.stack(np.meshgrid(np.arange(nx), np.arange(-1, ny + 1), np.arange(nz),
                                 indexing="ij"), axis=-1)
    stencils = interpolation_stencils(grid, points)
    values = np.empty(stencils.weights.shape)
    for q, name in enumerate(QUANTITIES):
        if name == "v":
            field = smooth(grid, positions(grid, name, cells[:, :-1]), q)  # rows j = -1..ny-1
        else:
            field = smooth(grid, positions(grid, name, cells[:, 1:-1]), q)  # rows 0..ny-1
        index = stencils.indices[:, q]
        row = index[..., 1] + (1 if name == "v" else 0)
        values[:, q] = field[index[..., 0], row, index[..., 2]]
    exact = np.stack([smooth(grid, wrapped(grid, points), q) for q in range(4)], axis=1)
    return np.abs(interpolate(values, stencils.weights) - exact).max()


@pytest.mark.parametrize("periodic_y", [True, False], ids=["periodic", "stretched-walls"])
def test_interpolation_converges_at_second_order(periodic_y):
    errors = []
    for n in (16, 32, 64):
        grid = StaggeredGrid(
            (n, n, n), (2.0, 1.0, 1.5), periodic_y=periodic_y, stretching=0 if periodic_y else 1.2
        )
        points = random_points(grid, 3000, seed=5)
        errors.append(sampled_error(grid, points))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 1.8), (errors, orders)


def test_points_outside_the_walls_are_named():
    grid = WALLS
    points = random_points(grid, 10, seed=6)
    points[7, 1] = 0.5 * grid.centres_y[0]
    points[9, 1] = grid.lengths[1]
    with pytest.raises(ValueError, match=r"point 7 at .* outside .*\(2 point\(s\) do\)"):
        interpolation_stencils(grid, points)
    with pytest.raises(ValueError, match="at least 2 cells in y"):
        interpolation_stencils(
            StaggeredGrid((4, 1, 4), (1, 1, 1), periodic_y=False), [[0, 0.5, 0]]
        )
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        interpolation_stencils(grid, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="point 1 is not finite"):
        interpolation_stencils(PERIODIC, [[0, 0, 0], [np.inf, 0, 0]])


def test_source_terms_match_the_permeable_fwh_formula_and_each_other():
    rng = np.random.default_rng(7)
    n, rho0, p0 = 50, 1.2, 101325.0
    values = rng.normal(size=(n, 4, 8))
    values[:, 3] += p0
    weights = rng.random((n, 4, 8))
    weights /= weights.sum(axis=2, keepdims=True)
    normals = rng.normal(size=(n, 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    sampled = interpolate(values, weights)
    velocity, pressure = sampled[:, :3], sampled[:, 3]
    terms = permeable_source_terms(velocity, pressure, normals, rho0, p0)
    # FWHSolver's permeable terms with rho = rho0 and a surface at rest.
    flux = velocity
    load = (pressure - p0)[:, None] * normals + (rho0 * np.einsum("pi,pi->p", velocity, normals))[
        :, None
    ] * velocity
    assert np.allclose(terms[:, 0], np.einsum("pi,pi->p", flux, normals), rtol=1e-14, atol=1e-12)
    assert np.allclose(terms[:, 1:], load, rtol=1e-14, atol=1e-12)
    fused = stencil_source_terms(values, weights, normals, rho0, p0)
    assert np.array_equal(fused, terms)
    with pytest.raises(ValueError, match=r"pressure must have shape \(50,\)"):
        permeable_source_terms(velocity, pressure[:-1], normals, rho0, p0)
    with pytest.raises(ValueError, match=r"normals must have shape \(50, 3\)"):
        stencil_source_terms(values, weights, normals[:-1], rho0, p0)
    with pytest.raises(ValueError, match=r"stencil values must have shape"):
        interpolate(values[:, :3], weights[:, :3])


def test_flat_indices_and_packing_read_the_right_ghosted_cells():
    rng = np.random.default_rng(8)
    start, width = np.array([3, 0, 5]), 1
    fields = [rng.random((4 + 2, 6 + 2, 3 + 2)) for _ in range(4)]
    global_index = np.array([[2, -1, 4], [6, 6, 8], [3, 0, 5], [4, 2, 6]])
    flat = ghosted_flat_indices(global_index, start, fields[0].shape, width)
    local = global_index - start + width
    quantity = np.array([0, 1, 2, 3])
    out = np.empty(4)
    take_values(*(f.ravel() for f in fields), quantity, flat, out)
    expected = [fields[q][tuple(local[m])] for m, q in enumerate(quantity)]
    assert np.array_equal(out, expected)


def test_source_terms_read_in_place_equal_those_of_gathered_values_bit_for_bit():
    rng = np.random.default_rng(9)
    fields = [rng.normal(size=(5, 6, 7)) for _ in range(4)]
    n = 40
    flat = rng.integers(0, fields[0].size, size=(n, 4, 8))
    weights = rng.random((n, 4, 8))
    normals = rng.normal(size=(n, 3))
    values = np.stack([fields[q].ravel()[flat[:, q]] for q in range(4)], axis=1)
    out = np.empty((n, 4))
    gathered_source_terms([f.ravel() for f in fields], flat, weights, normals, 1.3, 0.2, out)
    assert np.array_equal(out, stencil_source_terms(values, weights, normals, 1.3, 0.2))
