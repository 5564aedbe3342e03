"""Closed-form Hockney costs of the algorithms (seed 003), and the optimal segment count.

``n`` is the message in bytes, ``P`` the number of ranks, ``T(m) = α + mβ``. The simulator
reproduces every formula here exactly (tested), so the formulas predict without running
anything, and the simulator extends them to algorithms without a closed form.
"""

from __future__ import annotations

import math

from tachyflow.models.hockney import Hockney


def optimal_pipeline_segments(size: int, nbytes: float, model: Hockney) -> int:
    """Segment count minimising ``(k + P - 2)(α + nβ/k)``: ``k* = √((P-2) n β / α)``
    (seed 003), rounded to the better neighbouring integer."""
    if size <= 2 or nbytes <= 0 or model.beta == 0:
        return 1
    ideal = math.sqrt((size - 2) * nbytes * model.beta / model.alpha)
    candidates = {max(1, math.floor(ideal)), max(1, math.ceil(ideal))}
    return min(candidates, key=lambda k: pipeline_time(size, nbytes, model, k))


def pipeline_time(size: int, nbytes: float, model: Hockney, segments: int) -> float:
    """Pipelined chain broadcast with ``segments`` pieces (equal pieces assumed)."""
    if size < 2:
        return 0.0
    return (segments + size - 2) * float(model.message_time(nbytes / segments))


def predict(
    operation: str,
    algorithm: str,
    size: int,
    nbytes: float,
    model: Hockney,
    segments: int | None = None,
) -> tuple[float, int]:
    """Predicted time and segment count of an algorithm; ValueError for unknown names, and
    for a model with local costs (γ, δ), whose effect the simulator accounts for."""
    if model.gamma or model.delta or model.sigma:
        raise ValueError("closed forms assume no local costs (gamma = delta = sigma = 0)")
    rounds = math.ceil(math.log2(size)) if size > 1 else 0
    whole = float(model.message_time(nbytes))
    if (operation, algorithm) == ("bcast", "pipeline"):
        segments = segments or optimal_pipeline_segments(size, nbytes, model)
        return pipeline_time(size, nbytes, model, segments), segments
    if (operation, algorithm) == ("bcast", "linear"):
        return (size - 1) * whole, 1
    if algorithm == "binomial" and operation in ("bcast", "reduce"):
        return rounds * whole, 1
    if (operation, algorithm) == ("allreduce", "recursive-doubling"):
        power = 1 << (size.bit_length() - 1)
        folds = 2 if power != size else 0
        return (power.bit_length() - 1 + folds) * whole, 1
    if (operation, algorithm) == ("allreduce", "ring"):
        return (
            2 * (size - 1) * float(model.message_time(nbytes / size)) if size > 1 else 0.0
        ), size
    raise ValueError(f"no closed form for {operation} {algorithm!r}; use the simulator")
