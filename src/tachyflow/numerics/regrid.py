"""Linear interpolation between tensor-product grids, one axis at a time (MPI-free): what
a restart onto another grid needs from the checkpoint of the first.

Along each axis a new point takes the two old points around it (:func:`axis_weights`):
periodically wrapped where the axis is periodic, else the end intervals extended (linear
extrapolation, so a value beyond the last old point follows the slope there, as a
velocity towards a no-slip wall). The old points a piece of new points needs form at
most two contiguous index ranges per axis (two where a periodic axis wraps:
:func:`index_ranges`); :func:`interpolate` combines a window of old values read as those
ranges, laid end to end.
"""

from __future__ import annotations

import numpy as np


def axis_weights(old: np.ndarray, new: np.ndarray, period: float | None = None):
    """``(lower, upper, weight)`` per new point: the old indices either side and the
    weight of the upper one (``value = (1 - w) old[lower] + w old[upper]``). ``old``
    increases; ``period``: the axis's period when periodic (the old points then repeat
    ``period`` apart), None when bounded (the end intervals extended)."""
    old, new = np.asarray(old, dtype=np.float64), np.asarray(new, dtype=np.float64)
    count = len(old)
    if period is None:
        if count < 2:
            raise ValueError(f"a bounded axis needs 2 old points or more, got {count}")
        lower = np.clip(np.searchsorted(old, new, side="right") - 1, 0, count - 2)
        upper = lower + 1
        return lower, upper, (new - old[lower]) / (old[upper] - old[lower])
    if not period > 0:
        raise ValueError(f"period must be positive, got {period!r}")
    wrapped = old[0] + np.mod(new - old[0], period)
    lower = np.clip(np.searchsorted(old, wrapped, side="right") - 1, 0, count - 1)
    upper = (lower + 1) % count
    above = np.where(lower == count - 1, old[0] + period, old[np.minimum(lower + 1, count - 1)])
    return lower, upper, (wrapped - old[lower]) / (above - old[lower])


def index_ranges(lower: np.ndarray, upper: np.ndarray, count: int):
    """The old indices ``lower`` and ``upper`` need, as at most two ``(start, stop)``
    ranges (two where they wrap round the end of a periodic axis of ``count`` points),
    and each old index's position in the ranges laid end to end (-1: not needed)."""
    needed = np.zeros(count, dtype=bool)
    needed[np.asarray(lower)] = needed[np.asarray(upper)] = True
    found = np.flatnonzero(needed)
    if found.size == 0:
        return [], np.full(count, -1)
    if found[-1] - found[0] + 1 == found.size:  # one run of indices
        ranges = [(int(found[0]), int(found[-1]) + 1)]
    else:  # wrapped: the gap is the one stretch not needed
        gap = int(np.argmax(np.diff(found)))
        ranges = [(int(found[gap + 1]), count), (0, int(found[gap]) + 1)]
    position = np.full(count, -1)
    offset = 0
    for start, stop in ranges:
        position[start:stop] = np.arange(offset, offset + stop - start)
        offset += stop - start
    return ranges, position


def interpolate(window: np.ndarray, axes) -> np.ndarray:
    """The new points' values from ``window`` (old values on the ranges of each axis laid
    end to end); ``axes``: per axis ``(lower, upper, weight, position)``, the first three
    of :func:`axis_weights` and the positions of :func:`index_ranges`."""
    values = np.asarray(window, dtype=np.float64)
    for axis, (lower, upper, weight, position) in enumerate(axes):
        shape = [1] * values.ndim
        shape[axis] = len(weight)
        weight = np.asarray(weight).reshape(shape)
        values = ((1.0 - weight) * np.take(values, position[lower], axis=axis)
                  + weight * np.take(values, position[upper], axis=axis))
    return values
