"""NPB 3.4.2 EP: the embarrassingly parallel kernel (Gaussian deviates by rejection).

``2^(M+1)`` uniform numbers from NPB's generator (seed 271828183, ``a = 5^13``), drawn in
batches of ``NK = 2^16`` pairs. Each pair ``(x, y) = 2u - 1`` inside the unit disc
(``t = x² + y² <= 1``) gives two Gaussian deviates ``X = x f``, ``Y = y f`` with
``f = sqrt(-2 ln t / t)``; NPB 3.4.2 sums ``|X|`` and ``|Y|`` (3.3 summed the signed
values, hence different reference sums) and counts each pair in the square annulus
``l = int(max(|X|, |Y|))``. Ranks take equal shares of the batches, the first
``batches mod P`` one more (as NPB-MPI), and start each batch by jumping the generator
ahead, so any rank count draws exactly NPB's numbers. Mop/s is ``2^(M+1) / time / 1e6``.
"""

from __future__ import annotations

import math

import numpy as np
from mpi4py import MPI

from tachyflow import collectives
from tachyflow.numerics.compiled import kernel
from tachyflow.programs.npb.common import KernelResult
from tachyflow.programs.npb.random import A, power, randlc, vranlc

MK = 16
NK = 1 << MK  # pairs per batch
NQ = 10  # square annuli counted
SEED = 271828183.0
EPSILON = 1e-8  # NPB's relative tolerance on the sums

# Class -> M (2^(M+1) numbers) and NPB 3.4.2's reference sums of |X|, |Y| and number of
# Gaussian pairs (EP/verify.f90).
CLASSES = {
    "S": {"m": 24, "sx": 1.051299420395306e07, "sy": 1.051517131857535e07, "pairs": 13176389},
    "W": {"m": 25, "sx": 2.102505525182392e07, "sy": 2.103162209578822e07, "pairs": 26354769},
    "A": {"m": 28, "sx": 1.682235632304711e08, "sy": 1.682195123368299e08, "pairs": 210832767},
    "B": {"m": 30, "sx": 6.728927543423024e08, "sy": 6.728951822504275e08, "pairs": 843345606},
    "C": {
        "m": 32,
        "sx": 2.691444083862931e09,
        "sy": 2.691519118724585e09,
        "pairs": 3373275903,
    },
}


@kernel
def _batches(first, count, uniforms, sums):  # pragma: no cover  (compiled)
    """Batches ``first .. first + count - 1``: adds Σ|X|, Σ|Y| to ``sums[0:2]`` and the
    annulus counts to ``sums[2:2 + NQ]``. ``uniforms`` holds one batch's 2·NK numbers."""
    # Batch k starts 2·NK·k draws into the stream: seed · (a^(2·NK))^k, as NPB jumps.
    batch_multiplier = power(A, 2 * NK)
    sx = 0.0
    sy = 0.0
    for batch in range(first, first + count):
        _, seed = randlc(SEED, power(batch_multiplier, batch))
        vranlc(2 * NK, seed, A, uniforms)
        for i in range(NK):
            x1 = 2.0 * uniforms[2 * i] - 1.0
            x2 = 2.0 * uniforms[2 * i + 1] - 1.0
            t = x1 * x1 + x2 * x2
            if t <= 1.0:
                factor = math.sqrt(-2.0 * math.log(t) / t)
                gx = abs(x1 * factor)
                gy = abs(x2 * factor)
                sums[2 + int(max(gx, gy))] += 1.0
                sx += gx
                sy += gy
    sums[0] += sx
    sums[1] += sy


def share(batches: int, size: int, rank: int) -> tuple[int, int]:
    """NPB-MPI's split: ``(first batch, number of batches)`` of ``rank``; the first
    ``batches mod size`` ranks take one batch more."""
    base, extra = divmod(batches, size)
    count = base + (rank < extra)
    first = rank * base + min(rank, extra)
    return first, count


def run(problem_class: str, comm) -> KernelResult:
    """Run EP of ``problem_class`` on ``comm`` and verify it (collective).

    Parameters
    ----------
    problem_class : str
        ``"S"``, ``"W"``, ``"A"``, ``"B"`` or ``"C"``.
    comm : mpi4py.MPI.Comm
        Any number of ranks up to the number of batches, ``2^(M - 16)``.

    Returns
    -------
    KernelResult
        The same on every rank; ``seconds`` is the slowest rank's timed section
        (generation, deviates and the final sums).

    Raises
    ------
    ValueError
        For an unknown class, or more ranks than batches (NPB-MPI stops with "Too many
        nodes" when a rank would get none); raised on every rank.
    """
    if problem_class not in CLASSES:
        raise ValueError(
            f"unknown NPB EP class {problem_class!r}; expected one of {', '.join(CLASSES)}"
        )
    parameters = CLASSES[problem_class]
    m = parameters["m"]
    batches = 1 << (m - MK)
    size, rank = comm.Get_size(), comm.Get_rank()
    if size > batches:
        raise ValueError(
            f"EP class {problem_class} has {batches} batches of 2^{MK} pairs and NPB-MPI "
            f"gives every rank at least one; {size} ranks is too many"
        )
    first, count = share(batches, size, rank)
    uniforms = np.empty(2 * NK)
    local = np.zeros(2 + NQ)
    total = np.empty(2 + NQ)
    # Untimed call with no batches: compiles (or loads) the kernel and touches the
    # buffers, as NPB's untimed warm-up calls do.
    _batches(0, 0, uniforms, local)

    comm.Barrier()
    start = MPI.Wtime()
    _batches(first, count, uniforms, local)
    computed = MPI.Wtime()
    collectives.allreduce(comm, local, "sum", "native", out=total)
    finish = MPI.Wtime()

    slowest = np.empty(3)
    comm.Allreduce(
        np.array([finish - start, computed - start, finish - computed]), slowest, op=MPI.MAX
    )
    sx, sy = float(total[0]), float(total[1])
    pairs = int(total[2:].sum())
    return KernelResult(
        kernel="EP",
        problem_class=problem_class,
        size=str(2 ** (m + 1)),
        iterations=0,
        seconds=float(slowest[0]),
        operations=float(2 ** (m + 1)),
        checks={
            "sum of |X|": (sx, parameters["sx"], EPSILON),
            "sum of |Y|": (sy, parameters["sy"], EPSILON),
            "Gaussian pairs": (pairs, parameters["pairs"], None),
        },
        timings={"computation": float(slowest[1]), "communication": float(slowest[2])},
        ranks=size,
    )
