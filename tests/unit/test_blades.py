"""Fan blades as closed triangulated surfaces: NACA sections wrapped onto cylinders."""

import math

import numpy as np
import pytest

from tachyflow.numerics.blades import BladeDesign, naca4_outline

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


@pytest.mark.parametrize("hand", [1, -1])
def test_a_blade_is_watertight_with_the_volume_of_its_sections(hand):
    design = BladeDesign(0.35, 0.95, chord=(0.3, 0.2), stagger=(40.0, 60.0), camber=(0.04, 0.0),
                         thickness=0.1, sweep=10.0, centre=1.0, angle=0.6, hand=hand,
                         stations=20, points=60)  # fmt: skip
    mesh = design.surface()
    assert mesh.is_watertight and mesh.is_volume
    radii = np.linspace(0.35, 0.95, 400)
    fractions = (radii - 0.35) / 0.6
    chords = 0.3 - 0.1 * fractions
    areas = [shoelace(naca4_outline(0.04 * (1 - f), 0.4, 0.1, 60)) * c**2
             for f, c in zip(fractions, chords, strict=True)]  # fmt: skip
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
