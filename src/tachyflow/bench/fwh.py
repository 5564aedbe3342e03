"""``tachyflow bench fwh``: throughput of the FW-H kernel next to a roofline bound.

The kernel is :func:`tachyflow.numerics.fwh_kernels.accumulate_retarded` (Farassat 1A,
source-time-dominant, linear interpolation onto the observer grid: the second-order
scheme, ``time_order = 2``, ``interpolation = "linear"``), timed alone on one
core — it is serial, each rank runs it on its own panels. The case: a cube-sphere of
``RADIUS`` with about ``panels`` panels (:func:`~tachyflow.acoustics.surfaces.sphere`)
pulsating and oscillating along its normals (panel Mach amplitude ``MACH``, pressure of a
plane wave, panels held at their mean position as in the linear validation cases),
``observers`` points spread over a sphere of ``DISTANCE``, ``steps`` source steps of
``STEPS_PER_PERIOD`` per period, and an observer grid of the source step over the window
in which every panel's signal has arrived at every observer. Before timing, the kernel's
signals are checked against :class:`~tachyflow.acoustics.fwh.FWHSolver` on the same data.

Throughput, with ``t`` the median kernel time, ``P`` panels, ``M`` observers, ``S`` source
steps and ``Q`` observer-time samples per observer:

- integrands per second, ``P M S / t``: evaluations of the retarded integrand of one
  (panel, observer, source step);
- panel × observer-time samples per second, ``P M Q / t`` (the issue's measure): the
  (panel, observer, observer-time sample) contributions added to the signals. The window
  is chosen so that each such triple receives exactly one interpolated contribution.

Roofline, per integrand (flops and bytes are the run's totals over ``P M S``):

- flops are counted from the kernel's source (table ``PER_*`` below; numba 0.68 compiles
  them to exactly these scalar instructions, without FMA: it does not contract ``a * b +
  c`` without fastmath). Every addition, subtraction, multiplication, division and square
  root counts as one flop, as hardware counters count them.
- bytes are the traffic that must reach the core if the kernel's arrays come from main
  memory: a panel's ``PANEL_STEP_BYTES`` of step data are read once per (step, panel) and
  held in registers and L1 across the observer loop; the ``(P, M)`` interpolation state
  (three float64 and a bool) is read and written every step, ``STATE_BYTES``. The observers
  and the few observer samples a step touches stay in L1 and are not counted. Counting the
  state as memory traffic is right when ``25 P M`` bytes exceed the last-level cache and
  pessimistic (a lower memory ceiling) when the state fits in it.

The machine's ceilings are measured in the same run, interleaved sample by sample with the
kernel (:func:`~tachyflow.bench.harness.time_interleaved`), all as medians: the vector
FMA peak of one core (a numba loop of eight independent FMA chains per element that
vectorises), the memory bandwidth (a STREAM triad ``a = b + s c`` on arrays far larger than
the caches; ``BYTES_PER_TRIAD`` bytes per element, the write-allocate read of ``a``
included), the scalar add/multiply peak (the same chains, kept scalar and without FMA,
as the kernel's code is) and the throughput of scalar divisions and square roots.

The simple roofline bound ``min(peak / flops, bandwidth / bytes)`` (integrands per
second) treats a division like an addition. A division or square root occupies the
core's divider for several cycles, though, and the kernel has about a dozen per
integrand, so the *division-aware* bound is also given: the least of the memory bound,
the scalar peak over the flops, and the divider's time ``divisions × t_div + roots ×
t_sqrt`` per integrand.
"""

from __future__ import annotations

import numba
import numpy as np
from mpi4py import MPI

from tachyflow.acoustics.fwh import FWHSolver
from tachyflow.acoustics.surfaces import sphere
from tachyflow.bench.harness import time_interleaved
from tachyflow.bench.results import new_results, summarize
from tachyflow.errors import ConfigError
from tachyflow.io.figures import pyplot, save_figure
from tachyflow.numerics.fwh_kernels import accumulate_retarded, source_derivative

