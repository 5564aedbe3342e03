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
"""

from __future__ import annotations

import dataclasses
import tempfile

import numpy as np

from tachyflow import config, runtime
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.solvers.cylindrical import CylindricalSolver

METHODS = ("two-sided", "put", "aggregated-put", "source-put")


def run_fan_benchmark(global_shape, proc_grid=None, repeats=5, warmup=3, comm=None) -> dict:
    """Time the fan's step and its noise samples (collective)."""
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
    ]  # fmt: skip
    params = grid_params(
        fan.decomposition, repeats, warmup, case="axial-fan", dt=dt,
        panels=len(fan.bodies[0].mesh.faces), copies=fan.grid.sectors,
    )  # fmt: skip
    document = new_results("fan", params, comm)
    for noise in noises.values():
        noise.seconds = dict.fromkeys(noise.seconds, 0.0)
    measure(document, candidates, comm, repeats, 0,
            f"axial fan {'x'.join(map(str, global_shape))}")  # fmt: skip
    timed = {entry["name"]: entry for entry in document["results"] + document["peers"]}
    step = timed["tachyflow-fan-step"]
    phases = {}
    for method, noise in noises.items():
        samples = max(noise.samples - 1, 1)  # the first sample came with the construction
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
    for noise in noises.values():
        noise.exchange.free()
    fan.free()
    fan.decomposition.free()
    return document


def stem(document: dict) -> str:
    """File name stem: ``fan_48x24x24_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of the step and of each method's noise sample."""
    return plot_samples(document, path, grid_title(document, "Axial fan: step and noise"),
                        "time [ms]")  # fmt: skip
