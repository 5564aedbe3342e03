"""``tachyflow bench fwh``: throughput of the FW-H kernels next to a roofline bound.

The kernels are those of :class:`~tachyflow.acoustics.fwh.FWHSolver`'s two schemes
(Farassat 1A, source-time-dominant), each timed alone on one core — they are serial, each
rank runs them on its own panels:

- ``fourth`` (the solver's default, ``time_order = 4``, ``interpolation = "cubic"``):
  :func:`~tachyflow.numerics.fwh_kernels.accumulate_retarded_cubic` and, in the same
  timed call, :func:`~tachyflow.numerics.fwh_kernels.finish_retarded_cubic` (the pairs'
  last intervals); between a pair's arrivals the cubic through the two either side;
- ``second`` (``time_order = 2``, ``interpolation = "linear"``):
  :func:`~tachyflow.numerics.fwh_kernels.accumulate_retarded`, linear interpolation.

The source-time derivatives are computed before the kernels (as ``FWHAccumulator`` does)
and not timed. The case: a cube-sphere of ``RADIUS`` with about ``panels`` panels
(:func:`~tachyflow.acoustics.surfaces.sphere`) pulsating and oscillating along its normals
(panel Mach amplitude ``MACH``, pressure of a plane wave, panels held at their mean
position as in the linear validation cases), ``observers`` points spread over a sphere of
``DISTANCE``, ``steps`` source steps of ``STEPS_PER_PERIOD`` per period, and an observer
grid of the source step over the window in which every panel's signal has arrived at every
observer. Before timing, each kernel's signals are checked against
:class:`~tachyflow.acoustics.fwh.FWHSolver` with the same scheme on the same data.

Throughput, with ``t`` the median kernel time, ``P`` panels, ``M`` observers, ``S`` source
steps and ``Q`` observer-time samples per observer:

- integrands per second, ``P M S / t``: evaluations of the retarded integrand of one
  (panel, observer, source step);
- panel × observer-time samples per second, ``P M Q / t`` (the issue's measure): the
  (panel, observer, observer-time sample) contributions added to the signals. The window
  is chosen so that each such triple receives exactly one interpolated contribution.

Roofline, per integrand (flops and bytes are the run's totals over ``P M S``):

- flops are counted from the kernels' source (the ``PER_*`` tables below and each
  scheme's; numba 0.68 compiles them to exactly these scalar instructions, without FMA: it
  does not contract ``a * b + c`` without fastmath). Every addition, subtraction,
  multiplication, division and square root counts as one flop, as hardware counters count
  them. Interval counts: a pair has ``S - 1`` intervals between arrivals; as the panels
  are held still, arrivals are one observer-grid step apart, so ``P M Q`` of them hold
  one sample each and the rest none. The cubic scheme's first and last interval of a
  pair take the quadratic through three arrivals, a few flops fewer: they are counted as
  cubics (an over-count of ``2 / (S - 1)`` of the interpolation's set-up).
- bytes are the traffic that must reach the core if the kernel's arrays come from main
  memory: a panel's ``PANEL_STEP_BYTES`` of step data are read once per (step, panel) and
  held in registers and L1 across the observer loop; the ``(P, M)`` interpolation state
  (the linear scheme's last arrival and integrands and a bool, the cubic's last three and
  a count) is read and written every step, the scheme's ``state_bytes``. The observers
  and the few observer samples a step touches stay in L1 and are not counted. Counting the
  state as memory traffic is right when it exceeds the last-level cache and pessimistic
  (a lower memory ceiling) when it fits in it.

The machine's ceilings are measured in the same run, interleaved sample by sample with the
kernels (:func:`~tachyflow.bench.harness.time_interleaved`), all as medians: the vector
FMA peak of one core (a numba loop of eight independent FMA chains per element that
vectorises), the memory bandwidth (a STREAM triad ``a = b + s c`` on arrays far larger than
the caches; ``BYTES_PER_TRIAD`` bytes per element, the write-allocate read of ``a``
included), the scalar add/multiply peak (the same chains, kept scalar and without FMA,
as the kernels' code is) and the throughput of scalar divisions and square roots.

The simple roofline bound ``min(peak / flops, bandwidth / bytes)`` (integrands per
second) treats a division like an addition. A division or square root occupies the
core's divider for several cycles, though, and the kernels have several per integrand,
so the *division-aware* bound is also given: the least of the memory bound, the scalar
peak over the flops, and the divider's time ``divisions × t_div + roots × t_sqrt`` per
integrand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from tachyflow.acoustics.fwh import FWHSolver
from tachyflow.acoustics.surfaces import sphere
from tachyflow.bench.harness import time_interleaved
from tachyflow.bench.results import new_results, summarize
from tachyflow.errors import ConfigError
from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.numerics.compiled import kernel
from tachyflow.numerics.fwh_kernels import (
    CUBIC_HISTORY,
    accumulate_retarded,
    accumulate_retarded_cubic,
    finish_retarded_cubic,
    source_derivative,
)

BENCHMARK = "fwh"
RADIUS = 0.5  # m, of the sphere
DISTANCE = 20.0  # m, observers from the centre (far field: 40 radii)
C0, RHO0 = 340.0, 1.225
FREQUENCY = 170.0  # Hz (ka = pi / 2)
STEPS_PER_PERIOD = 32
MACH = 0.01  # amplitude of the panels' normal velocity over c0
# The observer window starts and ends this far inside the span in which every panel's
# signal has arrived at every observer, so that rounding cannot drop or double a
# contribution at its edges.
EDGE_MARGIN = 0.5  # source steps

# Floating-point operations of the kernels from their source (subtractions count as
# additions; comparisons — the on-surface check, numba's zero-division checks —, the
# rounding of the grid indices and int/float conversions are not flops). Both schemes:
# before the observer loop, per (step, panel): |M|² and L·M (3 mul + 2 add each), the area
# weight.
PER_PANEL_STEP = {"add": 4, "mul": 7, "div": 0, "sqrt": 0}
# Per integrand: r - y (3 add), |r| (3 mul, 2 add, 1 sqrt), 1/r (1 div), unit vector
# (3 mul), M_r, Ṁ_r, L_r and L̇_r (12 mul, 8 add), Doppler factor and its square (1 add,
# 1 div, 1 mul), the motion term r Ṁ_r + c0 (M_r - M²) (2 mul, 2 add), 1/r² (1 mul), p_T
# (8 mul, 1 add), p_L (10 mul, 3 add), area weights (2 mul), arrival time tau + r / c0
# (1 mul, 1 add): the kernels multiply by reciprocals computed once.
PER_INTEGRAND = {"add": 21, "mul": 43, "div": 2, "sqrt": 1}
# Bytes: y, M, Ṁ, L, L̇ (3 each), U_n, U̇_n, area and minimum distance, per (step, panel).
PANEL_STEP_BYTES = 19 * 8
NO_FLOPS = {"add": 0, "mul": 0, "div": 0, "sqrt": 0}


@dataclass(frozen=True)
class Scheme:
    """One of FWHSolver's schemes as this benchmark times and counts it.

    ``options``: FWHSolver's ``time_order`` and ``interpolation``; ``kernel`` and
    ``finish`` (None: nothing): the compiled calls of one timed sample; ``state``: the
    interpolation state's dtypes and trailing shape per (panel, observer) pair;
    ``per_interval``, ``per_sampled_interval``, ``per_sample``: flops per interval between
    a pair's arrivals, per interval holding a sample, per (pair, observer-time sample);
    ``state_bytes``: the state read and written per integrand.
    """

    name: str
    kernel: Callable
    finish: Callable | None
    options: dict
    state: tuple
    per_interval: dict
    per_sampled_interval: dict
    per_sample: dict
    state_bytes: int

    def new_state(self, panels: int, observers: int) -> tuple:
        """Zeroed state arrays for ``panels`` × ``observers`` pairs."""
        return tuple(
            np.zeros((panels, observers, *trailing), dtype) for dtype, trailing in self.state
        )


SCHEMES = {
    # The default: per interval, 1 / grid_step and the two grid indices (2 add, 2 mul,
    # 1 div); per sampled interval the Lagrange weights' set-up (f_a: 3 add; s_0..s_3:
    # 9 add, 8 mul, 4 div); per sample t_q (1 add, 1 mul), t - x_a (4 add), the four
    # weights (12 mul) and the two signals (8 mul, 8 add). State: 3 arrivals, 3 thickness
    # and 3 loading values (float64) and a count (int64).
    "fourth": Scheme(
        "fourth", accumulate_retarded_cubic, finish_retarded_cubic,
        {"time_order": 4, "interpolation": "cubic"},
        ((np.float64, (CUBIC_HISTORY,)),) * 3 + ((np.int64, ()),),
        {"add": 2, "mul": 2, "div": 1, "sqrt": 0},
        {"add": 12, "mul": 8, "div": 4, "sqrt": 0},
        {"add": 13, "mul": 21, "div": 0, "sqrt": 0},
        2 * (3 * CUBIC_HISTORY * 8 + 8),
    ),
    # Per interval (every step but the first): 1 / span and the two grid indices
    # (t - t_0) / dt by a reciprocal of dt computed once per call; per sample s = (t_q -
    # t_a) / span (by the reciprocal), and p += last + s (new - last) for the two signals.
    # State: the last arrival, thickness and loading (float64) and has_last (bool).
    "second": Scheme(
        "second", accumulate_retarded, None,
        {"time_order": 2, "interpolation": "linear"},
        ((np.float64, ()),) * 3 + ((np.bool_, ()),),
        {"add": 3, "mul": 2, "div": 1, "sqrt": 0},
        NO_FLOPS,
        {"add": 8, "mul": 4, "div": 0, "sqrt": 0},
        2 * (3 * 8 + 1),
    ),
}

# Machine probes: sizes fixed, each call a few tens of milliseconds on a current core.
FMA_LENGTH, FMA_SWEEPS = 512, 8000  # 4 KiB, in L1
SCALAR_SWEEPS = 1000
CHAIN_FLOPS = 7 + 16 * 8 * 2 + 9  # per element: set-up, 16 steps of 8 chains, reduction
TRIAD_LENGTH, TRIAD_PASSES = 1 << 23, 2  # 192 MiB in all: beyond a core's share of cache
BYTES_PER_TRIAD = 4 * 8  # read b and c, read a for ownership, write a
DIVIDE_LENGTH, DIVIDE_SWEEPS = 1024, 8000  # 24 KiB for the three arrays, in L1
WARMUP = 1  # untimed call of each candidate: compiles or loads the probes, pages in arrays
# The two bounds (key prefixes in the roofline) and the ceilings each is the least of.
BOUNDS = {"": ("compute", "memory"), "division_aware_": ("memory", "scalar", "divider")}


@kernel(fastmath={"contract"})
def _vector_fma(x, sweeps):  # pragma: no cover
    # Eight independent chains per element and the element loop vectorised keep both FMA
    # pipes busy despite the FMA latency; the affine map is a contraction, so the values
    # stay near 1 (no overflow, no subnormals).
    a, b = 1.0 - 1e-7, 1e-7
    for _ in range(sweeps):
        for i in range(x.shape[0]):
            v0 = x[i]
            v1, v2, v3 = v0 + 1.0, v0 + 2.0, v0 + 3.0
            v4, v5, v6, v7 = v0 + 4.0, v0 + 5.0, v0 + 6.0, v0 + 7.0
            for _ in range(16):
                v0, v1, v2, v3 = v0 * a + b, v1 * a + b, v2 * a + b, v3 * a + b
                v4, v5, v6, v7 = v4 * a + b, v5 * a + b, v6 * a + b, v7 * a + b
            x[i] = ((v0 + v1) + (v2 + v3) + (v4 + v5) + (v6 + v7)) * 0.125 - 3.5


@kernel
def _scalar_chains(x, sweeps):  # pragma: no cover
    # The same work without fastmath (separate multiply and add, like the kernel); the
    # early exit, like the kernel's on-surface check, keeps LLVM from vectorising.
    a, b = 1.0 - 1e-7, 1e-7
    for _ in range(sweeps):
        for i in range(x.shape[0]):
            v0 = x[i]
            if v0 < -1.0:
                return
            v1, v2, v3 = v0 + 1.0, v0 + 2.0, v0 + 3.0
            v4, v5, v6, v7 = v0 + 4.0, v0 + 5.0, v0 + 6.0, v0 + 7.0
            for _ in range(16):
                v0, v1, v2, v3 = v0 * a + b, v1 * a + b, v2 * a + b, v3 * a + b
                v4, v5, v6, v7 = v4 * a + b, v5 * a + b, v6 * a + b, v7 * a + b
            x[i] = ((v0 + v1) + (v2 + v3) + (v4 + v5) + (v6 + v7)) * 0.125 - 3.5


@kernel
def _triad(a, b, c, scalar, passes):  # pragma: no cover
    for _ in range(passes):
        for i in range(a.shape[0]):
            a[i] = b[i] + scalar * c[i]


@kernel
def _divide(out, a, b, sweeps):  # pragma: no cover
    # Scalar like the kernel's divisions: numba's zero-division check is an early exit.
    for _ in range(sweeps):
        for i in range(out.shape[0]):
            out[i] = a[i] / b[i]


@kernel
def _square_root(out, a, sweeps):  # pragma: no cover
    # The early exit keeps the roots scalar, like the kernel's.
    for _ in range(sweeps):
        for i in range(out.shape[0]):
            if a[i] < 0.0:
                return
            out[i] = np.sqrt(a[i])


def _probes() -> dict:
    """Callables measuring the machine, and the work (flops, bytes or operations) of each."""
    rng = np.random.default_rng(7)
    chains = rng.random(FMA_LENGTH)
    scalar_chains = rng.random(FMA_LENGTH)
    triad = (np.zeros(TRIAD_LENGTH), rng.random(TRIAD_LENGTH), rng.random(TRIAD_LENGTH))
    out = np.empty(DIVIDE_LENGTH)
    numerators, denominators = 1.0 + rng.random((2, DIVIDE_LENGTH))
    return {
        "vector_fma": (
            lambda: _vector_fma(chains, FMA_SWEEPS),
            FMA_LENGTH * FMA_SWEEPS * CHAIN_FLOPS,
        ),
        "scalar": (
            lambda: _scalar_chains(scalar_chains, SCALAR_SWEEPS),
            FMA_LENGTH * SCALAR_SWEEPS * CHAIN_FLOPS,
        ),
        "triad": (
            lambda: _triad(*triad, 3.0, TRIAD_PASSES),
            TRIAD_LENGTH * TRIAD_PASSES * BYTES_PER_TRIAD,
        ),
        "divide": (
            lambda: _divide(out, numerators, denominators, DIVIDE_SWEEPS),
            DIVIDE_LENGTH * DIVIDE_SWEEPS,
        ),
        "sqrt": (
            lambda: _square_root(out, numerators, DIVIDE_SWEEPS),
            DIVIDE_LENGTH * DIVIDE_SWEEPS,
        ),
    }


def _observers(count: int) -> np.ndarray:
    """``count`` points spread evenly over the sphere of ``DISTANCE`` (golden spiral)."""
    index = np.arange(count) + 0.5
    z = 1.0 - 2.0 * index / count
    ring = np.sqrt(1.0 - z * z)
    angle = np.pi * (3.0 - np.sqrt(5.0)) * index
    return DISTANCE * np.column_stack([ring * np.cos(angle), ring * np.sin(angle), z])


def _case(panels: int, observers: int, steps: int) -> dict:
    """Surface data, observers and observer grid of the benchmark case."""
    surface = sphere((0.0, 0.0, 0.0), RADIUS, panels)
    step = 1.0 / (FREQUENCY * STEPS_PER_PERIOD)
    times = np.arange(steps) * step
    points = _observers(observers)
    distances = np.linalg.norm(points[:, None, :] - surface.centres[None], axis=2)
    start = times[0] + distances.max() / C0 + EDGE_MARGIN * step
    stop = times[-1] + distances.min() / C0 - EDGE_MARGIN * step
    if stop < start + step:
        spread = (distances.max() - distances.min()) / (C0 * step)
        raise ConfigError(
            f"{steps} source steps are too few: the sphere's signal reaches an observer over "
            f"{spread:.1f} steps, and the observer window needs 2 samples after that; "
            f"use at least {int(np.ceil(spread + 2 * EDGE_MARGIN)) + 2} steps"
        )
    samples = int((stop - start) / step) + 1
    shape = (steps, surface.panels, 3)
    normal_speed = (
        MACH * C0 * np.sin(2.0 * np.pi * FREQUENCY * times)[:, None]
        * (1.0 + 0.5 * surface.normals[:, 0])[None, :]
    )
    return {
        "times": times,
        "positions": np.ascontiguousarray(np.broadcast_to(surface.centres, shape)),
        "normals": np.ascontiguousarray(np.broadcast_to(surface.normals, shape)),
        "areas": surface.areas,
        "surface_velocity": normal_speed[..., None] * surface.normals,
        "pressure": RHO0 * C0 * normal_speed,
        "observers": points,
        "observer_times": start + np.arange(samples) * step,
    }


def _kernel_arguments(case: dict, time_order: int) -> tuple:
    """The inputs of a scheme's kernel, formed as FWHAccumulator forms them."""
    times, normals = case["times"], case["normals"]
    mach = case["surface_velocity"] / C0
    normal_flux = np.einsum("tpi,tpi->tp", case["surface_velocity"], normals)
    load = case["pressure"][..., None] * normals
    observer_times = case["observer_times"]
    grid_step = (observer_times[-1] - observer_times[0]) / (observer_times.size - 1)
    return (
        times, case["positions"], case["areas"], normal_flux,
        source_derivative(normal_flux, times, time_order), load,
        source_derivative(load, times, time_order), mach,
        source_derivative(mach, times, time_order), case["observers"], C0, RHO0,
        0.5 * np.sqrt(case["areas"]), observer_times[0], grid_step,
    )


