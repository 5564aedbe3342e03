"""``tachyflow bench step``: time per step of the turbulent channel, and how far from a
memory-traffic bound it is.

The case is the built-in ``channel`` on the requested grid. After warm-up steps (so the
flow is no longer the initial condition and numba kernels are compiled), single steps of
a fixed Δt are timed. The bound is measured in the same rounds as the steps (a sample of
each per round): the time, with every rank copying at once, of ``MINIMUM_PASSES``
``np.copyto`` calls on a rank's field — a step must at least read and write u, v and w in
each of its three substeps and move the Poisson right-hand side and solution (8 field
passes per substep, read + write each); every copy uses its own arrays so that it streams
from memory rather than from cache. ``ratio_to_memory_bound`` is the median over rounds of
each round's step over its bound (the machine's speed drifts between rounds; the ratio of
the medians is kept as ``ratio_of_medians``).

The peer, CaNS (built outside the repository by ``make install-bench``), runs the same
channel on the same grid, process grid and Δt right after ours, as its own MPI job started
by ``tachyflow bench step -n N`` (:mod:`tachyflow.bench.peers.cans`); its median step time
over ours is ``speedup_vs_peer``, over the bound its ``ratio_to_memory_bound``.

Ours is timed with blocking transposes (the default), overlapped ones, and overlapped with
progress calls, interleaved (:mod:`tachyflow.bench.overlap`: ``overlap`` holds the
speed-ups), and on a ``p_row × 1`` grid with the pressure solve's z-slabs off
(:mod:`tachyflow.bench.slabs`: ``slabs``); ``phases`` are those of the default's timed
steps alone (the other variants move more data in other ways). Then
the step with its fused velocity update (the default) and with the separate kernels,
interleaved: ``fused`` holds both and the speed-up of fusing. ``beyond_step``: what a run
adds to each step, its checks (NaN, the CFL number) every iteration and ``statistics()``
every ``statistics_every`` steps, interleaved, with each in field reads. With ``--les
MODEL``, ``les``: the same channel's LES step against the DNS's fused and separate steps,
interleaved (:mod:`tachyflow.bench.les`).
"""

from __future__ import annotations

import numpy as np

from tachyflow import config, runtime
from tachyflow.bench import overlap, slabs
from tachyflow.bench.harness import Candidate, measure, time_interleaved
from tachyflow.bench.plots import file_stem, grid_title, plot_samples
from tachyflow.bench.results import grid_params, new_results, summarize

OURS = "tachyflow-step"
MINIMUM_PASSES = 3 * 8 // 2  # copies: each np.copyto reads one field and writes one
BOUND = "memory bound"


