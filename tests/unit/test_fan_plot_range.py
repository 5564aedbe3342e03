"""The fan's load-history plot fits its axes to the averaging window, so a start-up spike
does not squash what is averaged."""

import numpy as np
import pytest

from tachyflow.observers.fan import window_range


def test_the_axes_fit_the_window_not_the_start_up_spike():
    values = np.concatenate([[50.0, -30.0], np.linspace(1.0, 1.2, 10)])
    low, high = window_range(values, 2)
    assert (low, high) == pytest.approx((0.9, 1.3))  # the window's 0.2, half of it beyond
    assert values.max() > high and values.min() < low


def test_a_constant_or_empty_window_still_has_a_range():
    assert window_range(np.array([3.0, 2.0, 2.0]), 1) == pytest.approx((1.0, 3.0))
    assert window_range(np.array([np.nan, np.nan]), 0) == (-1.0, 1.0)
