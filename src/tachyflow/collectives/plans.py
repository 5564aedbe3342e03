"""The executor's plans, kept between calls within a budget of bytes.

A plan is what one shape of call (operation, algorithm, ranks, elements, root, segments
and this rank) needs again on the next one: the schedule, this rank's steps of it and the
scratch arrays (receive, packing and gather/scatter/alltoall workspace buffers) that the
first call fills in, which spare later calls fresh pages. Scratch grows with the message,
so plans are bounded by the bytes they hold, not by their number: once the total passes
the budget the least recently used plans are dropped, and a plan larger than the whole
budget is used once and not kept. The budget is ``$TACHYFLOW_PLAN_CACHE_BYTES`` when set
at import, else :data:`DEFAULT_BUDGET`; ``PLANS.budget`` changes it at run time. Each rank
keeps its own plans: nothing here communicates, and a dropped plan only costs the next
call the time to rebuild it.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from tachyflow.collectives import executor
from tachyflow.collectives.algorithms import build
from tachyflow.collectives.schedule import Schedule
from tachyflow.errors import ConfigError

BUDGET_VARIABLE = "TACHYFLOW_PLAN_CACHE_BYTES"
DEFAULT_BUDGET = 64 * 2**20


class ByteBudgetCache:
    """Least recently used values within a budget of bytes (local to the process).

    Values report their size as ``nbytes`` (numpy arrays do), which may grow while they
    are in use: :meth:`settle` measures a value again after its use and drops the least
    recently used values until the total is within the budget; a value larger than the
    whole budget is dropped alone, the others kept.

    Parameters
    ----------
    budget : int
        Bytes the values may hold together (>= 0; 0 keeps nothing).

    Attributes
    ----------
    nbytes : int
        Bytes the kept values hold, as last measured.
    hits, misses : int
        Calls of :meth:`get` that found their key, and that built the value.

    Raises
    ------
    TypeError
        ``budget`` is not an integer.
    ValueError
        ``budget`` is negative.
    """

    def __init__(self, budget: int):
        self._values: OrderedDict[Hashable, object] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self.nbytes = 0
        self.hits = self.misses = 0
        self.budget = budget

    @property
    def budget(self) -> int:
        """Bytes the values may hold together; setting it drops values beyond it."""
        return self._budget

    @budget.setter
    def budget(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"the cache budget must be a whole number of bytes, got {value!r}")
        if value < 0:
            raise ValueError(f"the cache budget must be >= 0 bytes, got {value!r}")
        self._budget = int(value)
        self._evict()

    def get(self, key: Hashable, build: Callable[[], object]):
        """The value kept under ``key``, or ``build()`` kept under it; either way the most
        recently used now."""
        if key in self._values:
            self._values.move_to_end(key)
            self.hits += 1
            return self._values[key]
        self.misses += 1
        value = self._values[key] = build()
        self._sizes[key] = 0
        self.settle(key)
        return value

    def settle(self, key: Hashable) -> None:
        """Measure the value under ``key`` again (after a use that may have grown it) and
        drop values until the total is within the budget."""
        if key not in self._values:  # already dropped: used once, not kept
            return
        size = int(self._values[key].nbytes)
        self.nbytes += size - self._sizes[key]
        self._sizes[key] = size
        if size > self._budget:  # would push out everything else and still not fit
            self._drop(key)
        self._evict()

    def _evict(self) -> None:
        while self.nbytes > self._budget:
            self._drop(next(iter(self._values)))

    def _drop(self, key: Hashable) -> None:
        del self._values[key]
        self.nbytes -= self._sizes.pop(key)

    def clear(self) -> None:
        """Drop every value."""
        self._values.clear()
        self._sizes.clear()
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values


@dataclass
class Plan:
    """One shape of call's schedule, this rank's steps of it and its scratch arrays.

    ``key`` is the shape (the key it is cached under), ``steps`` the executor's
    :func:`~tachyflow.collectives.executor.plan` of ``schedule`` for this rank, and
    ``scratch`` the dict of arrays :func:`~tachyflow.collectives.executor.run` and
    :meth:`workspace` keep between calls.
    """

    key: tuple
    schedule: Schedule
    steps: list
    scratch: dict = field(default_factory=dict)
    fixed_bytes: int = 0

    @property
    def nbytes(self) -> int:
        """Bytes held: the schedule's bounds, the steps and every scratch array."""
        return self.fixed_bytes + sum(array.nbytes for array in self.scratch.values())

    def workspace(self, dtype) -> np.ndarray:
        """The executor's buffer (the schedule's elements of ``dtype``) for gather, scatter
        and alltoall, kept with the plan so that repeated calls do not pay for fresh pages."""
        key = ("workspace", np.dtype(dtype).str)
        if key not in self.scratch:
            self.scratch[key] = np.empty(self.schedule.count, dtype)
        return self.scratch[key]


def budget_from_environment() -> int:
    """``$TACHYFLOW_PLAN_CACHE_BYTES`` as a number of bytes, else :data:`DEFAULT_BUDGET`.

    Raises
    ------
    ConfigError
        The variable is set to anything but a whole number of bytes >= 0.
    """
    text = os.environ.get(BUDGET_VARIABLE)
    if text is None:
        return DEFAULT_BUDGET
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"{BUDGET_VARIABLE} must be a whole number of bytes >= 0, got {text!r}")
    return value


PLANS = ByteBudgetCache(budget_from_environment())


def plan(
    operation: str, algorithm: str, size: int, count: int, root: int, segments, rank: int
) -> Plan:
    """The plan of a call from :data:`PLANS`, built on a miss (local, no MPI). Call
    ``PLANS.settle(plan.key)`` after using it: its scratch may have grown."""
    key = (operation, algorithm, size, count, root, segments, rank)
    return PLANS.get(key, lambda: _build(key))


def _build(key: tuple) -> Plan:
    operation, algorithm, size, count, root, segments, rank = key
    schedule = build(operation, algorithm, size, count, root, segments)
    steps = executor.plan(schedule, rank)
    return Plan(key, schedule, steps, fixed_bytes=schedule.bounds.nbytes + _footprint(steps))


def _footprint(value) -> int:
    """Bytes of nested lists and tuples of numbers, as Python holds them."""
    if isinstance(value, list | tuple):
        return sys.getsizeof(value) + sum(_footprint(item) for item in value)
    return sys.getsizeof(value)
