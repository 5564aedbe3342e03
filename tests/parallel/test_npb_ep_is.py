from itertools import pairwise

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.programs.npb import ep, integer_sort
from tachyflow.programs.npb.common import report


def same_everywhere(comm, result):
    """Every rank returned the same numbers (rank 0's)."""
    mine = (result.seconds, tuple(c for c, _, _ in result.checks.values()), result.timings)
    return comm.bcast(mine, root=0) == mine


def check_successful(comm, result, kernel, size, iterations, operations):
    parallel_assert(result.verified, report(result))
    parallel_assert(same_everywhere(comm, result), "ranks disagree on the result")
    parallel_assert(
        (result.kernel, result.size, result.iterations, result.ranks)
        == (kernel, size, iterations, comm.size),
        f"{result.kernel} {result.size} {result.iterations} {result.ranks}",
    )
    parallel_assert(result.mops == pytest.approx(operations / result.seconds / 1e6))
    parallel_assert(set(result.timings) == {"computation", "communication"})
    text = report(result)
    parallel_assert("SUCCESSFUL" in text and "Mop/s total" in text, text)


def check_unsuccessful(result):
    text = report(result)
    parallel_assert(not result.verified and result.mops is None, text)
    parallel_assert("UNSUCCESSFUL" in text and "Mop/s" not in text, text)


@pytest.mark.parallel([1, 2, 3])
def test_ep_class_s_verifies_against_npb():
    comm = MPI.COMM_WORLD
    result = ep.run("S", comm)
    check_successful(comm, result, "EP", "33554432", 0, 2.0**25)
    parallel_assert(result.checks["Gaussian pairs"][0] == 13176389)


@pytest.mark.parallel([2])
def test_ep_class_w_verifies_against_npb():
    comm = MPI.COMM_WORLD
    check_successful(comm, ep.run("W", comm), "EP", "67108864", 0, 2.0**26)


def test_ep_batches_are_split_as_npb_mpi_does():
    for batches in (1, 7, 256):
        for size in range(1, batches + 1):
            shares = [ep.share(batches, size, rank) for rank in range(size)]
            counts = [count for _, count in shares]
            assert shares[0][0] == 0 and sum(counts) == batches
            assert all(a + n == b for (a, n), (b, _) in pairwise(shares))
            assert counts == sorted(counts, reverse=True) and counts[0] - counts[-1] <= 1


@pytest.mark.parallel([1, 2])
def test_ep_with_a_perturbed_sum_is_unsuccessful(monkeypatch):
    comm = MPI.COMM_WORLD
    exact = ep._batches

    def perturbed(first, count, uniforms, sums):
        exact(first, count, uniforms, sums)
        if comm.rank == 0 and count:
            sums[0] += 1.0  # 1e-7 relative to class S's sum, past NPB's 1e-8

    monkeypatch.setattr(ep, "_batches", perturbed)
    result = ep.run("S", comm)
    check_unsuccessful(result)
    # Only the sum was touched: the pair count still matches NPB.
    parallel_assert(result.checks["Gaussian pairs"][0] == 13176389)


@pytest.mark.parallel([1])
def test_ep_refuses_an_unknown_class():
    with pytest.raises(ValueError, match="unknown NPB EP class 'D'; expected one of S, W, A"):
        ep.run("D", MPI.COMM_WORLD)


@pytest.mark.parallel([1, 2])
def test_is_class_s_verifies_against_npb():
    comm = MPI.COMM_WORLD
    result = integer_sort.run("S", comm)
    check_successful(comm, result, "IS", "65536", 10, 10.0 * 2**16)
    parallel_assert(result.checks["partial verification"][0] == 50)


@pytest.mark.parallel([3])
def test_is_refuses_a_rank_count_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power-of-two number of processes; got 3"):
        integer_sort.run("S", MPI.COMM_WORLD)


@pytest.mark.parallel([1])
def test_is_refuses_an_unknown_class():
    with pytest.raises(ValueError, match="unknown NPB IS class 'Z'"):
        integer_sort.run("Z", MPI.COMM_WORLD)


@pytest.mark.parallel([1, 2])
def test_is_with_one_flipped_key_is_unsuccessful(monkeypatch):
    comm = MPI.COMM_WORLD
    exact = integer_sort.create_keys

    def flipped(problem_class, rank, size):
        keys = exact(problem_class, rank, size)
        if rank == 0:
            # The smallest key becomes the largest: every test key above it loses a rank.
            keys[np.argmin(keys)] = (1 << integer_sort.CLASSES["S"]["max_key"]) - 1
        return keys

    monkeypatch.setattr(integer_sort, "create_keys", flipped)
    result = integer_sort.run("S", comm)
    check_unsuccessful(result)
    parallel_assert(result.checks["partial verification"][0] < 50)
