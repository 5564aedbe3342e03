"""Subgrid-scale eddy viscosities against hand-computed values, and their stress's
divergence against the identity ∂_j(2ν S_ij) = ν ∇²u_i + ν ∂_i(∇·u) at constant ν."""

import itertools
import math

import numpy as np
import pytest

from tachyflow.numerics import eddy_viscosity as sgs
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.stencils import XMetrics, YMetrics, add_viscous

DELTA = 0.1
WIDTHS = np.array([0.1, 0.05, 0.2])  # an anisotropic cell for Vreman's model
CS, C, CW = (sgs.CONSTANTS[name] for name in ("smagorinsky", "vreman", "wale"))


def values(g, widths=(DELTA,) * 3):
    g = np.asarray(g, dtype=np.float64)
    delta = float(np.prod(widths)) ** (1 / 3)
    work = np.empty((3, 3))
    return (
        sgs.smagorinsky_value(g, delta, CS, 1.0),
        sgs.vreman_value(g, np.asarray(widths, dtype=np.float64), C, work),
        sgs.wale_value(g, delta, CW, work),
    )


def test_pure_shear_smagorinsky_only():
    gamma = 3.0  # u = γ y: |S| = γ; Vreman's B_β and WALE's S^d vanish
    smagorinsky, vreman, wale = values([[0, gamma, 0], [0, 0, 0], [0, 0, 0]])
    assert smagorinsky == pytest.approx((CS * DELTA) ** 2 * gamma, rel=1e-14)
    assert vreman == 0.0 and wale == 0.0


def test_solid_body_rotation_no_strain():
    omega = 2.0  # u = (-Ω y, Ω x, 0): S = 0; not irrotational, so Vreman and WALE act
    smagorinsky, vreman, wale = values([[0, -omega, 0], [omega, 0, 0], [0, 0, 0]], WIDTHS)
    assert smagorinsky == 0.0
    dx, dy, _ = WIDTHS  # β = diag(Δy² Ω², Δx² Ω², 0), α_ij α_ij = 2 Ω²
    assert vreman == pytest.approx(C * math.sqrt(dx**2 * dy**2 * omega**4 / (2 * omega**2)))
    delta = float(np.prod(WIDTHS)) ** (1 / 3)  # S^d = Ω² diag(-1/3, -1/3, 2/3), S = 0
    assert wale == pytest.approx((CW * delta) ** 2 * (2 / 3) ** 0.25 * omega, rel=1e-13)


def test_pure_strain():
    a = 1.5  # u = (a x, -a y, 0)
    smagorinsky, vreman, wale = values([[a, 0, 0], [0, -a, 0], [0, 0, 0]], WIDTHS)
    delta = float(np.prod(WIDTHS)) ** (1 / 3)
    dx, dy, _ = WIDTHS
    assert smagorinsky == pytest.approx((CS * delta) ** 2 * 2 * a, rel=1e-14)
    assert vreman == pytest.approx(C * dx * dy * a / math.sqrt(2), rel=1e-14)
    deviatoric, strain = 2 / 3 * a**4, 2 * a**2
    assert wale == pytest.approx(
        (CW * delta) ** 2 * deviatoric**1.5 / (strain**2.5 + deviatoric**1.25), rel=1e-13
    )


def test_a_three_dimensional_gradient_by_the_definitions():
    g = np.array([[0.3, -1.2, 0.7], [0.4, 0.1, -0.5], [-0.9, 0.6, -0.4]])
    smagorinsky, vreman, wale = values(g, WIDTHS)
    s = 0.5 * (g + g.T)
    delta = float(np.prod(WIDTHS)) ** (1 / 3)
    assert smagorinsky == pytest.approx((CS * delta) ** 2 * math.sqrt(2 * np.sum(s * s)))
    alpha = g.T  # α_ij = ∂u_j/∂x_i
    beta = np.einsum("m,mi,mj->ij", WIDTHS**2, alpha, alpha)
    b = (beta[0, 0] * beta[1, 1] - beta[0, 1] ** 2 + beta[0, 0] * beta[2, 2]
         - beta[0, 2] ** 2 + beta[1, 1] * beta[2, 2] - beta[1, 2] ** 2)
    assert vreman == pytest.approx(C * math.sqrt(b / np.sum(alpha * alpha)), rel=1e-13)
    square = g @ g
    sd = 0.5 * (square + square.T) - np.trace(square) / 3 * np.eye(3)
    sdsd, ss = np.sum(sd * sd), np.sum(s * s)
    assert wale == pytest.approx((CW * delta) ** 2 * sdsd**1.5 / (ss**2.5 + sdsd**1.25))


