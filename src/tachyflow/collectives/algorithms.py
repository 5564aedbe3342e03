"""Broadcast, reduce and allreduce algorithms as schedules (Kim's 1998 Korea University
report, "Design of communication functions for high-performance multicomputers",
chapters 2-3), and
the registry of every algorithm (scans in :mod:`~tachyflow.collectives.scans`, gather,
scatter and all-to-all in :mod:`~tachyflow.collectives.movements`).

Each function returns a :class:`~tachyflow.collectives.schedule.Schedule` for ``size``
ranks and ``count`` elements. ``ALGORITHMS[operation]`` lists them by name; ``native`` (the
MPI library's own call) is not a schedule and lives in the executor.
"""

from __future__ import annotations

import numpy as np

from tachyflow.collectives.movements import MOVEMENT_ALGORITHMS
from tachyflow.collectives.scans import SCAN_ALGORITHMS
from tachyflow.collectives.schedule import (
    Schedule,
    ceil_log2,
    check_arguments,
    largest_power_of_two,
    split,
    step,
)

# -- broadcast ------------------------------------------------------------------------------


def bcast_linear(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """The root sends the whole buffer to every other rank in turn: ``(P-1)(α + nβ)``."""
    check_arguments(size, count, root)

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
    check_arguments(size, count, root)

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
    check_arguments(size, count, root)
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
    k-segment broadcast of Kim's 1998 Korea University report with k = P)."""
    check_arguments(size, count, root)

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


def bcast_two_path(size: int, count: int, root: int = 0, segments: int = 8) -> Schedule:
    """Two pipelined chains of about P/2 ranks fed alternately by the root (Kim's 1998 report's
    two-path pipeline for one-port machines): ``(2k + ⌊(P-1)/2⌋ - 1)(α + nβ/k)``.

    Chain c (0 or 1) holds relative ranks ``1 + c·h ..``; its member at position p passes
    segment s on at step ``2s + c + p + 1``, the root sends it at step ``2s + c``.
    """
    check_arguments(size, count, root)
    segments = max(1, int(segments))
    half = size // 2  # ⌈(P-1)/2⌉ ranks in the first chain
    chains = [np.arange(1, 1 + half), np.arange(1 + half, size)]
    chains = [chain for chain in chains if chain.size]

    def generate():
        paths = len(chains)
        last = max(
            ((segments - 1) * paths + c + chain.size - 1 for c, chain in enumerate(chains)),
            default=-1,
        )
        for moment in range(last + 1):
            sources, targets, pieces = [], [], []
            if moment < segments * paths:
                sources.append([0])
                targets.append(chains[moment % paths][:1])
                pieces.append([moment // paths])
            for c, chain in enumerate(chains):
                # Member p forwards segment j when moment = j·paths + c + p + 1.
                reach = moment - c - 1
                low = max(0, -(-(reach - (chain.size - 2)) // paths))
                high = min(segments - 1, reach // paths) if reach >= 0 else -1
                piece = np.arange(low, high + 1)
                position = reach - paths * piece
                sources.append(chain[position])
                targets.append(chain[position + 1])
                pieces.append(piece)
            piece = np.concatenate(pieces).astype(np.int64)
            yield step(
                np.concatenate(sources), np.concatenate(targets), piece, piece + 1, False,
                root, size,
            )

    return Schedule("bcast", "two-path", size, count, root, split(count, segments), generate)


def bcast_edge_disjoint(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """log2 P edge-disjoint spanning binomial trees (Johnsson and Ho), one per piece of the
    buffer: tree j reaches ``e_j = 2^j`` first, spans the sub-cube with bit j set by a
    binomial tree over the other dimensions, then crosses dimension j. Ranks beyond the
    largest power of two get the whole buffer from ``rank - P'`` at the end."""
    check_arguments(size, count, root)
    power = largest_power_of_two(size)
    dimensions = power.bit_length() - 1
    pieces = max(1, dimensions)

    def tree_round(tree: int, moment: int) -> tuple[np.ndarray, np.ndarray]:
        if moment == 0:
            return np.array([0]), np.array([1 << tree])
        if moment == dimensions:  # every node with bit `tree` set crosses back
            others = _subsets([(tree + 1 + b) % dimensions for b in range(dimensions - 1)])
            senders = (others | (1 << tree))[others != 0]
            return senders, senders ^ (1 << tree)
        done = [(tree + 1 + b) % dimensions for b in range(moment - 1)]
        senders = _subsets(done) | (1 << tree)
        return senders, senders | (1 << ((tree + moment) % dimensions))

    def generate():
        for moment in range(dimensions + 1 if dimensions else 0):
            rounds = [tree_round(tree, moment) for tree in range(dimensions)]
            sources = np.concatenate([senders for senders, _ in rounds])
            targets = np.concatenate([receivers for _, receivers in rounds])
            piece = np.repeat(np.arange(dimensions), [senders.size for senders, _ in rounds])
            yield step(sources, targets, piece, piece + 1, False, root, size, one_to_one=False)
        extra = np.arange(power, size)
        if extra.size:
            yield step(extra - power, extra, 0, pieces, False, root, size)

    return Schedule("bcast", "edge-disjoint", size, count, root, split(count, pieces), generate)


def _subsets(bits: list[int]) -> np.ndarray:
    """Every integer whose set bits are a subset of ``bits``."""
    values = np.zeros(1, dtype=np.int64)
    for bit in bits:
        values = np.concatenate((values, values | (1 << bit)))
    return values


# -- reduce and allreduce -------------------------------------------------------------------


def reduce_binomial(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Binomial tree towards the root: ``⌈log2 P⌉ (α + nβ)`` (plus the operator)."""
    check_arguments(size, count, root)

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
    check_arguments(size, count, 0)
    power = largest_power_of_two(size)
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
    check_arguments(size, count, 0)
    ranks = np.arange(size)

    def generate():
        for moment in range(size - 1):
            piece = (ranks - moment) % size
            yield step(ranks, (ranks + 1) % size, piece, piece + 1, True, 0, size)
        for moment in range(size - 1):
            piece = (ranks + 1 - moment) % size
            yield step(ranks, (ranks + 1) % size, piece, piece + 1, False, 0, size)

    return Schedule("allreduce", "ring", size, count, 0, split(count, size), generate)


def _fold_and_halve(size: int, root: int):
    """Steps shared by the Rabenseifner reduce and allreduce: ranks beyond the largest power
    of two P' fold into ``rank - P'``, then a reduce-scatter by recursive halving leaves
    relative rank i < P' with piece i (of P') fully combined."""
    power = largest_power_of_two(size)
    extra = np.arange(power, size)
    if extra.size:
        yield step(extra, extra - power, 0, power, True, root, size)
    ranks = np.arange(power)
    distance = power // 2
    while distance:
        partner = ranks ^ distance
        # Send the half of the current range [i & ~(2d-1), +2d) that the partner keeps.
        kept_by_partner = (ranks & ~(2 * distance - 1)) + (partner & distance)
        yield step(ranks, partner, kept_by_partner, kept_by_partner + distance, True, root, size)
        distance //= 2


def reduce_rabenseifner(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Reduce-scatter by recursive halving, then a binomial gather of the pieces to the
    root (Kim's 1998 report's segmented reduction): ``2 log2 P' α + 2 nβ (P'-1)/P'`` plus the
    fold of the ranks beyond the largest power of two P'."""
    check_arguments(size, count, root)
    power = largest_power_of_two(size)

    def generate():
        yield from _fold_and_halve(size, root)
        distance = 1
        while distance < power:
            senders = np.arange(distance, power, 2 * distance)
            yield step(senders, senders - distance, senders, senders + distance, False, root, size)
            distance *= 2

    return Schedule("reduce", "rabenseifner", size, count, root, split(count, power), generate)


def allreduce_rabenseifner(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Reduce-scatter by recursive halving, then an allgather by recursive doubling:
    ``2 log2 P' α + 2 nβ (P'-1)/P'``, plus the fold (and return) of the ranks beyond P'."""
    check_arguments(size, count, 0)
    power = largest_power_of_two(size)
    extra = np.arange(power, size)

    def generate():
        yield from _fold_and_halve(size, 0)
        ranks = np.arange(power)
        distance = 1
        while distance < power:
            held = ranks & ~(distance - 1)
            yield step(ranks, ranks ^ distance, held, held + distance, False, 0, size)
            distance *= 2
        if extra.size:
            yield step(extra - power, extra, 0, power, False, 0, size)

    return Schedule("allreduce", "rabenseifner", size, count, 0, split(count, power), generate)


def allreduce_segmented_ring(size: int, count: int, root: int = 0, segments: int = 4) -> Schedule:
    """The ring allreduce with each of its P blocks cut into ``segments`` pieces sent one
    after another: messages (and receive buffers) of ``n/(Pk)`` instead of ``n/P``, for
    buffers too large to stage whole, at ``2 (P-1) k`` start-ups."""
    check_arguments(size, count, 0)
    segments = max(1, int(segments))
    ranks = np.arange(size)

    def generate():
        for reduce in (True, False):
            for moment in range(size - 1):
                block = (ranks - moment + (0 if reduce else 1)) % size
                for piece in range(segments):
                    first = block * segments + piece
                    yield step(ranks, (ranks + 1) % size, first, first + 1, reduce, 0, size)

    return Schedule(
        "allreduce", "segmented-ring", size, count, 0, split(count, size * segments), generate
    )


ALGORITHMS = {
    "bcast": {
        "linear": bcast_linear,
        "binomial": bcast_binomial,
        "pipeline": bcast_pipeline,
        "scatter-ring": bcast_scatter_ring,
        "two-path": bcast_two_path,
        "edge-disjoint": bcast_edge_disjoint,
    },
    "reduce": {"binomial": reduce_binomial, "rabenseifner": reduce_rabenseifner},
    "allreduce": {
        "recursive-doubling": allreduce_recursive_doubling,
        "rabenseifner": allreduce_rabenseifner,
        "ring": allreduce_ring,
        "segmented-ring": allreduce_segmented_ring,
    },
    **SCAN_ALGORITHMS,
    **MOVEMENT_ALGORITHMS,
}
# Algorithms whose segment count is a free parameter (chosen by the model under "auto").
SEGMENTED = ("pipeline", "two-path", "segmented-ring")


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
