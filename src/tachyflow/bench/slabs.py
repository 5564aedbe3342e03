"""The pressure solve's z-slabs on and off in the same run.

On a ``p_row × 1`` grid the Poisson solve takes the spectrum to z-slabs, where the x
transforms and the y solves are local: two exchanges per solve instead of four
(:class:`~tachyflow.solvers.pencil.poisson.PoissonSolver`, ``slabs``). A benchmark of such a
solver adds a candidate ``NAME-pencil-transposes``, the default (blocking) variant with
the slabs off, interleaved with the others; :func:`record` adds ``document["slabs"]``:
its median over the default's (> 1: the slabs win). The results agree to round-off
(tested), so one solver steps on through both.
"""

from __future__ import annotations

from collections.abc import Callable

from tachyflow.bench.harness import Candidate

SUFFIX = "-pencil-transposes"


def candidates(
    name: str,
    run: Callable[[], object],
    verified: bool,
    switch: Callable[[bool, bool], None],
    poisson,
    details: dict | None = None,
) -> list[Candidate]:
    """``NAME-pencil-transposes``: ``run`` (collective) blocking, with ``poisson``'s
    slabs off; none where the solve has no slabs (another process grid)."""
    if not poisson.slabs:
        return []

    def pencils():
        switch(False, False)
        poisson.slabs = False
        try:
            return run()
        finally:
            poisson.slabs = True

    return [Candidate(name + SUFFIX, pencils, verified, details=dict(details or {}))]


def record(document: dict, name: str) -> dict | None:
    """``document["slabs"]`` from the timed variants (None without both verified)."""
    medians = {
        entry["name"]: entry["median"] for entry in document["results"] if entry["verified"]
    }
    if name not in medians or name + SUFFIX not in medians:
        return None
    document["slabs"] = {"speedup": medians[name + SUFFIX] / medians[name]}
    return document["slabs"]


def summary(document: dict) -> str | None:
    """One line for the console, or None without a slab record."""
    slabs = document.get("slabs")
    if slabs is None:
        return None
    return (
        f"z-slabs in the pressure solve: {slabs['speedup']:.2f}x the speed with pencil "
        "transposes (same run, medians)"
    )
