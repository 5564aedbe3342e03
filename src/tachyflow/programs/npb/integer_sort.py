"""NPB 3.4.2 IS: parallel bucket sort (ranking) of integer keys, as NPB-MPI's ``is.c``.

``TOTAL_KEYS`` keys in ``[0, MAX_KEY)``, each ``MAX_KEY/4 · (sum of 4 draws)`` of NPB's
generator (seed 314159265, ``a = 5^13``); rank r generates keys ``r·N .. (r+1)·N - 1``
(``N = TOTAL_KEYS/P``) by jumping ahead. Each of the ``MAX_ITERATIONS`` rankings changes
two keys, sorts the local keys into ``NUM_BUCKETS`` buckets by their top bits, sums the
bucket sizes over ranks, gives every rank a run of whole buckets holding about ``N`` keys,
exchanges the keys (all-to-all), and ranks its keys by counting. Five test keys per
iteration are checked against NPB's ranks (partial verification); after the timed loop
the keys are sorted and checked in order across ranks (full verification). Only the
iterations are timed; Mop/s is ``MAX_ITERATIONS · TOTAL_KEYS / time / 1e6``.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from tachyflow import collectives
from tachyflow.numerics.compiled import kernel
from tachyflow.programs.npb.common import KernelResult
from tachyflow.programs.npb.random import A, randlc, seed_after

SEED = 314159265.0
MAX_ITERATIONS = 10
TEST_KEYS = 5


# Class -> sizes (log2) and is.c's partial-verification data. ``buckets`` is
# NUM_BUCKETS_LOG_2 of NPB-MPI's is.c (9 for S, 10 otherwise); it sets how keys are split
# between ranks, not the result. In iteration ``it`` is.c expects test key i at rank
# ``test_rank[i] + sign[i] · (it + shift[i])``.
CLASSES = {
    "S": {
        "keys": 16, "max_key": 11, "buckets": 9, "max_procs": 128,
        "test_index": (48427, 17148, 23627, 62548, 4431),
        "test_rank": (0, 18, 346, 64917, 65463),
        "sign": (1, 1, 1, -1, -1), "shift": (0, 0, 0, 0, 0),
    },
    "W": {
        "keys": 20, "max_key": 16, "buckets": 10, "max_procs": 1024,
        "test_index": (357773, 934767, 875723, 898999, 404505),
        "test_rank": (1249, 11698, 1039987, 1043896, 1048018),
        "sign": (1, 1, -1, -1, -1), "shift": (-2, -2, 0, 0, 0),
    },
    "A": {
        "keys": 23, "max_key": 19, "buckets": 10, "max_procs": 1024,
        "test_index": (2112377, 662041, 5336171, 3642833, 4250760),
        "test_rank": (104, 17523, 123928, 8288932, 8388264),
        "sign": (1, 1, 1, -1, -1), "shift": (-1, -1, -1, -1, -1),
    },
    "B": {
        "keys": 25, "max_key": 21, "buckets": 10, "max_procs": 1024,
        "test_index": (41869, 812306, 5102857, 18232239, 26860214),
        "test_rank": (33422937, 10244, 59149, 33135281, 99),
        "sign": (-1, 1, 1, -1, 1), "shift": (0, 0, 0, 0, 0),
    },
    "C": {
        "keys": 27, "max_key": 23, "buckets": 10, "max_procs": 1024,
        "test_index": (44172927, 72999161, 74326391, 129606274, 21736814),
        "test_rank": (61147, 882988, 266290, 133997595, 133525895),
        "sign": (1, 1, 1, -1, -1), "shift": (0, 0, 0, 0, 0),
    },
}


@kernel
def _generate(seed, max_key, keys):  # pragma: no cover  (compiled)
    """NPB's ``create_seq``: ``keys[i] = int(MAX_KEY/4 · (r1 + r2 + r3 + r4))``."""
    quarter = max_key // 4
    for i in range(keys.size):
        x, seed = randlc(seed, A)
        r, seed = randlc(seed, A)
        x += r
        r, seed = randlc(seed, A)
        x += r
        r, seed = randlc(seed, A)
        x += r
        keys[i] = int(quarter * x)


def create_keys(problem_class: str, rank: int, size: int) -> np.ndarray:
    """This rank's ``TOTAL_KEYS / size`` keys, drawn ``4·TOTAL_KEYS/size·rank`` numbers
    into the stream (NPB's ``find_my_seed``)."""
    parameters = CLASSES[problem_class]
    count = (1 << parameters["keys"]) // size
    keys = np.empty(count, np.int32)
    _generate(seed_after(SEED, 4 * count * rank), 1 << parameters["max_key"], keys)
    return keys