BENCHMARK = "fwh"
KERNEL = "accumulate_retarded"
# The scheme of that kernel (FWHSolver's second-order options; the default is fourth order).
KERNEL_SCHEME = {"time_order": 2, "interpolation": "linear"}
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

# Floating-point operations of accumulate_retarded from its source (subtractions count as
# additions; comparisons — the on-surface check, numba's zero-division checks —, the
# rounding of the grid indices and int/float conversions are not flops). Before the
# observer loop, per (step, panel): |M|² and L·M (3 mul + 2 add each), the area weight.
PER_PANEL_STEP = {"add": 4, "mul": 7, "div": 0, "sqrt": 0}
# Per integrand: r - y (3 add), |r| (3 mul, 2 add, 1 sqrt), 1/r (1 div), unit vector
# (3 mul), M_r, Ṁ_r, L_r and L̇_r (12 mul, 8 add), Doppler factor and its square (1 add,
# 1 div, 1 mul), the motion term r Ṁ_r + c0 (M_r - M²) (2 mul, 2 add), 1/r² (1 mul), p_T
# (8 mul, 1 add), p_L (10 mul, 3 add), area weights (2 mul), arrival time tau + r / c0
# (1 mul, 1 add): the kernel multiplies by reciprocals computed once.
PER_INTEGRAND = {"add": 21, "mul": 43, "div": 2, "sqrt": 1}
# Per integrand with a previous arrival (every step but the first): 1 / span and the two
# grid indices (t - t_0) / dt, by a reciprocal of dt computed once per call.
PER_INTERVAL = {"add": 3, "mul": 2, "div": 1, "sqrt": 0}
# Per observer-time sample: s = (t_q - t_a) / span (by the reciprocal), and
# p += last + s (new - last) for the thickness and the loading signal.
PER_SAMPLE = {"add": 8, "mul": 4, "div": 0, "sqrt": 0}
# Bytes: y, M, Ṁ, L, L̇ (3 each), U_n, U̇_n, area and minimum distance, per (step, panel);
# last arrival, thickness and loading (float64) and has_last (bool) read and written per
# integrand.
PANEL_STEP_BYTES = 19 * 8
STATE_BYTES = 2 * (3 * 8 + 1)

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


@numba.njit(fastmath={"contract"}, cache=True)
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


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def _triad(a, b, c, scalar, passes):  # pragma: no cover
    for _ in range(passes):
        for i in range(a.shape[0]):
            a[i] = b[i] + scalar * c[i]


@numba.njit(cache=True)
def _divide(out, a, b, sweeps):  # pragma: no cover
    # Scalar like the kernel's divisions: numba's zero-division check is an early exit.
    for _ in range(sweeps):
        for i in range(out.shape[0]):
            out[i] = a[i] / b[i]


@numba.njit(cache=True)
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
    )  # fmt: skip
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


def _kernel_arguments(case: dict) -> tuple:
    """The inputs of accumulate_retarded, formed as FWHAccumulator forms them."""
    times, normals = case["times"], case["normals"]
    mach = case["surface_velocity"] / C0
    normal_flux = np.einsum("tpi,tpi->tp", case["surface_velocity"], normals)
    load = case["pressure"][..., None] * normals
    observer_times = case["observer_times"]
    grid_step = (observer_times[-1] - observer_times[0]) / (observer_times.size - 1)
    return (
        times, case["positions"], case["areas"], normal_flux,
        source_derivative(normal_flux, times, 2), load, source_derivative(load, times, 2), mach,
        source_derivative(mach, times, 2), case["observers"], C0, RHO0,
        0.5 * np.sqrt(case["areas"]), observer_times[0], grid_step,
    )  # fmt: skip


