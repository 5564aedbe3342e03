"""``tachyflow bench insitu``: the cost of looking at a run (Tsutsumi et al., Figs. 4 and 5).

The same Taylor–Green case runs under several visualisation set-ups, each a separate
``tachyflow run -n N`` (and ``tachyflow transit-render`` readers beside it), repeated and
interleaved so that load changes on a shared machine hit all alike:

``none``                no visualisation;
``in situ``             the pipelines drawn by the ranks (rank 0 renders);
``transit ...``         the fields streamed with ADIOS2 SST to 1 or 2 reader processes that
                        draw, with ``Discard`` (monitoring: the run never waits) or ``Block``
                        (lossless: a slow reader slows the run), readers fast, slow
                        (``--delay`` seconds per step) or receiving only (they take every
                        step and draw nothing: what streaming alone costs the run).

Per set-up: the time per iteration (step, checks, outputs, visualisation), its split into
simulation (the solver's step), data transfer (to the stream) and rendering (extract,
gather, draw) on the ranks, the overhead over ``none``, the steps the readers drew and
skipped, the writer's staging memory beside the step's data, and the readers' memory.

The overhead is the median over rounds of each run's time per iteration over that of the
round's run without visualisation (paired: a shared machine's speed drifts by more than a
few per cent over minutes, which pairs of adjacent runs cancel), with its quartiles; the
ratio of the two set-ups' medians is kept beside it (``overhead_of_medians``). In transit,
``writer_share`` is measured within each run: the writer's median cost per output after
the first (making the fields, SST's copy, the end of the step) over the run's time per
iteration; ``writer_first_output`` is the first output's (a reader attaching, buffers
touched for the first time), paid once per run. With ``--duty-cycle ON OFF`` the set-ups
visualise only in windows (:mod:`tachyflow.insitu.duty_cycle`), and each run measures what
its outputs cost, readers' interference included, against its own quiet steps a few
seconds away: ``overhead_within_run`` (median over all measured windows, with quartiles)
is that cost at an output every ``--every`` steps, resolved where the paired runs are not;
``excess_by_offset`` the seconds beyond a quiet iteration of an output's iteration and of
each after it until the next, and ``overhead_by_position`` their sum over ``--every`` quiet
iterations (median over runs): the same cost from the mean iteration at each place in the
cycle rather than from the windows' totals.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time as clock
from pathlib import Path

import numpy as np

from tachyflow.bench.results import new_results
from tachyflow.insitu.duty_cycle import (
    check_cadence,
    excess_after_output,
    overhead_at_cadence,
)
from tachyflow.insitu.options import TRANSIT_PRECISIONS
from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.runtime import PIN_VARIABLE

BENCHMARK = "insitu"
#: name -> (mode, queue full policy, readers, reader kind, where SST's threads run, the
#: stream's precision or None for ``--transit-precision``); readers are fast, slow
#: (``--delay`` seconds per step) or receive only (take steps, draw nothing)
VARIANTS = {
    "none": (None, None, 0, "fast", "spare-cores", None),
    "in situ": ("insitu", None, 0, "fast", "spare-cores", None),
    "transit Discard, 1 reader": ("transit", "Discard", 1, "fast", "spare-cores", None),
    # SST's threads on the rank's core though cores are left (they are apart with
    # --pin-cores otherwise): what placing them there costs, in the same run.
    "transit Discard, 1 reader, SST on the rank's core":
        ("transit", "Discard", 1, "fast", "rank", None),
    "transit Discard, receiving reader": ("transit", "Discard", 1, "receive", "spare-cores", None),
    # Both precisions in the same rounds.
    "transit Discard, 1 reader, single precision":
        ("transit", "Discard", 1, "fast", "spare-cores", "single"),
    "transit Discard, slow reader": ("transit", "Discard", 1, "slow", "spare-cores", None),
    "transit Block, 1 reader": ("transit", "Block", 1, "fast", "spare-cores", None),
    "transit Block, 2 readers": ("transit", "Block", 2, "fast", "spare-cores", None),
    "transit Block, slow reader": ("transit", "Block", 1, "slow", "spare-cores", None),
}
#: Seconds a reader may take to finish once the run has ended: an attached reader sees the
#: stream's end at once and has at most its queue of steps left to draw.
READER_GRACE = 120.0
#: Steps each stream queues for its readers.
QUEUE_LIMIT = 4


def case_text(grid: int, steps: int, every: int, mode: str | None, policy: str | None,
              precision: str = "double", threads: str = "spare-cores",
              duty_cycle: tuple[int, int] = (0, 0)) -> str:
    """A Taylor–Green case with an isosurface and a slice every ``every`` steps (in transit:
    the stream's values in ``precision``, SST's threads placed by ``threads``; both only
    in the windows of ``duty_cycle`` when it is not (0, 0))."""
    text = f"""