def ghosted_linear_field(grid, g):
    """u, v, w ghosted at their staggered places for the velocity u_a = g_ab x_b."""
    nz = grid.shape[2]
    dz = grid.spacing_z
    widths = grid.widths_y
    faces = np.concatenate(([-widths[0]], np.cumsum(np.concatenate(([0.0], widths)))))
    faces = np.append(faces, faces[-1] + widths[-1])  # y faces of the ghost cells too
    centres = 0.5 * (faces[:-1] + faces[1:])
    x_centres, x_faces = grid.ghosted_centres_x(), grid.ghosted_faces_x()
    z_centres = (np.arange(nz + 2) - 0.5) * dz
    z_faces = z_centres + 0.5 * dz
    at = {
        0: np.meshgrid(x_faces, centres, z_centres, indexing="ij"),
        1: np.meshgrid(x_centres, faces[1:], z_centres, indexing="ij"),
        2: np.meshgrid(x_centres, centres, z_faces, indexing="ij"),
    }
    return [sum(g[a][b] * at[a][b] for b in range(3)) for a in range(3)]


def a_grid(kind: str, shape, lengths, stretching: float) -> StaggeredGrid:
    """Uniform in x, or (``"x-zone"``) an open x refined round its middle third."""
    if kind == "uniform-x":
        return StaggeredGrid(shape, lengths, periodic_y=False, stretching=stretching)
    third = lengths[0] / 3
    return StaggeredGrid(shape, lengths, periodic_y=False, stretching=stretching,
                         periodic_x=False, x_zone=(third, 2 * third, shape[0] // 2))


@pytest.mark.parametrize("model", sgs.MODELS)
@pytest.mark.parametrize(("kind", "stretching"),
                         [("uniform-x", 0.0), ("uniform-x", 1.8), ("x-zone", 1.8)])
def test_the_field_kernel_equals_the_point_values_on_linear_fields(model, kind, stretching):
    grid = a_grid(kind, (6, 7, 5), (1.0, 2.0, 0.8), stretching)
    g = np.array([[0.3, -1.2, 0.7], [0.4, 0.1, -0.5], [-0.9, 0.6, -0.4]])
    u, v, w = ghosted_linear_field(grid, g)
    out = np.empty(grid.shape)
    sgs.eddy_viscosity(u, v, w, YMetrics.from_grid(grid), XMetrics.from_grid(grid, 0, 6),
                       grid.spacing_z, model, out)
    work = np.empty((3, 3))
    for (i, dx), (j, dy) in itertools.product(enumerate(grid.widths_x),
                                              enumerate(grid.widths_y)):
        widths = np.array([dx, dy, grid.spacing_z])
        delta = float(np.prod(widths)) ** (1 / 3)
        if model == "smagorinsky":
            expected = sgs.smagorinsky_value(g, delta, CS, 1.0)
        elif model == "vreman":
            expected = sgs.vreman_value(g, widths, C, work)
        else:
            expected = sgs.wale_value(g, delta, CW, work)
        np.testing.assert_allclose(out[i, j, :], expected, rtol=1e-12)


def test_bad_input_is_refused():
    grid = StaggeredGrid((4, 4, 4), (1.0, 1.0, 1.0))
    u = np.zeros((6, 6, 6))
    metrics = YMetrics.from_grid(grid)
    with pytest.raises(ValueError, match="model must be one of"):
        sgs.eddy_viscosity(u, u, u, metrics, 0.25, 0.25, "dynamic", np.empty((4, 4, 4)))
    with pytest.raises(ValueError, match=r"out has shape \(4, 4, 3\)"):
        sgs.eddy_viscosity(u, u, u, metrics, 0.25, 0.25, "wale", np.empty((4, 4, 3)))
    with pytest.raises(ValueError, match="nu has shape"):
        sgs.add_stress_divergence(u, u, u, np.zeros((5, 6, 6)), metrics, 0.25, 0.25,
                                  np.zeros((3, 4, 4, 4)))


def test_van_driest_damping():
    damping = sgs.van_driest(np.array([0.0, 26e-3, 1.0]), friction_velocity=1.0,
                             viscosity=1e-3)
    np.testing.assert_allclose(damping, [0.0, 1 - math.exp(-1), 1 - math.exp(-1000 / 26)])


@pytest.mark.parametrize(("kind", "stretching"),
                         [("uniform-x", 0.0), ("uniform-x", 2.0), ("x-zone", 2.0)])
def test_constant_viscosity_stress_is_the_laplacian_plus_the_divergence_gradient(kind,
                                                                                stretching):
    rng = np.random.default_rng(7)
    grid = a_grid(kind, (6, 8, 5), (1.0, 2.0, 0.7), stretching)
    metrics = YMetrics.from_grid(grid)
    x = XMetrics.from_grid(grid, 0, 6)
    dz, nu = grid.spacing_z, 0.37
    dx = x.width[1:-1, None, None]  # the cells' x widths, and (below) the centres' gaps
    shape = tuple(n + 2 for n in grid.shape)
    u, v, w = (rng.standard_normal(shape) for _ in range(3))
    stress = np.zeros((3, *grid.shape))
    sgs.add_stress_divergence(u, v, w, np.full(shape, nu), metrics, x, dz, stress)
    laplacian = np.zeros_like(stress)
    for index, field in enumerate((u, v, w)):
        add_viscous(field, metrics, x, dz, nu, laplacian[index], at_faces=index == 1,
                    at_x_faces=index == 0)
    width = metrics.width.ravel()[None, :, None]
    divergence = ((u[1:-1, 1:-1, 1:-1] - u[:-2, 1:-1, 1:-1]) / dx
                  + (v[1:-1, 1:-1, 1:-1] - v[1:-1, :-2, 1:-1]) / width
                  + (w[1:-1, 1:-1, 1:-1] - w[1:-1, 1:-1, :-2]) / dz)
    gap = metrics.gap.ravel()[None, :-1, None]
    gradient = (
        (divergence[1:] - divergence[:-1]) / x.gap[1:-2, None, None],
        (divergence[:, 1:] - divergence[:, :-1]) / gap,
        (divergence[:, :, 1:] - divergence[:, :, :-1]) / dz,
    )
    for index, part in enumerate(gradient):
        inner = tuple(slice(0, n - 1) if axis == index else slice(None)
                      for axis, n in enumerate(grid.shape))
        np.testing.assert_allclose(stress[index][inner], laplacian[index][inner] + nu * part,
                                   rtol=1e-11, atol=1e-9)


def test_the_dynamic_sums_of_a_linear_field_by_hand():
    """The test filter leaves a linear field's gradient as it is: nothing unresolved for
    the equilibrium identity (its numerator 0); Germano's Leonard stress is the filter's
    second moment, ``L_ij = Σ_m (Δ_m² / 3) g_im g_jm`` over the filtered directions, and
    ``M_ij = (Π̃ − Π) S_ij``."""
    grid = StaggeredGrid((6, 7, 5), (1.0, 2.0, 0.8), periodic_y=False, stretching=1.5)
    metrics = YMetrics.from_grid(grid)
    dx, dz = grid.spacing_x, grid.spacing_z
    g = np.array([[0.3, -1.2, 0.7], [0.4, 0.1, -0.5], [-0.9, 0.6, -0.4]])
    u, v, w = ghosted_linear_field(grid, g)
    parts = np.zeros((sgs.PARTS, *u.shape))
    sgs.vreman_parts(u, v, w, metrics, dx, dz, parts)
    np.testing.assert_allclose(parts[:9, 1:-1, 1:-1, 1:-1],
                               np.broadcast_to(g.reshape(9, 1, 1, 1), (9, *grid.shape)))
    # The owned cells less the outer ones in x and z, whose filter reads owned cells only
    # (y is not filtered).
    inner = np.ascontiguousarray(parts[:, 1:-1, :, 1:-1])
    sums = sgs.global_sums(inner, metrics, dx, dz, (True, False, True))
    s = 0.5 * (g + g.T)
    leonard = (dx**2 * np.outer(g[:, 0], g[:, 0]) + dz**2 * np.outer(g[:, 2], g[:, 2])) / 3
    work = np.empty((3, 3))
    cells = (grid.shape[0] - 2) * (grid.shape[2] - 2)
    expected_model = 0.0
    for dy in grid.widths_y:
        grid_level = sgs.vreman_value(g, np.array([dx, dy, dz]), 1.0, work)
        test_level = sgs.vreman_value(g, np.array([2 * dx, dy, 2 * dz]), 1.0, work)
        expected_model += cells * dy * (test_level - grid_level) * np.sum(s * s)
    total = cells * grid.widths_y.sum()
    assert sums[0] == pytest.approx(total * np.sum(leonard * s), rel=1e-10)
    assert sums[1] == pytest.approx(expected_model, rel=1e-10) and sums[1] > 0
    assert abs(sums[2]) < 1e-12 and sums[3] < 0  # the test level's Π̃ is larger
    assert sgs.dynamic_coefficient(sums, 1e-3, "germano") == pytest.approx(
        max(0.0, -sums[0] / (2 * sums[1])), abs=1e-15)
    assert sgs.dynamic_coefficient(sums, 1e-3, "equilibrium") == pytest.approx(0.0, abs=1e-12)


def test_the_dynamic_coefficient_by_each_identity_and_clipped():
    assert sgs.dynamic_coefficient([-3.0, 2.0, 0.0, 0.0], 1e-3) == pytest.approx(0.75)
    assert sgs.dynamic_coefficient([3.0, 2.0, 0.0, 0.0], 1e-3) == 0.0  # negative: clipped
    assert sgs.dynamic_coefficient([0.0, 0.0, 2.0, -4.0], 1e-3, "equilibrium") == \
        pytest.approx(2.5e-4)
    assert sgs.dynamic_coefficient([0.0, 0.0, 1.0, 2.0], 1e-3, "equilibrium") == 0.0
    assert sgs.dynamic_coefficient([1.0, 0.0, 1.0, 0.0], 1e-3) == 0.0
    with pytest.raises(ValueError, match="identity must be one of"):
        sgs.dynamic_coefficient([1.0, 1.0, 1.0, 1.0], 1e-3, "lilly")
