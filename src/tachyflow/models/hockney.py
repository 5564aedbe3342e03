"""The Hockney (linear) model of a message: ``T(m) = α + m β`` (Kim's 1998 Korea University
report, chapter 2).

α is the start-up time (latency) in seconds, β the time per byte (inverse bandwidth).
MPI libraries switch protocol with size (eager copies below some kilobytes, rendezvous
above), so a fitted model may have two regimes: ``α + mβ`` up to ``threshold`` bytes and
``α_large + mβ_large`` above (:func:`fit_two_regimes`).
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
        Seconds per byte to combine a received message into the buffer (Kim's 1998 report's
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
    threshold : float
        Largest message in bytes of the first regime (infinite: one regime).
    alpha_large, beta_large : float
        Start-up and time per byte above ``threshold``.
    """

    alpha: float
    beta: float
    name: str = "custom"
    gamma: float = 0.0
    delta: float = 0.0
    sigma: float = 0.0
    exchange: float = 1.0
    threshold: float = np.inf
    alpha_large: float = 0.0
    beta_large: float = 0.0

    def __post_init__(self):
        if not (self.alpha > 0 and np.isfinite(self.alpha)):
            raise ValueError(f"alpha must be a positive number of seconds, got {self.alpha!r}")
        for label in ("beta", "gamma", "delta", "sigma"):
            value = getattr(self, label)
            if not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{label} must be a non-negative number of s/byte, got {value!r}")
        check_exchange(self.exchange)
        if self.two_regimes and not (
            self.threshold >= 0 and self.alpha_large > 0 and self.beta_large >= 0
        ):
            raise ValueError(
                "a second regime needs threshold >= 0 bytes, alpha_large > 0 s and "
                f"beta_large >= 0 s/byte, got {self.threshold!r}, {self.alpha_large!r}, "
                f"{self.beta_large!r}"
            )

    @property
    def two_regimes(self) -> bool:
        """Whether messages above ``threshold`` follow their own start-up and rate."""
        return bool(np.isfinite(self.threshold))

    def message_time(self, size_bytes):
        """Time of one message of ``size_bytes`` (scalar or array)."""
        size = np.asarray(size_bytes, dtype=float)
        small = self.alpha + size * self.beta
        if not self.two_regimes:
            return small
        return np.where(size <= self.threshold, small, self.alpha_large + size * self.beta_large)

    def send_occupancy(self, size_bytes):
        """Seconds the sender is busy before it can start its next send (scalar or array):
        the whole message time, as Hockney has no separate overhead or gap."""
        return self.message_time(size_bytes)

    @property
    def bandwidth(self) -> float:
        """Asymptotic bandwidth in bytes per second (of the large regime when there are
        two)."""
        beta = self.beta_large if self.two_regimes else self.beta
        return np.inf if beta == 0 else 1.0 / beta

    @property
    def half_bandwidth_size(self) -> float:
        """Message size reaching half the asymptotic bandwidth: ``α / β`` bytes (of the
        regime that size falls in)."""
        if self.two_regimes and self.beta_large > 0:
            large = self.alpha_large / self.beta_large
            if large > self.threshold:
                return large
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
            **(
                {
                    "threshold": self.threshold,
                    "alpha_large": self.alpha_large,
                    "beta_large": self.beta_large,
                }
                if self.two_regimes
                else {}
            ),
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


# A single line this close to the data needs no second regime.
SINGLE_LINE_GOOD_ENOUGH = 0.01


def fit_two_regimes(sizes, times, name: str = "fit") -> tuple[Hockney, dict]:
    """The better of one Hockney line and two (an eager and a rendezvous regime).

    Every power of two from 1 KiB to 1 MiB is tried as the largest size of the first regime
    (each side needs 3 sizes and a valid fit); two regimes are kept when one line misses
    the data by more than 1 % RMS and two cut that error by a quarter or more. Quality as
    :func:`fit_hockney`, with the number of regimes.
    """
    sizes = np.asarray(sizes, dtype=float).ravel()
    times = np.asarray(times, dtype=float).ravel()
    single, quality = fit_hockney(sizes, times, name)
    best, best_quality = single, {**quality, "regimes": 1}
    for power in range(10, 21):
        threshold = float(2**power)
        below, above = sizes <= threshold, sizes > threshold
        if len(np.unique(sizes[below])) < 3 or len(np.unique(sizes[above])) < 3:
            continue
        try:
            small, _ = fit_hockney(sizes[below], times[below])
            large, _ = fit_hockney(sizes[above], times[above])
        except ValueError:
            continue
        model = Hockney(
            small.alpha, small.beta, name, threshold=threshold,
            alpha_large=large.alpha, beta_large=large.beta,
        )
        relative = (model.message_time(sizes) - times) / times
        rms = float(np.sqrt(np.mean(relative**2)))
        if (
            quality["rms_relative_error"] > SINGLE_LINE_GOOD_ENOUGH
            and rms <= 0.75 * quality["rms_relative_error"]
            and rms < best_quality["rms_relative_error"]
        ):
            best = model
            best_quality = {
                "rms_relative_error": rms,
                "max_relative_error": float(np.abs(relative).max()),
                "points": int(sizes.size),
                "regimes": 2,
            }
    return best, best_quality
