"""Runs a schedule in virtual time under a cost model, and checks what it computes.

Timing: every rank has a clock, a send port and a receive port (one-port, full duplex,
as Kim's 1998 report's formulas assume). A message leaves when its sender's port is free; it is
available at the receiver ``model.message_time(m)`` later (Hockney ``α + mβ``, LogGP
``2o + L + (m-1)G``), but no sooner than ``model.send_occupancy(m)`` after the previous
arrival at that receiver (the receive port's gap). The sender may start its next send
``send_occupancy(m)`` after this one started (Hockney: when it arrives; LogGP:
``max(o, g + (m-1)G)``). After a message arrives the receiver spends ``γ m`` combining it
(reductions) or ``δ m`` copying it into place, when the model has those costs, and every
participating rank pays the executor's per-step overhead σ. A message whose sender
also receives, or whose receiver also sends, in the same step takes ``exchange`` times
longer (shared memory is not full duplex). Copies in memory around the steps cost ``δ``
per byte (see :func:`_staging_copies`). Without local costs and with ``exchange = 1``
this reproduces the closed forms of :mod:`tachyflow.collectives.formulas` exactly.
Steps are simulated by a compiled loop over their messages, which is what makes 100,000
ranks take seconds.

Critical path: every rank carries the breakdown of the longest chain of events that
ends at its clock (messages on it, start-up, transfer, local work, waiting for a busy
port); the slowest rank's breakdown is the critical path of the whole schedule.

Data tracking (``check=True``): data-moving operations (bcast, scatter, gather,
alltoall) track which datum every rank holds in every segment (a sender must hold what
it sends); reductions (reduce, allreduce, scan, exscan) track, per rank and segment, the
set of ranks whose contributions it has combined (as an integer bitset: a contribution
counted twice is an error). At the end every rank must hold exactly what the operation
defines. Tracking reductions costs P² bits per segment: use it up to a few thousand ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tachyflow.collectives.schedule import REDUCTIONS, Schedule, Step, result_defined
from tachyflow.models.loggp import LogGP
from tachyflow.numerics.compiled import kernel

NO_SIZES = np.empty(0)  # tells _advance to read message sizes off the segment ranges
# Columns of the per-rank critical-path breakdown.
PATH_FIELDS = ("messages", "startup", "transfer", "local", "waiting")


class ScheduleError(AssertionError):
    """A schedule moved data a rank did not have, or ended with a wrong result."""


@dataclass
class SimulationResult:
    """Outcome of :func:`simulate`.

    ``critical_path`` maps :data:`PATH_FIELDS` to the slowest rank's chain of events:
    how many messages it crosses and how its time splits into message start-up, transfer,
    local work (combining, copying, executor overhead) and waiting for busy ports.
    """

    time: float
    steps: int
    messages: int
    bytes: int
    critical_rank: int
    checked: bool = False
    clocks: np.ndarray = field(default=None, repr=False)
    critical_path: dict = field(default_factory=dict)


@kernel(error_model="numpy")
def _advance(
    clock, receive_free, send_free, stamp, sending, receiving, path, index, source, target,
    first, stop, bounds, itemsize, message_bytes, terms, exchange, local, sigma,
):  # pragma: no cover  (compiled)
    """Move clocks and critical paths over one step (messages in their listed order).

    Message sizes come from ``message_bytes`` when it is not empty, else from the segment
    ranges. A local copy (source = target) costs only its copy time."""
    count = source.size
    fixed, shift, per_byte, floor, gap, threshold, fixed_large, per_byte_large = terms
    arrival, duration, startup = np.empty(count), np.empty(count), np.empty(count)
    inherited = np.empty((count, 4))
    moved = 0.0
    if exchange != 1.0:  # who sends and who receives in this step
        for m in range(count):
            sending[source[m]], receiving[target[m]] = index, index
    for m in range(count):
        s, t = source[m], target[m]
        if stamp[s] != index:  # every participant pays σ once, before its first message
            stamp[s], send_free[s] = index, clock[s] + sigma
            clock[s], path[s, 3] = clock[s] + sigma, path[s, 3] + sigma
        if stamp[t] != index:
            stamp[t], send_free[t] = index, clock[t] + sigma
            clock[t], path[t, 3] = clock[t] + sigma, path[t, 3] + sigma
        if message_bytes.size:
            nbytes = message_bytes[m]
        else:
            nbytes = (bounds[stop[m]] - bounds[first[m]]) * itemsize
        if s == t:  # local copy: the receiver loops below add its time
            duration[m], arrival[m], startup[m] = 1.0, -1.0, 0.0
            continue
        moved += nbytes
        if nbytes > threshold:  # the second regime (Hockney's gap is its start-up)
            startup[m], extra = fixed_large, max(nbytes - shift, 0.0) * per_byte_large
            occupancy = max(floor, fixed_large + extra)
        else:
            startup[m], extra = fixed, max(nbytes - shift, 0.0) * per_byte
            occupancy = max(floor, gap + extra)
        duration[m] = startup[m] + extra
        if exchange != 1.0 and (receiving[s] == index or sending[t] == index):
            duration[m] *= exchange  # both ends also move data the other way
            occupancy *= exchange
        arrival[m] = max(send_free[s] + duration[m], receive_free[t] + occupancy)
        send_free[s] = arrival[m] - duration[m] + occupancy
        receive_free[t] = arrival[m]
        for column in range(4):  # the sender's path as the step starts
            inherited[m, column] = path[s, column]
    for m in range(count):  # senders: busy until their last send lets go
        s = source[m]
        if s == target[m]:
            continue
        path[s, 0] += 1.0
        if send_free[s] > clock[s]:
            busy = send_free[s] - clock[s]
            path[s, 1] += busy * startup[m] / duration[m]
            path[s, 2] += busy * (1.0 - startup[m] / duration[m])
            clock[s] = send_free[s]
    for m in range(count):  # receivers: ready once the data is in; waiting is the rest
        t = target[m]
        if arrival[m] > clock[t]:
            clock[t] = arrival[m]
            path[t, 0] = inherited[m, 0] + 1.0
            path[t, 1] = inherited[m, 1] + startup[m]
            path[t, 2] = inherited[m, 2] + duration[m] - startup[m]
            path[t, 3] = inherited[m, 3]
            path[t, 4] = max(arrival[m] - path[t, 1] - path[t, 2] - path[t, 3], 0.0)
    for m in range(local.size):  # ... and combined or copied into place
        clock[target[m]] += local[m]
        path[target[m], 3] += local[m]
    return moved


class _Tracker:
    """What every rank holds, for :func:`simulate` with ``check=True``."""

    def __init__(self, schedule: Schedule):
        self.schedule = schedule
        size, segments, root = schedule.size, schedule.segments, schedule.root
        self.reduction = schedule.operation in REDUCTIONS
        relative = (np.arange(size) - root) % size
        if self.reduction:
            self.state = [[1 << rank] * segments for rank in range(size)]
            return
        # Data movement: state[rank, segment] = which datum it holds there (-1: none).
        self.state = np.full((size, segments), -1, dtype=np.int64)
        if schedule.operation in ("bcast", "scatter"):
            self.state[root] = np.arange(segments)
        elif schedule.operation == "gather":
            self.state[np.arange(size), relative] = relative
        else:  # alltoall: block j of rank r's send area is datum r·P + j
            self.state[:, :size] = np.arange(size * size).reshape(size, size)

    def apply(self, item: Step, index: int) -> None:
        bounds = self.schedule.bounds
        # (source, target, first, stop, landing) of every run that carries data.
        if item.repeats is None:
            runs = zip(
                item.source.tolist(),
                item.target.tolist(),
                item.first.tolist(),
                item.stop.tolist(),
                item.landing_first().tolist(),
                strict=True,
            )
        else:
            runs = (
                (int(item.source[i]), int(item.target[i]), *run)
                for i in range(item.source.size)
                for run in item.runs(i)
            )
        messages = [run for run in runs if bounds[run[3]] > bounds[run[2]]]
        if not self.reduction:
            sent = []
            for s, t, a, b, _ in messages:
                if ((self.state[s, a:b] < 0) & (bounds[a + 1 : b + 1] > bounds[a:b])).any():
                    raise ScheduleError(
                        f"step {index}: rank {s} sends segments {a}..{b - 1} to rank {t} "
                        "before it has them"
                    )
                sent.append(self.state[s, a:b].copy())
            # Receivers get the senders' segments as they were at the start of the step.
            for (_, t, a, b, landing), data in zip(messages, sent, strict=True):
                self.state[t, landing : landing + b - a] = data
            return
        sent = [[self.state[s][segment] for segment in range(a, b)] for s, _, a, b, _ in messages]
        for (s, t, _, _, landing), data in zip(messages, sent, strict=True):
            for offset, incoming in enumerate(data):
                segment = landing + offset
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
        size, root, operation = schedule.size, schedule.root, schedule.operation
        carries_data = (schedule.bounds[1:] > schedule.bounds[:-1]).tolist()
        if self.reduction:
            for rank in range(size):
                if not result_defined(operation, rank, root):
                    continue
                expected = {"scan": (2 << rank) - 1, "exscan": (1 << rank) - 1}.get(
                    operation, (1 << size) - 1
                )
                for segment, contributions in enumerate(self.state[rank]):
                    if carries_data[segment] and contributions != expected:
                        raise ScheduleError(
                            f"rank {rank} ends with contributions of ranks "
                            f"{_members(contributions)} to segment {segment}, expected "
                            f"{_members(expected)}"
                        )
            return
        expected = self.state.copy()
        relative = (np.arange(size) - root) % size
        if operation == "bcast":
            expected[:] = np.arange(schedule.segments)
        elif operation == "scatter":
            expected[np.arange(size), relative] = relative
        elif operation == "gather":
            expected[root] = np.arange(size)
        else:  # alltoall: rank r's receive block i holds datum i·P + r (own block: local)
            received = np.arange(size)[None, :] * size + np.arange(size)[:, None]
            np.fill_diagonal(received, -1)
            own = self.state[:, size : 2 * size]
            expected[:, size : 2 * size] = np.where(received < 0, own, received)
        wrong = np.argwhere((self.state != expected) & np.array(carries_data)[None, :])
        if wrong.size:
            rank, segment = wrong[0]
            raise ScheduleError(
                f"rank {rank} ends with datum {self.state[rank, segment]} in segment "
                f"{segment}, expected {expected[rank, segment]}"
            )


def _members(bits: int) -> str:
    ranks = [rank for rank in range(bits.bit_length()) if bits >> rank & 1]
    return str(ranks) if len(ranks) <= 8 else f"{len(ranks)} ranks"


def _cost_terms(model) -> tuple[float, ...]:
    """``(fixed, shift, per_byte, floor, gap, threshold, fixed_large, per_byte_large)``:
    an m-byte message arrives ``fixed + max(m - shift, 0) per_byte`` after it starts and
    keeps the sender's port ``max(floor, gap + max(m - shift, 0) per_byte)``, and above
    ``threshold`` bytes uses the large regime (Hockney's two regimes, its gap being its
    start-up). Hockney ``(α, 0, β, 0, α, threshold, α_large, β_large)``, LogGP
    ``(L + 2o, 1, G, o, g, ∞, ·, ·)``. Checked against the models' own methods."""
    if isinstance(model, LogGP):
        terms = (model.L + 2 * model.o, 1.0, model.G, model.o, model.g, np.inf, 0.0, 0.0)
    else:
        large = (model.threshold, model.alpha_large, model.beta_large)
        terms = (model.alpha, 0.0, model.beta, 0.0, model.alpha, *large)
    fixed, shift, per_byte, floor, gap, threshold, fixed_large, per_byte_large = terms
    probe = np.array([0.0, 1.0, 1000.0, 3e6, 3e8])
    extra_small = np.maximum(probe - shift, 0.0) * per_byte
    extra_large = np.maximum(probe - shift, 0.0) * per_byte_large
    above = probe > threshold
    arrival = np.where(above, fixed_large + extra_large, fixed + extra_small)
    busy = np.where(above, fixed_large + extra_large, np.maximum(floor, gap + extra_small))
    if not (
        np.allclose(model.message_time(probe), arrival)
        and np.allclose(model.send_occupancy(probe), busy)
    ):
        raise TypeError(f"the simulator has no cost terms for {type(model).__name__} models")
    return tuple(float(term) for term in terms)


