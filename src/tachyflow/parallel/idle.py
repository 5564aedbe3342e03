"""Waiting without spinning: a barrier that sleeps between polls."""

from __future__ import annotations

import time


def sleeping_barrier(comm, interval: float = 1e-3) -> None:
    """Barrier over ``comm`` that polls a non-blocking barrier every ``interval`` seconds
    (collective).

    MPI's blocking waits spin on their core. A rank with nothing to do while others measure
    (the ranks beyond a ping-pong's pair) waits here instead, so that on a machine with
    fewer cores than ranks it leaves the measured ranks their cores; the barrier completes
    at most ``interval`` later than a spinning one.
    """
    if not interval > 0:
        raise ValueError(f"interval must be positive seconds, got {interval!r}")
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(interval)
