"""Timing harness shared by every benchmark.

Method (DESIGN.md, "Timing method"): warm-up calls, then repeated samples; each sample is
a barrier, ``iterations`` calls, and the slowest rank's time (max-reduced). Candidates
measured in one run are interleaved sample by sample, so that a change in the load of a
shared machine hits all of them alike and their ratio stays meaningful.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from mpi4py import MPI

from tachyflow.bench.results import summarize
from tachyflow.runtime import progress_bar


def time_interleaved(
    candidates: Mapping[str, Callable[[], object]],
    comm,
    repeats: int,
    warmup: int = 2,
    iterations: int = 1,
    description: str = "timing",
    self_timed: Collection[str] = (),
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
    self_timed : collection of str
        Candidates that time themselves: each call returns the seconds it measured (a
        peer running as its own MPI job times itself there, without the cost of asking it).
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
                if name in self_timed:
                    elapsed = sum(function() for _ in range(iterations)) / iterations
                else:
                    start = MPI.Wtime()
                    for _ in range(iterations):
                        function()
                    elapsed = (MPI.Wtime() - start) / iterations
                samples[name].append(comm.allreduce(elapsed, op=MPI.MAX))
                advance(1)
    return samples


@dataclass
class Candidate:
    """One thing to time: ours or a peer's, already checked for a correct answer.

    ``run`` is collective and takes no argument; ``verified`` is this rank's verdict of
    the candidate's answer (combined over ranks by :func:`measure`); ``details`` are
    copied into its results entry (e.g. a peer's version). A ``self_timed`` candidate's
    ``run`` returns the seconds it took, measured by the peer itself.
    """

    name: str
    run: Callable[[], object]
    verified: bool
    peer: bool = False
    details: dict = field(default_factory=dict)
    self_timed: bool = False


PEER_INSTALL_HINT = "not installed: `make bench` installs it (pip extra 'bench')"


def measure(
    document: dict,
    candidates: list[Candidate],
    comm,
    repeats: int,
    warmup: int,
    description: str,
    bytes_moved: int | None = None,
) -> dict:
    """Time the verified candidates interleaved and record them in ``document`` (collective).

    A candidate whose answer is wrong on any rank is recorded with ``verified: false`` and
    never timed. Ours go to ``results``, peers to ``peers``; every verified result gets
    ``speedup_vs_peer`` (the first verified peer's median over its own),
    ``speedup_vs_peers`` (the same for every verified peer, by name) and, when
    ``bytes_moved`` is given, ``bandwidth`` in bytes per second.
    """
    verified = {c.name: comm.allreduce(bool(c.verified), op=MPI.LAND) for c in candidates}
    samples = time_interleaved(
        {c.name: c.run for c in candidates if verified[c.name]},
        comm,
        repeats,
        warmup,
        description=description,
        self_timed={c.name for c in candidates if c.self_timed},
    )
    for candidate in candidates:
        entry = {"name": candidate.name, "verified": verified[candidate.name], **candidate.details}
        if verified[candidate.name]:
            entry.update(summarize(samples[candidate.name]))
            if bytes_moved is not None:
                entry["bandwidth"] = bytes_moved / entry["median"]
        document["peers" if candidate.peer else "results"].append(entry)
    peers = [p for p in document["peers"] if p["verified"]]
    for entry in document["results"]:
        if peers and entry["verified"]:
            entry["speedup_vs_peer"] = peers[0]["median"] / entry["median"]
            entry["speedup_vs_peers"] = {p["name"]: p["median"] / entry["median"] for p in peers}
    return document