def _local_costs(item: Step, bounds: np.ndarray, itemsize: int, model) -> np.ndarray:
    """Seconds each message's receiver spends after the transfer (empty: none): γ per byte
    to combine a reduction; δ per byte to copy from a scratch buffer, which the executor
    uses only when a receive cannot land in place (a strided message, or a range the
    receiver also sends in the same step — see the executor's ``plan``)."""
    per_byte = model.gamma if item.reduce else model.delta
    if not per_byte:
        return NO_SIZES
    sizes = item.message_bytes(bounds, itemsize)
    if sizes is None:
        sizes = (bounds[item.stop] - bounds[item.first]).astype(float) * itemsize
    if item.reduce:
        return sizes * per_byte
    staged = (
        np.zeros(item.source.size, dtype=bool)
        if item.repeats is None
        else ~(item.source == item.target)
    )
    # A receive overlapping what its receiver sends in the step goes through scratch.
    landing = item.landing_first()
    low, high = landing, landing + item.stop - item.first
    if item.one_to_one:  # each rank sends at most one range: look it up by rank
        size = int(max(item.source.max(), item.target.max())) + 1
        send_low, send_high = np.full(size, -1), np.full(size, -1)
        send_low[item.source], send_high[item.source] = item.first, item.stop
        mine_low, mine_high = send_low[item.target], send_high[item.target]
        staged |= (mine_low >= 0) & (mine_low < high) & (mine_high > low)
    else:
        for index in np.flatnonzero(np.isin(item.target, item.source)):
            sends = item.source == item.target[index]
            staged[index] |= bool(
                np.any((item.first[sends] < high[index]) & (item.stop[sends] > low[index]))
            )
    local_copies = item.source == item.target  # copies inside the buffer cost δ too
    return sizes * per_byte * (staged | local_copies)


