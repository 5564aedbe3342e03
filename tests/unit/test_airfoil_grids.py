"""Airfoil sections, stretchings and the C- and H-grids of the compressible RANS solver."""

import numpy as np
import pytest

from tachyflow.numerics.airfoil_grids import (
    StructuredGrid,
    c_grid,
    flat_plate_h_grid,
    grid_quality,
)
from tachyflow.numerics.airfoils import naca4, rae2822
from tachyflow.numerics.stretching import (
    flat_plate_skin_friction,
    one_sided_stretching,
    two_sided_stretching,
    wall_spacing_for_yplus,
)


@pytest.fixture(scope="module")
def rae_family():
    """Levels -1 (560 x 128), 0 (280 x 64), 1 and 2 of the default RAE 2822 family."""
    section = rae2822()
    return {level: c_grid(section, level=level) for level in (-1, 0, 1, 2)}


def test_naca0012_thickness_symmetry_and_trailing_edge():
    section = naca4("0012", points=401)
    thickness, at = section.max_thickness()
    assert thickness == pytest.approx(0.12, abs=2e-4)
    assert at == pytest.approx(0.30, abs=0.01)
    np.testing.assert_allclose(section.lower[:, 1], -section.upper[:, 1], atol=1e-15)
    assert section.trailing_edge_gap == 0.0
    # The published coefficient 0.1015 leaves 10 t (0.2969 - 0.1260 - 0.3516 + 0.2843
    # - 0.1015) = 0.00252 at t = 0.12.
    assert naca4("0012", closed_trailing_edge=False).trailing_edge_gap == pytest.approx(
        0.00252, rel=1e-3
    )


def test_naca2412_camber_line():
    section = naca4("2412", points=801)
    mean = 0.5 * (section.upper + section.lower)  # midpoints lie on the camber line
    k = np.argmin(np.abs(mean[:, 0] - 0.4))
    assert mean[k, 1] == pytest.approx(0.02, abs=2e-5)


@pytest.mark.parametrize("code", ["012", "00a2", "0000", 12])
def test_naca4_bad_codes(code):
    with pytest.raises(ValueError, match="NACA"):
        naca4(code)


def test_rae2822_table():
    section = rae2822()
    assert len(section.upper) == len(section.lower) == 65
    np.testing.assert_array_equal(section.upper[0], [0.0, 0.0])
    assert section.trailing_edge_gap == 0.0
    thickness, at = section.max_thickness()
    assert thickness == pytest.approx(0.1211, abs=2e-4)  # AGARD AR-138: a 12.1 % section
    assert at == pytest.approx(0.38, abs=0.015)
    assert section.thickness(0.378510) == pytest.approx(0.062133 + 0.058974)


def test_stretchings_hit_their_end_spacings_and_nest():
    one = one_sided_stretching(64, 1e-7)
    assert one[1] == pytest.approx(1e-7, rel=1e-6)
    assert np.all(np.diff(one) > 0) and one[-1] == 1.0
    np.testing.assert_array_equal(one_sided_stretching(64, 1e-7, refinement=2)[::4], one)
    two = two_sided_stretching(50, 0.002, 0.01)
    assert two[1] == pytest.approx(0.002, rel=1e-9)
    assert 1.0 - two[-2] == pytest.approx(0.01, rel=1e-9)
    # Spacings larger than uniform take the tangent branch.
    assert one_sided_stretching(10, 0.2)[1] == pytest.approx(0.2, rel=1e-9)
    with pytest.raises(ValueError, match="first spacing must be a fraction"):
        one_sided_stretching(10, 1.5)