def operation_counts(
    scheme: Scheme, panels: int, observers: int, steps: int, samples: int
) -> dict:
    """Flops (by kind) and bytes of one timed call of a scheme, totals and per integrand.

    Parameters
    ----------
    scheme : Scheme
        One of ``SCHEMES``.
    panels, observers, steps : int
        Panels, observers and source steps of the call.
    samples : int
        Observer-time samples per observer, each receiving one contribution per panel
        (from one interval between arrivals).

    Returns
    -------
    dict
        ``integrands``, ``panel_samples``, ``operations`` (total additions,
        multiplications, divisions and square roots), ``flops`` and ``bytes`` (totals),
        and ``flops_per_integrand``, ``bytes_per_integrand``, ``divisions_per_integrand``,
        ``roots_per_integrand`` and ``intensity`` (flops per byte).
    """
    pairs = panels * observers
    integrands = pairs * steps
    multiples = (
        (PER_PANEL_STEP, steps * panels),
        (PER_INTEGRAND, integrands),
        (scheme.per_interval, pairs * (steps - 1)),
        (scheme.per_sampled_interval, pairs * samples),
        (scheme.per_sample, pairs * samples),
    )
    operations = {
        kind: sum(table[kind] * times for table, times in multiples)
        for kind in ("add", "mul", "div", "sqrt")
    }
    flops = sum(operations.values())
    moved = steps * panels * PANEL_STEP_BYTES + integrands * scheme.state_bytes
    return {
        "integrands": integrands,
        "panel_samples": pairs * samples,
        "operations": operations,
        "flops": flops,
        "bytes": moved,
        "flops_per_integrand": flops / integrands,
        "bytes_per_integrand": moved / integrands,
        "divisions_per_integrand": operations["div"] / integrands,
        "roots_per_integrand": operations["sqrt"] / integrands,
        "intensity": flops / moved,
    }


