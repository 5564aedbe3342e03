"""Collective algorithms written once, as schedules (DESIGN: "one schedule, two executors").

A schedule splits a buffer of ``count`` elements into segments (``bounds``) and lists
*steps*. A step is a set of messages, each from ``source`` to ``target`` carrying the
segments ``first .. stop - 1`` of the sender's buffer as it was at the start of the step;
the receiver either replaces its copy (``reduce=False``) or combines it with the
reduction operator (``reduce=True``). A rank sends and receives within a step at the same
time (full duplex); steps follow each other per rank, not globally.

Steps are produced lazily (``Schedule.steps()`` is a generator of numpy arrays), so the
simulator can run schedules of 100,000 ranks without holding every message in memory.
The MPI executor (:mod:`tachyflow.collectives.executor`) and the simulator
(:mod:`tachyflow.collectives.simulator`) read the same schedule.

Algorithms are written for root 0 in *relative* ranks and shifted to the real root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Step:
    """Messages exchanged in one step (parallel arrays, one entry per message)."""

    source: np.ndarray
    target: np.ndarray
    first: np.ndarray
    stop: np.ndarray
    reduce: bool
    one_to_one: bool = True  # no rank sends, or receives, more than one message here


@dataclass(frozen=True)
class Schedule:
    """A collective algorithm for ``size`` ranks on a buffer of ``count`` elements."""

    operation: str
    algorithm: str
    size: int
    count: int
    root: int
    bounds: np.ndarray
    generate: Callable[[], Iterator[Step]]

    def steps(self) -> Iterator[Step]:
        """The steps, in order (a new generator each call)."""
        return self.generate()

    @property
    def segments(self) -> int:
        """Number of segments the buffer is cut into."""
        return len(self.bounds) - 1


def split(count: int, parts: int) -> np.ndarray:
    """Boundaries of ``parts`` nearly equal segments of ``count`` elements (some may be
    empty when ``parts > count``)."""
    base, extra = divmod(count, parts)
    sizes = np.full(parts, base, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate(([0], np.cumsum(sizes)))


def step(
    relative_source,
    relative_target,
    first,
    stop,
    reduce: bool,
    root: int,
    size: int,
    one_to_one: bool = True,
) -> Step:
    """A step from arrays in relative ranks (root 0), shifted to the real root.

    ``one_to_one`` promises that no rank sends or receives two messages in this step.
    """
    source = np.asarray(relative_source, dtype=np.int64)
    target = np.asarray(relative_target, dtype=np.int64)
    if root:
        source, target = (source + root) % size, (target + root) % size
    first = np.broadcast_to(np.asarray(first, dtype=np.int64), source.shape)
    stop = np.broadcast_to(np.asarray(stop, dtype=np.int64), source.shape)
    return Step(source, target, first, stop, reduce, one_to_one)


def ceil_log2(size: int) -> int:
    """Number of doubling rounds that reach ``size`` ranks."""
    return int(size - 1).bit_length()
