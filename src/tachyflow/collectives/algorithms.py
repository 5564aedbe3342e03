"""Broadcast, reduce and allreduce algorithms as schedules (seed 003, chapters 2-3).

Each function returns a :class:`~tachyflow.collectives.schedule.Schedule` for ``size``
ranks and ``count`` elements. ``ALGORITHMS[operation]`` lists them by name; ``native`` (the
MPI library's own call) is not a schedule and lives in the executor.
"""

from __future__ import annotations

import numpy as np

from tachyflow.collectives.schedule import Schedule, ceil_log2, split, step


def _check(size: int, count: int, root: int) -> None:
    if not isinstance(size, int | np.integer) or size < 1:
        raise ValueError(f"number of ranks must be a positive integer, got {size!r}")
    if not isinstance(count, int | np.integer) or count < 0:
        raise ValueError(f"element count must be a non-negative integer, got {count!r}")
    if not 0 <= root < size:
        raise ValueError(f"root must be in [0, {size}), got {root!r}")


# -- broadcast ------------------------------------------------------------------------------


def bcast_linear(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """The root sends the whole buffer to every other rank in turn: ``(P-1)(α + nβ)``."""
    _check(size, count, root)

    def generate():
        if size > 1:
            others = np.arange(1, size)
            yield step(
                np.zeros_like(others), others, 0, 1, False, root, size, one_to_one=size == 2
            )

    return Schedule("bcast", "linear", size, count, root, split(count, 1), generate)


def bcast_binomial(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Binomial tree: in round r, ranks below 2^r send to rank + 2^r:
    ``⌈log2 P⌉ (α + nβ)``."""
    _check(size, count, root)

    def generate():
        for level in range(ceil_log2(size)):
            distance = 1 << level
            senders = np.arange(0, min(distance, size - distance))
            yield step(senders, senders + distance, 0, 1, False, root, size)

    return Schedule("bcast", "binomial", size, count, root, split(count, 1), generate)


def bcast_pipeline(size: int, count: int, root: int = 0, segments: int = 8) -> Schedule:
    """Pipelined chain with ``segments`` pieces: ``(k + P - 2)(α + nβ/k)``.

    At step t, relative rank i passes segment t - i to rank i + 1.
    """
    _check(size, count, root)
    segments = max(1, int(segments))

    def generate():
        if size < 2:
            return
        for moment in range(segments + size - 2):
            low, high = max(0, moment - segments + 1), min(moment, size - 2)
            senders = np.arange(low, high + 1)
            yield step(
                senders, senders + 1, moment - senders, moment - senders + 1, False, root, size
            )

    return Schedule("bcast", "pipeline", size, count, root, split(count, segments), generate)


def bcast_scatter_ring(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Scatter the P pieces down a binomial tree, then a ring allgather (van de Geijn; the
    k-segment broadcast of seed 003 with k = P)."""
    _check(size, count, root)

    def generate():
        # Binomial scatter: the holder of pieces [i, i + 2·d) hands [i + d, i + 2·d) on.
        for level in reversed(range(ceil_log2(size))):
            distance = 1 << level
            senders = np.arange(0, size, 2 * distance)
            senders = senders[senders + distance < size]
            receivers = senders + distance
            yield step(
                senders,
                receivers,
                receivers,
                np.minimum(receivers + distance, size),
                False,
                root,
                size,
            )
        ranks = np.arange(size)
        for moment in range(size - 1):  # ring allgather: pass on the piece received last
            yield step(
                ranks,
                (ranks + 1) % size,
                (ranks - moment) % size,
                (ranks - moment) % size + 1,
                False,
                root,
                size,
            )

    return Schedule("bcast", "scatter-ring", size, count, root, split(count, size), generate)


# -- reduce and allreduce -------------------------------------------------------------------


def reduce_binomial(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Binomial tree towards the root: ``⌈log2 P⌉ (α + nβ)`` (plus the operator)."""
    _check(size, count, root)

    def generate():
        for level in range(ceil_log2(size)):
            distance = 1 << level
            senders = np.arange(distance, size, 2 * distance)
            yield step(senders, senders - distance, 0, 1, True, root, size)

    return Schedule("reduce", "binomial", size, count, root, split(count, 1), generate)


def allreduce_recursive_doubling(
    size: int, count: int, root: int = 0, segments: int = 1
) -> Schedule:
    """Exchange-and-combine with partner ``i XOR 2^r``; ranks beyond the largest power of
    two first fold into a partner and get the result back at the end:
    ``log2 P' (α + nβ)``, plus ``2 (α + nβ)`` when P is not a power of two."""
    _check(size, count, 0)
    power = 1 << (size.bit_length() - 1)
    extra = np.arange(power, size)

    def generate():
        if extra.size:
            yield step(extra, extra - power, 0, 1, True, 0, size)
        ranks = np.arange(power)
        for level in range(power.bit_length() - 1):
            yield step(ranks, ranks ^ (1 << level), 0, 1, True, 0, size)
        if extra.size:
            yield step(extra - power, extra, 0, 1, False, 0, size)

    return Schedule("allreduce", "recursive-doubling", size, count, 0, split(count, 1), generate)


def allreduce_ring(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Ring reduce-scatter then ring allgather on P pieces: ``2 (P-1)(α + nβ/P)``."""
    _check(size, count, 0)
    ranks = np.arange(size)

    def generate():
        for moment in range(size - 1):
            piece = (ranks - moment) % size
            yield step(ranks, (ranks + 1) % size, piece, piece + 1, True, 0, size)
        for moment in range(size - 1):
            piece = (ranks + 1 - moment) % size
            yield step(ranks, (ranks + 1) % size, piece, piece + 1, False, 0, size)

    return Schedule("allreduce", "ring", size, count, 0, split(count, size), generate)


ALGORITHMS = {
    "bcast": {
        "linear": bcast_linear,
        "binomial": bcast_binomial,
        "pipeline": bcast_pipeline,
        "scatter-ring": bcast_scatter_ring,
    },
    "reduce": {"binomial": reduce_binomial},
    "allreduce": {"recursive-doubling": allreduce_recursive_doubling, "ring": allreduce_ring},
}


def build(
    operation: str,
    algorithm: str,
    size: int,
    count: int,
    root: int = 0,
    segments: int | None = None,
) -> Schedule:
    """The schedule of ``algorithm`` for ``operation``; ValueError names the choices."""
    if operation not in ALGORITHMS:
        raise ValueError(f"operation must be one of {sorted(ALGORITHMS)}, got {operation!r}")
    table = ALGORITHMS[operation]
    if algorithm not in table:
        raise ValueError(
            f"{operation} algorithm must be one of {sorted(table)} or 'native', got {algorithm!r}"
        )
    if segments is not None and (not isinstance(segments, int | np.integer) or segments < 1):
        raise ValueError(f"segments must be a positive integer, got {segments!r}")
    return table[algorithm](
        size, count, root, **({} if segments is None else {"segments": segments})
    )
