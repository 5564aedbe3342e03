"""Prefix reductions (scan and exscan) as schedules (Kim's 1998 Korea University report,
chapter 3).

Every algorithm is written once, for an inclusive scan over ``ranks`` consecutive ranks
starting at ``base``. ``scan`` runs it over all ranks. ``exscan`` first shifts every
rank's value to its right neighbour (one step) and then scans ranks 1 .. P-1, so rank i
ends with the combination of ranks 0 .. i-1; rank 0's exscan is undefined, as in MPI.
Operators are assumed commutative (the executor combines ``buffer = op(buffer, incoming)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from tachyflow.collectives.schedule import Schedule, Step, check_arguments, split, step


def _linear(ranks: int, base: int, size: int, segments: int) -> Iterator[Step]:
    """Rank i waits for the prefix of rank i-1, combines and passes it on: P-1 steps."""
    for sender in range(ranks - 1):
        yield step([base + sender], [base + sender + 1], 0, 1, True, 0, size)


def _pipeline(ranks: int, base: int, size: int, segments: int) -> Iterator[Step]:
    """The linear chain on ``segments`` pieces: ``(k + P - 2)(α + n(β + γ)/k)``."""
    if ranks < 2:
        return
    for moment in range(segments + ranks - 2):
        low, high = max(0, moment - segments + 1), min(moment, ranks - 2)
        senders = np.arange(low, high + 1)
        piece = moment - senders
        yield step(base + senders, base + senders + 1, piece, piece + 1, True, 0, size)


def _recursive_doubling(ranks: int, base: int, size: int, segments: int) -> Iterator[Step]:
    """Hillis and Steele: in round r every rank i sends its partial prefix to i + 2^r,
    so rank i holds ranks ``(i - 2^(r+1), i]`` after it: ``⌈log2 P⌉`` steps."""
    distance = 1
    while distance < ranks:
        senders = np.arange(ranks - distance)
        yield step(base + senders, base + senders + distance, 0, 1, True, 0, size)
        distance *= 2


def _brent_kung(ranks: int, base: int, size: int, segments: int) -> Iterator[Step]:
    """Brent and Kung: a reduction tree up (rank 2d·j - 1 collects 2d ranks), then down
    (rank 2d·j - 1 hands its full prefix to rank 2d·j - 1 + d): ``2 log2 P - 1`` steps,
    each rank sending at most once per level."""
    distance = 1
    while 2 * distance <= ranks:
        receivers = np.arange(2 * distance - 1, ranks, 2 * distance)
        yield step(base + receivers - distance, base + receivers, 0, 1, True, 0, size)
        distance *= 2
    distance //= 2
    while distance:
        senders = np.arange(2 * distance - 1, ranks - distance, 2 * distance)
        yield step(base + senders, base + senders + distance, 0, 1, True, 0, size)
        distance //= 2


def _root_p(ranks: int, base: int, size: int, segments: int) -> Iterator[Step]:
    """RootP: groups of about √P ranks scan along a chain at once, the last ranks of the
    groups scan along a chain of groups, then the last rank of each group hands its prefix
    to the members of the next group: about ``3 √P`` steps."""
    width = max(1, int(np.ceil(np.sqrt(ranks))))
    starts = np.arange(0, ranks, width)
    lasts = np.minimum(starts + width, ranks) - 1
    for position in range(width - 1):
        senders = starts + position
        senders = senders[senders < lasts]
        yield step(base + senders, base + senders + 1, 0, 1, True, 0, size)
    for group in range(starts.size - 1):
        yield step([base + lasts[group]], [base + lasts[group + 1]], 0, 1, True, 0, size)
    for position in range(width - 1):
        receivers = starts[1:] + position
        keep = receivers < lasts[1:]
        yield step(base + lasts[:-1][keep], base + receivers[keep], 0, 1, True, 0, size)


PATTERNS: dict[str, Callable] = {
    "linear": _linear,
    "pipeline": _pipeline,
    "recursive-doubling": _recursive_doubling,
    "brent-kung": _brent_kung,
    "rootp": _root_p,
}


def scan_schedule(
    operation: str, algorithm: str, size: int, count: int, segments: int = 1
) -> Schedule:
    """The ``scan`` or ``exscan`` schedule of ``algorithm`` (a key of :data:`PATTERNS`)."""
    check_arguments(size, count, 0)
    segments = max(1, int(segments)) if algorithm == "pipeline" else 1
    pattern = PATTERNS[algorithm]

    def generate():
        if operation == "scan":
            yield from pattern(size, 0, size, segments)
            return
        if size > 1:  # exscan: rank i takes rank i-1's value, then ranks 1.. P-1 scan
            senders = np.arange(size - 1)
            yield step(senders, senders + 1, 0, segments, False, 0, size)
        yield from pattern(size - 1, 1, size, segments)

    return Schedule(operation, algorithm, size, count, 0, split(count, segments), generate)


def _factory(operation: str, algorithm: str) -> Callable[..., Schedule]:
    def build(size: int, count: int, root: int = 0, segments: int = 8) -> Schedule:
        return scan_schedule(operation, algorithm, size, count, segments)

    build.__doc__ = PATTERNS[algorithm].__doc__
    return build


SCAN_ALGORITHMS = {
    operation: {name: _factory(operation, name) for name in PATTERNS}
    for operation in ("scan", "exscan")
}