def _timed_call(scheme: Scheme, case: dict, state: tuple, signals: tuple, bad) -> Callable:
    """One sample of a scheme: the kernel (and its finish) from a fresh state, so that every
    call does the same work; the reset writes the state and ``2 M Q`` doubles, little
    next to the kernel's traffic."""
    arguments = _kernel_arguments(case, scheme.options["time_order"])
    grid = arguments[-2:]

    def call():
        for array in (*state, *signals):
            array.fill(0)
        scheme.kernel(*arguments, *state, *signals, bad)
        if scheme.finish is not None:
            scheme.finish(*state, *grid, *signals)

    return call


def _verified(scheme: Scheme, case: dict, signals: tuple, bad) -> bool:
    """Whether a call's signals equal FWHSolver's with the same scheme, to round-off."""
    reference = FWHSolver(
        case["observers"], case["observer_times"], c0=C0, rho0=RHO0, **scheme.options
    ).solve(
        case["times"], case["positions"], case["normals"], case["areas"],
        case["surface_velocity"], case["pressure"],
    )
    return bool(bad[0] < 0) and all(
        np.allclose(ours, theirs, rtol=1e-9, atol=1e-12 * np.abs(theirs).max())
        for ours, theirs in zip(signals, (reference.thickness, reference.loading), strict=True)
    )


