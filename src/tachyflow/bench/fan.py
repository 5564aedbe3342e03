"""``tachyflow bench fan``: the axial fan's time step and the cost of its noise, per way of
moving the blades' pressure (the one-sided exchange Types of Kwon, Park & Choi), in the
same run.

The case is the built-in ``axial-fan`` on the requested (x, r, θ) grid, after warm-up
steps. Timed interleaved: a flow step, and one noise sample (the exchange plus the FW-H
integration of every panel copy) with each exchange method: ``two-sided`` (the baseline),
``put`` (Type A), ``aggregated-put`` (Type B) and ``source-put`` (Type C). Every method's
sample must give the same loads as the two-sided one (verified). The phases of a sample
(pack, communication, unpack, source, integration) are recorded as in the paper's table,
and each method's cost as a fraction of a flow step.

Then the costs of this run feed :class:`~tachyflow.bench.fan_model.FanScalingModel`: the
step's compute per cell (its median less its communication: the Poisson solver's timed
transposes, and the halo exchanges and θ-solve transposes it makes, each timed alone), and
the noise sample's local work and FW-H integration per source. ``model.scaling`` holds its
predictions at the paper's scales beside the paper's measured speed-ups, plotted in a
second PNG (``..._scaling.png``).
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from pathlib import Path

import numpy as np

from tachyflow import config, runtime
from tachyflow.bench import fan_model
from tachyflow.bench.harness import Candidate, measure, time_interleaved
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver

METHODS = ("two-sided", "put", "aggregated-put", "source-put")


def run_fan_benchmark(
    global_shape,
    proc_grid=None,
    repeats=5,
    warmup=3,
    comm=None,
    profile=fan_model.DEFAULT_PROFILE,
    core_speed=1.0,
    ranks_per_link=1,
) -> dict:
    """Time the fan's step and its noise samples, then predict the paper's scales with
    ``profile``, ``core_speed`` and ``ranks_per_link`` (see
    :class:`~tachyflow.bench.fan_model.FanScalingModel`) (collective)."""
    from tachyflow.acoustics.rotor import RotorNoise

    comm = runtime.world() if comm is None else comm
    case = config.load("axial-fan").replace("grid", cells=tuple(global_shape))
    if proc_grid is not None:
        case = case.replace("parallel", proc_grid=tuple(proc_grid))
    fan = CylindricalSolver.from_case(case, comm, "measure")
    dt = case.time.dt
    for _ in range(warmup):
        fan.step(dt)
    folder = comm.bcast(
        tempfile.mkdtemp(prefix="tachyflow-bench-fan-") if comm.rank == 0 else None
    )
    noises = {}
    for method in METHODS:
        section = dataclasses.replace(case.acoustics, exchange=method)
        noises[method] = RotorNoise(section, fan, fan.bodies[0], case.fan.blades, folder, 10.0)
    loads = {
        method: noise.exchange.exchange(fan.u, fan.q, fan.w, fan.p)
        for method, noise in noises.items()
    }
    reference = loads["two-sided"]
    healthy = bool(np.isfinite(fan.cell_field("u")).all()) and fan.max_divergence() < 1e-9
    candidates = [Candidate("tachyflow-fan-step", lambda: fan.step(dt), healthy, peer=True)]
    candidates += [
        Candidate(f"tachyflow-fan-noise-{method}", noises[method].sample,
                  bool(np.allclose(loads[method], reference, rtol=1e-12, atol=1e-14)))
        for method in METHODS
    ]
    params = grid_params(
        fan.decomposition, repeats, warmup, case="axial-fan", dt=dt,
        panels=len(fan.bodies[0].mesh.faces), copies=fan.grid.sectors,
    )
    document = new_results("fan", params, comm)
    for noise in noises.values():
        noise.sample()  # warm-up: the first sample compiles the FW-H kernels
        noise.seconds = dict.fromkeys(noise.seconds, 0.0)
    fan.poisson.timer.seconds.clear()
    steps_before = fan.steps
    measure(document, candidates, comm, repeats, 0,
            f"axial fan {'x'.join(map(str, global_shape))}")
    timed = {entry["name"]: entry for entry in document["results"] + document["peers"]}
    step = timed["tachyflow-fan-step"]
    phases = {}
    for method, noise in noises.items():
        samples = max(noise.samples - 1, 1)  # the first sample was the warm-up
        phases[method] = {
            phase: fan.decomposition.maximum(seconds) / samples
            for phase, seconds in noise.seconds.items()
        }
    if step["verified"]:
        document["model"] = {
            "step_seconds": step["median"],
            "noise_fraction_of_step": {
                method: timed[f"tachyflow-fan-noise-{method}"]["median"] / step["median"]
                for method in METHODS
                if timed[f"tachyflow-fan-noise-{method}"]["verified"]
            },
            "noise_phases_per_sample": phases,
        }
        measured = _measured_costs(fan, noises, phases, step["median"], fan.steps - steps_before,
                                   repeats)
        model = fan_model.FanScalingModel(measured, profile, core_speed, ranks_per_link)
        document["model"]["scaling"] = {**model.describe(), **model.scaling()}
        document["model"]["exchange_statistics"] = {
            method: {
                key: int(fan.decomposition.maximum(noise.exchange.statistics[key]))
                for key in ("messages_sent", "bytes_sent", "targets")
            }
            for method, noise in noises.items()
        }
    for noise in noises.values():
        noise.exchange.free()
    fan.free()
    fan.decomposition.free()
    return document


def _measured_costs(fan, noises, phases, step_seconds, steps, repeats):
    """This run's costs for the scaling model (collective): the step's compute per cell
    of the busiest rank, and per source the FW-H integration and each Type's local work."""
    decomposition = fan.decomposition
    traffic = fan_model.step_traffic(
        decomposition.p_row, decomposition.p_col,
        slabs=fan.poisson.slabs and not fan.poisson.overlap,
    )
    field = decomposition.zeros("y")

    velocity = [fan.halo.allocate() for _ in range(3)]  # scratch: the run's ghosts stay

    def halos():
        for _ in range(traffic.velocity_halos):
            fan.halo.exchange(*velocity)
        for _ in range(traffic.pressure_halos):
            fan.halo.exchange(velocity[0])

    def theta_round_trips():
        for _ in range(fan_model.THETA_SOLVES_PER_STEP):
            lines = fan.transposer.transpose(field, "y", "z")
            fan.transposer.transpose(lines, "z", "y", out=field)

    # A step's worth of each in one sample: ranks run them in step as the solver does.
    alone = {"halos": halos}
    if not fan.theta_whole:
        alone["theta"] = theta_round_trips
    timed = time_interleaved(alone, decomposition.comm, repeats, 1, description="communication")
    communication = decomposition.maximum(fan.poisson.timer.seconds["transpose"]) / max(steps, 1)
    communication += sum(float(np.median(samples)) for samples in timed.values())
    cells = decomposition.maximum(math.prod(decomposition.local_shape("y")))
    panels = decomposition.maximum(len(next(iter(noises.values())).centres))
    copies = fan.grid.sectors
    local = {
        kind: sum(phases[method][key] for key in ("pack", "unpack", "source")) / panels
        for kind, method in fan_model.TYPES.items()
    }
    integration = float(np.median([phases[method]["integration"] for method in noises]))
    return fan_model.MeasuredCosts(
        seconds_per_cell=max(step_seconds - communication, 0.0) / cells,
        integration_per_source=integration / (panels * copies),
        local_per_source=local,
        shape=tuple(int(n) for n in decomposition.global_shape),
        communication_per_step=communication,
    )


