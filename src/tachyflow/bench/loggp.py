"""Netgauge's parametrised round trips ``PRTT(n, d, s)`` between ranks 0 and 1, for LogGP.

Rank 0 (the client) sends ``n`` messages of ``s`` bytes, busy-waiting ``d`` seconds
between two sends; rank 1 (the server) receives all ``n`` and answers with one message of
``s`` bytes; the client times from its first send to the answer. For every size this
measures ``PRTT(1, 0, s)``, ``PRTT(n, 0, s)`` and ``PRTT(n, d, s)`` with ``d`` twice the
measured ``PRTT(1, 0, s)``, which leaves the delayed sends well apart even when the gap of
a stream exceeds a round trip; :func:`tachyflow.models.loggp.fit_loggp` turns the records
into L, o, g and G. Each value is the median of single round trips, as in Netgauge, and
the messages use persistent requests, as the ping-pong does.
"""

from __future__ import annotations

import numpy as np

TRAIN = 16
TESTS = 21
LARGEST = 2**20


def prtt_sizes(largest: int) -> list[int]:
    """Powers of 4 from 1 B to ``largest`` (at most 1 MiB, which keeps the run short)."""
    sizes, size = [], 1
    while size <= min(largest, LARGEST):
        sizes.append(size)
        size *= 4
    return sizes


def _round_trips(comm, requests, n: int, delay: float, tests: int) -> list[float]:
    """``tests`` single PRTT(n, delay) round trips in seconds (on the client; [] elsewhere)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    times = []
    comm.Barrier()
    for _ in range(tests):
        if rank == 0:
            send, answer = requests
            start = MPI.Wtime()
            for message in range(n):
                if message:
                    until = MPI.Wtime() + delay
                    while MPI.Wtime() < until:
                        pass  # busy wait: sleeping would let the OS add its own delay
                send.Start()
                send.Wait()
            answer.Start()
            answer.Wait()
            times.append(MPI.Wtime() - start)
        elif rank == 1:
            receive, send = requests
            for _ in range(n):
                receive.Start()
                receive.Wait()
            send.Start()
            send.Wait()
    return times


def measure_prtt(comm, sizes, n: int = TRAIN, tests: int = TESTS) -> list[dict]:
    """PRTT records of every size (collective; the same list on every rank).

    Each record: ``size``, ``n``, ``delay`` and the medians ``prtt_1_0``, ``prtt_n_0``
    and ``prtt_n_d`` in seconds, plus ``tests``, the round trips behind each median.
    """
    if n < 2:
        raise ValueError(f"a PRTT train needs n >= 2 messages, got {n}")
    if tests < 1:
        raise ValueError(f"PRTT needs at least 1 test per value, got {tests}")
    rank = comm.Get_rank()
    records = []
    buffer = np.zeros(max(sizes), dtype=np.uint8)
    for size in sizes:
        message = buffer[:size]
        requests = []
        if rank == 0:
            requests = [comm.Send_init(message, 1, 3), comm.Recv_init(message, 1, 4)]
        elif rank == 1:
            requests = [comm.Recv_init(message, 0, 3), comm.Send_init(message, 0, 4)]
        _round_trips(comm, requests, n, 0.0, 2)  # warm-up: first-touch and connection setup
        singles = _round_trips(comm, requests, 1, 0.0, tests)
        # Only the client waits, so only it needs the delay.
        single = float(np.median(singles)) if rank == 0 else 0.0
        stream = _round_trips(comm, requests, n, 0.0, tests)
        delayed = _round_trips(comm, requests, n, 2.0 * single, tests)
        for request in requests:
            request.Free()
        if rank == 0:
            records.append(
                {
                    "size": size,
                    "n": n,
                    "delay": 2.0 * single,
                    "prtt_1_0": single,
                    "prtt_n_0": float(np.median(stream)),
                    "prtt_n_d": float(np.median(delayed)),
                    "tests": tests,
                }
            )
    return comm.bcast(records, root=0)
