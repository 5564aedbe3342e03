"""The fused numba kernels of the cylindrical step against plain numpy statements of the
same finite-volume formulas (Verzicco & Orlandi's, see
:mod:`tachyflow.numerics.cylindrical_stencils`): equal to round-off."""

import numpy as np
import pytest

from tachyflow.numerics import cylindrical_stencils as stencils
from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.numerics.tdma import FactoredPeriodicDiffusion

OWN, UP, DOWN = slice(1, -1), slice(2, None), slice(None, -2)
DX, DT = 0.21, 2 * np.pi / 7


def fields(grid, seed=0):
    """Random ghosted u, q, w, p of ``grid`` and its metrics."""
    rng = np.random.default_rng(seed)
    shape = tuple(n + 2 for n in grid.shape)
    return [rng.standard_normal(shape) for _ in range(4)], stencils.RadialMetrics.from_grid(grid)


def close(result, expected):
    return np.abs(result - expected).max() <= 1e-13 * max(1.0, np.abs(expected).max())


GRIDS = {
    "pipe": CylindricalGrid((5, 6, 7), 1.0, 1.0, stretching=1.5),
    "pipe-fine-axis": CylindricalGrid((5, 6, 7), 1.0, 1.0, stretching=2.0, clustering="axis"),
    "annulus": CylindricalGrid((5, 6, 7), 1.0, 1.0, inner_radius=0.4),
}


@pytest.mark.parametrize("geometry", sorted(GRIDS))
def test_divergence_and_gradient_kernels_equal_the_numpy_formulas(geometry):
    (u, q, w, p), m = fields(GRIDS[geometry])
    rc, width = m.centre[:, OWN], m.width[:, OWN]
    expected = 0.5 * (
        (u[OWN, OWN, OWN] - u[DOWN, OWN, OWN]) / DX
        + (q[OWN, OWN, OWN] - q[OWN, DOWN, OWN]) / (rc * width)
        + (w[OWN, OWN, OWN] - w[OWN, OWN, DOWN]) / (rc * DT)
    )
    assert close(stencils.divergence(u, q, w, m, DX, DT, 0.5), expected)
    rows = np.empty(expected.shape[:2])
    stencils.divergence(u, q, w, m, DX, DT, 0.5, rows=rows)  # the bulk's parts, same pass
    assert close(rows, u[OWN, OWN, OWN].sum(axis=2))
    reference = [field.copy() for field in (u, q, w)]
    centre = p[OWN, OWN, OWN]
    reference[0][OWN, OWN, OWN] -= 0.3 * (p[UP, OWN, OWN] - centre) / DX
    reference[1][OWN, 1:-2, OWN] -= (
        0.3 * m.face[:, 1:-2] * (p[OWN, 2:-1, OWN] - p[OWN, 1:-2, OWN]) / m.gap[:, 1:-2]
    )
    reference[2][OWN, OWN, OWN] -= 0.3 * (p[OWN, OWN, UP] - centre) / (m.centre[:, OWN] * DT)
    shift = np.linspace(-1.0, 1.0, u.shape[1] - 2)  # the flow-rate force's, same pass
    reference[0][OWN, OWN, OWN] += shift[None, :, None]
    total = np.ones(centre.shape)  # the step's pressure, same pass
    stencils.subtract_gradient(u, q, w, p, m, DX, DT, 0.3, shift, total, 0.37)
    for result, expected in zip((u, q, w), reference, strict=True):
        assert close(result, expected)
    assert np.array_equal(total, 1.0 + 0.37 * centre)
    stencils.subtract_gradient(u, q, w, p, m, DX, DT, 0.0, None, total, 0.37, fresh=True)
    assert np.array_equal(total, 0.37 * centre)  # the last step's replaced


def viscous_reference(u, q, w, m, omega, core):
    """The six viscous operators of u, q, w (explicit: axial second derivative and θ
    couplings; implicit: radial second derivative), θ second derivative on the first
    ``core`` rows implicit, explicit beyond."""
    rc, rf, width, gap = m.centre, m.face, m.width, m.gap
    rc_i, width_i = rc[:, OWN], width[:, OWN]
    rf_i, rf_d, gap_i, gap_d = rf[:, OWN], rf[:, DOWN], gap[:, OWN], gap[:, DOWN]

    def along_x(f):
        return (f[UP, OWN, OWN] - 2 * f[OWN, OWN, OWN] + f[DOWN, OWN, OWN]) / DX**2

    def along_theta(f):
        return f[OWN, OWN, UP] - 2 * f[OWN, OWN, OWN] + f[OWN, OWN, DOWN]

    radial_u = (
        rf_i * (u[OWN, UP, OWN] - u[OWN, OWN, OWN]) / gap_i
        - rf_d * (u[OWN, OWN, OWN] - u[OWN, DOWN, OWN]) / gap_d
    ) / (rc_i * width_i)
    outer = (q[OWN, UP, OWN] - q[OWN, OWN, OWN]) / (rc[:, UP] * width[:, UP])
    inner = (q[OWN, OWN, OWN] - q[OWN, DOWN, OWN]) / (rc_i * width_i)
    radial_q = rf_i * (outer - inner) / gap_i
    above = (rc[:, UP] * w[OWN, UP, OWN] - rc_i * w[OWN, OWN, OWN]) / (rf_i * gap_i)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = (rc_i * w[OWN, OWN, OWN] - rc[:, DOWN] * w[OWN, DOWN, OWN]) / (rf_d * gap_d)
    if omega is not None:
        below[:, 0, :] = omega[:, None]
    radial_w = (above - below) / width_i
    swirl = 0.5 * (w[OWN, OWN, OWN] - w[OWN, OWN, DOWN] + w[OWN, UP, OWN] - w[OWN, UP, DOWN]) / DT
    radial_mean = 0.5 * (q[OWN, OWN, :] + q[OWN, DOWN, :])
    coupling_w = 2.0 * (radial_mean[:, :, 2:] - radial_mean[:, :, 1:-1]) / (DT * rc_i**3)
    explicit = [along_x(u), along_x(q) - 2.0 * swirl / rf_i, along_x(w) + coupling_w]
    implicit = [radial_u, radial_q, radial_w]
    thetas = [
        along_theta(u) / (rc_i**2 * DT**2),
        along_theta(q) / (rf_i**2 * DT**2),
        along_theta(w) / (rc_i**2 * DT**2),
    ]
    for index, theta in enumerate(thetas):
        implicit[index][:, :core] += theta[:, :core]
        explicit[index][:, core:] += theta[:, core:]
    return np.array(explicit), np.array(implicit)