def stem(document: dict) -> str:
    """File name stem: ``fan_48x24x24_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of the step and of each method's noise sample; with a scaling prediction,
    its speed-ups in ``STEM_scaling.png`` beside it (:func:`plot_scaling`)."""
    scaling = document.get("model", {}).get("scaling")
    if scaling:
        plot_scaling(scaling, scaling_path(path))
    return plot_samples(document, path, grid_title(document, "Axial fan: step and noise"),
                        "time [ms]")


def scaling_path(path) -> Path:
    """Where :func:`plot` writes the scaling plot of a results PNG ``path``."""
    path = Path(path)
    return path.with_name(f"{path.stem}_scaling.png")


def plot_scaling(scaling: dict, path) -> Path:
    """Predicted speed-up against ranks, flow only and flow with noise per exchange Type,
    with the ideal line and Kwon, Park & Choi's measured points."""
    figure, panels = new_subplots(1, 2, figsize=(11, 4.5))
    flow = scaling["flow"]
    series = [(panels[0], {"flow": flow}, f"flow only, {flow['cells']:.3g} cells")]
    noise = scaling["noise"]
    first = next(iter(noise.values()))
    title = f"flow + noise, {first['cells']:.3g} cells, {first['sources']:,} sources"
    series.append((panels[1], {f"Type {kind}": noise[kind] for kind in noise}, title))
    for axis, lines, title in series:
        some = next(iter(lines.values()))
        ranks = some["ranks"]
        axis.plot(ranks, some["ideal"], color="0.6", linestyle=":", label="ideal")
        for label, line in lines.items():
            axis.plot(ranks, line["speedup"], marker="o", label=f"model, {label}")
        paper = some["paper"]
        axis.plot([paper["base"], paper["ranks"]], [1.0, paper["value"]], "k*", markersize=11,
                  label="Kwon, Park & Choi (measured)")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log", base=2)
        axis.set_yticks(some["ideal"], [f"{value:g}" for value in some["ideal"]])
        axis.set_xticks(ranks, [str(p) for p in ranks])
        axis.set_xlabel("ranks")
        axis.set_ylabel(f"speed-up over {ranks[0]} ranks")
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=8)
    profile = scaling["profile"]
    bandwidth = f"{1e-9 / profile['beta']:.3g} GB/s" if profile["beta"] else "no per-byte cost"
    figure.suptitle(
        f"Axial fan scaling model: {profile['name']} profile (α {profile['alpha'] * 1e6:.3g} "
        f"µs, {bandwidth}), core speed ×{scaling['core_speed']:g}, "
        f"{scaling['ranks_per_link']} rank(s) per link",
        fontsize=10,
    )
    return save_figure(figure, path)
