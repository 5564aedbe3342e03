"""The Hockney (linear) model of a message: ``T(m) = α + m β`` (seed 003, chapter 2).

α is the start-up time (latency) in seconds, β the time per byte (inverse bandwidth).
Closed forms of collective algorithms under this model (one-port, full-duplex) are in
:mod:`tachyflow.collectives.formulas`; the simulator reproduces them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hockney:
    """``T(m) = alpha + m * beta`` for an m-byte message.

    Parameters
    ----------
    alpha : float
        Start-up time in seconds (> 0).
    beta : float
        Seconds per byte (>= 0); ``1 / beta`` is the asymptotic bandwidth.
    name : str
        What machine or fit this describes.
    gamma : float
        Seconds per byte to combine a received message into the buffer (seed 003's
        ``t_op``); 0 ignores the cost of reductions.
    delta : float
        Seconds per byte to copy a received message from scratch into the buffer.
    sigma : float
        Seconds of software overhead per step and participating rank of tachyflow's own
        (Python) executor; the MPI library's native collectives do not pay it.
    exchange : float
        How much longer a message takes when its sender also receives, or its receiver
        also sends, in the same step (1: full duplex, as between nodes; up to 2: both
        directions share one memory system, as in shared memory). Fitted from the
        bidirectional ping-pong.
    """

    alpha: float
    beta: float
    name: str = "custom"
    gamma: float = 0.0
    delta: float = 0.0
    sigma: float = 0.0
    exchange: float = 1.0

    def __post_init__(self):
        if not (self.alpha > 0 and np.isfinite(self.alpha)):
            raise ValueError(f"alpha must be a positive number of seconds, got {self.alpha!r}")
        for label in ("beta", "gamma", "delta", "sigma"):
            value = getattr(self, label)
            if not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{label} must be a non-negative number of s/byte, got {value!r}")
        check_exchange(self.exchange)

    def message_time(self, size_bytes):
        """Time of one message of ``size_bytes`` (scalar or array)."""
        return self.alpha + np.asarray(size_bytes, dtype=float) * self.beta

    def send_occupancy(self, size_bytes):
        """Seconds the sender is busy before it can start its next send (scalar or array):
        the whole message time, as Hockney has no separate overhead or gap."""
        return self.message_time(size_bytes)

    @property
    def bandwidth(self) -> float:
        """Asymptotic bandwidth in bytes per second."""
        return np.inf if self.beta == 0 else 1.0 / self.beta

    @property
    def half_bandwidth_size(self) -> float:
        """Message size reaching half the asymptotic bandwidth: ``α / β`` bytes."""
        return np.inf if self.beta == 0 else self.alpha / self.beta

    def to_dict(self) -> dict:
        """JSON-ready form (seconds and seconds per byte)."""
        return {
            "model": "hockney",
            "name": self.name,
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "delta": self.delta,
            "sigma": self.sigma,
            "exchange": self.exchange,
        }


def check_exchange(value) -> None:
    """ValueError unless the exchange factor is a number in [1, 2]."""
    if not 1.0 <= value <= 2.0:
        raise ValueError(f"exchange must be a factor between 1 and 2, got {value!r}")


def fit_hockney(sizes, times, name: str = "fit") -> tuple[Hockney, dict]:
    """Least-squares fit of ``α + m β`` to one-way message times.

    The fit minimises relative errors (each point weighted by 1/time), so small and large
    messages count alike. Returns the model and its quality: RMS and worst relative error.

    Raises
    ------
    ValueError
        Fewer than 3 distinct sizes, non-positive or non-finite values, or data that give a
        non-positive α or a negative β (e.g. times that fall as messages grow).
    """
    sizes = np.asarray(sizes, dtype=float).ravel()
    times = np.asarray(times, dtype=float).ravel()
    if sizes.shape != times.shape:
        raise ValueError(f"sizes ({sizes.size}) and times ({times.size}) differ in length")
    if len(np.unique(sizes)) < 3:
        raise ValueError(
            f"a fit needs at least 3 distinct message sizes, got {len(np.unique(sizes))}"
        )
    if not (np.all(np.isfinite(sizes)) and np.all(np.isfinite(times))):
        raise ValueError("sizes and times must be finite numbers")
    if np.any(sizes < 0) or np.any(times <= 0):
        raise ValueError("sizes must be >= 0 bytes and times > 0 seconds")
    weights = 1.0 / times
    design = np.column_stack((np.ones_like(sizes), sizes)) * weights[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(design, times * weights, rcond=None)
    if not alpha > 0 or beta < 0:
        raise ValueError(
            f"the data do not follow T = alpha + m beta (fit gave alpha = {alpha:.3g} s, "
            f"beta = {beta:.3g} s/B): check that times grow with message size"
        )
    model = Hockney(float(alpha), float(beta), name)
    relative = (model.message_time(sizes) - times) / times
    quality = {
        "rms_relative_error": float(np.sqrt(np.mean(relative**2))),
        "max_relative_error": float(np.abs(relative).max()),
        "points": int(sizes.size),
    }
    return model, quality