@pytest.mark.parametrize("geometry", sorted(GRIDS))
@pytest.mark.parametrize("core", [6, 2])
def test_the_fused_viscous_kernel_equals_the_numpy_operators(geometry, core):
    grid = GRIDS[geometry]
    (u, q, w, _), m = fields(grid, seed=1)
    omega = np.linspace(-1.0, 2.0, grid.shape[0]) if grid.through_axis else None
    explicit_ref, implicit_ref = viscous_reference(u, q, w, m, omega, core)
    advection = np.random.default_rng(2).standard_normal(explicit_ref.shape)
    explicit = advection.copy()
    implicit = stencils.add_viscous(u, q, w, m, DX, DT, omega, core, 0.7, explicit)
    assert close(explicit, advection + 0.7 * explicit_ref)
    assert close(implicit, 0.7 * implicit_ref)


def test_a_factored_periodic_diffusion_solves_every_right_hand_side_exactly():
    n = 7
    coupling = np.array([0.0, 0.01, 3.0, 250.0, 0.0])  # explicit rows: the identity
    operator = FactoredPeriodicDiffusion(coupling, n)
    shift = np.roll(np.eye(n), 1, axis=1) + np.roll(np.eye(n), -1, axis=1)
    rng = np.random.default_rng(4)
    for _ in range(2):  # factorised once, solved for several right-hand sides
        rhs = rng.standard_normal((3, len(coupling), n))
        result = operator.solve(rhs.copy())
        for j, c in enumerate(coupling):
            matrix = (1 + 2 * c) * np.eye(n) - c * shift
            assert np.abs(result[:, j] @ matrix.T - rhs[:, j]).max() < 1e-12
    with pytest.raises(ValueError, match="expected"):
        operator.solve(np.zeros((2, 4, n)))
    with pytest.raises(ValueError, match="at least 3 unknowns"):
        FactoredPeriodicDiffusion(coupling, 2)


@pytest.mark.parametrize("geometry", sorted(GRIDS))
def test_convective_rate_equals_the_numpy_formula_on_centred_velocities(geometry):
    grid = GRIDS[geometry]
    (u, q, w, _), _ = fields(grid)
    radii, widths = grid.centres_y, grid.widths_y
    centred = (
        0.5 * (u[OWN, OWN, OWN] + u[DOWN, OWN, OWN]),
        0.5 * (q[OWN, OWN, OWN] + q[OWN, DOWN, OWN]) / radii[None, :, None],
        0.5 * (w[OWN, OWN, OWN] + w[OWN, OWN, DOWN]),
    )
    expected = (
        np.abs(centred[0]) / DX
        + np.abs(centred[1]) / widths[None, :, None]
        + np.abs(centred[2]) / (radii[None, :, None] * DT)
    ).max()
    rate = stencils.convective_rate(u, q, w, radii, widths, DX, DT)
    assert rate == pytest.approx(expected, rel=1e-14)
    q[3, 0, 4] = np.nan  # a ghost face: its cell's centred value is NaN
    assert np.isnan(stencils.convective_rate(u, q, w, radii, widths, DX, DT))
    with pytest.raises(ValueError, match="radii, widths of 6 rows"):
        stencils.convective_rate(u, q, w, radii[:-1], widths, DX, DT)


def test_kernels_fill_given_work_arrays_and_refuse_wrong_ones():
    (u, q, w, _), m = fields(GRIDS["pipe"], seed=5)
    fresh = stencils.advection(u, q, w, m, DX, DT, 0.4)
    out = np.full_like(fresh, np.nan)
    assert stencils.advection(u, q, w, m, DX, DT, 0.4, out=out) is out
    assert np.array_equal(out, fresh)
    divergence = np.empty(fresh.shape[1:])
    result = stencils.divergence(u, q, w, m, DX, DT, out=divergence)
    assert result is divergence and np.array_equal(result, stencils.divergence(u, q, w, m, DX, DT))
    with pytest.raises(ValueError, match="C-contiguous float64 array of shape"):
        stencils.advection(u, q, w, m, DX, DT, 0.4, out=out[:, :, :, ::2])
    with pytest.raises(ValueError, match="C-contiguous float64 array of shape"):
        stencils.add_viscous(u, q, w, m, DX, DT, None, -1, 1.0, out, np.empty((3, 1, 1, 1)))