def run_step_benchmark(global_shape, proc_grid=None, repeats=5, warmup=3, comm=None,
                       les: str | None = None) -> dict:
    """Measure channel time steps and the memory bound (collective over ``comm``); with
    ``les`` (a model), the LES step against the DNS's (:mod:`tachyflow.bench.les`)."""
    from tachyflow.solvers.pencil.incompressible import IncompressibleSolver

    comm = runtime.world() if comm is None else comm
    case = config.load("channel").replace("grid", cells=tuple(global_shape))
    if proc_grid is not None:
        case = case.replace("parallel", proc_grid=tuple(proc_grid))
    solver = IncompressibleSolver.from_case(case, comm)
    decomposition = solver.decomposition
    dt = solver.stable_time_step(case.time.cfl)
    params = grid_params(
        decomposition,
        repeats,
        warmup,
        case="channel (Re_tau ~ 180, constant flow rate, walls in y)",
        dt=dt,
    )
    document = new_results("step", params, comm)

    def step():
        solver.step(dt)

    for _ in range(warmup):
        step()
    healthy = solver.max_divergence() < 1e-9 and bool(
        np.isfinite(solver.halo.interior(solver.u)).all()
    )
    # Distinct arrays for every pass, so the copies stream from memory, not from cache.
    shape = decomposition.local_shape("y")
    sources = [np.full(shape, float(n)) for n in range(MINIMUM_PASSES)]
    targets = [np.empty(shape) for _ in range(MINIMUM_PASSES)]

    stream = over_arrays(sources, targets, lambda source, target: np.copyto(target, source))
    switch = overlap.switch_of(solver)
    candidates = overlap.candidates(OURS, step, healthy, switch)
    candidates += slabs.candidates(OURS, step, healthy, switch, solver.poisson)
    # The bound is timed in every round beside the steps: each round's ratio is then free
    # of the machine's drift between rounds (the bound alone moved by 1.5x over a day).
    candidates.append(Candidate(BOUND, stream, True))
    # A first, untimed call of each: a variant plans (the overlapped solve's windows) or
    # compiles on its first step, which belongs neither in its samples nor in the phases.
    for candidate in candidates:
        candidate.run()
    # The phases of the default's timed steps alone.
    spent: dict[str, float] = {}
    default = next(candidate for candidate in candidates if candidate.name == OURS)
    default.run = phases_recorded(default.run, solver, spent)
    measure(
        document,
        candidates,
        comm,
        repeats,
        0,
        f"step {'x'.join(map(str, decomposition.global_shape))}",
    )
    bound = next(e for e in document["results"] if e["name"] == BOUND)
    document["results"].remove(bound)
    overlap.record(document, OURS)
    slabs.record(document, OURS)
    # Seconds per timed step of each phase, on the slowest and on the fastest rank (the
    # same keys everywhere: every rank's steps run the same phases): where ranks wait for
    # each other (halos, transposes) the two differ by what the waiting costs.
    per_step = {name: spent[name] / repeats for name in sorted(spent)}
    document["phases"] = {name: decomposition.maximum(value) for name, value in per_step.items()}
    document["phases_fastest"] = {
        name: -decomposition.maximum(-value) for name, value in per_step.items()
    }

    # The fused velocity update against the separate kernels (the same bits), interleaved.
    def stepped(fused: bool):
        def run():
            solver.fused = fused
            step()

        return run

    pair = time_interleaved(
        {"fused": stepped(True), "separate kernels": stepped(False)}, comm, repeats, 1,
        description="fused velocity update",
    )
    solver.fused = True
    fused = {name: summarize(samples) for name, samples in pair.items()}
    fused["speedup"] = fused["separate kernels"]["median"] / fused["fused"]["median"]
    document["fused"] = fused
    if les is not None:
        from tachyflow.bench.les import les_against_dns

        les_solver = IncompressibleSolver.from_case(case.replace("les", model=les), comm)
        document["les"] = les_against_dns(
            les_solver, dt, {"dns (fused)": stepped(True), "dns (separate kernels)":
                             stepped(False)}, comm, repeats, warmup)
        solver.fused = True
    passes = pass_seconds(sources, targets, comm, repeats)
    passes["copy"] = bound["median"] / MINIMUM_PASSES  # the bound is that many copies
    document["beyond_step"] = beyond_step(solver, dt, comm, repeats, passes["read"])
    document["model"] = {
        "memory_bound": summarize(bound["samples"]),
        "copies_per_step": MINIMUM_PASSES,
        "bytes_per_copy": 2 * sources[0].nbytes,
        "pass_seconds": passes,
    }
    for entry in document["results"]:
        if entry["verified"]:
            rounds = np.divide(entry["samples"], bound["samples"])
            entry["ratio_to_memory_bound"] = float(np.median(rounds))
            entry["ratio_of_medians"] = entry["median"] / bound["median"]
            entry["field_reads"] = entry["median"] / passes["read"]
    solver.free()
    decomposition.free()
    return document


def phases_recorded(run, solver, spent: dict[str, float]):
    """``run`` (a step), adding what each of the solver's phases took in it to ``spent``."""

    def recorded():
        before = solver.phase_seconds()
        result = run()
        for name, seconds in solver.phase_seconds().items():
            spent[name] = spent.get(name, 0.0) + seconds - before.get(name, 0.0)
        return result

    return recorded


def beyond_step(solver, dt: float, comm, repeats: int, read_seconds: float) -> dict:
    """What a run does besides the step (collective): every iteration's checks (NaN and
    infinities in the velocity, the CFL number) and a ``statistics_every`` record
    (``statistics()``), interleaved; each median also in field reads."""

    def checks():
        solver.nonfinite_field()
        solver.cfl_number(dt)

    timed = time_interleaved(
        {"checks": checks, "statistics": solver.statistics}, comm, repeats, 1,
        description="the iteration beyond the step",
    )
    result = {}
    for name, samples in timed.items():
        result[name] = summarize(samples)
        result[name]["field_reads"] = result[name]["median"] / read_seconds
    return result


def over_arrays(sources, targets, operation):
    """A call of ``operation(source, target)`` on each pair of arrays, as one callable."""

    def run():
        for source, target in zip(sources, targets, strict=True):
            operation(source, target)

    return run


def pass_seconds(sources, targets, comm, repeats: int) -> dict[str, float]:
    """Seconds of one pass over a rank's field with every rank at once (collective): a read
    (``sum``) and a write (``fill``), each the median of ``repeats`` samples of one call per
    array (distinct arrays: from memory, not from cache). What a step's kernels would take
    at this speed is their passes times these."""
    samples = time_interleaved(
        {
            "read": over_arrays(sources, targets, lambda source, _: source.sum()),
            "write": over_arrays(sources, targets, lambda _, target: target.fill(1.0)),
        },
        comm, repeats, 1, description="field passes",
    )
    return {name: float(np.median(values)) / len(sources) for name, values in samples.items()}


def stem(document: dict) -> str:
    """File name stem: ``step_128x128x128_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of the step times."""
    title = grid_title(document, "Channel time step")
    bound = document.get("model", {}).get("memory_bound", {}).get("median")
    if bound:
        title += f"; memory bound {bound * 1e3:.1f} ms"
    return plot_samples(document, path, title, "time per step [ms]")
