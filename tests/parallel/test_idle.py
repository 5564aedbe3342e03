"""parallel.idle: a barrier that sleeps between polls still waits for every rank."""

import time

import pytest
from mpi4py import MPI

from tachyflow.parallel import sleeping_barrier


@pytest.mark.parallel([1, 2, 3])
def test_no_rank_leaves_before_the_last_arrives():
    comm = MPI.COMM_WORLD
    late = comm.size - 1
    comm.Barrier()
    if comm.rank == late:
        time.sleep(0.3)
    arrived = time.monotonic()
    sleeping_barrier(comm, interval=0.01)
    waited = time.monotonic() - arrived
    if comm.rank != late:
        assert waited >= 0.25, f"rank {comm.rank} left {waited:.3f} s after arriving"


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval must be positive seconds, got 0"):
        sleeping_barrier(MPI.COMM_SELF, interval=0)
