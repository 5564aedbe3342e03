"""The axial fan's time per step at the scales of Kwon, Park & Choi, predicted from this
machine's measured costs and a machine profile (local, no MPI).

O.-K. Kwon, K. Park, H. Choi, "Optimization of Parallel Code for Noise Prediction in an
Axial Fan Using MPI One-Sided Communication", measured on KISTI's Tachyon2 (Nehalem,
8 cores per node, InfiniBand QDR): the flow alone on 1.6×10⁹ cells, 12× faster on 6,144
cores than on 256 (about 50 % efficiency, limited by the all-to-all transposes); flow and
noise on 46×10⁶ cells with 67,000 noise sources, 6× faster on 128 cores than on 16
(about 80 %); and the noise exchange's Type B 1.74× and Type C 2.97× faster than Type A.
:class:`FanScalingModel` predicts the same quantities for tachyflow's fan solver
(:class:`~tachyflow.solvers.pencil.cylindrical.CylindricalSolver` with its rotor's noise,
:class:`~tachyflow.acoustics.rotor.RotorNoise`).

Time per step at ``P`` ranks for ``N`` cells, the sum of

compute
    ``c N / P / core_speed``: ``c`` is the seconds per cell and step this run measured
    (its step less its communication, per cell of the busiest rank); ``core_speed`` is how
    much faster a modelled core is than this machine's.
transposes
    Counted from the solver (:func:`step_traffic`): per RK3 substep, the implicit θ solve
    turns each of ``u``, ``q``, ``w`` from y- to z-pencils and back (6 real transposes over
    the ``p_col`` ranks of a process-grid row, when ``p_col > 1``), and the Poisson solve
    makes 2 real and 2 complex y↔z transposes (``p_col > 1``) and 4 complex x↔y ones over
    the ``p_row`` ranks of a column (``p_row > 1``), or on a ``p_row × 1`` grid with at
    least ``p_row`` θ-modes 2 complex exchanges to z-slabs and back over those ranks (the
    solver's ``slabs``). Each is one ``MPI_Alltoall`` of the
    average piece (``N/P`` cells of 8 B, or ``nx ny (nz/2+1) / P`` of 16 B in the
    half spectrum), priced as the MPI library's own call (``native``) by the collectives'
    simulator under the machine profile, as ``algo="auto"`` prices it
    (:func:`tachyflow.collectives.choose`; ``tachyflow model simulate`` runs the same
    simulator).
halo exchanges
    4 per substep (the velocity before and after the immersed forcing and at the end of
    the projection, its 3 fields in one message per neighbour; the pressure) and 1 per
    step (the step's pressure, Σ α_k φ_k): each sends 2 faces of the ghosted y-pencil
    along each split axis, one after the other (one-port), ``α + m β`` each, ``m`` three
    faces' worth for the velocity.
reductions
    2 allreduces of one or two doubles per substep (the outflow's balance, the mass
    sources of the bodies) and 1 per step (the bodies' loads), as the library's call.

A noise sample (one per step, as ``tachyflow bench fan`` measures it) adds

exchange
    The busiest rank's traffic of Kwon, Park & Choi's Table 1 (64 ranks: 4,592 messages of
    1,056 B to 6 ranks), scaled to ``P`` ranks: the surface's points spread over ever more
    ranks as the 2D decomposition refines around the blades, so each rank's points fall
    as ``64/P``, while the number of ranks it talks to stays (at most ``P - 1``). Type A
    (``put``) sends one message per point and owner; Type B (``aggregated-put``) one per
    peer with the same bytes; Type C (``source-put``) one per peer with the 9 doubles of a
    point's source (72 B) instead of its 1,056 B of flow values. Sender side, ``α + m β``.
local work and FW-H integration
    ``sources / P`` times the seconds per source this run measured: packing, unpacking and
    forming the source terms (per Type), and integrating one panel copy for all the
    case's observers.

Assumptions: pieces are the average ones (no imbalance); a transpose costs its messages
only (the packing, like every local copy, is in the measured compute); nothing overlaps;
``ranks_per_link`` ranks of a node share one network link when all communicate at once
(the bytes' cost is multiplied by it; 1: each rank has a link of its own); the process
grid is the most nearly square one (``p_row >= p_col``); the grid keeps this case's
proportions ``nx : nr : nθ``. The model sees neither network contention beyond that nor
the MPI library's internal costs, so it can predict better speed-ups than measured;
speed-ups depend on the ratio of compute to communication, hence on ``core_speed``:
tachyflow's Python and numba kernels are not the paper's Fortran, and Nehalem cores
(2009, 2.93 GHz) were slower than today's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from tachyflow.collectives import native_equivalent, schedule_count
from tachyflow.collectives.algorithms import build
from tachyflow.collectives.simulator import simulate
from tachyflow.models.profiles import MachineProfile, calibration_factor, resolve_profile

REAL_BYTES, COMPLEX_BYTES = 8, 16
# Kwon, Park & Choi's measurements.
PAPER = {
    "flow": {"cells": 1.6e9, "ranks": (256, 512, 1024, 2048, 4096, 6144),
             "speedup": {"ranks": 6144, "base": 256, "value": 12.0}},
    "noise": {"cells": 46e6, "sources": 67_000, "ranks": (16, 32, 64, 128),
              "speedup": {"ranks": 128, "base": 16, "value": 6.0}},
    "type_speedup_over_A": {"B": 1.74, "C": 2.97},
}
TYPES = {"A": "put", "B": "aggregated-put", "C": "source-put"}
DEFAULT_PROFILE = "infiniband-qdr"
SUBSTEPS = 3  # of the low-storage RK3
THETA_SOLVES_PER_STEP = 3 * SUBSTEPS  # u, q, w: a y→z→y round trip each, when p_col > 1


@dataclass(frozen=True)
class ExchangeTraffic:
    """The noise exchange's traffic on its busiest rank, measured at ``ranks`` ranks.

    Defaults: Kwon, Park & Choi's Table 1 (46×10⁶ cells, 67,000 sources, 64 ranks): rank 26
    sends 4,592 messages of 1,056 B to 6 ranks; Type C sends 9 doubles per point.
    """

    ranks: int = 64
    messages: float = 4592.0
    peers: int = 6
    value_bytes: float = 1056.0
    source_bytes: float = 72.0

    def __post_init__(self):
        _check_count("ranks", self.ranks)
        _check_count("peers", self.peers)
        for name in ("messages", "value_bytes", "source_bytes"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class StepTraffic:
    """Communication of one fan step: transposes (real and complex, over the ``p_row``
    ranks of a column and the ``p_col`` ranks of a row), halo exchanges, allreduces."""

    row_real: int  # y↔z, over p_col ranks
    row_complex: int
    column_complex: int  # x↔y, over p_row ranks
    velocity_halos: int  # u, u_θ, w together: one message per neighbour
    pressure_halos: int
    allreduces: int

    @property
    def halos(self) -> int:
        """Halo exchanges (calls) per step."""
        return self.velocity_halos + self.pressure_halos


def step_traffic(p_row: int, p_col: int, slabs: bool = False) -> StepTraffic:
    """What a step of the axial fan (immersed blades, inflow and outflow, an annulus)
    communicates on a ``p_row × p_col`` grid (see the module notes for the count); with
    ``slabs``, the Poisson solve's spectrum goes to z-slabs (a ``p_row × 1`` grid:
    :attr:`~tachyflow.solvers.pencil.poisson.PoissonSolver.slabs`)."""
    row = p_col > 1
    return StepTraffic(
        row_real=2 * THETA_SOLVES_PER_STEP + 2 * SUBSTEPS if row else 0,
        row_complex=2 * SUBSTEPS if row else 0,
        column_complex=(2 if slabs else 4) * SUBSTEPS if p_row > 1 else 0,
        velocity_halos=3 * SUBSTEPS,
        pressure_halos=SUBSTEPS + 1,
        allreduces=2 * SUBSTEPS + 1,
    )


def process_grid(ranks: int) -> tuple[int, int]:
    """The most nearly square ``(p_row, p_col)`` with ``p_row >= p_col``."""
    _check_count("ranks", ranks)
    p_col = max(q for q in range(1, math.isqrt(ranks) + 1) if ranks % q == 0)
    return ranks // p_col, p_col


@dataclass(frozen=True)
class MeasuredCosts:
    """This machine's costs, from a ``tachyflow bench fan`` run.

    Parameters
    ----------
    seconds_per_cell : float
        A step's compute (its time less its communication) per cell of the busiest rank.
    integration_per_source : float
        FW-H integration of one panel copy (all the case's observers) per sample.
    local_per_source : dict
        Packing, unpacking and source terms per point and sample, by Type (``"A"``,
        ``"B"``, ``"C"``).
    shape : tuple of int
        The measured grid (x, r, θ), whose proportions modelled grids keep.
    communication_per_step : float
        The measured communication taken off the step (a record; not used).
    """

    seconds_per_cell: float
    integration_per_source: float
    local_per_source: dict
    shape: tuple
    communication_per_step: float = 0.0

    def __post_init__(self):
        for name in ("seconds_per_cell", "integration_per_source"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a non-negative number of seconds, got {value!r}")
        if set(self.local_per_source) != set(TYPES):
            raise ValueError(
                f"local_per_source must give the Types {sorted(TYPES)}, got "
                f"{sorted(self.local_per_source)}"
            )
        if len(self.shape) != 3 or min(self.shape) < 1:
            raise ValueError(f"shape must be three positive cell counts, got {self.shape!r}")


class FanScalingModel:
    """Predicted time per step of the axial fan at any rank count (local, no MPI).

    Parameters
    ----------
    measured : MeasuredCosts
        This machine's costs.
    profile : MachineProfile, model, str or path, optional
        The network (anything :func:`~tachyflow.models.profiles.resolve_profile` takes);
        default the built-in ``infiniband-qdr``.
    core_speed : float
        How much faster a modelled core computes than this machine's (> 0).
    ranks_per_link : int
        Ranks sharing one network link while all communicate (>= 1).
    exchange : ExchangeTraffic
        The noise exchange's busiest rank (default: the paper's Table 1).

    Raises
    ------
    ValueError
        ``core_speed`` or ``ranks_per_link`` out of range.
    """

    def __init__(
        self,
        measured: MeasuredCosts,
        profile=DEFAULT_PROFILE,
        core_speed: float = 1.0,
        ranks_per_link: int = 1,
        exchange: ExchangeTraffic | None = None,
    ):
        if not (math.isfinite(core_speed) and core_speed > 0):
            raise ValueError(f"core_speed must be a positive factor, got {core_speed!r}")
        _check_count("ranks_per_link", ranks_per_link)
        self.measured = measured
        self.core_speed = float(core_speed)
        self.ranks_per_link = int(ranks_per_link)
        self.exchange = exchange or ExchangeTraffic()
        resolved = resolve_profile(profile)
        self.profile = MachineProfile(_shared_link(resolved.model, ranks_per_link),
                                      resolved.calibration)

    def shape(self, cells: float) -> tuple[float, float, float]:
        """A grid of ``cells`` cells with the measured grid's proportions."""
        measured = np.asarray(self.measured.shape, dtype=float)
        return tuple(measured * np.cbrt(cells / measured.prod()))

    def flow_step(self, cells: float, ranks: int) -> dict[str, float]:
        """Seconds per step by part (``compute``, ``transposes``, ``halos``,
        ``reductions``) and their ``total``.

        Raises
        ------
        ValueError
            ``ranks`` < 1 or ``cells`` < ``ranks``.
        """
        _check_count("ranks", ranks)
        if not (math.isfinite(cells) and cells >= ranks):
            raise ValueError(
                f"cells must be at least the number of ranks ({ranks}), got {cells!r}"
            )
        p_row, p_col = process_grid(ranks)
        nx, nr, nt = self.shape(cells)
        modes = nt // 2 + 1  # the solver takes them to z-slabs where it can
        traffic = step_traffic(p_row, p_col, slabs=p_col == 1 < p_row <= modes)
        real = cells / ranks * REAL_BYTES
        spectrum = nx * nr * (nt // 2 + 1) / ranks * COMPLEX_BYTES
        transposes = (
            traffic.row_real * self.alltoall(p_col, real)
            + traffic.row_complex * self.alltoall(p_col, spectrum)
            + traffic.column_complex * self.alltoall(p_row, spectrum)
        )
        faces = [(nr + 2) * (nt / p_col + 2) if p_row > 1 else 0.0,
                 (nx / p_row + 2) * (nr + 2) if p_col > 1 else 0.0]
        halos = sum(
            2 * traffic.velocity_halos * self._message(3 * face * REAL_BYTES)
            + 2 * traffic.pressure_halos * self._message(face * REAL_BYTES)
            for face in faces
            if face
        )
        parts = {
            "compute": self.measured.seconds_per_cell * cells / ranks / self.core_speed,
            "transposes": transposes,
            "halos": halos,
            "reductions": traffic.allreduces * self.allreduce(ranks),
        }
        return {**parts, "total": sum(parts.values())}

    def noise_sample(self, sources: float, ranks: int, kind: str) -> dict[str, float]:
        """Seconds of one noise sample with exchange Type ``kind`` (``"A"``, ``"B"``,
        ``"C"``) by part (``exchange``, ``local``, ``integration``, ``reductions``) and
        their ``total``.

        Raises
        ------
        ValueError
            ``ranks`` < 1, ``sources`` < 0, or an unknown Type.
        """
        _check_count("ranks", ranks)
        if kind not in TYPES:
            raise ValueError(f"exchange Type must be one of {sorted(TYPES)}, got {kind!r}")
        if not (math.isfinite(sources) and sources >= 0):
            raise ValueError(f"sources must be a non-negative count, got {sources!r}")
        traffic = self.exchange
        messages = traffic.messages * traffic.ranks / ranks
        peers = min(traffic.peers, ranks - 1)
        if peers == 0:
            exchange = 0.0
        elif kind == "A":
            exchange = messages * self._message(traffic.value_bytes)
        else:
            size = traffic.value_bytes if kind == "B" else traffic.source_bytes
            exchange = peers * self._message(messages * size / peers)
        share = sources / ranks
        parts = {
            "exchange": exchange,
            "local": share * self.measured.local_per_source[kind] / self.core_speed,
            "integration": share * self.measured.integration_per_source / self.core_speed,
            "reductions": self.allreduce(ranks),  # the inflow plane's mean pressure
        }
        return {**parts, "total": sum(parts.values())}

    def alltoall(self, ranks: int, nbytes: float) -> float:
        """Seconds of the library's all-to-all of ``nbytes`` per rank over ``ranks`` ranks
        (0 over one rank: a local copy, in the compute)."""
        if ranks == 1:
            return 0.0
        return self._library_call("alltoall", ranks, max(1, round(nbytes / ranks / REAL_BYTES)))

    def allreduce(self, ranks: int, count: int = 2) -> float:
        """Seconds of the library's allreduce of ``count`` doubles over ``ranks`` ranks."""
        if ranks == 1:
            return 0.0
        return self._library_call("allreduce", ranks, count)

    def _library_call(self, operation: str, ranks: int, count: int) -> float:
        """Seconds of the MPI library's own call on ``count`` doubles per rank (per block
        for alltoall): the schedule of its default algorithm, simulated under the profile
        and scaled by its calibration, as ``algo="auto"`` prices ``native``."""
        algorithm = native_equivalent(operation, count * REAL_BYTES, ranks, count)
        schedule = build(operation, algorithm, ranks, schedule_count(operation, ranks, count))
        model, calibration = self.profile.model, self.profile.calibration
        seconds = simulate(schedule, model, REAL_BYTES, software_overhead=False).time
        return seconds * calibration_factor(
            calibration, operation, ranks, "native", count * REAL_BYTES
        )

    def _message(self, nbytes: float) -> float:
        return float(self.profile.model.message_time(nbytes))

    def flow_and_noise_step(self, cells: float, sources: float, ranks: int, kind: str):
        """Seconds of a flow step (``flow``) and a noise sample of Type ``kind``
        (``noise``) and their ``total`` (ValueError as :meth:`flow_step` and
        :meth:`noise_sample`)."""
        flow = self.flow_step(cells, ranks)["total"]
        noise = self.noise_sample(sources, ranks, kind)["total"]
        return {"flow": flow, "noise": noise, "total": flow + noise}

    def scaling(self) -> dict:
        """The predictions at the paper's scales beside its measured speed-ups (JSON-ready):
        ``flow`` (flow only) and ``noise`` (flow and one noise sample per step, per Type),
        and the Types' predicted speed-ups over Type A at the exchange traffic's ranks."""
        flow, noise = PAPER["flow"], PAPER["noise"]
        document = {"flow": self._series(flow, lambda p: self.flow_step(flow["cells"], p))}
        document["noise"] = {
            kind: self._series(
                noise,
                lambda p, kind=kind: self.flow_and_noise_step(
                    noise["cells"], noise["sources"], p, kind
                ),
            )
            for kind in TYPES
        }
        at = self.exchange.ranks
        samples = {kind: self.noise_sample(noise["sources"], at, kind)["total"] for kind in TYPES}
        document["type_speedup_over_A"] = {
            kind: {
                "ranks": at,
                "predicted": samples["A"] / samples[kind],
                "paper": paper,
                "predicted_over_paper": samples["A"] / samples[kind] / paper,
            }
            for kind, paper in PAPER["type_speedup_over_A"].items()
        }
        return document

    @staticmethod
    def _series(scale: dict, seconds) -> dict:
        """Time per step by part, speed-up over the first rank count, and the paper's
        measured speed-up beside the predicted one, at ``scale``'s rank counts."""
        ranks = scale["ranks"]
        parts = [seconds(p) for p in ranks]
        totals = [part["total"] for part in parts]
        speedups = [totals[0] / total for total in totals]
        paper = scale["speedup"]
        predicted = speedups[ranks.index(paper["ranks"])]
        return {
            "cells": scale["cells"],
            **({"sources": scale["sources"]} if "sources" in scale else {}),
            "ranks": list(ranks),
            "proc_grids": [list(process_grid(p)) for p in ranks],
            "seconds_per_step": totals,
            "parts": {key: [part[key] for part in parts] for key in parts[0] if key != "total"},
            "speedup": speedups,
            "ideal": [p / ranks[0] for p in ranks],
            "paper": {
                **paper,
                "predicted": predicted,
                "predicted_over_paper": predicted / paper["value"],
            },
        }

    def describe(self) -> dict:
        """The model's inputs (JSON-ready)."""
        model = self.profile.model
        return {
            "profile": {"name": model.name, "alpha": model.alpha, "beta": model.beta},
            "core_speed": self.core_speed,
            "ranks_per_link": self.ranks_per_link,
            "measured": dataclasses.asdict(self.measured),
            "exchange_traffic": dataclasses.asdict(self.exchange),
        }


def _shared_link(model, ranks_per_link: int):
    """``model`` with its per-byte costs multiplied by the ranks sharing a link."""
    if ranks_per_link == 1:
        return model
    if hasattr(model, "beta_large") and model.two_regimes:
        return dataclasses.replace(model, beta=model.beta * ranks_per_link,
                                   beta_large=model.beta_large * ranks_per_link)
    if hasattr(model, "beta_large"):
        return dataclasses.replace(model, beta=model.beta * ranks_per_link)
    return dataclasses.replace(model, G=model.G * ranks_per_link)


def _check_count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
