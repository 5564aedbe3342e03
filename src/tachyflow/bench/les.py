"""The large-eddy simulation's step against the DNS step of the same case, in the same run
(``tachyflow bench step --les MODEL``, ``bench cylindrical-step --les MODEL``).

The LES solver is the benchmark's case with ``[les] model = MODEL``, on the same grid,
process grid and Δt; after its warm-up steps its step and the DNS's (the benchmark's
solver, each of its variants named in ``dns``) are timed interleaved, pair by pair.
``ratio`` is the LES's median over the DNS default's (the issue's goal: 1.25 at most),
and ``subgrid_share`` the part of the LES step its ``subgrid`` phase took.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from tachyflow.bench.harness import time_interleaved
from tachyflow.bench.results import summarize

#: The cost of an LES step over a DNS step the issue aims at.
GOAL = 1.25


def les_against_dns(les_solver, dt: float, dns: Mapping[str, Callable[[], object]], comm,
                    repeats: int, warmup: int) -> dict:
    """Time ``les_solver``'s step against the DNS variants ``dns`` (name to a step
    callable, the default first), interleaved (collective); frees ``les_solver``."""
    for _ in range(warmup):
        les_solver.step(dt)
    model = les_solver.subgrid.model
    healthy = bool(les_solver.max_divergence() < 1e-9
                   and np.isfinite(les_solver.cell_field("u")).all())
    before = les_solver.phase_seconds()
    name = f"les ({model})"
    samples = time_interleaved({**dns, name: lambda: les_solver.step(dt)}, comm, repeats, 1,
                               description=f"LES ({model}) against DNS")
    after = les_solver.phase_seconds()
    decomposition = les_solver.decomposition
    # The interleaving's one warm-up call and the timed ones.
    subgrid = decomposition.maximum(after["subgrid"] - before["subgrid"]) / (repeats + 1)
    summaries = {key: summarize(values) for key, values in samples.items()}
    default = next(iter(dns))
    les_solver.free()
    decomposition.free()
    return {
        "model": model,
        "verified": healthy,
        "steps": summaries,
        "ratio": summaries[name]["median"] / summaries[default]["median"],
        "ratios": {key: summaries[name]["median"] / summaries[key]["median"] for key in dns},
        "subgrid_share": subgrid / summaries[name]["median"],
        "goal": GOAL,
    }


def describe(result: dict) -> str:
    """One line for the terminal."""
    ratios = ", ".join(f"{ratio:.2f}x {name}" for name, ratio in result["ratios"].items())
    model = result["model"]
    seconds = result["steps"][f"les ({model})"]["median"]
    return (f"LES ({model}) step {seconds * 1e3:.2f} ms: {ratios} (goal {result['goal']}x); "
            f"the subgrid phase "
            f"{100 * result['subgrid_share']:.0f} % of it"
            + ("" if result["verified"] else "; UNVERIFIED (divergence or NaN)"))