def _staging_copies(schedule: Schedule, itemsize: int, ours: bool):
    """Bytes every rank copies in memory before and after the steps: a reduction's input
    into its result (tachyflow and MPI alike), and tachyflow's own workspace copies of
    all-to-all (in and out) and of the root of gather and scatter (rotation by the root).
    """
    before, after = np.zeros(schedule.size), np.zeros(schedule.size)
    total = schedule.count * itemsize
    if schedule.operation in REDUCTIONS:
        before[:] = total
    elif ours and schedule.operation == "alltoall":
        before[:] = after[:] = total / 2
    elif ours and schedule.operation == "gather":
        after[schedule.root] = total
    elif ours and schedule.operation == "scatter":
        before[schedule.root] = total
    return before, after


def simulate(
    schedule: Schedule,
    model,
    itemsize: int = 1,
    check: bool = False,
    software_overhead: bool = True,
) -> SimulationResult:
    """Virtual time of ``schedule`` under ``model`` (bytes = elements × ``itemsize``).

    ``model`` is a :class:`~tachyflow.models.hockney.Hockney` or
    :class:`~tachyflow.models.loggp.LogGP`. With ``check``, also verify the data movement
    (raises :class:`ScheduleError`). ``software_overhead`` charges the model's σ per step
    to every participating rank (tachyflow's executor); False models a library running
    the same algorithm natively.
    """
    sigma = model.sigma if software_overhead else 0.0
    size = schedule.size
    clock, receive_free, send_free = np.zeros(size), np.zeros(size), np.zeros(size)
    stamp = np.full(size, -1, dtype=np.int64)
    sending, receiving = stamp.copy(), stamp.copy()
    path = np.zeros((size, len(PATH_FIELDS)))
    terms = _cost_terms(model)
    tracker = _Tracker(schedule) if check else None
    steps = messages = total_bytes = 0
    bounds = schedule.bounds.astype(np.int64)
    before, after = _staging_copies(schedule, itemsize, software_overhead)
    clock += before * model.delta
    path[:, 3] += before * model.delta
    for index, item in enumerate(schedule.steps()):
        if item.source.size == 0:
            continue
        local = _local_costs(item, schedule.bounds, itemsize, model)
        sizes = item.message_bytes(bounds, itemsize)
        # Contiguous writeable copies where a step broadcasts one range to every message:
        # one compiled signature instead of one per mix of array layouts and flags.
        source, target, first, stop = (
            np.require(values, np.int64, ("C", "W"))
            for values in (item.source, item.target, item.first, item.stop)
        )
        total_bytes += _advance(
            clock, receive_free, send_free, stamp, sending, receiving, path, index,
            source, target, first, stop, bounds, itemsize,
            NO_SIZES if sizes is None else sizes, terms, float(model.exchange),
            local, float(sigma),
        )
        if tracker is not None:
            tracker.apply(item, index)
        steps += 1
        messages += item.source.size
    if tracker is not None:
        tracker.verify()
    clock += after * model.delta
    path[:, 3] += after * model.delta
    critical = int(clock.argmax())
    breakdown = dict(zip(PATH_FIELDS, path[critical].tolist(), strict=True))
    breakdown["messages"] = round(breakdown["messages"])
    return SimulationResult(
        float(clock[critical]),
        steps,
        messages,
        int(total_bytes),
        critical,
        check,
        clock,
        breakdown,
    )
