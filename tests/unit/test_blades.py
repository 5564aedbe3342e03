"""Fan blades as closed triangulated surfaces: NACA 4-digit and 65-series sections wrapped
onto cylinders; the 65-series thickness and mean line against the published tables."""

import math

import numpy as np
import pytest

from tachyflow.numerics.airfoils import (
    a10_mean_line,
    naca65_010_half_thickness,
    naca65_010_ordinates,
    naca65_surfaces,
)
from tachyflow.numerics.blades import SECTIONS, BladeDesign, naca4_outline, naca65_outline

trimesh = pytest.importorskip("trimesh")


def shoelace(outline: np.ndarray) -> float:
    x, y = outline.T
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def test_a_naca_section_has_the_published_area_and_thickness():
    outline = naca4_outline(0.0, 0.4, 0.12, 200)
    assert shoelace(outline) == pytest.approx(0.685 * 0.12, rel=0.01)  # NACA 0012
    assert 2 * outline[:, 1].max() == pytest.approx(0.12, rel=0.01)
    cambered = naca4_outline(0.04, 0.4, 0.12, 200)
    assert cambered[:, 1].mean() > 0.01  # NACA 4412 lies above its chord


# Abbott & von Doenhoff, "Theory of Wing Sections", Appendix II: the a = 1.0 mean line for
# c_li = 1, stations and ordinates in per cent of the chord (symmetric about 50 %).
A10_TABLE = [(0.5, 0.250), (0.75, 0.350), (1.25, 0.535), (2.5, 0.930), (5.0, 1.580),
             (7.5, 2.120), (10.0, 2.587), (15.0, 3.365), (20.0, 3.982), (25.0, 4.475),
             (30.0, 4.861), (35.0, 5.152), (40.0, 5.356), (45.0, 5.476),
             (50.0, 5.516)]


def test_the_naca65_010_form_keeps_the_published_ordinates():
    table = naca65_010_ordinates()
    assert table.shape == (26, 2) and table[0, 1] == table[-1, 1] == 0.0
    assert np.abs(naca65_010_half_thickness(table[:, 0]) - table[:, 1]).max() < 1e-12
    x = np.linspace(0.0, 1.0, 4001)
    half = naca65_010_half_thickness(x)
    assert 2 * half.max() == pytest.approx(0.10, abs=2e-4)  # 10 % thick at about 40 %
    assert 0.35 < x[np.argmax(half)] < 0.45
    assert np.all(half[1:-1] > 0)
    # The nose: y_t -> sqrt(2 ρ x), the published radius ρ = 0.687 % of the chord.
    assert half[1] / np.sqrt(x[1]) == pytest.approx(np.sqrt(2 * 0.00687), rel=0.02)


def test_the_a10_mean_line_is_the_published_one():
    stations, ordinates = np.array(A10_TABLE).T / 100
    mean, slope = a10_mean_line(stations, 1.0)
    assert np.abs(mean - ordinates).max() < 2e-5  # the table's last digit
    mirrored, _ = a10_mean_line(1 - stations, 1.0)
    assert np.allclose(mirrored, mean, atol=1e-15)
    # The slope is the derivative of the ordinate, and the design lift scales both.
    step = 1e-6
    ahead, _ = a10_mean_line(stations + step, 1.0)
    behind, _ = a10_mean_line(stations - step, 1.0)
    assert np.allclose((ahead - behind) / (2 * step), slope, rtol=1e-6, atol=1e-9)
    assert np.allclose(a10_mean_line(stations, 1.8)[0], 1.8 * mean)


@pytest.mark.parametrize("design_lift, thickness", [(0.0, 0.10), (1.2, 0.10), (0.8, 0.06)])
def test_a_naca65_section_is_its_thickness_on_its_mean_line(design_lift, thickness):
    upper, lower = naca65_surfaces(design_lift, thickness, 81)
    x = 0.5 * (1 - np.cos(np.linspace(0, np.pi, 81)))
    # Upper and lower points of one station straddle the mean line, a thickness apart,
    # along its normal.
    middle = 0.5 * (upper + lower)
    mean, slope = a10_mean_line(x, design_lift)
    assert np.allclose(middle[:, 0], x, atol=1e-15)
    assert np.allclose(middle[:, 1], mean, atol=1e-15)
    across = upper - lower
    half = naca65_010_half_thickness(x) * thickness / 0.10
    assert np.allclose(0.5 * np.hypot(*across.T), half, atol=1e-15)
    assert np.allclose(across[1:-1, 0] + slope[1:-1] * across[1:-1, 1], 0.0, atol=1e-12)
    assert np.array_equal(upper[[0, -1]], [[0, 0], [1, 0]])  # closed at both edges
    assert np.array_equal(lower[[0, -1]], [[0, 0], [1, 0]])
    if design_lift == 0.0:  # the 65-010 itself: through the table's stations
        table = naca65_010_ordinates()
        assert np.allclose(np.interp(table[:, 0], x, upper[:, 1]), table[:, 1], atol=2e-4)


@pytest.mark.parametrize("hand, section", [(1, "naca4"), (-1, "naca4"), (1, "naca65")])
def test_a_blade_is_watertight_with_the_volume_of_its_sections(hand, section):
    design = BladeDesign(0.35, 0.95, chord=(0.3, 0.2), stagger=(40.0, 60.0), camber=(0.04, 0.0),
                         design_lift=(1.2, 0.4), section=section, thickness=0.1, sweep=10.0,
                         centre=1.0, angle=0.6, hand=hand, stations=20, points=60)
    mesh = design.surface()
    assert mesh.is_watertight and mesh.is_volume
    radii = np.linspace(0.35, 0.95, 400)
    fractions = (radii - 0.35) / 0.6
    chords = 0.3 - 0.1 * fractions
    outlines = {
        "naca4": lambda f: naca4_outline(0.04 * (1 - f), 0.4, 0.1, 60),
        "naca65": lambda f: naca65_outline(1.2 - 0.8 * f, 0.1, 60),
    }
    areas = [shoelace(outlines[section](f)) * c**2 for f, c in zip(fractions, chords, strict=True)]
    assert mesh.volume == pytest.approx(np.trapezoid(areas, radii), rel=0.01)
    # The root's quarter chord sits at (centre, angle); the hand mirrors the blade in θ.
    x, y, z = mesh.vertices.T
    root = np.isclose(np.hypot(y, z), 0.35)
    theta = np.arctan2(z[root], y[root])
    assert np.median(theta) == pytest.approx(0.6, abs=0.2)
    leading = np.argmin(x[root])
    assert math.copysign(1, theta[leading] - 0.6) == -hand


def test_bad_blades_are_refused():
    with pytest.raises(ValueError, match="root < tip"):
        BladeDesign(0.9, 0.5)
    with pytest.raises(ValueError, match="chord must be positive"):
        BladeDesign(0.3, 0.9, chord=(0.2, -0.1))
    with pytest.raises(ValueError, match="hand must be 1 or -1"):
        BladeDesign(0.3, 0.9, hand=0)
    with pytest.raises(ValueError, match=r"one of \['naca4', 'naca65'\], got 'naca66'"):
        BladeDesign(0.3, 0.9, section="naca66")
    with pytest.raises(ValueError, match="design lift coefficients must be in"):
        BladeDesign(0.3, 0.9, section="naca65", design_lift=(1.0, -0.5))
    assert sorted(SECTIONS) == ["naca4", "naca65"]