def operation_counts(panels: int, observers: int, steps: int, samples: int) -> dict:
    """Flops (by kind) and bytes of one kernel call, totals and per integrand.

    Parameters
    ----------
    panels, observers, steps : int
        Panels, observers and source steps of the call.
    samples : int
        Observer-time samples per observer, each receiving one contribution per panel.

    Returns
    -------
    dict
        ``integrands``, ``panel_samples``, ``operations`` (total additions,
        multiplications, divisions and square roots), ``flops`` and ``bytes`` (totals),
        and ``flops_per_integrand``, ``bytes_per_integrand``, ``divisions_per_integrand``,
        ``roots_per_integrand`` and ``intensity`` (flops per byte).
    """
    integrands = panels * observers * steps
    multiples = (
        (PER_PANEL_STEP, steps * panels),
        (PER_INTEGRAND, integrands),
        (PER_INTERVAL, panels * observers * (steps - 1)),
        (PER_SAMPLE, panels * observers * samples),
    )
    operations = {
        kind: sum(table[kind] * times for table, times in multiples)
        for kind in ("add", "mul", "div", "sqrt")
    }
    flops = sum(operations.values())
    moved = steps * panels * PANEL_STEP_BYTES + integrands * STATE_BYTES
    return {
        "integrands": integrands,
        "panel_samples": panels * observers * samples,
        "operations": operations,
        "flops": flops,
        "bytes": moved,
        "flops_per_integrand": flops / integrands,
        "bytes_per_integrand": moved / integrands,
        "divisions_per_integrand": operations["div"] / integrands,
        "roots_per_integrand": operations["sqrt"] / integrands,
        "intensity": flops / moved,
    }