def run_fwh_benchmark(
    panels: int = 2000,
    observers: int = 16,
    steps: int = 400,
    repeats: int = 5,
    schemes: tuple[str, ...] = tuple(SCHEMES),
) -> dict:
    """Time FW-H kernels on one core and measure the machine's ceilings alongside.

    Parameters
    ----------
    panels : int
        Wanted panels of the sphere (the cube-sphere has ``6 m²``, the nearest count).
    observers : int
        Observers on the sphere of ``DISTANCE``.
    steps : int
        Source steps, enough for the signal of the whole sphere to arrive (about 20).
    repeats : int
        Timed samples of each kernel and of each machine probe, interleaved.
    schemes : tuple of str
        Names in ``SCHEMES`` whose kernels are timed (default: both).

    Returns
    -------
    dict
        The results document: ``results`` holds one entry per scheme (its kernel's
        timings and throughputs), ``counts`` each scheme's flops and bytes
        (:func:`operation_counts`), ``probes`` the machine probes' timings and work,
        ``roofline`` the ceilings and each scheme's bounds (:func:`roofline`).

    Raises
    ------
    ConfigError
        If ``steps`` are too few for an observer window.
    ValueError
        If ``schemes`` is empty or names an unknown scheme.
    """
    unknown = [name for name in schemes if name not in SCHEMES]
    if not schemes or unknown:
        raise ValueError(f"schemes must be names among {tuple(SCHEMES)}, got {schemes!r}")
    case = _case(panels, observers, steps)
    npanel, samples = case["areas"].size, case["observer_times"].size
    params = {
        "panels_requested": panels,
        "panels": npanel,
        "observers": observers,
        "steps": steps,
        "observer_samples": samples,
        "repeats": repeats,
        "warmup": WARMUP,
        "schemes": list(schemes),
        "case": f"cube-sphere of radius {RADIUS} m pulsating and oscillating at {FREQUENCY} Hz "
        f"(panel Mach amplitude {MACH}), observers on a sphere of {DISTANCE} m",
        "source_step": float(case["times"][1] - case["times"][0]),
        "cores": 1,
    }
    comm = MPI.COMM_SELF
    document = new_results(BENCHMARK, params, comm)
    signals = (np.zeros((observers, samples)), np.zeros((observers, samples)))
    bad = np.full(3, -1, dtype=np.int64)
    calls, verified = {}, {}
    for name in schemes:
        scheme = SCHEMES[name]
        calls[name] = _timed_call(scheme, case, scheme.new_state(npanel, observers), signals, bad)
        bad.fill(-1)
        calls[name]()
        verified[name] = _verified(scheme, case, signals, bad)
    probes = _probes()
    candidates = {name: call for name, call in calls.items() if verified[name]}
    candidates.update({name: run for name, (run, _) in probes.items()})
    timings = time_interleaved(candidates, comm, repeats, WARMUP, description="FW-H kernels")
    document["counts"] = {}
    for name in schemes:
        scheme = SCHEMES[name]
        counts = operation_counts(scheme, npanel, observers, steps, samples)
        entry = {"name": name, "kernel": scheme.kernel.__name__, **scheme.options,
                 "verified": verified[name]}
        if verified[name]:
            entry.update(summarize(timings[name]))
            entry["integrands_per_second"] = counts["integrands"] / entry["median"]
            entry["panel_samples_per_second"] = counts["panel_samples"] / entry["median"]
            entry["flops_per_second"] = counts["flops"] / entry["median"]
            entry["bytes_per_second"] = counts["bytes"] / entry["median"]
        document["results"].append(entry)
        document["counts"][name] = counts
    document["probes"] = {
        name: {**summarize(timings[name]), "work": work} for name, (_, work) in probes.items()
    }
    document["roofline"] = roofline(document)
    return document


