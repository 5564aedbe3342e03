"""Closed-form Hockney costs of the algorithms (Kim's 1998 Korea University report), and
the optimal segment count.

``n`` is the message in bytes, ``P`` the number of ranks, ``T(m) = α + mβ``. The simulator
reproduces every formula here exactly (tested), so the formulas predict without running
anything, and the simulator extends them to algorithms without a closed form.
"""

from __future__ import annotations

import math

from tachyflow.models.hockney import Hockney


def optimal_pipeline_segments(size: int, nbytes: float, model: Hockney) -> int:
    """Segment count minimising ``(k + P - 2)(α + nβ/k)``: ``k* = √((P-2) n β / α)``
    (Kim's 1998 Korea University report), rounded to the better neighbouring integer."""
    if size <= 2 or nbytes <= 0:
        return 1
    candidates = _near(lambda alpha, beta: (size - 2) * nbytes * beta / alpha, model)
    return min(candidates, key=lambda k: pipeline_time(size, nbytes, model, k))


def _near(square, model) -> set[int]:
    """Integers next to ``√square(α, β)`` for each regime of the model (at least 1)."""
    regimes = [(model.alpha, model.beta)]
    if getattr(model, "two_regimes", False):
        regimes.append((model.alpha_large, model.beta_large))
    candidates = {1}
    for alpha, beta in regimes:
        ideal = math.sqrt(square(alpha, beta))
        candidates |= {max(1, math.floor(ideal)), max(1, math.ceil(ideal))}
    return candidates


def pipeline_time(size: int, nbytes: float, model: Hockney, segments: int) -> float:
    """Pipelined chain broadcast with ``segments`` pieces (equal pieces assumed)."""
    if size < 2:
        return 0.0
    return (segments + size - 2) * float(model.message_time(nbytes / segments))


def two_path_time(size: int, nbytes: float, model: Hockney, segments: int) -> float:
    """Two-path pipelined broadcast: the root feeds two chains alternately, so
    ``(2k + ⌊(P-1)/2⌋ - 1)(α + nβ/k)`` (one chain, ``k (α + nβ/k)``, at P = 2)."""
    if size < 3:
        return pipeline_time(size, nbytes, model, segments)
    hops = (size - 1) // 2
    return (2 * segments + hops - 1) * float(model.message_time(nbytes / segments))


def optimal_two_path_segments(size: int, nbytes: float, model: Hockney) -> int:
    """Segment count minimising :func:`two_path_time`: ``k* = √((⌊(P-1)/2⌋ - 1) nβ / 2α)``,
    rounded to the better neighbouring integer."""
    if size < 3:
        return optimal_pipeline_segments(size, nbytes, model)
    hops = max((size - 1) // 2 - 1, 0)
    candidates = _near(lambda alpha, beta: hops * nbytes * beta / (2 * alpha), model)
    return min(candidates, key=lambda k: two_path_time(size, nbytes, model, k))


def predict(
    operation: str,
    algorithm: str,
    size: int,
    nbytes: float,
    model: Hockney,
    segments: int | None = None,
) -> tuple[float, int]:
    """Predicted time and segment count of an algorithm under Hockney; ``nbytes`` is the
    whole buffer of the schedule (P blocks for gather and scatter, 2P for alltoall).

    ValueError for algorithms without a closed form here, for a LogGP model, and for a
    model with local costs (γ, δ, σ): the simulator accounts for those.
    """
    if not isinstance(model, Hockney):
        raise ValueError("closed forms are written for the Hockney model; use the simulator")
    if model.gamma or model.delta or model.sigma or model.exchange != 1:
        raise ValueError(
            "closed forms assume no local costs (gamma = delta = sigma = 0) and full duplex "
            "(exchange = 1)"
        )
    if size == 1:
        return 0.0, 1
    alpha, beta = model.alpha, model.beta
    rounds = math.ceil(math.log2(size))
    power = 1 << (size.bit_length() - 1)
    whole = float(model.message_time(nbytes))
    block = nbytes / size  # one rank's piece of gather and scatter
    chain = ("bcast", "pipeline"), ("scan", "pipeline")
    if (operation, algorithm) in chain:
        segments = segments or optimal_pipeline_segments(size, nbytes, model)
        return pipeline_time(size, nbytes, model, segments), segments
    if (operation, algorithm) == ("bcast", "two-path"):
        segments = segments or optimal_two_path_segments(size, nbytes, model)
        return two_path_time(size, nbytes, model, segments), segments
    forms = {
        ("bcast", "linear"): (size - 1) * whole,
        ("bcast", "binomial"): rounds * whole,
        ("reduce", "binomial"): rounds * whole,
        ("allreduce", "recursive-doubling"): (power.bit_length() - 1 + (2 if power != size else 0))
        * whole,
        ("allreduce", "ring"): 2 * (size - 1) * float(model.message_time(nbytes / size)),
        ("scan", "linear"): (size - 1) * whole,
        ("scan", "recursive-doubling"): rounds * whole,
        ("exscan", "recursive-doubling"): (1 + math.ceil(math.log2(max(size - 1, 1)))) * whole,
        ("gather", "binomial"): rounds * alpha + (size - 1) * block * beta,
        ("scatter", "binomial"): rounds * alpha + (size - 1) * block * beta,
        ("gather", "linear"): (size - 1) * float(model.message_time(block)),
        ("scatter", "linear"): (size - 1) * float(model.message_time(block)),
        ("alltoall", "pairwise"): (size - 1) * float(model.message_time(nbytes / (2 * size))),
    }
    if power == size:  # Rabenseifner's halving and doubling on a power of two
        halves = 2 * (rounds * alpha + (size - 1) / size * nbytes * beta)
        forms[("reduce", "rabenseifner")] = forms[("allreduce", "rabenseifner")] = halves
    if (operation, algorithm) not in forms:
        raise ValueError(f"no closed form for {operation} {algorithm!r}; use the simulator")
    mixes = algorithm == "rabenseifner" or (
        algorithm == "binomial" and operation in ("gather", "scatter")
    )
    if model.two_regimes and mixes:  # α and nβ of different message sizes
        raise ValueError("this closed form needs a single regime (α, β); use the simulator")
    segments = {"ring": size, "rabenseifner": power}.get(algorithm, 1)
    return forms[(operation, algorithm)], segments
