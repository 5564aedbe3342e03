"""The subgrid-scale kernels of the cylindrical grid against a smooth Cartesian field
written in cylindrical components: ν_t against the models' point values of the exact
gradient, and the stress divergence against ∂_j(2 ν S_ij) = ν ∇²u_i + 2 S_ij ∂_j ν (a
divergence-free field), both second order in the cell size away from the axis; the frame's
rotation added back; a solid-body rotation and a uniform flow give zero stress. About the
axis the first rings converge slowly or not at all (see the tests there)."""

import numpy as np
import pytest

from tachyflow.numerics import cylindrical_eddy_viscosity as cyl
from tachyflow.numerics import eddy_viscosity as sgs
from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.numerics.cylindrical_stencils import RadialMetrics
from tachyflow.numerics.stencils import XMetrics

K = np.array([[0.0, 1.3, 0.7], [0.9, 0.0, -0.6], [1.1, 0.5, 0.0]])  # wavenumbers
PHASE = np.array([0.3, -0.2, 0.5])


def cartesian_velocity(x, y, z):
    """U_a = sin(K_a · X + φ_a), each independent of its own coordinate: div U = 0."""
    return np.stack([np.sin(K[a, 0] * x + K[a, 1] * y + K[a, 2] * z + PHASE[a])
                     for a in range(3)])


def cartesian_gradient(x, y, z):
    """G[a, b] = ∂U_a/∂X_b."""
    cos = [np.cos(K[a, 0] * x + K[a, 1] * y + K[a, 2] * z + PHASE[a]) for a in range(3)]
    return np.array([[K[a, b] * cos[a] for b in range(3)] for a in range(3)])


def viscosity(x, y, z):
    return 0.5 + 0.2 * np.sin(0.8 * x + 0.4 * y) * np.cos(0.6 * z)


def viscosity_gradient(x, y, z):
    s, c = np.sin(0.8 * x + 0.4 * y), np.cos(0.8 * x + 0.4 * y)
    return 0.2 * np.array([0.8 * c * np.cos(0.6 * z), 0.4 * c * np.cos(0.6 * z),
                           -0.6 * s * np.sin(0.6 * z)])


def basis(theta):
    """Rows e_x, e_r, e_θ in Cartesian components."""
    one, zero = np.ones_like(theta), np.zeros_like(theta)
    return np.array([[one, zero, zero], [zero, np.cos(theta), np.sin(theta)],
                     [zero, -np.sin(theta), np.cos(theta)]])


def cartesian_point(x, r, theta):
    return x, r * np.cos(theta), r * np.sin(theta)


def ghosted_positions(grid, metrics):
    nt = grid.shape[2]
    dt = grid.spacing_z
    centres_x, centres_t = grid.ghosted_centres_x(), (np.arange(nt + 2) - 0.5) * dt
    return {
        0: (grid.ghosted_faces_x(), metrics.centre.ravel(), centres_t),
        1: (centres_x, metrics.face.ravel(), centres_t),
        2: (centres_x, metrics.centre.ravel(), centres_t + 0.5 * dt),
    }


def cylindrical_fields(grid, rotation=0.0):
    """Ghosted u, q = r u_r, w of the Cartesian field, in a frame turning at ``rotation``."""
    metrics = RadialMetrics.from_grid(grid)
    fields = []
    for component, axes in ghosted_positions(grid, metrics).items():
        x, r, theta = np.meshgrid(*axes, indexing="ij")
        velocity = cartesian_velocity(*cartesian_point(x, r, theta))
        local = np.einsum("ab...,b...->a...", basis(theta), velocity)[component]
        if component == 1:
            local = local * r
        if component == 2:
            local = local - rotation * r
        fields.append(np.ascontiguousarray(local))
    return fields, metrics