def run_fwh_benchmark(
    panels: int = 2000, observers: int = 16, steps: int = 400, repeats: int = 5
) -> dict:
    """Time the FW-H kernel on one core and measure the machine's ceilings alongside.

    Parameters
    ----------
    panels : int
        Wanted panels of the sphere (the cube-sphere has ``6 m²``, the nearest count).
    observers : int
        Observers on the sphere of ``DISTANCE``.
    steps : int
        Source steps, enough for the signal of the whole sphere to arrive (about 20).
    repeats : int
        Timed samples of the kernel and of each machine probe, interleaved.

    Returns
    -------
    dict
        The results document: ``results`` holds the kernel's timings and throughputs,
        ``counts`` its flops and bytes (:func:`operation_counts`), ``probes`` the machine
        probes' timings and work, ``roofline`` the ceilings and bounds (:func:`roofline`).

    Raises
    ------
    ConfigError
        If ``steps`` are too few for an observer window.
    """
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
        "case": f"cube-sphere of radius {RADIUS} m pulsating and oscillating at {FREQUENCY} Hz "
        f"(panel Mach amplitude {MACH}), observers on a sphere of {DISTANCE} m",
        "source_step": float(case["times"][1] - case["times"][0]),
        "cores": 1,
    }
    comm = MPI.COMM_SELF
    document = new_results(BENCHMARK, params, comm)
    arguments = _kernel_arguments(case)
    state = (
        np.zeros((npanel, observers)),
        np.zeros((npanel, observers)),
        np.zeros((npanel, observers)),
        np.zeros((npanel, observers), dtype=np.bool_),
    )
    thickness, loading = np.zeros((observers, samples)), np.zeros((observers, samples))
    bad = np.full(3, -1, dtype=np.int64)

    def kernel():
        # A fresh start each call, so that every call does the same work; the reset writes
        # P M bytes and 2 M Q doubles, little next to the kernel's traffic.
        state[3].fill(False)
        thickness.fill(0.0)
        loading.fill(0.0)
        accumulate_retarded(*arguments, *state, thickness, loading, bad)

    kernel()
    reference = FWHSolver(
        case["observers"], case["observer_times"], c0=C0, rho0=RHO0, **KERNEL_SCHEME
    ).solve(
        case["times"],
        case["positions"],
        case["normals"],
        case["areas"],
        case["surface_velocity"],
        case["pressure"],
    )
    verified = bool(bad[0] < 0) and all(
        np.allclose(ours, theirs, rtol=1e-9, atol=1e-12 * np.abs(theirs).max())
        for ours, theirs in ((thickness, reference.thickness), (loading, reference.loading))
    )
    probes = _probes()
    candidates = {KERNEL: kernel} if verified else {}
    candidates.update({name: run for name, (run, _) in probes.items()})
    timings = time_interleaved(candidates, comm, repeats, WARMUP, description="FW-H kernel")
    counts = operation_counts(npanel, observers, steps, samples)
    entry = {"name": KERNEL, "verified": verified}
    if verified:
        entry.update(summarize(timings[KERNEL]))
        entry["integrands_per_second"] = counts["integrands"] / entry["median"]
        entry["panel_samples_per_second"] = counts["panel_samples"] / entry["median"]
        entry["flops_per_second"] = counts["flops"] / entry["median"]
        entry["bytes_per_second"] = counts["bytes"] / entry["median"]
    document["results"].append(entry)
    document["counts"] = counts
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
        medians; ``ceilings``: integrands per second allowed by each of ``compute``,
        ``memory``, ``scalar`` and ``divider``; ``bound``, ``limit`` and ``fraction`` of the
        simple roofline ``min(compute, memory)``; ``division_aware_bound``,
        ``division_aware_limit`` and ``division_aware_fraction`` of ``min(memory, scalar,
        divider)``. A fraction is the kernel's median throughput over the bound, ``None``
        when the kernel was not timed.
    """
    rates = {name: probe["work"] / probe["median"] for name, probe in document["probes"].items()}
    counts = document["counts"]
    flops = counts["flops_per_integrand"]
    divide_seconds, sqrt_seconds = 1.0 / rates["divide"], 1.0 / rates["sqrt"]
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
    measured = document["results"][0].get("integrands_per_second")
    found = {
        "peak_flops": rates["vector_fma"],
        "scalar_flops": rates["scalar"],
        "bandwidth": rates["triad"],
        "divide_seconds": divide_seconds,
        "sqrt_seconds": sqrt_seconds,
        "ceilings": ceilings,
    }
    for prefix, limits in BOUNDS.items():
        limit = min(limits, key=ceilings.get)
        found[f"{prefix}bound"] = ceilings[limit]
        found[f"{prefix}limit"] = limit
        found[f"{prefix}fraction"] = None if measured is None else measured / ceilings[limit]
    return found


def stem(document: dict) -> str:
    """File name stem: ``fwh_1944panels_16observers_400steps``."""
    params = document["params"]
    return (
        f"{BENCHMARK}_{params['panels']}panels_{params['observers']}observers_"
        f"{params['steps']}steps"
    )


def plot(document: dict, path):
    """Log-log roofline: the ceilings and the kernel's point (GFLOP/s over flops per byte)."""
    plt = pyplot()
    roof, counts, params = document["roofline"], document["counts"], document["params"]
    intensity = counts["intensity"]
    x = np.logspace(min(-2.0, np.log10(intensity) - 1), max(3.0, np.log10(intensity) + 1), 400)
    peak, scalar = roof["peak_flops"] / 1e9, roof["scalar_flops"] / 1e9
    bandwidth = roof["bandwidth"] / 1e9
    divider = roof["ceilings"]["divider"] * counts["flops_per_integrand"] / 1e9
    figure, axes = plt.subplots(figsize=(8, 5.5))
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
    axes.loglog(
        x,
        np.minimum(divider, bandwidth * x),
        ":",
        color="C3",
        lw=2,
        label=f"divider: {counts['divisions_per_integrand']:.1f} div + "
        f"{counts['roots_per_integrand']:.0f} sqrt per integrand, "
        f"{divider:.2f} GFLOP/s",
    )
    entry = document["results"][0]
    if entry["verified"]:
        achieved = entry["flops_per_second"] / 1e9
        axes.loglog(
            [intensity],
            [achieved],
            "o",
            color="C0",
            ms=10,
            label=f"{KERNEL}: {achieved:.2f} GFLOP/s, "
            f"{entry['integrands_per_second'] / 1e6:.1f} M integrands/s",
        )
        axes.annotate(
            f"{roof['fraction']:.1%} of the roofline ({roof['limit']} bound)\n"
            f"{roof['division_aware_fraction']:.0%} of the division-aware bound "
            f"({roof['division_aware_limit']})",
            (intensity, achieved),
            xytext=(12, -30),
            textcoords="offset points",
            fontsize=8,
        )
    axes.axvline(intensity, color="0.7", lw=0.8)
    axes.set_xlabel(
        f"arithmetic intensity [flop/byte] (kernel: {counts['flops_per_integrand']:.1f} flop, "
        f"{counts['bytes_per_integrand']:.1f} B per integrand)"
    )
    axes.set_ylabel("GFLOP/s, one core")
    axes.set_ylim(min(0.3 * divider, 0.1), 3 * peak)
    axes.grid(which="both", alpha=0.25)
    axes.legend(fontsize=8, loc="lower right")
    axes.set_title(
        f"FW-H kernel: {params['panels']} panels × {params['observers']} observers × "
        f"{params['steps']} steps ({params['observer_samples']} observer samples)",
        fontsize=10,
    )
    return save_figure(figure, path)


