"""The LogGP model of a message, fitted by Netgauge's PRTT method.

LogGP (Alexandrov et al. 1995) splits the Hockney start-up time: ``L`` is the wire
latency, ``o`` the CPU overhead a message costs the sender and again the receiver, ``g``
the minimum gap between two consecutive sends and ``G`` the time per byte of a long
message. A message of ``m`` bytes is available at the receiver ``2o + L + (m-1)G`` after
its send starts; the sender can start the next ``max(o, g + (m-1)G)`` after it (the
pacing of a stream of sends that the PRTT method measures).

Hoefler, Schneider and Lumsdaine ("LogGP in theory and practice", 2009; Netgauge's
``loggp`` pattern) measure the parameters with parametrised round trips ``PRTT(n, d, s)``:
a client sends ``n`` messages of ``s`` bytes, busy-waiting ``d`` between two sends, and
the server answers with one message of ``s`` bytes once all ``n`` have arrived. In LogGP

- ``PRTT(1, 0, s) = 2 (L + 2o + (s-1)G)``, a plain round trip;
- ``PRTT(n, 0, s) = PRTT(1, 0, s) + (n-1)(g + (s-1)G)``: back-to-back sends are paced by
  the gap of the stream;
- ``PRTT(n, d, s) = PRTT(1, 0, s) + (n-1)(o + d)`` when ``d`` exceeds that gap: the
  sender then pays its overhead after every delay, which exposes ``o``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from tachyflow.models.hockney import check_exchange

PRTT_KEYS = ("size", "n", "delay", "prtt_1_0", "prtt_n_0", "prtt_n_d")


@dataclass(frozen=True)
class LogGP:
    """The LogGP model: latency ``L``, overhead ``o``, gap ``g``, gap per byte ``G``.

    Usable wherever a :class:`~tachyflow.models.hockney.Hockney` is: it has the same
    ``message_time``, ``send_occupancy``, local costs and, as properties, the equivalent
    Hockney parameters ``alpha = L + 2o`` and ``beta = G`` for closed-form predictions.

    Parameters
    ----------
    L : float
        Wire latency in seconds (>= 0).
    o : float
        CPU overhead of a message on the sender and on the receiver, in seconds (>= 0).
    g : float
        Minimum time between the starts of two consecutive sends, in seconds (>= 0).
    G : float
        Seconds per byte of a long message (>= 0); ``1 / G`` is the asymptotic bandwidth.
    name : str
        What machine or fit this describes.
    gamma, delta, sigma, exchange : float
        As in :class:`~tachyflow.models.hockney.Hockney`: seconds per byte to combine and
        to copy a received message, seconds per step and rank of tachyflow's own executor,
        and the slow-down of a message while its ends also move data the other way.

    Raises
    ------
    ValueError
        A negative or non-finite parameter, or ``L + 2o`` not positive (a message that
        costs no time at all).
    """

    L: float
    o: float
    g: float
    G: float
    name: str = "custom"
    gamma: float = 0.0
    delta: float = 0.0
    sigma: float = 0.0
    exchange: float = 1.0

    def __post_init__(self):
        units = {"L": "s", "o": "s", "g": "s", "G": "s/byte"}
        units.update(gamma="s/byte", delta="s/byte", sigma="s")
        for label, unit in units.items():
            value = getattr(self, label)
            if not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{label} must be a non-negative number of {unit}, got {value!r}")
        if not self.L + 2 * self.o > 0:
            raise ValueError(
                f"L + 2o must be positive (a message takes time), got L = {self.L!r} s, "
                f"o = {self.o!r} s"
            )
        check_exchange(self.exchange)

    @property
    def alpha(self) -> float:
        """Equivalent Hockney start-up time ``L + 2o`` in seconds."""
        return self.L + 2 * self.o

    @property
    def beta(self) -> float:
        """Equivalent Hockney seconds per byte: ``G``."""
        return self.G

    def message_time(self, size_bytes):
        """Seconds from the start of a send of ``size_bytes`` (scalar or array) to the
        message being available at the receiver: ``2o + L + (m-1)G``.

        An empty message costs what a 1-byte one does: the overheads and the latency.
        """
        extra = np.maximum(np.asarray(size_bytes, dtype=float) - 1.0, 0.0)
        return self.L + 2 * self.o + extra * self.G

    def send_occupancy(self, size_bytes):
        """Seconds the sender is busy before it can start its next send:
        ``max(o, g + (m-1)G)`` (scalar or array), the pacing of back-to-back sends in
        ``PRTT(n, 0, s)``."""
        extra = np.maximum(np.asarray(size_bytes, dtype=float) - 1.0, 0.0)
        return np.maximum(self.o, self.g + extra * self.G)

    @property
    def bandwidth(self) -> float:
        """Asymptotic bandwidth in bytes per second."""
        return np.inf if self.G == 0 else 1.0 / self.G

    @property
    def half_bandwidth_size(self) -> float:
        """Message size reaching half the asymptotic bandwidth: ``(L + 2o - G) / G``."""
        return np.inf if self.G == 0 else max(self.alpha - self.G, 0.0) / self.G

    def to_dict(self) -> dict:
        """JSON-ready form (seconds and seconds per byte)."""
        return {
            "model": "loggp",
            "name": self.name,
            "L": self.L,
            "o": self.o,
            "g": self.g,
            "G": self.G,
            "gamma": self.gamma,
            "delta": self.delta,
            "sigma": self.sigma,
            "exchange": self.exchange,
        }


def prtt_times(model: LogGP, size, n: int, delay: float) -> dict:
    """``PRTT(1, 0, s)``, ``PRTT(n, 0, s)`` and ``PRTT(n, d, s)`` that ``model`` predicts,
    in Hoefler's formulas (module docstring); the inverse of :func:`fit_loggp`."""
    extra = np.maximum(np.asarray(size, dtype=float) - 1.0, 0.0)
    single = 2.0 * (model.L + 2 * model.o + extra * model.G)
    gap = model.g + extra * model.G
    return {
        "prtt_1_0": single,
        "prtt_n_0": single + (n - 1) * np.maximum(model.o, gap),
        "prtt_n_d": single + (n - 1) * np.maximum(model.o + delay, gap),
    }


