"""Which algorithm ``algo="auto"`` runs: the lowest time a machine profile predicts.

:func:`choose` simulates every algorithm of an operation (closed forms beyond
:data:`SIMULATE_UP_TO` ranks) and the MPI library's own call (``native``, modelled as the
library's default algorithm, :func:`native_equivalent`), scales each prediction by the
profile's calibration and returns the fastest as a :class:`Choice`. The profile is
resolved once per call into a :class:`~tachyflow.models.profiles.MachineProfile`, and
choices are cached by its content key: a profile reached by name, by path or by
``$TACHYFLOW_PROFILE`` gives the same choice for the same numbers, and a profile file
rewritten with other numbers a new one. Nothing here communicates.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

from tachyflow.collectives.algorithms import ALGORITHMS, SEGMENTED, build
from tachyflow.collectives.formulas import (
    optimal_pipeline_segments,
    optimal_two_path_segments,
    predict,
)
from tachyflow.collectives.schedule import largest_power_of_two
from tachyflow.collectives.simulator import simulate
from tachyflow.models import Hockney, LogGP
from tachyflow.models.profiles import MachineProfile, calibration_factor, resolve_profile

# Beyond this many ranks "auto" predicts with closed forms instead of the simulator.
SIMULATE_UP_TO = 4096
# Choices kept: one per shape of call and profile content, each a few hundred bytes.
CHOICES_KEPT = 256


def native_equivalent(operation: str, block_bytes: int, size: int, count: int) -> str:
    """The schedule that models the MPI library's own call: MPICH's default selection for
    ``count`` elements (``block_bytes`` per rank's block for gather, scatter and alltoall).

    Broadcast: binomial below 12 KiB or 8 ranks, else scatter + allgather. Reduce:
    binomial up to 2 KiB or fewer elements than the largest power of two P' of the ranks,
    else Rabenseifner; allreduce likewise from 8 B. Scans: recursive doubling. Gather and
    scatter: binomial. Alltoall: Bruck up to 256 B blocks on 8 ranks or more, every send
    at once up to 32 KiB, else pairwise.
    (MPICH 5's built-in selection table, where it has an algorithm of ours.)
    """
    few = count < largest_power_of_two(size)
    return {
        "bcast": "binomial" if block_bytes <= 12288 or size < 8 else "scatter-ring",
        "reduce": "binomial" if block_bytes <= 2048 or few else "rabenseifner",
        "allreduce": "recursive-doubling" if block_bytes <= 8 or few else "rabenseifner",
        "scan": "recursive-doubling",
        "exscan": "recursive-doubling",
        "gather": "binomial",
        "scatter": "binomial",
        "alltoall": (
            "bruck"
            if block_bytes <= 256 and size >= 8
            else "linear-nonblocking"
            if block_bytes <= 32768
            else "pairwise"
        ),
    }[operation]


def schedule_count(operation: str, size: int, count: int) -> int:
    """Elements of the executor's buffer for ``count`` elements per rank (per block for
    gather, scatter and alltoall, whose buffers hold P or 2P blocks)."""
    return count * {"gather": size, "scatter": size, "alltoall": 2 * size}.get(operation, 1)


@dataclass(frozen=True)
class Choice:
    """What ``algo`` ran and why: every candidate's predicted time under ``profile``.

    Parameters
    ----------
    algorithm : str
        The algorithm that runs (``"native"``: the MPI library's call).
    segments : int
        Its segment count.
    profile : str
        The name of the machine profile that predicted it.
    predictions : dict
        Predicted seconds of every candidate, by algorithm (empty when the caller chose).
    """

    algorithm: str
    segments: int
    profile: str
    predictions: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        ranked = sorted(self.predictions.items(), key=lambda item: item[1])
        table = ", ".join(f"{name} {seconds * 1e6:.1f} us" for name, seconds in ranked)
        return (
            f"{self.algorithm} (segments {self.segments}) predicted fastest under the "
            f"{self.profile} profile: {table}"
        )


def segment_count(
    operation: str, algorithm: str, size: int, nbytes: int, model: Hockney | LogGP
) -> int | None:
    """The model's segment count for a segmented algorithm (None for the others).

    Pipelines use the optimum ``k* = √(hops·nβ/α)`` of Kim's 1998 Korea University report
    ("Design of communication functions for high-performance multicomputers") for their
    chain (two paths: :func:`~tachyflow.collectives.formulas.optimal_two_path_segments`),
    with the combining cost γ added to β for scans. The segmented ring keeps messages near
    64 KiB.
    """
    if algorithm not in SEGMENTED:
        return None
    if algorithm == "segmented-ring":
        return max(1, math.ceil(nbytes / size / 65536))
    combine = model.gamma if operation in ("scan", "exscan") else 0.0
    if isinstance(model, Hockney) and model.two_regimes:
        effective = Hockney(
            model.alpha, model.beta + combine, threshold=model.threshold,
            alpha_large=model.alpha_large, beta_large=model.beta_large + combine,
        )
    else:
        effective = Hockney(model.alpha, model.beta + combine)
    if algorithm == "two-path":
        return optimal_two_path_segments(size, nbytes, effective)
    return optimal_pipeline_segments(size, nbytes, effective)


def choose(
    operation: str,
    size: int,
    count: int,
    itemsize: int,
    profile: MachineProfile | Hockney | LogGP | str | None = None,
) -> Choice:
    """The algorithm and segment count with the lowest predicted time (local, no MPI).

    ``count`` is the number of elements per rank (per block for gather, scatter and
    alltoall); ``profile`` is anything :func:`~tachyflow.models.profiles.resolve_profile`
    takes. The choice is cached by the profile's content key
    (:func:`choice_cache_info` counts hits and misses).
    """
    resolved = resolve_profile(profile)
    choice = _choose(operation, size, count, itemsize, resolved)
    # Profiles of equal content share the entry; the explanation names the one asked for.
    return choice if choice.profile == resolved.name else replace(choice, profile=resolved.name)


@functools.lru_cache(maxsize=CHOICES_KEPT)
def _choose(operation, size, count, itemsize, profile: MachineProfile) -> Choice:
    model, calibration = profile.model, profile.calibration
    elements = schedule_count(operation, size, count)
    predictions, segments_of = {}, {}
    for algorithm in ALGORITHMS[operation]:
        segments = segment_count(operation, algorithm, size, elements * itemsize, model)
        if segments is not None:
            segments = max(1, min(segments, max(count, 1)))
        predicted = None
        if size > SIMULATE_UP_TO:
            try:
                predicted, _ = predict(
                    operation, algorithm, size, elements * itemsize, model, segments
                )
            except ValueError:  # no closed form: too slow to simulate at this size
                continue
        schedule = build(operation, algorithm, size, elements, 0, segments)
        if predicted is None:
            predicted = simulate(schedule, model, itemsize).time
        predictions[algorithm] = predicted * calibration_factor(
            calibration, operation, size, algorithm, count * itemsize
        )
        segments_of[algorithm] = schedule.segments
    # The library's call runs the same kind of algorithm without the Python executor's
    # per-step overhead.
    equivalent = native_equivalent(operation, count * itemsize, size, count)
    if size <= SIMULATE_UP_TO:
        predictions["native"] = simulate(
            build(operation, equivalent, size, elements), model, itemsize, software_overhead=False
        ).time * calibration_factor(calibration, operation, size, "native", count * itemsize)
        segments_of["native"] = 1
    best = min(predictions, key=predictions.get)
    return Choice(best, segments_of[best], profile.name, predictions)


def choice_cache_info() -> tuple:
    """This rank's cache of :func:`choose`: the named tuple ``(hits, misses, maxsize,
    currsize)`` of :func:`functools.lru_cache`."""
    return _choose.cache_info()