def print_summary(document: dict, console) -> None:
    """The kernel's throughput, the machine's ceilings and the bounds as rich tables."""
    from rich.table import Table

    params, counts, roof = document["params"], document["counts"], document["roofline"]
    entry = document["results"][0]
    load = document["machine"].get("load_avg")
    table = Table(
        title=f"FW-H kernel, {params['panels']} panels x {params['observers']} observers x "
        f"{params['steps']} steps ({params['observer_samples']} observer samples), one core, "
        f"median of {params['repeats']}"
    )
    table.add_column("quantity", no_wrap=True)
    table.add_column("value", justify="right")
    operations = counts["operations"]
    per_integrand = ", ".join(
        f"{operations[kind] / counts['integrands']:.2f} {kind}" for kind in operations
    )
    rows = []
    if entry["verified"]:
        rows += [
            (
                "kernel time (median, min)",
                f"{entry['median'] * 1e3:.4g} ms, {entry['min'] * 1e3:.4g} ms",
            ),
            ("integrands / s (P M S / t)", f"{entry['integrands_per_second'] / 1e6:.2f} M"),
            (
                "panel x observer-time samples / s (P M Q / t)",
                f"{entry['panel_samples_per_second'] / 1e6:.2f} M",
            ),
            (
                "achieved",
                f"{entry['flops_per_second'] / 1e9:.2f} GFLOP/s, "
                f"{entry['bytes_per_second'] / 1e9:.2f} GB/s",
            ),
        ]
    else:
        rows.append(("kernel", "[red]signals differ from FWHSolver's: not timed[/red]"))
    rows += [
        ("flops / integrand", f"{counts['flops_per_integrand']:.2f} ({per_integrand})"),
        ("bytes / integrand", f"{counts['bytes_per_integrand']:.1f}"),
        ("arithmetic intensity", f"{counts['intensity']:.2f} flop/B"),
        ("vector FMA peak", f"{roof['peak_flops'] / 1e9:.1f} GFLOP/s"),
        ("scalar add/multiply peak", f"{roof['scalar_flops'] / 1e9:.2f} GFLOP/s"),
        ("triad bandwidth", f"{roof['bandwidth'] / 1e9:.1f} GB/s"),
        (
            "scalar division, square root",
            f"{roof['divide_seconds'] * 1e9:.2f} ns, {roof['sqrt_seconds'] * 1e9:.2f} ns",
        ),
        ("load average", ", ".join(f"{x:.2f}" for x in load) if load else "unknown"),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    bounds = Table(title="bounds (integrands per second)")
    for column in ("ceiling", "integrands / s", "measured / ceiling"):
        bounds.add_column(column, justify="left" if column == "ceiling" else "right")
    measured = entry.get("integrands_per_second")
    for name, value in roof["ceilings"].items():
        fraction = "-" if measured is None else f"{measured / value:.1%}"
        bounds.add_row(name, f"{value / 1e6:.1f} M", fraction)
    console.print(bounds)
    for prefix, limits in BOUNDS.items():
        label = f"{'division-aware bound' if prefix else 'roofline'} min({', '.join(limits)})"
        fraction = roof[f"{prefix}fraction"]
        console.print(
            f"{label}: {roof[f'{prefix}bound'] / 1e6:.1f} M integrands/s, "
            f"{roof[f'{prefix}limit']} bound"
            + ("" if fraction is None else f"; measured {fraction:.1%} of it")
        )