def test_wall_spacing_for_yplus():
    # Schlichting's Cf at Re = 6.5e6 is 2.75e-3, so dy = 1 / (Re sqrt(Cf / 2)) = 4.15e-6.
    assert flat_plate_skin_friction(6.5e6) == pytest.approx(2.75e-3, rel=5e-3)
    assert wall_spacing_for_yplus(6.5e6) == pytest.approx(4.15e-6, rel=5e-3)
    assert wall_spacing_for_yplus(6.5e6, yplus=2.0) == pytest.approx(
        2 * wall_spacing_for_yplus(6.5e6)
    )
    with pytest.raises(ValueError, match="Reynolds number"):
        wall_spacing_for_yplus(10.0)
    with pytest.raises(ValueError, match="y\\+ must be positive"):
        wall_spacing_for_yplus(1e6, yplus=0.0)


def test_c_grid_cells_wake_cut_and_outflow(rae_family):
    grid = rae_family[0]
    ni, nj = grid.cells
    assert (ni, nj) == (280, 64) and grid.x.shape == (281, 65)
    assert grid.wake_cells == 40 and grid.wall == (40, 240)
    wake = np.arange(grid.wake_cells + 1)
    # Lower and upper branches of the cut: the very same nodes, bit for bit.
    np.testing.assert_array_equal(grid.x[wake, 0], grid.x[ni - wake, 0])
    np.testing.assert_array_equal(grid.y[wake, 0], grid.y[ni - wake, 0])
    assert grid.x[0, 0] == pytest.approx(51.0) and grid.x[40, 0] == pytest.approx(1.0)
    # The wall nodes are the section: the leading edge in the middle, on the airfoil.
    assert grid.x[140, 0] == pytest.approx(0.0, abs=1e-6)
    # Away from the leading edge (where a linear reading of the table is too coarse) the
    # wall nodes lie on the tabulated upper surface.
    upper = rae2822().upper
    aft = grid.x[141:240, 0] > 0.02
    np.testing.assert_allclose(
        grid.y[141:240, 0][aft],
        np.interp(grid.x[141:240, 0][aft], upper[:, 0], upper[:, 1]),
        atol=1e-4,
    )


def test_c_grid_quality_of_every_level(rae_family):
    for level, grid in rae_family.items():
        quality = grid_quality(grid)
        assert quality.min_area > 0, level
        assert quality.min_corner_ratio > 0.8, level  # no corner below 53 degrees
        assert quality.far_field_distance >= 50.0, level
    quality = grid_quality(rae_family[0])
    assert quality.max_skew_degrees < 10
    assert quality.max_wall_angle_error_degrees < 1.0
    assert quality.max_stretching_j < 1.3


def test_c_grid_wall_spacing_is_the_one_asked(rae_family):
    asked = wall_spacing_for_yplus(6.5e6)
    quality = grid_quality(rae_family[0])
    assert quality.wall_spacing_max == pytest.approx(asked, rel=2e-3)
    assert quality.wall_spacing_min > 0.95 * asked  # marching squeezes concave corners
    spaced = c_grid(naca4("0012"), cells=(64, 16), wake_cells=8, wall_spacing=1e-4)
    assert grid_quality(spaced).wall_spacing_max == pytest.approx(1e-4, rel=2e-3)


def test_c_grid_levels_nest(rae_family):
    for level in (-1, 0, 1):
        coarse, fine = rae_family[level + 1], rae_family[level]
        np.testing.assert_array_equal(coarse.x, fine.x[::2, ::2])
        np.testing.assert_array_equal(coarse.y, fine.y[::2, ::2])
        assert coarse.wake_cells * 2 == fine.wake_cells


def test_c_grid_bad_input():
    section = naca4("0012")
    with pytest.raises(ValueError, match="trailing-edge gap"):
        c_grid(naca4("0012", closed_trailing_edge=False))
    with pytest.raises(ValueError, match="wake_cells must be in"):
        c_grid(section, cells=(40, 8), wake_cells=20)
    with pytest.raises(ValueError, match="must be even"):
        c_grid(section, cells=(41, 8), wake_cells=10)
    with pytest.raises(ValueError, match="level -2 must be >= finest_level -1"):
        c_grid(section, level=-2)
    with pytest.raises(ValueError, match="cells must be two integers"):
        c_grid(section, cells=(40, 1))
    grid = c_grid(section, cells=(40, 6), wake_cells=10, finest_level=0)
    with pytest.raises(ValueError, match="nj = 6, wake cells = 10, wall start = 10 not divisible"):
        grid.coarsened(2)