def roofline(document: dict) -> dict:
    """Ceilings and bounds (integrands per second) from a results document's measurements.

    Returns
    -------
    dict
        ``peak_flops`` (vector FMA), ``scalar_flops``, ``bandwidth`` (bytes per second),
        ``divide_seconds`` and ``sqrt_seconds`` (per scalar operation), from the probes'
        medians; per scheme under ``schemes``: ``ceilings`` (integrands per second allowed
        by each of ``compute``, ``memory``, ``scalar`` and ``divider``), ``bound``,
        ``limit`` and ``fraction`` of the simple roofline ``min(compute, memory)``,
        ``division_aware_bound``, ``division_aware_limit`` and ``division_aware_fraction``
        of ``min(memory, scalar, divider)``. A fraction is the kernel's median throughput
        over the bound, ``None`` when the kernel was not timed.
    """
    rates = {name: probe["work"] / probe["median"] for name, probe in document["probes"].items()}
    divide_seconds, sqrt_seconds = 1.0 / rates["divide"], 1.0 / rates["sqrt"]
    found = {
        "peak_flops": rates["vector_fma"],
        "scalar_flops": rates["scalar"],
        "bandwidth": rates["triad"],
        "divide_seconds": divide_seconds,
        "sqrt_seconds": sqrt_seconds,
        "schemes": {},
    }
    for entry in document["results"]:
        counts = document["counts"][entry["name"]]
        flops = counts["flops_per_integrand"]
        divider_seconds = (
            counts["divisions_per_integrand"] * divide_seconds
            + counts["roots_per_integrand"] * sqrt_seconds
        )
        ceilings = {
            "compute": rates["vector_fma"] / flops,
            "memory": rates["triad"] / counts["bytes_per_integrand"],
            "scalar": rates["scalar"] / flops,
            "divider": 1.0 / divider_seconds,
        }
        measured = entry.get("integrands_per_second")
        bounds = {"ceilings": ceilings}
        for prefix, limits in BOUNDS.items():
            limit = min(limits, key=ceilings.get)
            bounds[f"{prefix}bound"] = ceilings[limit]
            bounds[f"{prefix}limit"] = limit
            bounds[f"{prefix}fraction"] = None if measured is None else measured / ceilings[limit]
        found["schemes"][entry["name"]] = bounds
    return found


