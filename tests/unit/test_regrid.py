"""Linear interpolation between tensor-product grids: weights on bounded and periodic
axes, the index ranges a piece needs, and exactness on linear fields."""

import numpy as np
import pytest

from tachyflow.numerics import regrid


def test_bounded_axes_extend_their_end_intervals():
    old = np.array([0.5, 1.5, 2.5, 3.5])
    lower, upper, weight = regrid.axis_weights(old, np.array([0.0, 1.0, 3.5, 4.0]))
    np.testing.assert_array_equal(lower, [0, 0, 2, 2])
    np.testing.assert_array_equal(upper, [1, 1, 3, 3])
    np.testing.assert_allclose(weight, [-0.5, 0.5, 1.0, 1.5])  # beyond the ends: extrapolated


def test_periodic_axes_wrap():
    old = (np.arange(4) + 0.5) * 0.25  # cell centres of a period of 1
    lower, upper, weight = regrid.axis_weights(old, np.array([0.05, 0.5, 0.95]), period=1.0)
    np.testing.assert_array_equal(lower, [3, 1, 3])
    np.testing.assert_array_equal(upper, [0, 2, 0])
    np.testing.assert_allclose(weight, [0.7, 0.5, 0.3])
    assert regrid.index_ranges(lower, upper, 4)[0] == [(0, 4)]  # every point: one range
    ranges, position = regrid.index_ranges(lower[[0, 2]], upper[[0, 2]], 4)
    assert ranges == [(3, 4), (0, 1)]  # wrapped: two ranges
    np.testing.assert_array_equal(position, [1, -1, -1, 0])
    ranges, position = regrid.index_ranges(np.array([1]), np.array([2]), 4)
    assert ranges == [(1, 3)] and position.tolist() == [-1, 0, 1, -1]
    assert regrid.index_ranges(np.array([], int), np.array([], int), 4)[0] == []


def test_a_linear_field_is_interpolated_exactly():
    old_axes = [np.linspace(0, 1, 5), np.array([0.0, 0.1, 0.4, 1.0]), np.linspace(0, 2, 3)]
    new_axes = [np.linspace(-0.1, 1.1, 7), np.linspace(0, 1, 6), np.array([0.3, 1.9])]

    def field(x, y, z):
        return 1.0 + 2 * x - 3 * y + 0.5 * z

    old = field(*np.meshgrid(*old_axes, indexing="ij"))
    axes = []
    for old_axis, new_axis in zip(old_axes, new_axes, strict=True):
        lower, upper, weight = regrid.axis_weights(old_axis, new_axis)
        ranges, position = regrid.index_ranges(lower, upper, len(old_axis))
        axes.append((lower, upper, weight, position))
        assert len(ranges) == 1
    window = old[tuple(slice(*regrid.index_ranges(a[0], a[1], len(o))[0][0])
                       for a, o in zip(axes, old_axes, strict=True))]
    values = regrid.interpolate(window, axes)
    np.testing.assert_allclose(values, field(*np.meshgrid(*new_axes, indexing="ij")),
                               atol=1e-14)


def test_bad_axes_are_refused():
    with pytest.raises(ValueError, match="a bounded axis needs 2 old points"):
        regrid.axis_weights(np.array([1.0]), np.array([0.5]))
    with pytest.raises(ValueError, match="period must be positive"):
        regrid.axis_weights(np.array([1.0, 2.0]), np.array([0.5]), period=0.0)
