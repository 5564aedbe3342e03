"""The fan's averaging window (the second half, or from ``[fan] average_from``) and its
load-history plot, whose axes fit the window so that a start-up spike does not squash
what is averaged."""

import numpy as np
import pytest

from tachyflow.observers.fan import averaging_start, window_range


def test_the_axes_fit_the_window_not_the_start_up_spike():
    values = np.concatenate([[50.0, -30.0], np.linspace(1.0, 1.2, 10)])
    low, high = window_range(values, 2)
    assert (low, high) == pytest.approx((0.9, 1.3))  # the window's 0.2, half of it beyond
    assert values.max() > high and values.min() < low


def test_a_constant_or_empty_window_still_has_a_range():
    assert window_range(np.array([3.0, 2.0, 2.0]), 1) == pytest.approx((1.0, 3.0))
    assert window_range(np.array([np.nan, np.nan]), 0) == (-1.0, 1.0)


def test_the_window_starts_at_average_from_or_else_at_the_second_half():
    times = [0.01 * step for step in range(10)]
    assert averaging_start(times, 0.0) == 5
    assert averaging_start(times, 0.025) == 3  # the first record at or after it
    assert averaging_start(times, 0.03) == 3
    assert averaging_start(times, 1.0) == 5  # nothing after it: the second half
    assert averaging_start([], 0.5) == 0