def stem(document: dict) -> str:
    """File name stem: ``fwh_1944panels_16observers_400steps``."""
    params = document["params"]
    return (
        f"{BENCHMARK}_{params['panels']}panels_{params['observers']}observers_"
        f"{params['steps']}steps"
    )


def plot(document: dict, path):
    """Log-log roofline: the ceilings and each kernel's point (GFLOP/s over flops per
    byte); the divider's ceiling is drawn for the first scheme's mix of operations."""
    roof, params = document["roofline"], document["params"]
    intensities = [counts["intensity"] for counts in document["counts"].values()]
    low, high = np.log10(min(intensities)), np.log10(max(intensities))
    x = np.logspace(min(-2.0, low - 1), max(3.0, high + 1), 400)
    peak, scalar = roof["peak_flops"] / 1e9, roof["scalar_flops"] / 1e9
    bandwidth = roof["bandwidth"] / 1e9
    figure, axes = new_subplots(figsize=(8, 5.5))
    axes.loglog(
        x,
        np.minimum(peak, bandwidth * x),
        "k-",
        lw=2,
        label=f"roofline: vector FMA {peak:.1f} GFLOP/s, triad {bandwidth:.1f} GB/s",
    )
    axes.loglog(
        x,
        np.minimum(scalar, bandwidth * x),
        "k--",
        label=f"scalar add/multiply, no FMA: {scalar:.1f} GFLOP/s",
    )
    dividers = []
    for colour, entry in enumerate(document["results"]):
        name, counts = entry["name"], document["counts"][entry["name"]]
        bounds = roof["schemes"][name]
        divider = bounds["ceilings"]["divider"] * counts["flops_per_integrand"] / 1e9
        dividers.append(divider)
        axes.loglog(
            x,
            np.minimum(divider, bandwidth * x),
            ":",
            color=f"C{colour}",
            lw=1.5,
            label=f"divider, {name}: {counts['divisions_per_integrand']:.1f} div + "
            f"{counts['roots_per_integrand']:.0f} sqrt per integrand, {divider:.2f} GFLOP/s",
        )
        axes.axvline(counts["intensity"], color="0.8", lw=0.8)
        if not entry["verified"]:
            continue
        achieved = entry["flops_per_second"] / 1e9
        axes.loglog(
            [counts["intensity"]],
            [achieved],
            "o",
            color=f"C{colour}",
            ms=10,
            label=f"{name} ({entry['kernel']}): {achieved:.2f} GFLOP/s, "
            f"{entry['integrands_per_second'] / 1e6:.1f} M integrands/s",
        )
        axes.annotate(
            f"{bounds['fraction']:.1%} of the roofline ({bounds['limit']} bound)\n"
            f"{bounds['division_aware_fraction']:.0%} of the division-aware bound "
            f"({bounds['division_aware_limit']})",
            (counts["intensity"], achieved),
            xytext=(12, 12 - 46 * (colour % 2)),  # the two points lie close: one above
            color=f"C{colour}",
            textcoords="offset points",
            fontsize=8,
        )
    axes.set_xlabel("arithmetic intensity [flop/byte]")
    axes.set_ylabel("GFLOP/s, one core")
    axes.set_ylim(min(0.3 * min(dividers), 0.1), 3 * peak)
    axes.grid(which="both", alpha=0.25)
    axes.legend(fontsize=7, loc="lower right")
    axes.set_title(
        f"FW-H kernels: {params['panels']} panels × {params['observers']} observers × "
        f"{params['steps']} steps ({params['observer_samples']} observer samples)",
        fontsize=10,
    )
    return save_figure(figure, path)


