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


def test_a_checkpoint_of_an_earlier_fan_record_restarts_with_a_warning():
    """A record of other columns (the version before the total pressures had 7 of them)
    is dropped with a warning instead of ending the restart in a ValueError."""
    from types import SimpleNamespace

    from tachyflow.observers import ObserverState
    from tachyflow.observers.fan import PERFORMANCE, FanPerformance

    fan = FanPerformance.__new__(FanPerformance)
    state = ObserverState(replicated={"performance": np.zeros((3, 8))})
    with pytest.warns(UserWarning, match="has 8 columns, not 12"):
        fan.restore_state(SimpleNamespace(root=True), state)
    assert fan._history == []
    current = ObserverState(replicated={"performance": np.ones((2, 1 + len(PERFORMANCE)))})
    fan.restore_state(SimpleNamespace(root=True), current)
    assert len(fan._history) == 2 and fan._history[0]["total_to_static"] == 1.0