@kernel
def _bucket(keys, shift, buckets, bucket_size, sorted_keys):  # pragma: no cover
    """Counts keys per bucket into ``bucket_size[:buckets]`` and writes them, bucket by
    bucket, to ``sorted_keys``."""
    bucket_size[:buckets] = 0
    for key in keys:
        bucket_size[key >> shift] += 1
    pointers = np.empty(buckets, np.int64)
    pointers[0] = 0
    for i in range(1, buckets):
        pointers[i] = pointers[i - 1] + bucket_size[i - 1]
    for key in keys:
        bucket = key >> shift
        sorted_keys[pointers[bucket]] = key
        pointers[bucket] += 1


@kernel
def _partition(
    totals, local, buckets, per_rank, send_count, send_displ, first, last
):  # pragma: no cover  (compiled)
    """is.c's redistribution: rank j gets the buckets up to the one where the running
    total first reaches ``(j+1)·per_rank``; ranks left over get none (``first`` 1,
    ``last`` 0). Fills this rank's ``send_count``/``send_displ`` for every rank and the
    bucket range ``first[j] .. last[j]`` of every rank."""
    size = send_count.size
    send_count[:] = 0
    send_displ[:] = 0
    first[:] = 0
    last[:] = 0
    accumulated = 0
    local_accumulated = 0
    j = 0
    for i in range(buckets):
        accumulated += totals[i]
        local_accumulated += local[i]
        if accumulated >= (j + 1) * per_rank:
            send_count[j] = local_accumulated
            if j != 0:
                send_displ[j] = send_displ[j - 1] + send_count[j - 1]
                first[j] = last[j - 1] + 1
            last[j] = i
            j += 1
            local_accumulated = 0
    while j < size:
        first[j] = 1
        j += 1


@kernel
def _rank(received, low, high, population):  # pragma: no cover  (compiled)
    """Counts each key value of ``received`` (all in ``[low, high]``) and makes the
    counts cumulative: ``population[k - low]`` = local keys ``<= k``."""
    population[: high - low + 1] = 0
    for key in received:
        population[key - low] += 1
    for i in range(high - low):
        population[i + 1] += population[i]


@kernel
def _place(received, low, population, out):  # pragma: no cover  (compiled)
    """is.c's full_verify sort: each key to its rank (consumes ``population``); returns
    the number of keys out of order."""
    for key in received:
        population[key - low] -= 1
        out[population[key - low]] = key
    disorder = 0
    for i in range(1, out.size):
        if out[i - 1] > out[i]:
            disorder += 1
    return disorder


def check_ranks(problem_class: str, comm) -> None:
    """Refuse, on every rank, a class or rank count NPB-MPI's IS does not run."""
    if problem_class not in CLASSES:
        raise ValueError(
            f"unknown NPB IS class {problem_class!r}; expected one of {', '.join(CLASSES)}"
        )
    size = comm.Get_size()
    if size & (size - 1):
        raise ValueError(
            f"NPB IS needs a power-of-two number of processes; got {size} "
            "(is.c exits: 'Number of processes is not a power of two')"
        )
    max_procs = CLASSES[problem_class]["max_procs"]
    if size > max_procs:
        raise ValueError(
            f"NPB IS class {problem_class} runs on at most {max_procs} processes "
            f"(is.c's MAX_PROCS); got {size}"
        )