def _summary_cells(entry: dict, counts: dict, bounds: dict) -> dict[str, str]:
    """One scheme's column of the summary table, by row label."""
    measured = entry.get("integrands_per_second")

    def against(ceiling):
        share = "" if measured is None else f" ({measured / ceiling:.1%})"
        return f"{ceiling / 1e6:.1f} M{share}"

    timed = {
        "kernel time (median, min)": lambda: (
            f"{entry['median'] * 1e3:.4g} ms, {entry['min'] * 1e3:.4g} ms"
        ),
        "integrands / s (P M S / t)": lambda: f"{measured / 1e6:.2f} M",
        "panel x observer-time samples / s (P M Q / t)": lambda: (
            f"{entry['panel_samples_per_second'] / 1e6:.2f} M"
        ),
        "achieved": lambda: (
            f"{entry['flops_per_second'] / 1e9:.2f} GFLOP/s, "
            f"{entry['bytes_per_second'] / 1e9:.2f} GB/s"
        ),
    }
    cells = {"signals equal FWHSolver's": "yes" if entry["verified"] else "[red]no[/red]"}
    for label, cell in timed.items():
        cells[label] = cell() if entry["verified"] else "[red]not timed[/red]"
    for kind, total in counts["operations"].items():
        cells[f"{kind} / integrand"] = f"{total / counts['integrands']:.2f}"
    cells["flops / integrand"] = f"{counts['flops_per_integrand']:.2f}"
    cells["bytes / integrand"] = f"{counts['bytes_per_integrand']:.1f}"
    cells["arithmetic intensity"] = f"{counts['intensity']:.2f} flop/B"
    for name, ceiling in bounds["ceilings"].items():
        cells[f"{name} ceiling, integrands / s"] = against(ceiling)
    for prefix, limits in BOUNDS.items():
        label = f"{'division-aware bound' if prefix else 'roofline'} min({', '.join(limits)})"
        cells[label] = f"{against(bounds[f'{prefix}bound'])}, {bounds[f'{prefix}limit']}"
    return cells


