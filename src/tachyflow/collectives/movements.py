"""Gather, scatter and all-to-all as schedules (Kim's 1998 Korea University report: no
algorithmic gain beyond the tree, but blocking versus non-blocking matters).

Layouts (the executor's buffer on every rank): gather and scatter use P equal pieces,
piece r belonging to *relative* rank r (``(rank - root) mod P``; the caller rotates at
the root). All-to-all uses 2P equal blocks: blocks 0 .. P-1 are what this rank sends to
ranks 0 .. P-1, blocks P .. 2P-1 what it receives from them; a rank's block for itself is
copied by the caller, not sent.
"""

from __future__ import annotations

import numpy as np

from tachyflow.collectives.schedule import (
    Schedule,
    ceil_log2,
    check_arguments,
    largest_power_of_two,
    split,
    step,
)


def _pieces(operation: str, algorithm: str, size: int, count: int, root: int, generate):
    check_arguments(size, count, root)
    return Schedule(operation, algorithm, size, count, root, split(count, size), generate)


def gather_linear(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """The root receives the pieces one rank after another (blocking): ``(P-1)(α + mβ)``."""

    def generate():
        for sender in range(1, size):
            yield step([sender], [0], sender, sender + 1, False, root, size)

    return _pieces("gather", "linear", size, count, root, generate)


def gather_linear_nonblocking(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Every rank sends its piece at once and the root posts all receives together; the
    root's receive port serialises them, but no rank waits for another's turn."""

    def generate():
        if size > 1:
            senders = np.arange(1, size)
            yield step(senders, np.zeros_like(senders), senders, senders + 1, False, root, size,
                       one_to_one=size == 2)

    return _pieces("gather", "linear-nonblocking", size, count, root, generate)


def gather_binomial(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Binomial tree: in round r, relative rank i with ``i mod 2^(r+1) = 2^r`` hands the
    pieces of its subtree ``[i, i + 2^r)`` to ``i - 2^r``: ``⌈log2 P⌉ α + (P-1) mβ``."""

    def generate():
        distance = 1
        while distance < size:
            senders = np.arange(distance, size, 2 * distance)
            yield step(senders, senders - distance, senders,
                       np.minimum(senders + distance, size), False, root, size)
            distance *= 2

    return _pieces("gather", "binomial", size, count, root, generate)


def scatter_linear(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """The root sends the pieces one rank after another: ``(P-1)(α + mβ)``."""

    def generate():
        for receiver in range(1, size):
            yield step([0], [receiver], receiver, receiver + 1, False, root, size)

    return _pieces("scatter", "linear", size, count, root, generate)


def scatter_linear_nonblocking(
    size: int, count: int, root: int = 0, segments: int = 1
) -> Schedule:
    """The root starts every send at once; its send port serialises them."""

    def generate():
        if size > 1:
            receivers = np.arange(1, size)
            yield step(np.zeros_like(receivers), receivers, receivers, receivers + 1, False,
                       root, size, one_to_one=size == 2)

    return _pieces("scatter", "linear-nonblocking", size, count, root, generate)


def scatter_binomial(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Binomial tree: the holder of pieces ``[i, i + 2d)`` hands ``[i + d, i + 2d)`` to
    ``i + d``, for d from the largest power of two below P down to 1."""

    def generate():
        distance = largest_power_of_two(max(size - 1, 1)) if size > 1 else 0
        while distance:
            senders = np.arange(0, size - distance, 2 * distance)
            receivers = senders + distance
            yield step(senders, receivers, receivers,
                       np.minimum(receivers + distance, size), False, root, size)
            distance //= 2

    return _pieces("scatter", "binomial", size, count, root, generate)


def _blocks(algorithm: str, size: int, count: int, generate) -> Schedule:
    check_arguments(size, count, 0)
    return Schedule("alltoall", algorithm, size, count, 0, split(count, 2 * size), generate)


def alltoall_pairwise(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """P-1 exchange steps; in step k rank i sends to ``i XOR k`` (P a power of two) or to
    ``i + k`` while receiving from ``i - k``: ``(P-1)(α + mβ)`` for blocks of m bytes."""
    ranks = np.arange(size)
    power_of_two = size == largest_power_of_two(size)

    def generate():
        for shift in range(1, size):
            targets = ranks ^ shift if power_of_two else (ranks + shift) % size
            yield step(ranks, targets, targets, targets + 1, False, 0, size,
                       landing=size + ranks)

    return _blocks("pairwise", size, count, generate)


def alltoall_linear_nonblocking(
    size: int, count: int, root: int = 0, segments: int = 1
) -> Schedule:
    """Every rank starts all its sends and receives at once, to ``i + 1, i + 2, ..`` in
    turn (so no rank is everyone's first target); the ports serialise them."""
    ranks = np.arange(size)

    def generate():
        if size > 1:
            shifts = np.arange(1, size)
            sources = np.tile(ranks, size - 1)
            targets = (sources + np.repeat(shifts, size)) % size
            yield step(sources, targets, targets, targets + 1, False, 0, size,
                       one_to_one=size == 2, landing=size + sources)

    return _blocks("linear-nonblocking", size, count, generate)


def alltoall_bruck(size: int, count: int, root: int = 0, segments: int = 1) -> Schedule:
    """Bruck's algorithm: ``⌈log2 P⌉`` messages per rank instead of P-1, each of about P/2
    blocks: ``⌈log2 P⌉ α + (P/2) ⌈log2 P⌉ mβ`` plus local copies — the choice for small
    blocks on many ranks.

    Rank i copies its blocks rotated by i into the receive area (block j there is the one
    for rank i + j); in round k it sends every block whose index has bit k set, packed in
    one message, to rank i + 2^k, which stores them at the same indices; after the rounds
    block j holds the block from rank i - j, and two local copies put it in rank order. The
    receive area is padded with empty blocks up to a power of two, so the blocks of round
    k are the runs ``[2^k + 2^(k+1) r, 2^(k+1)(r + 1))``.
    """
    check_arguments(size, count, 0)
    padded = 1 << ceil_log2(size)
    bounds = split(count, 2 * size)
    bounds = np.concatenate((bounds, np.full(padded - size, bounds[-1])))
    ranks = np.arange(size)
    area = size  # first block of the receive area

    def generate():
        # Rotate: send blocks [i, P) and [0, i) go to area blocks [0, P - i) and [P - i, P).
        yield step(ranks, ranks, ranks, size, False, 0, size, False, landing=area)
        rotated = ranks[1:]
        yield step(rotated, rotated, 0, rotated, False, 0, size, False,
                   landing=area + size - rotated)
        distance = 1
        while distance < size:
            runs = -(-(size - distance) // (2 * distance))
            yield step(ranks, (ranks + distance) % size, area + distance, area + 2 * distance,
                       False, 0, size, repeats=runs, period=2 * distance)
            distance *= 2
        # Area block j came from rank i - j: put it in send-area slot (i - j) mod P, then
        # copy the send area into the receive area (no copy overlaps what it reads).
        sources = np.repeat(ranks, size)
        blocks = np.tile(ranks, size)
        yield step(sources, sources, area + blocks, area + blocks + 1, False, 0, size, False,
                   landing=(sources - blocks) % size)
        yield step(ranks, ranks, 0, size, False, 0, size, landing=area)

    return Schedule("alltoall", "bruck", size, count, 0, bounds, generate)


MOVEMENT_ALGORITHMS = {
    "gather": {
        "linear": gather_linear,
        "linear-nonblocking": gather_linear_nonblocking,
        "binomial": gather_binomial,
    },
    "scatter": {
        "linear": scatter_linear,
        "linear-nonblocking": scatter_linear_nonblocking,
        "binomial": scatter_binomial,
    },
    "alltoall": {
        "pairwise": alltoall_pairwise,
        "bruck": alltoall_bruck,
        "linear-nonblocking": alltoall_linear_nonblocking,
    },
}
