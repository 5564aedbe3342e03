"""Runs a schedule in virtual time under a Hockney model, and checks what it computes.

Timing: every rank has a clock and a receive port. A message starts when its sender is
ready and the receiver's port is free, takes ``α + mβ``, and the receiver is ready no
earlier than its arrival. A rank sends one message at a time and receives one at a time,
but sends and receives at once (one-port, full duplex), as seed 003's formulas assume.
After a message arrives the receiver spends ``γ m`` combining it (reductions) or ``δ m``
copying it into place, when the model has those costs.
Steps where every rank sends and receives at most one message — all the tree, ring and
pipeline algorithms — are simulated with numpy over all ranks at once, which is what makes
100,000 ranks take seconds.

Data tracking (``check=True``): a broadcast tracks which segments each rank holds (a
sender must hold what it sends); a reduction tracks, per rank and segment, the set of
ranks whose contributions it has combined (as an integer bitset: a contribution counted
twice is an error). At the end every rank that should hold the result must hold exactly
all of it. Tracking costs memory P² bits per segment for reductions: use it up to a few
thousand ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from tachyflow.collectives.schedule import Schedule, Step
from tachyflow.models.hockney import Hockney


class ScheduleError(AssertionError):
    """A schedule moved data a rank did not have, or ended with a wrong result."""


@dataclass
class SimulationResult:
    """Outcome of :func:`simulate`."""

    time: float
    steps: int
    messages: int
    bytes: int
    critical_rank: int
    checked: bool = False
    clocks: np.ndarray = field(default=None, repr=False)


def _message_bytes(schedule: Schedule, item: Step, itemsize: int) -> np.ndarray:
    return (schedule.bounds[item.stop] - schedule.bounds[item.first]) * itemsize


@numba.njit(cache=True)
def _advance_one_to_one(clock, receive_free, source, target, durations):  # pragma: no cover
    finish = np.empty(source.size)
    for index in range(source.size):
        start = max(clock[source[index]], receive_free[target[index]])
        finish[index] = start + durations[index]
    for index in range(source.size):
        clock[source[index]] = finish[index]
    for index in range(source.size):
        receive_free[target[index]] = finish[index]
        if finish[index] > clock[target[index]]:
            clock[target[index]] = finish[index]


def _advance(
    clock: np.ndarray, receive_free: np.ndarray, item: Step, durations: np.ndarray
) -> None:
    """Move the clocks over one step. A message starts when its sender is ready and the
    receiver's receive port is free (one-port, full duplex), and occupies both."""
    if item.one_to_one:
        _advance_one_to_one(clock, receive_free, item.source, item.target, durations)
        return
    # Several messages per rank: in the listed order, each rank's sends one after another.
    send_free = {}
    for s, t, duration in zip(
        item.source.tolist(), item.target.tolist(), durations.tolist(), strict=True
    ):
        start = max(send_free.get(s, clock[s]), receive_free[t])
        send_free[s] = receive_free[t] = start + duration
        clock[t] = max(clock[t], start + duration)
    for rank, moment in send_free.items():
        clock[rank] = max(clock[rank], moment)


class _Tracker:
    """What every rank holds, for :func:`simulate` with ``check=True``."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        size, segments = schedule.size, schedule.segments
        if schedule.operation == "bcast":
            self.state = np.zeros((size, segments), dtype=bool)
            self.state[schedule.root] = True
        else:
            self.state = [[1 << rank] * segments for rank in range(size)]

    def apply(self, item: Step, index: int) -> None:
        bounds = self.schedule.bounds
        # (source, target, first, stop) of every message that carries data.
        messages = [
            (s, t, a, b)
            for s, t, a, b in zip(
                item.source.tolist(),
                item.target.tolist(),
                item.first.tolist(),
                item.stop.tolist(),
                strict=True,
            )
            if bounds[b] > bounds[a]
        ]
        if self.schedule.operation == "bcast":
            for s, t, a, b in messages:
                if not self.state[s, a:b].all():
                    raise ScheduleError(
                        f"step {index}: rank {s} sends segments {a}..{b - 1} to rank {t} "
                        "before it has them"
                    )
            # Receivers get the senders' segments as they were at the start of the step.
            for _, t, a, b in messages:
                self.state[t, a:b] = True
            return
        # Senders send what they held at the start of the step, before any receive lands.
        sent = {
            (s, segment): self.state[s][segment]
            for s, _, a, b in messages
            for segment in range(a, b)
        }
        for s, t, a, b in messages:
            for segment in range(a, b):
                incoming = sent[(s, segment)]
                if item.reduce:
                    if self.state[t][segment] & incoming:
                        raise ScheduleError(
                            f"step {index}: rank {t} combines a contribution to segment "
                            f"{segment} twice (from rank {s})"
                        )
                    self.state[t][segment] |= incoming
                else:
                    self.state[t][segment] = incoming

    def verify(self) -> None:
        schedule = self.schedule
        size = schedule.size
        if schedule.operation == "bcast":
            carries_data = schedule.bounds[1:] > schedule.bounds[:-1]
            missing = np.argwhere(~self.state & carries_data[None, :])
            if missing.size:
                rank, segment = missing[0]
                raise ScheduleError(f"rank {rank} ends without segment {segment}")
            return
        everyone = (1 << size) - 1
        holders = [schedule.root] if schedule.operation == "reduce" else range(size)
        for rank in holders:
            for segment, contributions in enumerate(self.state[rank]):
                if (
                    schedule.bounds[segment + 1] > schedule.bounds[segment]
                    and contributions != everyone
                ):
                    count = bin(contributions).count("1")
                    raise ScheduleError(
                        f"rank {rank} ends with {count} of {size} contributions to segment "
                        f"{segment}"
                    )


def simulate(
    schedule: Schedule,
    model: Hockney,
    itemsize: int = 1,
    check: bool = False,
    software_overhead: bool = True,
) -> SimulationResult:
    """Virtual time of ``schedule`` under ``model`` (bytes = elements × ``itemsize``).

    With ``check``, also verify the data movement (raises :class:`ScheduleError`).
    ``software_overhead`` charges the model's σ per step to every participating rank
    (tachyflow's executor); False models a library running the same algorithm natively.
    """
    sigma = model.sigma if software_overhead else 0.0
    clock = np.zeros(schedule.size)
    receive_free = np.zeros(schedule.size)
    tracker = _Tracker(schedule) if check else None
    steps = messages = total_bytes = 0
    for index, item in enumerate(schedule.steps()):
        if item.source.size == 0:
            continue
        sizes = _message_bytes(schedule, item, itemsize)
        if sigma:
            participants = np.union1d(item.source, item.target)
            clock[participants] += sigma
        _advance(clock, receive_free, item, model.alpha + sizes * model.beta)
        # Combining (or copying) what arrived keeps the receiver busy after the transfer.
        local = model.gamma if item.reduce else model.delta
        if local:
            np.add.at(clock, item.target, sizes * local)
        if tracker is not None:
            tracker.apply(item, index)
        steps += 1
        messages += item.source.size
        total_bytes += int(sizes.sum())
    if tracker is not None:
        tracker.verify()
    return SimulationResult(
        float(clock.max()), steps, messages, total_bytes, int(clock.argmax()), check, clock
    )
