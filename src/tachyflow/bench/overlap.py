"""Overlapped transposes on and off in the same run: one solver timed three ways.

A benchmark of a solver with an overlap switch (see
:func:`tachyflow.parallel.transpose.pipelined`) times it, interleaved sample by sample,
blocking, overlapped, and overlapped with progress calls (the pending transfers tested
between stages: MPICH moves non-blocking collectives only inside MPI calls). The variant
the solver runs by default keeps the plain name ``NAME``; the others are
``NAME-blocking`` or ``NAME-overlapped``, and ``NAME-overlapped-progress-calls``.

:func:`record` adds ``document["overlap"]``: each overlapped variant's speed-up over the
blocking one (the blocking median over its median, > 1: overlap wins). The results agree
(tested: the same bits, or the same to round-off in a Poisson solve), so the one solver
steps on through all three.
"""

from __future__ import annotations

from collections.abc import Callable

from tachyflow.bench.harness import Candidate


def variants(name: str, overlapped_by_default: bool) -> dict[str, tuple[bool, bool]]:
    """Candidate name -> (overlap, progress calls), the default first."""
    if overlapped_by_default:
        return {
            name: (True, False),
            name + "-blocking": (False, False),
            name + "-overlapped-progress-calls": (True, True),
        }
    return {
        name: (False, False),
        name + "-overlapped": (True, False),
        name + "-overlapped-progress-calls": (True, True),
    }


def switch_of(solver, attribute: str = "overlap") -> Callable[[bool, bool], None]:
    """The switch of a solver's ``attribute`` (its overlap flag) and ``progress_calls``."""

    def switch(overlap: bool, progress: bool) -> None:
        setattr(solver, attribute, overlap)
        solver.progress_calls = progress

    return switch


def candidates(
    name: str,
    run: Callable[[], object],
    verified: bool,
    switch: Callable[[bool, bool], None],
    overlapped_by_default: bool = False,
    details: dict | None = None,
) -> list[Candidate]:
    """``run`` (collective) as the three :func:`variants`, each after
    ``switch(overlap, progress_calls)`` has set the solver."""

    def variant(overlap: bool, progress: bool):
        def switched():
            switch(overlap, progress)
            return run()

        return switched

    return [
        Candidate(variant_name, variant(*switches), verified, details=dict(details or {}))
        for variant_name, switches in variants(name, overlapped_by_default).items()
    ]


def record(document: dict, name: str, overlapped_by_default: bool = False) -> dict | None:
    """``document["overlap"]`` from the timed variants of ``name`` (None if one failed)."""
    medians = {
        entry["name"]: entry["median"] for entry in document["results"] if entry["verified"]
    }
    by_switches = {
        switches: medians.get(variant_name)
        for variant_name, switches in variants(name, overlapped_by_default).items()
    }
    if None in by_switches.values():
        return None
    blocking = by_switches[(False, False)]
    document["overlap"] = {
        "speedup": blocking / by_switches[(True, False)],
        "speedup_with_progress_calls": blocking / by_switches[(True, True)],
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
