"""Overlapped transposes on and off in the same run: one solver timed three ways.

A benchmark of a solver with an ``overlap`` switch (and ``progress_calls``, see
:func:`tachyflow.parallel.transpose.pipelined`) times it, interleaved sample by sample:

- ``NAME``: blocking transposes (the default: overlap was slower where measured);
- ``NAME-overlapped``: overlapped transposes, no help for MPI's progress;
- ``NAME-overlapped-progress-calls``: overlapped, the pending transfers tested between
  stages (MPICH moves non-blocking collectives only inside MPI calls).

:func:`record` adds ``document["overlap"]``: each overlapped variant's speed-up over the
blocking one (the blocking median over its median, > 1: overlap wins). The results agree
(tested: the same bits, or the same to round-off in a Poisson solve), so the one solver
steps on through all three.
"""

from __future__ import annotations

from collections.abc import Callable

from tachyflow.bench.harness import Candidate

# suffix of the candidate's name -> (overlap, progress_calls)
VARIANTS = {
    "": (False, False),
    "-overlapped": (True, False),
    "-overlapped-progress-calls": (True, True),
}


def candidates(
    name: str, solver, run: Callable[[], object], verified: bool, details: dict | None = None
) -> list[Candidate]:
    """``run`` (collective) as the three variants of :data:`VARIANTS`, ``name`` first."""

    def variant(overlap: bool, progress: bool):
        def switched():
            solver.overlap = overlap
            solver.progress_calls = progress
            return run()

        return switched

    return [
        Candidate(name + suffix, variant(*switches), verified, details=dict(details or {}))
        for suffix, switches in VARIANTS.items()
    ]


def record(document: dict, name: str) -> dict | None:
    """``document["overlap"]`` from the timed variants of ``name`` (None if one failed)."""
    medians = {
        entry["name"]: entry["median"] for entry in document["results"] if entry["verified"]
    }
    if any(name + suffix not in medians for suffix in VARIANTS):
        return None
    blocking = medians[name]
    document["overlap"] = {
        "speedup": blocking / medians[name + "-overlapped"],
        "speedup_with_progress_calls": blocking / medians[name + "-overlapped-progress-calls"],
    }
    return document["overlap"]


def summary(document: dict) -> str | None:
    """One line for the console, or None without an overlap record."""
    overlap = document.get("overlap")
    if overlap is None:
        return None
    return (
        f"overlapped transposes: {overlap['speedup']:.2f}x the blocking speed, "
        f"{overlap['speedup_with_progress_calls']:.2f}x with progress calls (same run, medians)"
    )