[case]
name = "insitu-bench"
[grid]
cells = [{grid}, {grid}, {grid}]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.000625
initial = "taylor-green"
[time]
steps = {steps}
dt = 0.02
[output]
statistics_every = {every}
"""
    if mode is None:
        return text
    text += f"""
[insitu]
width = 640
height = 480
queue_limit = {QUEUE_LIMIT}
reserve_queue_limit = 1
queue_full_policy = "{policy or "Discard"}"
transit_precision = "{precision}"
transit_threads = "{threads}"
duty_cycle = [{duty_cycle[0]}, {duty_cycle[1]}]
"""
    for name, body in (
        ("speed", 'kind = "isosurface"\nfield = "speed"\nvalue = 0.5\ncolour_by = "p"'),
        ("vorticity-plane", 'kind = "slice"\nfield = "u"\nplane = "xy"\nposition = 1.0'),
    ):
        text += f'\n[[insitu.pipeline]]\nname = "{name}"\n{body}\nevery = {every}\n'
        text += f'mode = "{mode}"\n'
    return text


def _tachyflow(*arguments) -> list[str]:
    return [sys.executable, "-m", "tachyflow", *arguments]


def split_cores(ranks: int, cores: list[int]) -> tuple[list[int], list[int]]:
    """Cores of the run's ranks (one each, in order, as ``--pin-cores`` binds them) and
    the cores left to the readers (empty when the ranks take them all: then they share)."""
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    return [cores[rank % len(cores)] for rank in range(ranks)], cores[ranks:]


def stop_processes(processes) -> None:
    """Kill ``processes`` and reap them."""
    for process in processes:
        process.kill()
        process.wait()


def finish_readers(name: str, processes, grace: float) -> None:
    """Wait up to ``grace`` seconds (in all) for the readers of a run that has ended;
    raise RuntimeError saying why when one fails or is still running (it is killed)."""
    deadline = clock.monotonic() + grace
    for process in processes:
        try:
            output, _ = process.communicate(timeout=max(0.0, deadline - clock.monotonic()))
        except subprocess.TimeoutExpired:
            stop_processes(processes)
            raise RuntimeError(
                f"{name}: a reader was still running {grace:g} s after the run ended; a run "
                f"shorter than a reader's start-up ends before the reader attaches, and the "
                f"reader then waits for a writer: give the run more --steps"
            ) from None
        if process.returncode:
            raise RuntimeError(
                f"{name}: a reader failed (exit status {process.returncode}; a negative one "
                f"is the signal that ended it):\n{output[-2000:]}"
            )


def run_variant(name: str, folder: Path, ranks: int, grid: int, steps: int, every: int,
                delay: float, timeout: float, pin: bool = False, precision: str = "double",
                duty_cycle: tuple[int, int] = (0, 0)) -> dict:
    """One run of a set-up (with its readers); its measurements. With ``pin`` the ranks
    are bound to a core each and the readers to the cores left (so that a reader never
    takes a core from a rank where there are enough)."""
    mode, policy, readers, kind, threads, variant_precision = VARIANTS[name]
    precision = variant_precision or precision
    run_dir = folder / "run"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    case = folder / "case.toml"
    case.write_text(case_text(grid, steps, every, mode, policy, precision, threads, duty_cycle))
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    environment.pop(PIN_VARIABLE, None)  # the run is pinned by its option, readers here
    _, reader_cores = split_cores(ranks, sorted(os.sched_getaffinity(0)))
    bind_reader = None
    if pin and reader_cores:

        def bind_reader():
            os.sched_setaffinity(0, reader_cores)

    reader_processes = []
    if readers:
        command = ["transit-render", str(run_dir), "--timeout", str(timeout)]
        if kind == "slow":
            command += ["--delay", str(delay)]
        elif kind == "receive":
            command.append("--receive-only")
        if readers > 1:
            command += ["-n", str(readers)]
        # Readers start first and wait for the run, as a user's would.
        reader_processes.append(
            subprocess.Popen(_tachyflow(*command), env=environment, preexec_fn=bind_reader,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    try:
        run = subprocess.run(
            _tachyflow("run", str(case), "-n", str(ranks), "-o", str(run_dir),
                       *(["--pin-cores"] if pin else [])),
            env=environment, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        stop_processes(reader_processes)
        raise RuntimeError(
            f"{name}: the run of {steps} steps took longer than {timeout:g} s: give "
            f"--timeout more seconds or the run fewer --steps"
        ) from None
    except BaseException:  # interrupted (Ctrl-C): no reader left waiting for a writer
        stop_processes(reader_processes)
        raise
    if run.returncode:
        stop_processes(reader_processes)
        raise RuntimeError(f"{name}: the run failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    # A slow reader may still have a full queue to draw.
    grace = READER_GRACE + (QUEUE_LIMIT * delay if kind == "slow" else 0.0)
    finish_readers(name, reader_processes, grace)
    summary = json.loads((run_dir / "timings.json").read_text())
    visual = summary.get("visualisation", {})
    count = summary["steps"]
    rendering = sum(visual.get(phase, 0.0) for phase in ("extract", "gather", "render"))
    # Making the cell-centred fields serves both; it counts with what it served.
    prepare = visual.get("prepare", 0.0)
    entry = {
        "name": name,
        "iteration": summary["time_per_iteration"]["mean"],
        "step": summary["time_per_step"]["median"],
        "transfer": (visual.get("transfer", 0.0) + (prepare if mode == "transit" else 0.0))
        / count,
        "rendering": (rendering + (prepare if mode == "insitu" else 0.0)) / count,
        "mpi": summary["mpi"],
    }
    if "transit_output" in visual:
        # The writer's cost once the reader is attached and its buffers touched, per
        # iteration at an output every ``every`` steps (a duty cycle makes fewer), and its
        # first output's.
        output = visual["transit_output"]
        entry["writer_steady"] = output["steady"] / every
        entry["writer_first"] = output["first"]
    if "duty_cycle" in visual:
        entry["within_run"] = overhead_at_cadence(visual["duty_cycle"], every)
        entry["excess"] = excess_after_output(visual["duty_cycle"], every)
    if "step_bytes" in visual:
        entry["step_bytes"] = visual["step_bytes"]
        entry["staging_bytes"] = visual["staging_bytes"] + visual["step_bytes"]
    reports = [json.loads(path.read_text()) for path in run_dir.glob("transit-render-*.json")]
    if reports:
        entry["readers"] = {
            "drawn": sum(report["drawn"] for report in reports),
            "steps": [report["steps"] for report in reports],
            "skipped": sum(report["skipped"] for report in reports),
            "extra_memory": max(r["peak_memory"] - r["baseline_memory"] for r in reports),
        }
    return entry


def run_insitu_benchmark(ranks: int = 2, grid: int = 64, steps: int = 60, every: int = 5,
                         repeats: int = 3, delay: float = 0.5, variants=None,
                         timeout: float = 600.0, progress=None,
                         pin: bool = False, precision: str = "double",
                         duty_cycle: tuple[int, int] = (0, 0)) -> dict:
    """Every set-up ``repeats`` times, interleaved; medians per set-up (see the module).
    With ``pin``, ranks and readers on cores of their own where there are enough (the
    cores are recorded in ``params["cores"]``); ``precision``: of the stream's values;
    ``duty_cycle``: (steps on, steps off) of the visualisation, measured within each run.

    A run that fails (RuntimeError) or an interrupt (KeyboardInterrupt) after a complete
    round ends the rounds there: the document holds the complete rounds and
    ``document["stopped"]`` says where and why (a round left unfinished is left out: its
    set-ups would lack their baseline). Before a complete round, the error propagates."""
    names = list(VARIANTS) if variants is None else list(variants)
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown set-ups {unknown}; known: {list(VARIANTS)}")
    if "none" not in names:
        names.insert(0, "none")
    on, off = duty_cycle
    if on or off:
        check_cadence(on, off, every)
        if steps <= 2 * (on + off):
            # Each window measured against the quiet steps before and after it, the first
            # left out.
            raise ValueError(
                f"with a duty cycle of {on} + {off} steps, steps ({steps}) must exceed two "
                f"cycles ({2 * (on + off)})"
            )
    if precision not in TRANSIT_PRECISIONS:
        choices = tuple(TRANSIT_PRECISIONS)
        raise ValueError(f"precision must be one of {choices}, got {precision!r}")
    params = {"ranks": ranks, "grid": grid, "steps": steps, "every": every,
              "repeats": repeats, "delay": delay, "variants": names,
              "transit_precision": precision, "duty_cycle": list(duty_cycle)}
    if pin:
        rank_cores, reader_cores = split_cores(ranks, sorted(os.sched_getaffinity(0)))
        params["cores"] = {"ranks": rank_cores, "readers": reader_cores or "shared with ranks"}
    document = new_results(BENCHMARK, params, None)
    samples: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(repeats):
            # Rotate the order each round so no set-up always runs first.
            order = names[repeat % len(names) :] + names[: repeat % len(names)]
            try:
                for name in order:
                    if progress:
                        progress(f"round {repeat + 1}/{repeats}: {name}")
                    started = clock.perf_counter()
                    entry = run_variant(name, Path(scratch), ranks, grid, steps, every, delay,
                                        timeout, pin, precision, duty_cycle)
                    entry["wall"] = clock.perf_counter() - started
                    samples[name].append(entry)
            except (RuntimeError, KeyboardInterrupt) as error:
                if repeat == 0:
                    raise
                interrupted = isinstance(error, KeyboardInterrupt)
                document["stopped"] = {"round": repeat + 1, "set_up": name,
                                       "reason": "interrupted" if interrupted else str(error),
                                       "interrupted": interrupted,
                                       "rounds_completed": repeat}
                samples = {key: runs[:repeat] for key, runs in samples.items()}
                break
    document["mpi"] = samples["none"][0]["mpi"]
    baseline = float(np.median([s["iteration"] for s in samples["none"]]))
    data_bytes = 4 * grid**3 * 8  # the solver's u, v, w, p (double precision)
    for name in names:
        runs = samples[name]
        result = {
            "name": name,
            "verified": True,
            "samples": [s["iteration"] for s in runs],
            # Median over runs of each run's mean time per iteration.
            "median": float(np.median([s["iteration"] for s in runs])),
            "simulation": float(np.median([s["step"] for s in runs])),
            "transfer": float(np.median([s["transfer"] for s in runs])),
            "rendering": float(np.median([s["rendering"] for s in runs])),
        }
        baseline_runs = [s["iteration"] for s in samples["none"]]
        result.update(paired_overhead(result["samples"], baseline_runs))
        result["overhead_of_medians"] = result["median"] / baseline - 1.0
        if "writer_steady" in runs[0]:
            # Within each run, so free of the run-to-run drift: the writer's steady cost
            # over the run's time per iteration.
            result["writer_share"] = float(
                np.median([s["writer_steady"] / s["iteration"] for s in runs])
            )
            result["writer_first_output"] = float(np.median([s["writer_first"] for s in runs]))
        if "within_run" in runs[0]:
            # Every measured cycle of every run: windows a few seconds apart in one process.
            cycles = [value for s in runs for value in s["within_run"]]
            result["overhead_within_run"] = float(np.median(cycles))
            result["overhead_within_run_quartiles"] = [
                float(q) for q in np.percentile(cycles, [25, 75])
            ]
            result["cycles_measured"] = len(cycles)
            # Where it goes: seconds beyond a quiet iteration of an output's iteration and
            # each after it, and of those after a window (median over runs).
            result["excess_by_offset"] = [
                float(np.median(values))
                for values in zip(*(s["excess"]["by_offset"] for s in runs), strict=True)
            ]
            result["excess_after_window"] = float(
                np.median([s["excess"]["after_window"] for s in runs])
            )
            # The same cost by position (median over runs).
            result["overhead_by_position"] = float(
                np.median([s["excess"]["overhead"] for s in runs])
            )
        if "step_bytes" in runs[0]:
            result["staging_ratio"] = runs[0]["staging_bytes"] / runs[0]["step_bytes"]
        if "readers" in runs[0]:
            result["drawn"] = [s["readers"]["drawn"] for s in runs]
            result["skipped"] = [s["readers"]["skipped"] for s in runs]
            result["reader_extra_memory_ratio"] = float(
                np.median([s["readers"]["extra_memory"] for s in runs]) / data_bytes
            )
        document["results"].append(result)
    return document


def paired_overhead(times, baseline_times) -> dict:
    """Overhead of runs over the baseline runs of the same rounds: ``overhead`` (the median
    of the rounds' ratios less one), ``overhead_quartiles`` and ``overhead_paired`` (each
    round's). Pairing runs adjacent in time cancels a shared machine's slow drifts, which
    a ratio of medians keeps."""
    if len(times) != len(baseline_times) or not times:
        raise ValueError(
            f"need one baseline run per run, got {len(times)} runs and "
            f"{len(baseline_times)} baseline runs"
        )
    paired = [time / baseline - 1.0 for time, baseline in zip(times, baseline_times, strict=True)]
    return {
        "overhead": float(np.median(paired)),
        "overhead_quartiles": [float(q) for q in np.percentile(paired, [25, 75])],
        "overhead_paired": paired,
    }


def stem(document: dict) -> str:
    """File name of a results document."""
    params = document["params"]
    return f"insitu_{params['grid']}cubed_{params['ranks']}ranks"


def plot(document: dict, path) -> Path:
    """Stacked bars per set-up: simulation, transfer, rendering, rest of the iteration."""
    results = document["results"]
    names = [r["name"] for r in results]
    parts = {
        "simulation": [r["simulation"] for r in results],
        "data transfer": [r["transfer"] for r in results],
        "rendering (in situ)": [r["rendering"] for r in results],
    }
    parts["other"] = [
        max(r["median"] - r["simulation"] - r["transfer"] - r["rendering"], 0.0) for r in results
    ]
    figure, axis = new_subplots(figsize=(9, 4.5))
    bottom = np.zeros(len(results))
    for label, values in parts.items():
        values = np.array(values) * 1e3
        axis.barh(names, values, left=bottom, label=label)
        bottom += values
    for index, result in enumerate(results):
        axis.text(bottom[index], index, f"  {result['overhead']:+.1%}", va="center")
    axis.invert_yaxis()
    axis.set_xlabel("time per iteration (ms; median over runs of the mean)")
    params = document["params"]
    axis.set_title(f"Visualising a {params['grid']}³ run on {params['ranks']} ranks")
    axis.set_xlim(0, bottom.max() * 1.25)  # room for the overhead labels
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=4, fontsize="small")
    figure.tight_layout()
    return save_figure(figure, path, dpi=110)
