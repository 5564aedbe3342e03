"""Collective operations with a choice of algorithm, picked by a cost model when asked.

``bcast``, ``reduce`` and ``allreduce`` take ``algo``: a name from
:data:`~tachyflow.collectives.algorithms.ALGORITHMS`, ``"native"`` (the MPI library's
call), or ``"auto"``: the algorithm (and segment count), ``native`` included, with the
lowest simulated time under the machine profile (``profile=``, else
``$TACHYFLOW_PROFILE``, else the built-in ``shared-memory`` one). ``explain=True``
returns ``(result, Choice)`` telling what ran and why. All ranks must pass the same
count, dtype, op, root and algo.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from tachyflow.collectives import executor
from tachyflow.collectives.algorithms import ALGORITHMS, build
from tachyflow.collectives.formulas import optimal_pipeline_segments, predict
from tachyflow.collectives.simulator import simulate
from tachyflow.models.hockney import Hockney
from tachyflow.models.profiles import load_profile

# Beyond this many ranks "auto" predicts with closed forms instead of the simulator.
SIMULATE_UP_TO = 4096


def native_equivalent(operation: str, nbytes: int, size: int) -> str:
    """The schedule that models the MPI library's own call: MPICH's defaults (binomial
    broadcast below 12 KiB or 8 ranks, else scatter + allgather; recursive-doubling
    allreduce up to 2 KiB, else reduce-scatter + allgather, like the ring; binomial reduce).
    """
    if operation == "bcast":
        return "binomial" if nbytes < 12288 or size < 8 else "scatter-ring"
    if operation == "allreduce":
        return "recursive-doubling" if nbytes <= 2048 else "ring"
    return "binomial"


@dataclass(frozen=True)
class Choice:
    """What ``algo`` ran and why: every candidate's predicted time under ``profile``."""

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


def choose(
    operation: str, size: int, count: int, itemsize: int, profile: Hockney | str | None = None
) -> Choice:
    """The algorithm and segment count with the lowest predicted time (local, no MPI)."""
    model = profile if isinstance(profile, Hockney) else load_profile(profile)
    predictions, segments_of = {}, {}
    for algorithm in ALGORITHMS[operation]:
        segments = None
        if algorithm == "pipeline":
            segments = max(1, min(count, optimal_pipeline_segments(size, count * itemsize, model)))
        schedule = build(operation, algorithm, size, count, 0, segments)
        predicted = None
        if size > SIMULATE_UP_TO:
            try:
                predicted = predict(operation, algorithm, size, count * itemsize, model, segments)[
                    0
                ]
            except ValueError:  # no closed form (or local costs): simulate after all
                predicted = None
        if predicted is None:
            predicted = simulate(schedule, model, itemsize).time
        predictions[algorithm] = predicted
        segments_of[algorithm] = schedule.segments
    # The library's call runs the same kind of algorithm without the Python executor's
    # per-step overhead.
    equivalent = build(
        operation, native_equivalent(operation, count * itemsize, size), size, count, 0
    )
    predictions["native"] = simulate(equivalent, model, itemsize, software_overhead=False).time
    segments_of["native"] = 1
    best = min(predictions, key=predictions.get)
    return Choice(best, segments_of[best], model.name, predictions)


@functools.lru_cache(maxsize=256)
def _plan(operation, algorithm, size, count, root, segments, rank):
    """Schedule, this rank's plan and its scratch arrays, built once per shape of call."""
    schedule = build(operation, algorithm, size, count, root, segments)
    return schedule, executor.plan(schedule, rank), {}


@functools.lru_cache(maxsize=256)
def _cached_choice(operation, size, count, itemsize, profile_key):
    return choose(operation, size, count, itemsize, profile_key)


def _run(
    operation: str,
    comm,
    buffer: np.ndarray,
    op,
    root: int,
    algo: str,
    segments: int | None,
    profile,
    explain: bool,
):
    if not isinstance(buffer, np.ndarray) or buffer.ndim != 1 or not buffer.flags.c_contiguous:
        raise TypeError("buffer must be a 1D C-contiguous numpy array")
    size = comm.Get_size()
    if not 0 <= root < size:
        raise ValueError(f"root must be in [0, {size}), got {root!r}")
    if algo == "auto":
        if isinstance(profile, Hockney):
            choice = choose(operation, size, buffer.size, buffer.itemsize, profile)
        else:  # a profile name or path: the same inputs give the same choice, keep it
            profile_key = profile if profile is not None else load_profile().name
            choice = _cached_choice(operation, size, buffer.size, buffer.itemsize, profile_key)
        algo, segments = choice.algorithm, choice.segments
    else:
        choice = Choice(algo, segments or 1, "none (chosen by the caller)")
    if algo == "native":
        result = executor.native(comm, operation, buffer, op, root)
    else:
        schedule, steps, scratch = _plan(
            operation, algo, size, buffer.size, root, segments, comm.Get_rank()
        )
        result = executor.run(comm, schedule, buffer, op, steps, scratch)
    return (result, choice) if explain else result


def bcast(
    comm,
    buffer: np.ndarray,
    root: int = 0,
    algo: str = "auto",
    segments: int | None = None,
    profile=None,
    explain: bool = False,
):
    """Broadcast ``buffer`` from ``root`` in place (collective over ``comm``)."""
    return _run("bcast", comm, buffer, None, root, algo, segments, profile, explain)


def reduce(
    comm,
    values: np.ndarray,
    op="sum",
    root: int = 0,
    algo: str = "auto",
    profile=None,
    explain: bool = False,
):
    """Reduce ``values`` to ``root``; returns the result there and ``None`` elsewhere.

    ``values`` is left unchanged; ``op`` is sum, prod, min, max or a commutative callable.
    """
    work = np.array(values, copy=True)
    executor.operator(op)
    outcome = _run("reduce", comm, work, op, root, algo, None, profile, explain)
    result, choice = outcome if explain else (outcome, None)
    result = result if comm.Get_rank() == root else None
    return (result, choice) if explain else result


def allreduce(
    comm, values: np.ndarray, op="sum", algo: str = "auto", profile=None, explain: bool = False
):
    """Combine ``values`` over all ranks; every rank gets the result (a new array)."""
    work = np.array(values, copy=True)
    executor.operator(op)
    return _run("allreduce", comm, work, op, 0, algo, None, profile, explain)
