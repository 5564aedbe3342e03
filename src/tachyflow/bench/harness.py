"""Timing harness shared by every benchmark.

Method (DESIGN.md, "Timing method"): warm-up calls, then repeated samples; each sample is
a barrier, ``iterations`` calls, and the slowest rank's time (max-reduced). Candidates
measured in one run are interleaved sample by sample, so that a change in the load of a
shared machine hits all of them alike and their ratio stays meaningful.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mpi4py import MPI

from tachyflow.runtime import progress_bar


def time_interleaved(
    candidates: Mapping[str, Callable[[], object]],
    comm,
    repeats: int,
    warmup: int = 2,
    iterations: int = 1,
    description: str = "timing",
) -> dict[str, list[float]]:
    """Seconds per call of each candidate, ``repeats`` samples each (collective).

    Parameters
    ----------
    candidates : mapping of name to callable
        Each callable is collective over ``comm`` and takes no argument.
    comm : mpi4py.MPI.Intracomm
        Communicator the candidates run on; times are max-reduced over it.
    repeats, warmup, iterations : int
        Samples per candidate, untimed calls before sampling, calls per sample.
    description : str
        Label of the progress bar (rank 0).
    """
    for name, value in (("repeats", repeats), ("iterations", iterations)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative integer, got {warmup!r}")
    for function in candidates.values():
        for _ in range(warmup):
            function()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    with progress_bar(description, repeats * len(candidates)) as advance:
        for _ in range(repeats):
            for name, function in candidates.items():
                comm.Barrier()
                start = MPI.Wtime()
                for _ in range(iterations):
                    function()
                elapsed = (MPI.Wtime() - start) / iterations
                samples[name].append(comm.allreduce(elapsed, op=MPI.MAX))
                advance(1)
    return samples
