"""Exclusive wall time per named phase, phases nested inside one another.

A phase entered inside another is charged to itself only: the enclosing phase's time is
what is left of it once the nested phases are taken out, so the phases of one step add
up to the step's time (no double counting of, say, an exchange inside a sweep).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager


class PhaseClock:
    """Accumulates exclusive seconds per phase: ``with clock("exchange"): ...``.

    Parameters
    ----------
    clock : callable, optional
        Returns the current time in seconds (default :func:`time.perf_counter`).

    Notes
    -----
    Local (no communication); one clock per rank.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.seconds: dict[str, float] = defaultdict(float)
        self._clock = clock
        self._nested: list[float] = []  # per open phase: seconds spent in phases inside it

    @contextmanager
    def __call__(self, phase: str):
        start = self._clock()
        self._nested.append(0.0)
        try:
            yield
        finally:
            elapsed = self._clock() - start
            self.seconds[phase] += elapsed - self._nested.pop()
            if self._nested:
                self._nested[-1] += elapsed

    def reset(self) -> None:
        """Forget the seconds so far."""
        self.seconds.clear()