def grid_of(n, inner_radius, x_zone=False):
    """A sector of a pipe or an annulus; with ``x_zone``, an open x refined round its
    middle third (half the cells there)."""
    zone = dict(periodic_x=False, x_zone=(1 / 3, 2 / 3, n // 2)) if x_zone else {}
    return CylindricalGrid((n, n, 2 * n), length=1.0, radius=1.0, inner_radius=inner_radius,
                           sectors=4, **zone)


def eddy_viscosity_error(model, n, inner_radius, rotation=0.0, x_zone=False):
    grid = grid_of(n, inner_radius, x_zone)
    (u, q, w), metrics = cylindrical_fields(grid, rotation)
    rows = cyl.CylindricalRows(metrics, grid.through_axis)
    out = np.empty(grid.shape)
    x_metrics = XMetrics.from_grid(grid, 0, n)
    cyl.eddy_viscosity(u, q, w, rows, x_metrics, grid.spacing_z, rotation, model, out)
    nx, _, nt = grid.shape
    x = grid.centres_x
    theta = (np.arange(nt) + 0.5) * grid.spacing_z
    expected = np.empty(grid.shape)
    work = np.empty((3, 3))
    for j, r in enumerate(grid.centres_y):
        for i in range(nx):
            widths = np.array([grid.widths_x[i], grid.widths_y[j], r * grid.spacing_z])
            delta = float(np.prod(widths)) ** (1 / 3)
            for k in range(nt):
                e = basis(np.array(theta[k]))
                g = e @ cartesian_gradient(*cartesian_point(x[i], r, theta[k])) @ e.T
                expected[i, j, k] = sgs.model_value(sgs.MODELS.index(model), g, widths, delta,
                                                    sgs.CONSTANTS[model], 1.0, work)
    return np.abs(out - expected)[interior_x(x_zone)].max() / np.abs(expected).max()


def interior_x(x_zone: bool) -> slice:
    """The x cells whose errors count: on an open x not the two end cells, whose ghosts
    mirror them (a kink in the spacing, first order there: the boundary condition's part,
    not the operator's)."""
    return slice(1, -1) if x_zone else slice(None)


@pytest.mark.parametrize("x_zone", [False, True], ids=["uniform-x", "x-zone"])
@pytest.mark.parametrize("model", sgs.MODELS)
def test_eddy_viscosity_is_second_order_in_an_annulus(model, x_zone):
    levels = (16, 32) if x_zone else (8, 16)
    coarse, fine = (eddy_viscosity_error(model, n, 0.4, x_zone=x_zone) for n in levels)
    assert fine < 0.03
    # Second order: 4 in the limit. With the zone 2.5 to 2.7 measured from 16 to 32 cells:
    # at 16 the sides' 4 cells ramp their ratio over one (a kink in the spacing), and 64
    # cells cost this test's point-by-point reference a minute.
    assert coarse / fine > (2.4 if x_zone else 3.2)


def test_eddy_viscosity_through_the_axis_converges():
    coarse, fine = (eddy_viscosity_error("smagorinsky", n, 0.0) for n in (8, 16))
    assert fine < 0.05 and coarse / fine > 1.8  # first order in the first ring


@pytest.mark.parametrize("model", sgs.MODELS)
def test_the_frame_rotation_is_added_back(model):
    inertial = eddy_viscosity_error(model, 8, 0.4)
    assert eddy_viscosity_error(model, 8, 0.4, rotation=3.0) == pytest.approx(inertial,
                                                                              rel=1e-9)


def stress_error(n, inner_radius, beyond=0.0, x_zone=False):
    """The largest error of each component relative to its largest value, over the rows
    beyond the radius ``beyond``."""
    grid = grid_of(n, inner_radius, x_zone)
    (u, q, w), metrics = cylindrical_fields(grid)
    rows = cyl.CylindricalRows(metrics, grid.through_axis)
    nt = grid.shape[2]
    dt = grid.spacing_z
    centres_x, centres_t = grid.ghosted_centres_x(), (np.arange(nt + 2) - 0.5) * dt
    x, r, theta = np.meshgrid(centres_x, metrics.centre.ravel(), centres_t, indexing="ij")
    nu = viscosity(*cartesian_point(x, r, theta))
    out = np.zeros((3, *grid.shape))
    cyl.add_stress_divergence(u, q, w, nu, rows, XMetrics.from_grid(grid, 0, n), dt, out)
    errors = []
    for component, axes in ghosted_positions(grid, metrics).items():
        x, r, theta = (a[1:-1, 1:-1, 1:-1] for a in np.meshgrid(*axes, indexing="ij"))
        point = cartesian_point(x, r, theta)
        g = cartesian_gradient(*point)
        strain = g + np.swapaxes(g, 0, 1)
        force = (-viscosity(*point) * np.sum(K**2, axis=1)[:, None, None, None]
                 * cartesian_velocity(*point)
                 + np.einsum("ab...,b...->a...", strain, viscosity_gradient(*point)))
        local = np.einsum("ab...,b...->a...", basis(theta), force)[component]
        computed = out[component]
        if component == 1:
            local, computed = local[:, :-1], computed[:, :-1] / r[:, :-1]  # not the wall face
            r = r[:, :-1]
        far = r[0, :, 0] > beyond
        error = np.abs(computed - local)[interior_x(x_zone)][:, far].max()
        errors.append(error / np.abs(local).max())
    return np.array(errors)


@pytest.mark.parametrize("x_zone", [False, True], ids=["uniform-x", "x-zone"])
def test_stress_divergence_is_second_order_in_an_annulus(x_zone):
    # (The zone's growth ratio rises smoothly over a quarter of the cells outside it from
    # 32 cells on: the asymptotic order from there.)
    levels = (32, 64) if x_zone else (8, 16)
    coarse, fine = (stress_error(n, 0.4, x_zone=x_zone) for n in levels)
    assert np.all(fine < 0.01)
    assert np.all(coarse / fine > 2.8)  # 2.9 at the hub's first row, 4 beyond


def test_stress_divergence_through_the_axis():
    """Second order beyond a quarter of the radius; about the axis bounded, not
    converging in the first rings (of w, up to half the largest force in the first: the
    O(r) and O(1/r) parts of τ_θθ there)."""
    coarse, fine = (stress_error(n, 0.0, beyond=0.25) for n in (8, 16))
    assert np.all(fine < 0.01) and np.all(coarse / fine > 3.0)
    coarse, fine = (stress_error(n, 0.0) for n in (8, 16))
    assert np.all(fine < 0.55) and np.all(fine < 1.1 * coarse)


def test_solid_body_rotation_and_uniform_flow_have_no_stress():
    grid = grid_of(6, 0.0)
    metrics = RadialMetrics.from_grid(grid)
    rows = cyl.CylindricalRows(metrics, True)
    shape = tuple(n + 2 for n in grid.shape)
    u = np.full(shape, 1.7)
    q = np.zeros(shape)
    w = np.broadcast_to(2.5 * metrics.centre, shape).copy()
    nu = np.random.default_rng(3).uniform(0.1, 1.0, shape)
    out = np.zeros((3, *grid.shape))
    cyl.add_stress_divergence(u, q, w, nu, rows, grid.spacing_x, grid.spacing_z, out)
    assert np.abs(out).max() < 1e-12
    smagorinsky = np.empty(grid.shape)
    cyl.eddy_viscosity(u, q, w, rows, grid.spacing_x, grid.spacing_z, 0.0, "smagorinsky",
                       smagorinsky)
    assert np.abs(smagorinsky).max() < 1e-12


def test_bad_input_is_refused():
    grid = grid_of(4, 0.0)
    rows = cyl.CylindricalRows(RadialMetrics.from_grid(grid), True)
    u = np.zeros((6, 6, 10))
    with pytest.raises(ValueError, match="model must be one of"):
        cyl.eddy_viscosity(u, u, u, rows, 0.25, 0.4, 0.0, "dynamic", np.empty((4, 4, 8)))
    with pytest.raises(ValueError, match=r"out has shape \(4, 4, 7\)"):
        cyl.eddy_viscosity(u, u, u, rows, 0.25, 0.4, 0.0, "wale", np.empty((4, 4, 7)))
    with pytest.raises(ValueError, match="nu has shape"):
        cyl.add_stress_divergence(u, u, u, np.zeros((5, 6, 10)), rows, 0.25, 0.4,
                                  np.zeros((3, 4, 4, 8)))

