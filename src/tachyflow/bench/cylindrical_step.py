"""``tachyflow bench cylindrical-step``: the cylindrical (x, r, θ) solver's time step against
the Cartesian solver's at the same number of cells, in the same run.

The case is the built-in ``pipe`` on the requested (x, r, θ) grid, and the peer the
built-in ``channel`` on the same (x, y, z) grid: both on the same pencils and process grid,
timed interleaved after warm-up steps at a fixed Δt each. The ratio of the medians is the
cost of the cylindrical terms (metric factors, Coriolis, the implicit θ direction with its
transposes); the issue's goal is 1.3x at most. The phase breakdown of each is recorded
(the pipe's over all its variants). The pipe is timed with its θ solves' transposes
overlapped (its default), blocking, and overlapped with progress calls
(:mod:`tachyflow.bench.overlap`: ``overlap`` holds the speed-ups). With ``--les MODEL``,
``les``: the pipe's LES step against its DNS step, interleaved (:mod:`tachyflow.bench.les`).
"""

from __future__ import annotations

import numpy as np

from tachyflow import config, runtime
from tachyflow.bench import overlap
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver

OURS = "tachyflow-cylindrical-step"


def _solver(kind, case_name: str, global_shape, proc_grid, comm, les: str = "none"):
    case = config.load(case_name).replace("grid", cells=tuple(global_shape)).replace(
        "les", model=les)
    if proc_grid is not None:
        case = case.replace("parallel", proc_grid=tuple(proc_grid))
    return kind.from_case(case, comm, "measure")


def run_cylindrical_step_benchmark(
    global_shape, proc_grid=None, repeats=5, warmup=3, comm=None, les: str | None = None
) -> dict:
    """Time steps of the pipe and of the channel on the same grid (collective); with
    ``les`` (a model), the pipe's LES step against its DNS step
    (:mod:`tachyflow.bench.les`)."""
    comm = runtime.world() if comm is None else comm
    pipe = _solver(CylindricalSolver, "pipe", global_shape, proc_grid, comm)
    channel = _solver(IncompressibleSolver, "channel", global_shape, proc_grid, comm)
    steps = {}
    for name, solver in (("pipe", pipe), ("channel", channel)):
        dt = solver.stable_time_step(0.5)
        steps[name] = (solver, dt)
        for _ in range(warmup):
            solver.step(dt)
    decomposition = pipe.decomposition
    params = grid_params(
        decomposition,
        repeats,
        warmup,
        case="pipe (Re_b 5300, flow rate) against channel (Re_tau ~ 180), same cells",
        dt={name: dt for name, (_, dt) in steps.items()},
    )
    document = new_results("cylindrical-step", params, comm)
    healthy = {
        name: solver.max_divergence() < 1e-9 and np.isfinite(solver.cell_field("u")).all()
        for name, (solver, _) in steps.items()
    }
    before = {name: solver.phase_seconds() for name, (solver, _) in steps.items()}
    # The pipe with its θ solves' transposes overlapped (its default), blocking, and
    # overlapped with progress calls.
    ours = overlap.candidates(
        OURS, lambda: pipe.step(steps["pipe"][1]), healthy["pipe"],
        overlap.switch_of(pipe, "theta_overlap"), overlapped_by_default=True,
    )
    measure(
        document,
        [
            *ours,
            Candidate("tachyflow-cartesian-step", lambda: channel.step(steps["channel"][1]),
                      healthy["channel"], peer=True),
        ],
        comm,
        repeats,
        0,
        f"cylindrical step {'x'.join(map(str, decomposition.global_shape))}",
    )
    overlap.record(document, OURS, overlapped_by_default=True)
    phases = {}
    for name, (solver, _) in steps.items():
        after = solver.phase_seconds()
        timed_steps = repeats * (len(ours) if solver is pipe else 1)
        phases[name] = {
            phase: decomposition.maximum(after[phase] - before[name][phase]) / timed_steps
            for phase in after
        }
    timed = {entry["name"]: entry for entry in document["results"] + document["peers"]}
    cylindrical = timed[OURS]
    cartesian = timed["tachyflow-cartesian-step"]
    if cylindrical["verified"] and cartesian["verified"]:
        document["model"] = {
            "ratio_to_cartesian": cylindrical["median"] / cartesian["median"],
            "seconds_per_cell": {
                "cylindrical": cylindrical["median"] / np.prod(global_shape),
                "cartesian": cartesian["median"] / np.prod(global_shape),
            },
            "phases_per_step": phases,
            "viscous_time_step": pipe.viscous_time_steps(),
        }
    if les is not None:
        from tachyflow.bench.les import les_against_dns

        les_solver = _solver(CylindricalSolver, "pipe", global_shape, proc_grid, comm, les)
        document["les"] = les_against_dns(les_solver, steps["pipe"][1],
                                          {"dns": lambda: pipe.step(steps["pipe"][1])},
                                          comm, repeats, warmup)
    for solver in (pipe, channel):
        solver.free()
        solver.decomposition.free()
    return document


def stem(document: dict) -> str:
    """File name stem: ``cylindrical-step_64x32x48_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of both step times."""
    title = grid_title(document, "Cylindrical against Cartesian time step")
    ratio = document.get("model", {}).get("ratio_to_cartesian")
    if ratio:
        title += f"; ratio {ratio:.2f}"
    return plot_samples(document, path, title, "time per step [ms]")
