"""``[insitu] duty_cycle = [on, off]``: visualisation in windows, its cost measured within
the run.

The pipelines are due only in the first ``on`` steps of every ``on + off``. Each iteration
is timed from one call of the adaptor to the next (so a step's visualisation counts with
the iteration after it), and each cycle's iterations fall in two parts: *active* (the
window and the first half of the quiet steps after it, where readers finish drawing the
window's last steps and caches refill) and *quiet* (the second half). What the outputs
cost, readers' interference and all, is then the active part's time beyond as many quiet
iterations (those before and after it), per output: a comparison a few seconds apart within
one process, which this machine's drift between runs (10-20 %) does not blur as it does a
comparison of runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise


@dataclass
class CycleTimes:
    """One cycle's seconds and iteration counts (rank 0's clock)."""

    active_seconds: float = 0.0
    active_iterations: int = 0
    outputs: int = 0
    quiet_seconds: float = 0.0
    quiet_iterations: int = 0

    @property
    def complete(self) -> bool:
        return self.outputs > 0 and self.quiet_iterations > 0


@dataclass
class DutyCycle:
    """Which steps the pipelines may run at, and the cycles' times (local to a rank).

    Parameters
    ----------
    on, off : int
        Steps with pipelines and steps without, both positive.
    """

    on: int
    off: int
    cycles: list[CycleTimes] = field(default_factory=list, init=False)
    _last: tuple[int, float] | None = field(default=None, init=False)

    def __post_init__(self):
        for name, value in (("on", self.on), ("off", self.off)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"duty cycle {name} must be a step count, got {value!r}")
            if value < 1:
                raise ValueError(f"duty cycle {name} must be a positive step count, got {value}")
        # Seconds and counts of the iterations at each position of a cycle (after the
        # first cycle): where in the window the time goes.
        self._position_seconds = [0.0] * (self.on + self.off)
        self._position_counts = [0] * (self.on + self.off)

    def _position(self, step: int) -> tuple[int, int]:
        return divmod(step - 1, self.on + self.off)

    def active(self, step: int) -> bool:
        """Whether pipelines may run after ``step`` (1-based)."""
        return self._position(step)[1] < self.on

    def iteration_ended(self, step: int, now: float, output: bool = False) -> None:
        """The adaptor's call after ``step`` began at ``now`` (seconds); ``output``:
        whether pipelines run after this step. Closes the iteration that began with the
        last call, in that call's part of its cycle."""
        if self._last is not None:
            previous, started = self._last
            self._add(previous, now - started)
        self._last = (step, now)
        if output:
            self._cycle(step).outputs += 1

    def _cycle(self, step: int) -> CycleTimes:
        index = self._position(step)[0]
        while len(self.cycles) <= index:
            self.cycles.append(CycleTimes())
        return self.cycles[index]

    def _add(self, step: int, seconds: float) -> None:
        cycle = self._cycle(step)
        index, position = self._position(step)
        if index > 0:
            self._position_seconds[position] += seconds
            self._position_counts[position] += 1
        if position < self.on + self.off // 2:
            cycle.active_seconds += seconds
            cycle.active_iterations += 1
        else:
            cycle.quiet_seconds += seconds
            cycle.quiet_iterations += 1

    def summary(self) -> dict:
        """The windows, and per complete cycle after the first (which holds the first
        output: readers attaching, buffers first touched) the seconds per output and of a
        quiet iteration, the quiet steps before and after its window taken together (a
        drift across the cycle cancels)."""
        output_cost, quiet_iteration = [], []
        for before, cycle in pairwise(self.cycles):
            if not (cycle.complete and before.quiet_iterations):
                continue
            quiet = (before.quiet_seconds + cycle.quiet_seconds) / (
                before.quiet_iterations + cycle.quiet_iterations
            )
            extra = cycle.active_seconds - cycle.active_iterations * quiet
            output_cost.append(extra / cycle.outputs)
            quiet_iteration.append(quiet)
        return {
            "on": self.on,
            "off": self.off,
            "output_cost": output_cost,
            "quiet_iteration": quiet_iteration,
            # Mean seconds of the iteration at each position (0: the cycle's first step's).
            "iteration_by_position": [
                seconds / count if count else None
                for seconds, count in zip(
                    self._position_seconds, self._position_counts, strict=True
                )
            ],
        }


def overhead_at_cadence(summary: dict, every: int) -> list[float]:
    """Per measured cycle, what outputs every ``every`` steps add to an iteration, as a
    fraction of a quiet one."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every!r}")
    pairs = zip(summary["output_cost"], summary["quiet_iteration"], strict=True)
    return [float(cost / (every * quiet)) for cost, quiet in pairs]


def check_cadence(on: int, off: int, every: int) -> None:
    """Raise ValueError unless outputs every ``every`` steps fall at the same places in
    every window (``every`` divides ``on + off``), a window holds an output and every step
    after it until the next (``on >= 2 every - 1``) and the quiet half of the off steps
    holds every place of that cadence (``off - off // 2 >= every``)."""
    if every < 1 or (on + off) % every or on < 2 * every - 1 or off - off // 2 < every:
        raise ValueError(
            f"with a duty cycle of {on} + {off} steps, every ({every}) must divide "
            f"{on + off}, and on and off must be at least {2 * every - 1}"
        )


def excess_after_output(summary: dict, every: int) -> dict:
    """From the iterations by position: the mean seconds beyond a quiet iteration of the
    iteration of an output and of each after it until the next (``by_offset``, an output
    every ``every`` steps; ``overhead``: their sum over the ``every`` quiet iterations of a
    cadence), and of the iterations after the window where readers finish
    (``after_window``).

    Each position is compared with the quiet iterations at the same place in the cadence
    (the same step modulo ``every``): other work on that cadence, such as statistics
    every ``every`` steps, then cancels. The quiet half of the off steps must hold every
    place, ``off - off // 2 >= every``.
    """
    on, off = summary["on"], summary["off"]
    check_cadence(on, off, every)
    profile = summary["iteration_by_position"]
    if any(value is None for value in profile):
        raise ValueError("the run measured no complete cycle after the first")
    quiet_positions = range(on + off // 2, on + off)
    quiet_by_place = [
        sum(profile[q] for q in quiet_positions if q % every == place)
        / sum(1 for q in quiet_positions if q % every == place)
        for place in range(every)
    ]

    def excess(positions) -> float | None:
        values = [profile[p] - quiet_by_place[p % every] for p in positions]
        return sum(values) / len(values) if values else None

    first = every - 1  # position of the window's first output (step ``every``)
    quiet = sum(profile[q] for q in quiet_positions) / len(quiet_positions)
    by_offset = [excess(range(first + offset, on, every)) for offset in range(every)]
    return {
        "quiet_iteration": quiet,
        "by_offset": by_offset,
        "overhead": sum(by_offset) / (every * quiet),
        "after_window": excess(range(on, on + off // 2)) or 0.0,
    }