def test_flat_plate_h_grid():
    grid = flat_plate_h_grid(cells=(48, 32), upstream_cells=12, wall_spacing=1e-5)
    assert grid.x.shape == (49, 33) and grid.wall == (12, 48) and grid.wake_cells == 0
    assert grid.x[12, 0] == 0.0 and grid.x[0, 0] == pytest.approx(-1 / 3)
    assert grid.x[-1, 0] == pytest.approx(2.0) and grid.y[0, -1] == pytest.approx(1.0)
    quality = grid_quality(grid)
    assert quality.min_area > 0 and quality.max_skew_degrees == pytest.approx(0, abs=1e-9)
    assert quality.wall_spacing_min == pytest.approx(1e-5, rel=1e-6)
    with pytest.raises(ValueError, match="upstream_cells must be in"):
        flat_plate_h_grid(cells=(8, 8), upstream_cells=8)


def test_cell_areas_sum_to_the_domain():
    x, y = np.meshgrid([0.0, 1.0, 3.0], [0.0, 2.0], indexing="ij")
    grid = StructuredGrid(x, y, wake_cells=0, wall=(0, 2))
    np.testing.assert_allclose(grid.cell_areas(), [[2.0], [4.0]])


def test_c_grid_refuses_a_folded_march(monkeypatch):
    from tachyflow.numerics import airfoil_grids

    march = airfoil_grids._march

    def folded(curve, heights, smoothing):
        layers = march(curve, heights, smoothing)
        return (layers[0], *(curve - (layer - curve) for layer in layers[1:]))  # inward

    monkeypatch.setattr(airfoil_grids, "_march", folded)
    with pytest.raises(ValueError, match="the marched grid folds"):
        c_grid(naca4("0012"), cells=(32, 8), wake_cells=8, far_field=3.0)


def test_opened_wake_keeps_the_cut_and_the_airfoil_lines_and_grows_the_first_height():
    section = rae2822()
    marched = c_grid(section, cells=(140, 32), wake_cells=20, far_field=20.0, wall_spacing=2e-6)
    opened = c_grid(section, cells=(140, 32), wake_cells=20, far_field=20.0, wall_spacing=2e-6,
                    wake_aspect_ratio=30.0)
    nj = opened.cells[1]
    # The cut, the airfoil's lines and the outer half of every line are the marched ones.
    np.testing.assert_array_equal(opened.x[:, 0], marched.x[:, 0])
    np.testing.assert_array_equal(opened.x[20:121], marched.x[20:121])
    np.testing.assert_array_equal(opened.y[:, nj // 2 :], marched.y[:, nj // 2 :])
    assert grid_quality(opened).min_area > 0
    # Along the lower side of the cut, from the trailing edge (node 20) to the outflow, the
    # first height grows from the wall spacing, at most doubling per cell.
    height = np.hypot(opened.x[:21, 1] - opened.x[:21, 0], opened.y[:21, 1] - opened.y[:21, 0])
    assert height[20] == pytest.approx(2e-6, rel=1e-2)
    growth = height[:-1] / height[1:]
    assert np.all(growth >= 1.0 - 1e-9) and np.all(growth <= 2.0 + 1e-6)
    assert height[0] > 50 * height[20]
    length = np.hypot(np.diff(opened.x[:21, 0]), np.diff(opened.y[:21, 0]))
    assert np.all(length / height[:-1] >= 30.0 * (1 - 1e-9))
    with pytest.raises(ValueError, match="wake_aspect_ratio must be >= 1"):
        c_grid(section, cells=(40, 8), wake_cells=10, wake_aspect_ratio=0.5)