def print_summary(document: dict, console) -> None:
    """Each kernel's throughput and bounds, and the machine's ceilings, as rich tables."""
    from rich.table import Table

    params, roof = document["params"], document["roofline"]
    load = document["machine"].get("load_avg")
    table = Table(
        title=f"FW-H kernels, {params['panels']} panels x {params['observers']} observers x "
        f"{params['steps']} steps ({params['observer_samples']} observer samples), one core, "
        f"median of {params['repeats']}; in brackets: measured / ceiling"
    )
    table.add_column("quantity", no_wrap=True)
    columns = []
    for entry in document["results"]:
        name = entry["name"]
        table.add_column(
            f"{name}: order {entry['time_order']}, {entry['interpolation']}", justify="right"
        )
        columns.append(_summary_cells(entry, document["counts"][name], roof["schemes"][name]))
    for label in columns[0]:
        table.add_row(label, *(cells[label] for cells in columns))
    console.print(table)
    machine = Table(title="the core's ceilings, measured in the same run (medians)")
    machine.add_column("ceiling")
    machine.add_column("value", justify="right")
    machine.add_row("vector FMA peak", f"{roof['peak_flops'] / 1e9:.1f} GFLOP/s")
    machine.add_row("scalar add/multiply peak", f"{roof['scalar_flops'] / 1e9:.2f} GFLOP/s")
    machine.add_row("triad bandwidth", f"{roof['bandwidth'] / 1e9:.1f} GB/s")
    machine.add_row(
        "scalar division, square root",
        f"{roof['divide_seconds'] * 1e9:.2f} ns, {roof['sqrt_seconds'] * 1e9:.2f} ns",
    )
    machine.add_row("load average", ", ".join(f"{x:.2f}" for x in load) if load else "unknown")
    console.print(machine)