def fit_loggp(prtt_records: Iterable[Mapping], name: str = "fit") -> tuple[LogGP, dict]:
    """LogGP parameters from PRTT measurements, as Netgauge derives them.

    Each record gives one message size: ``size`` (bytes), ``n`` (messages per train, at
    least 2), ``delay`` (seconds, ``d``) and the median round trips ``prtt_1_0``,
    ``prtt_n_0`` and ``prtt_n_d`` (seconds) — what ``tachyflow bench pingpong`` writes.

    - ``g`` and ``G``: least squares of ``(PRTT(n,0,s) - PRTT(1,0,s)) / (n-1) = g + (s-1)G``
      over the sizes, on relative errors (small and large messages weigh alike);
    - ``o``: the median over sizes of ``(PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d`` (the
      median, because a real send overhead varies with size and one protocol switch must
      not drag the constant along);
    - ``L``: the value making ``L + 2o + (s-1)G`` closest to the half round trips
      ``PRTT(1,0,s) / 2`` in relative least squares.

    Returns the model and its quality: RMS and worst relative error of its one-way times
    against the half round trips, the RMS relative error of the gap line, and the points.

    Raises
    ------
    ValueError
        Records missing a key, fewer than 3 distinct sizes, ``n < 2``, non-positive or
        non-finite times, a delay not longer than the measured gap (``o`` would be
        wrong), or data that give a negative parameter.
    """
    records = list(prtt_records)
    for index, record in enumerate(records):
        missing = [key for key in PRTT_KEYS if key not in record]
        if missing:
            raise ValueError(
                f"PRTT record {index} lacks {', '.join(missing)}: each record needs "
                f"{', '.join(PRTT_KEYS)}"
            )
    columns = {key: np.array([r[key] for r in records], dtype=float) for key in PRTT_KEYS}
    sizes, counts, delays = columns["size"], columns["n"], columns["delay"]
    if len(np.unique(sizes)) < 3:
        raise ValueError(
            f"a LogGP fit needs PRTT data of at least 3 distinct message sizes, "
            f"got {len(np.unique(sizes))}"
        )
    if not all(np.all(np.isfinite(values)) for values in columns.values()):
        raise ValueError("PRTT sizes, counts, delays and times must be finite numbers")
    if np.any(counts < 2):
        raise ValueError(f"PRTT trains need n >= 2 messages, got n = {counts.min():g}")
    if np.any(sizes < 1) or np.any(delays <= 0):
        raise ValueError("PRTT sizes must be >= 1 byte and delays > 0 seconds")
    single, stream, delayed = columns["prtt_1_0"], columns["prtt_n_0"], columns["prtt_n_d"]
    if np.any(single <= 0) or np.any(stream <= 0) or np.any(delayed <= 0):
        raise ValueError("PRTT times must be > 0 seconds")

    extra = sizes - 1.0
    gaps = (stream - single) / (counts - 1)
    if np.any(gaps <= 0):
        raise ValueError(
            "PRTT(n,0,s) must exceed PRTT(1,0,s): a train of n messages took no longer than "
            f"one at {_listed(sizes[gaps <= 0])} B"
        )
    weights = 1.0 / gaps
    design = np.column_stack((np.ones_like(extra), extra)) * weights[:, None]
    (g, G), *_ = np.linalg.lstsq(design, gaps * weights, rcond=None)
    fitted_gaps = g + extra * G
    if np.any(delays <= fitted_gaps):
        raise ValueError(
            f"the delay d must exceed the gap g + (s-1)G for o to be measured, but at "
            f"{_listed(sizes[delays <= fitted_gaps])} B it does not"
        )
    o = float(np.median((delayed - single) / (counts - 1) - delays))
    halves = single / 2.0
    weights = 1.0 / halves**2
    L = float(np.sum(weights * (halves - 2 * o - extra * G)) / np.sum(weights))
    for label, value in (("L", L), ("o", o), ("g", g), ("G", G)):
        if value < 0:
            raise ValueError(
                f"the PRTT data give a negative {label} ({value:.3g}): they do not follow "
                "LogGP (check that round trips grow with size and with n, and that the delay "
                "series is slower than the back-to-back one)"
            )
    model = LogGP(L, o, float(g), float(G), name)
    relative = (model.message_time(sizes) - halves) / halves
    quality = {
        "rms_relative_error": float(np.sqrt(np.mean(relative**2))),
        "max_relative_error": float(np.abs(relative).max()),
        "gap_rms_relative_error": float(np.sqrt(np.mean(((fitted_gaps - gaps) / gaps) ** 2))),
        "points": int(sizes.size),
    }
    return model, quality


def _listed(sizes: np.ndarray) -> str:
    return ", ".join(f"{size:g}" for size in sizes)