class _Sorter:
    """One rank's state across the rankings (is.c's global arrays)."""

    def __init__(self, problem_class: str, comm, keys: np.ndarray):
        parameters = CLASSES[problem_class]
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.max_key = 1 << parameters["max_key"]
        self.buckets = 1 << parameters["buckets"]
        self.shift = parameters["max_key"] - parameters["buckets"]
        self.keys = keys
        self.per_rank = keys.size
        self.test_index = np.array(parameters["test_index"])
        self.expected = np.array(parameters["test_rank"], np.int64)
        self.sign = np.array(parameters["sign"], np.int64)
        self.offset = np.array(parameters["shift"], np.int64)
        # The test keys' values ride along in the bucket-size sum: one slot per test key,
        # filled by the rank that holds it.
        self.mine = np.flatnonzero(self.test_index // self.per_rank == self.rank)
        self.bucket_size = np.zeros(self.buckets + TEST_KEYS, np.int32)
        self.totals = np.empty_like(self.bucket_size)
        self.bucketed = np.empty_like(keys)
        self.received = np.empty(3 * keys.size // 2, np.int32)  # is.c's buffer size
        self.population = np.empty(self.max_key, np.int64)
        self.send_count = np.empty(self.size, np.int32)
        self.send_displ = np.empty(self.size, np.int32)
        self.recv_count = np.empty(self.size, np.int32)
        self.first = np.empty(self.size, np.int64)
        self.last = np.empty(self.size, np.int64)
        self.communication = 0.0
        self.local_count = 0
        self.low = 0

    def rank_keys(self, iteration: int) -> int:
        """One ranking (is.c's ``rank``); returns the test keys that verified here."""
        if self.rank == 0:
            self.keys[iteration] = iteration
            self.keys[iteration + MAX_ITERATIONS] = self.max_key - iteration
        _bucket(self.keys, self.shift, self.buckets, self.bucket_size, self.bucketed)
        self.bucket_size[self.buckets :] = 0
        self.bucket_size[self.buckets + self.mine] = self.keys[
            self.test_index[self.mine] % self.per_rank
        ]

        start = MPI.Wtime()
        collectives.allreduce(self.comm, self.bucket_size, "sum", "native", out=self.totals)
        self.communication += MPI.Wtime() - start

        _partition(
            self.totals, self.bucket_size, self.buckets, self.per_rank, self.send_count,
            self.send_displ, self.first, self.last,
        )

        start = MPI.Wtime()
        self.comm.Alltoall(self.send_count, self.recv_count)
        incoming = int(self.recv_count.sum())
        if incoming > self.received.size:
            self.received = np.empty(incoming, np.int32)
        recv_displ = np.zeros(self.size, np.int32)
        np.cumsum(self.recv_count[:-1], out=recv_displ[1:])
        self.comm.Alltoallv(
            [self.bucketed, (self.send_count, self.send_displ), MPI.INT],
            [self.received, (self.recv_count, recv_displ), MPI.INT],
        )
        self.communication += MPI.Wtime() - start

        first, last = self.first[self.rank], self.last[self.rank]
        low = int(first) << self.shift
        high = ((int(last) + 1) << self.shift) - 1
        lesser = sum(
            int(self.totals[self.first[k] : self.last[k] + 1].sum()) for k in range(self.rank)
        )
        self.local_count = incoming
        self.low = low
        _rank(self.received[:incoming], low, high, self.population)

        passed = 0
        test_values = self.totals[self.buckets :]
        for i in range(TEST_KEYS):
            value = int(test_values[i])
            if low <= value <= high:
                # Keys below ``value``: on lower ranks plus the local ones below it.
                below = int(self.population[value - 1 - low]) if value > low else 0
                expected = self.expected[i] + self.sign[i] * (iteration + self.offset[i])
                passed += int(below + lesser == expected)
        return passed

    def full_verify(self) -> bool:
        """Sort the last ranking's keys and check the order, here and across ranks."""
        ordered = np.empty(self.local_count, np.int32)
        disorder = _place(self.received[: self.local_count], self.low, self.population, ordered)
        ends = (ordered[0], ordered[-1]) if ordered.size else None
        everyone = self.comm.allgather((disorder, ends))
        previous = None
        bad = 0
        for disorder_there, ends_there in everyone:
            bad += disorder_there
            if ends_there is None:
                continue
            if previous is not None and previous > ends_there[0]:
                bad += 1
            previous = ends_there[1]
        return bad == 0


def run(problem_class: str, comm) -> KernelResult:
    """Run IS of ``problem_class`` on ``comm`` and verify it (collective).

    Parameters
    ----------
    problem_class : str
        ``"S"``, ``"W"``, ``"A"``, ``"B"`` or ``"C"``.
    comm : mpi4py.MPI.Comm
        A power-of-two number of ranks, at most is.c's MAX_PROCS (128 for S, else 1024).

    Returns
    -------
    KernelResult
        The same on every rank; ``seconds`` is the slowest rank's ``MAX_ITERATIONS``
        rankings (key generation, the untimed first ranking and the full verification
        excluded, as in is.c).

    Raises
    ------
    ValueError
        For an unknown class or a rank count is.c refuses; raised on every rank.
    """
    check_ranks(problem_class, comm)
    parameters = CLASSES[problem_class]
    total_keys = 1 << parameters["keys"]
    sorter = _Sorter(problem_class, comm, create_keys(problem_class, comm.rank, comm.size))
    # is.c ranks once untimed to touch every page (and here to compile the kernels).
    sorter.rank_keys(1)
    sorter.communication = 0.0

    comm.Barrier()
    start = MPI.Wtime()
    passed = 0
    for iteration in range(1, MAX_ITERATIONS + 1):
        passed += sorter.rank_keys(iteration)
    elapsed = MPI.Wtime() - start

    mine = np.array([elapsed, elapsed - sorter.communication, sorter.communication])
    slowest = np.empty(3)
    comm.Allreduce(mine, slowest, op=MPI.MAX)
    passed = comm.allreduce(passed, op=MPI.SUM)
    ordered = sorter.full_verify()
    return KernelResult(
        kernel="IS",
        problem_class=problem_class,
        size=str(total_keys),
        iterations=MAX_ITERATIONS,
        seconds=float(slowest[0]),
        operations=float(MAX_ITERATIONS * total_keys),
        checks={
            "partial verification": (passed, TEST_KEYS * MAX_ITERATIONS, None),
            "full verification": (ordered, True, None),
        },
        timings={"computation": float(slowest[1]), "communication": float(slowest[2])},
        ranks=comm.Get_size(),
    )
