"""Collective algorithms written once, as schedules (DESIGN: "one schedule, two executors").

A schedule splits a buffer of ``count`` elements into segments (``bounds``) and lists
*steps*. A step is a set of messages, each from ``source`` to ``target`` carrying the
segments ``first .. stop - 1`` of the sender's buffer as it was at the start of the step
into the same segments of the receiver's buffer, or into those starting at ``landing``
when the step has one (all-to-all moves a block from a send area to a receive area); the
receiver either replaces its copy (``reduce=False``) or combines it with the reduction
operator (``reduce=True``). A rank sends and receives within a step at the same
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

# Operations whose receivers combine contributions, and those that only move data.
REDUCTIONS = ("reduce", "allreduce", "scan", "exscan")
MOVEMENTS = ("bcast", "scatter", "gather", "alltoall")


@dataclass(frozen=True)
class Step:
    """Messages exchanged in one step (parallel arrays, one entry per message).

    A message with ``repeats`` r and ``period`` p carries the runs ``first + i·p ..
    stop - 1 + i·p`` for i < r (a strided pack, as Bruck's algorithm sends), landing in the
    same pattern from ``landing``. A message whose source is its target is a local copy:
    no transfer, only the copy's time (its ranges must not overlap).
    """

    source: np.ndarray
    target: np.ndarray
    first: np.ndarray
    stop: np.ndarray
    reduce: bool
    one_to_one: bool = True  # no rank sends, or receives, more than one message here
    landing: np.ndarray | None = None  # first receiving segment when it differs from first
    repeats: np.ndarray | None = None  # runs per message (default one)
    period: np.ndarray | None = None  # segments from one run to the next

    def landing_first(self) -> np.ndarray:
        """First segment each message lands in at its receiver."""
        return self.first if self.landing is None else self.landing

    def runs(self, index: int) -> list[tuple[int, int, int]]:
        """Message ``index`` as ``(first, stop, landing)`` segment runs."""
        first, stop = int(self.first[index]), int(self.stop[index])
        landing = int(self.landing_first()[index])
        if self.repeats is None:
            return [(first, stop, landing)]
        period = int(self.period[index])
        return [
            (first + i * period, stop + i * period, landing + i * period)
            for i in range(int(self.repeats[index]))
        ]

    def message_bytes(self, bounds: np.ndarray, itemsize: int) -> np.ndarray | None:
        """Bytes of every message when some carry several runs (None otherwise: the
        simulator then reads them off ``first`` and ``stop``)."""
        if self.repeats is None:
            return None
        return np.array(
            [
                sum(int(bounds[b] - bounds[a]) for a, b, _ in self.runs(index)) * itemsize
                for index in range(self.source.size)
            ],
            dtype=np.float64,
        )


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
    landing=None,
    repeats=None,
    period=None,
) -> Step:
    """A step from arrays in relative ranks (root 0), shifted to the real root.

    ``one_to_one`` promises that no rank sends or receives two messages in this step;
    ``landing`` is where each message lands at its receiver (default: ``first``);
    ``repeats`` and ``period`` make strided messages (see :class:`Step`).
    """
    source = np.asarray(relative_source, dtype=np.int64)
    target = np.asarray(relative_target, dtype=np.int64)
    if root:
        source, target = (source + root) % size, (target + root) % size
    first, stop, landing, repeats, period = (
        None if values is None else _per_message(values, source.shape)
        for values in (first, stop, landing, repeats, period)
    )
    return Step(source, target, first, stop, reduce, one_to_one, landing, repeats, period)


def _per_message(values, shape) -> np.ndarray:
    values = np.asarray(values, dtype=np.int64)
    return values if values.shape == shape else np.broadcast_to(values, shape)


def ceil_log2(size: int) -> int:
    """Number of doubling rounds that reach ``size`` ranks."""
    return int(size - 1).bit_length()


def check_arguments(size: int, count: int, root: int) -> None:
    """ValueError naming the bad value when a schedule's arguments make no sense."""
    if not isinstance(size, int | np.integer) or size < 1:
        raise ValueError(f"number of ranks must be a positive integer, got {size!r}")
    if not isinstance(count, int | np.integer) or count < 0:
        raise ValueError(f"element count must be a non-negative integer, got {count!r}")
    if not 0 <= root < size:
        raise ValueError(f"root must be in [0, {size}), got {root!r}")


def largest_power_of_two(size: int) -> int:
    """The largest power of two not above ``size`` (>= 1)."""
    return 1 << (size.bit_length() - 1)


def result_defined(operation: str, rank: int, root: int) -> bool:
    """Whether MPI defines a reduction's result on ``rank`` (not off the root of reduce,
    not on rank 0 of exscan)."""
    if operation == "reduce":
        return rank == root
    return not (operation == "exscan" and rank == 0)
