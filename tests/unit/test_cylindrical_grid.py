"""Radial faces of the cylindrical grid: clustered towards the walls or fine about the axis."""

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.cylindrical_grid import CylindricalGrid, radial_faces


def test_faces_fine_about_the_axis_grow_like_the_distance_from_a_core():
    cells, outer, stretching = 200, 10.0, 2.31
    faces = radial_faces(cells, 0.0, outer, stretching, "axis")
    assert faces[0] == 0.0 and faces[-1] == pytest.approx(outer, rel=1e-15)
    widths, centres = np.diff(faces), 0.5 * (faces[1:] + faces[:-1])
    assert np.all(widths > 0)
    core = outer / np.sinh(stretching)
    expected = stretching / cells * np.sqrt(core**2 + centres**2)
    assert np.allclose(widths, expected, rtol=1e-3)  # the midpoint rule of r'(ξ)
    assert np.abs(widths[1:] / widths[:-1] - 1).max() < stretching / cells  # smooth
    # The walls' clustering is untouched, and no stretching is uniform either way.
    assert np.allclose(radial_faces(8, 0.0, 1.0, 0.0, "axis"), np.linspace(0, 1, 9))
    walls = radial_faces(8, 0.0, 1.0, 1.5)
    assert np.diff(walls)[-1] < np.diff(walls)[0]
    grid = CylindricalGrid((4, cells, 1), 16.0, outer, stretching=stretching, clustering="axis")
    assert np.array_equal(grid.faces_y, faces)


def test_bad_clustering_is_refused():
    with pytest.raises(ValueError, match="clustering must be one of"):
        radial_faces(8, 0.0, 1.0, 1.0, "middle")
    with pytest.raises(ValueError, match="towards the axis needs inner_radius = 0"):
        CylindricalGrid((4, 8, 4), 1.0, 1.0, inner_radius=0.3, stretching=1.0,
                        clustering="axis")
    text = """
[case]
solver = "cylindrical"
[cylinder]
inner_radius = 0.3
clustering = "axis"
"""
    with pytest.raises(ConfigError, match=r"'cylinder\.clustering' must be 'walls', or 'axis'"):
        config.parse(text, "pipe.toml")
