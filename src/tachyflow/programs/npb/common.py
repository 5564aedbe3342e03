"""What every NAS Parallel Benchmark kernel returns, and how it is verified and printed.

A kernel module (``ep``, ``integer_sort``, ``cg``, ``mg``, ``ft``) has ``CLASSES`` (its
problem sizes and official reference values, NPB 3.4.2) and ``run(problem_class, comm)``,
collective, returning a :class:`KernelResult`. A result is verified against NPB's values
before anything else is said about it: an unverified run never gets a Mop/s figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class KernelResult:
    """One run of one kernel (the same on every rank).

    Parameters
    ----------
    kernel, problem_class : str
        ``"CG"``, ``"MG"``, ...; ``"S"``, ``"W"``, ``"A"``, ``"B"``.
    size : str
        The problem size as NPB prints it (``"14000"``, ``"128x128x128"``).
    iterations : int
        Iterations (or trials) timed.
    seconds : float
        Timed section, slowest rank.
    operations : float
        Operation count of the timed section as NPB defines it for the kernel (Mop/s =
        operations / seconds / 1e6).
    checks : dict
        Name -> (computed, reference, tolerance or None for an exact match).
    timings : dict
        ``computation`` and ``communication`` seconds (slowest rank).
    ranks : int
    """

    kernel: str
    problem_class: str
    size: str
    iterations: int
    seconds: float
    operations: float
    checks: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    ranks: int = 1

    @property
    def verified(self) -> bool:
        """Every check within its tolerance (relative), or equal when it has none."""
        return bool(self.checks) and all(
            _passes(computed, reference, tolerance)
            for computed, reference, tolerance in self.checks.values()
        )

    @property
    def mops(self) -> float | None:
        """Mop/s in total, or None for an unverified run."""
        if not self.verified or self.seconds <= 0:
            return None
        return self.operations / self.seconds / 1e6

    def to_entry(self) -> dict:
        """A results-JSON entry."""
        return {
            "name": f"{self.kernel}.{self.problem_class}",
            "kernel": self.kernel,
            "class": self.problem_class,
            "size": self.size,
            "iterations": self.iterations,
            "ranks": self.ranks,
            "verified": self.verified,
            "median": self.seconds,
            "mops_total": self.mops,
            "mops_per_process": None if self.mops is None else self.mops / self.ranks,
            "timings": self.timings,
            "checks": {
                name: {"computed": _plain(c), "reference": _plain(r), "tolerance": t}
                for name, (c, r, t) in self.checks.items()
            },
        }


def _plain(value):
    if isinstance(value, complex | np.complexfloating):
        return [float(value.real), float(value.imag)]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return float(value) if isinstance(value, float | np.floating) else value


def _passes(computed, reference, tolerance) -> bool:
    computed, reference = np.asarray(computed), np.asarray(reference)
    if tolerance is None:
        return computed.shape == reference.shape and bool(np.all(computed == reference))
    scale = np.maximum(np.abs(reference), np.finfo(float).tiny)
    return bool(np.all(np.abs(computed - reference) / scale <= tolerance))


def report(result: KernelResult) -> str:
    """NPB's closing summary, as its programs print it."""
    lines = [
        f" {result.kernel} Benchmark Completed.",
        f" Class           =                        {result.problem_class}",
        f" Size            =            {result.size:>16}",
        f" Iterations      =            {result.iterations:>16}",
        f" Time in seconds =            {result.seconds:>16.2f}",
        f" Total processes =            {result.ranks:>16}",
    ]
    if result.verified:
        lines += [
            f" Mop/s total     =            {result.mops:>16.2f}",
            f" Mop/s/process   =            {result.mops / result.ranks:>16.2f}",
            " Verification    =               SUCCESSFUL",
        ]
    else:
        lines.append(" Verification    =             UNSUCCESSFUL")
        for name, (computed, reference, tolerance) in result.checks.items():
            if not _passes(computed, reference, tolerance):
                lines.append(f"   {name}: computed {computed}, reference {reference}")
    split = ", ".join(f"{k} {v:.3f} s" for k, v in result.timings.items())
    if split:
        lines.append(f" Time split      = {split}")
    return "\n".join(lines)
